/// The JWT claims of a SMART Health Card (digest section 2):
/// `{"iss":…, "nbf":…, "vc":{"type":[…], "credentialSubject":{"fhirVersion":"4.0.1","fhirBundle":…}[, "rid":…]}[, "exp":…]}`
/// in that member order (the spec generator's), serialized minified.
public struct Payload: Sendable {
    /// `vc.type` URIs (digest section 2, `vc.type`).
    public enum CardType: String, Sendable, CaseIterable {
        case healthCard = "https://smarthealth.cards#health-card"
        case immunization = "https://smarthealth.cards#immunization"
        case covid19 = "https://smarthealth.cards#covid19"
        case laboratory = "https://smarthealth.cards#laboratory"
    }

    /// Which `vc.type` values to emit.
    public enum TypePolicy: String, Sendable {
        /// `#health-card` alone, as spec 1.4.0 recommends.
        case minimal
        /// `#health-card` plus the deprecated content types derived from the Bundle, which Apple
        /// HealthKit's `HKVerifiableClinicalRecordQuery` still selects by (the default).
        case legacy
    }

    /// The issuer URL (`iss`): https, no trailing slash, no query or fragment.
    public var issuer: String
    /// `nbf` as a JSON number lexeme, integer seconds since the epoch (e.g. `"1700000000"`).
    public var notBefore: String
    /// `exp` in integer seconds since the epoch, if the card expires (rare; digest section 2).
    public var expires: Int64?
    /// `vc.type`, `#health-card` first.
    public var types: [CardType]
    /// `vc.rid`, at most 24 base64url characters (digest section 8).
    public var rid: String?
    /// The minimized FHIR Bundle.
    public var fhirBundle: JSONValue

    public init(issuer: String, notBefore: String, expires: Int64? = nil, types: [CardType] = [.healthCard],
                rid: String? = nil, fhirBundle: JSONValue) {
        self.issuer = issuer
        self.notBefore = notBefore
        self.expires = expires
        self.types = types
        self.rid = rid
        self.fhirBundle = fhirBundle
    }

    /// The claims as an ordered JSON object.
    public var json: JSONValue {
        var credentialSubject = JSONObject()
        credentialSubject["fhirVersion"] = "4.0.1"
        credentialSubject["fhirBundle"] = fhirBundle
        var vc = JSONObject()
        vc["type"] = .array(types.map { .string($0.rawValue) })
        vc["credentialSubject"] = .object(credentialSubject)
        if let rid { vc["rid"] = .string(rid) }
        var claims = JSONObject()
        claims["iss"] = .string(issuer)
        // A notBefore that is not a JSON number is written as a string, which verifiers reject (NBF_NOT_NUMBER),
        // rather than as text that would break the JSON.
        claims["nbf"] = JSONNumber(notBefore).map(JSONValue.number) ?? .string(notBefore)
        claims["vc"] = .object(vc)
        if let expires { claims["exp"] = .integer(expires) }
        return .object(claims)
    }

    /// The minified UTF-8 JSON that is DEFLATEd and signed: no whitespace, no BOM, `/` unescaped.
    public var minifiedBytes: [UInt8] { JSONWriter.minified(json) }

    /// The `vc.type` list for a Bundle under `policy`: `#health-card`, then (legacy policy only)
    /// `#covid19` when a vaccine or lab code is a COVID-19 one (`isCOVID19(system, code)`),
    /// `#immunization` when it has an Immunization, `#laboratory` when it has an Observation.
    /// The order follows the HL7 IG examples (`#health-card`, `#covid19`, then the content type).
    public static func types(for bundle: JSONValue, policy: TypePolicy,
                             isCOVID19: (_ system: String, _ code: String) -> Bool) -> [CardType] {
        guard policy == .legacy else { return [.healthCard] }
        var hasImmunization = false
        var hasLab = false
        var covid = false
        for entry in bundle["entry"]?.arrayValue ?? [] {
            guard let resource = entry["resource"] else { continue }
            let codeable: JSONValue?
            switch resource["resourceType"]?.stringValue {
            case "Immunization":
                hasImmunization = true
                codeable = resource["vaccineCode"]
            case "Observation":
                hasLab = true
                codeable = resource["code"]
            default: codeable = nil
            }
            for coding in codeable?["coding"]?.arrayValue ?? [] {
                if let system = coding["system"]?.stringValue, let code = coding["code"]?.stringValue,
                    isCOVID19(system, code)
                {
                    covid = true
                }
            }
        }
        var types: [CardType] = [.healthCard]
        if covid { types.append(.covid19) }
        if hasImmunization { types.append(.immunization) }
        if hasLab { types.append(.laboratory) }
        return types
    }

    /// Checks an issuer URL (digest section 2, `iss`; the rules are `IssuerURL`'s, which verify applies too):
    /// `https://`, a lowercase host in ASCII (letters, digits, `-`, `.`; labels of at most 63 characters, 253 in
    /// all, as DNS allows; no IP address) with an optional port 1–65535 other than 443 and without leading
    /// zeros, no user name or password, a path of RFC 3986 path characters (valid `%XX` escapes only) without
    /// empty or dot segments, no trailing `/`, no query, no fragment, no whitespace.
    /// - Throws: `HealthCardError(.configuration)` saying what is wrong and what is expected, with the rule code
    ///   `verify` gives the same problem in a card (`ISS_MISSING`, `ISS_NOT_HTTPS`, `ISS_TRAILING_SLASH`,
    ///   `ISS_MALFORMED`, `ISS_NOT_CANONICAL`), so a program that refuses a setting can say which rule.
    public static func validateIssuer(_ iss: String) throws(HealthCardError) {
        guard let problem = IssuerURL.problem(iss) else { return }
        let expected = "expected an https URL with no trailing '/', query or fragment, e.g. https://issuer.example.org"
        let said = IssuerURL.sentence(problem, iss: iss)
        let code = problem.code
        switch problem {
        case .empty: throw HealthCardError(.configuration, code: code, "issuer is empty; \(expected)").about("issuer")
        case .trailingSlash:
            throw HealthCardError(.configuration, code: code, "issuer \(Quote.text(iss)) \(said)").about("issuer")
        default:
            throw HealthCardError(.configuration, code: code, "issuer \(Quote.text(iss)) \(said); \(expected)").about("issuer")
        }
    }
}
