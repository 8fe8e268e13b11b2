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

    /// Checks an issuer URL (digest section 2, `iss`): `https://`, a host in ASCII (letters, digits, `-`,
    /// `.`; labels of at most 63 characters, 253 in all, as DNS allows) with an optional port 1–65535, no user name or password, a path of RFC 3986 path characters
    /// (valid `%XX` escapes only), no trailing `/`, no query, no fragment, no whitespace.
    /// - Throws: `HealthCardError(.configuration)` saying what is wrong and what is expected.
    public static func validateIssuer(_ iss: String) throws {
        let expected = "expected an https URL with no trailing '/', query or fragment, e.g. https://issuer.example.org"
        func fail(_ problem: String) -> HealthCardError { HealthCardError(.configuration, "\(Setting.issuer) \(Quote.text(iss)) \(problem); \(expected)") }
        if iss.isEmpty { throw HealthCardError(.configuration, "\(Setting.issuer) is empty; \(expected)") }
        if iss.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw fail("contains spaces or control characters")
        }
        guard iss.hasPrefix("https://") else { throw fail("is not https") }
        if iss.contains("?") || iss.contains("#") { throw fail("has a query or fragment") }
        if iss.hasSuffix("/") {
            throw HealthCardError(.configuration, "\(Setting.issuer) \(Quote.text(iss)) ends with '/'; verifiers would fetch '…//.well-known/jwks.json'; "
                + "use \(Quote.text(iss.trimmingSuffix("/")))")
        }
        let rest = Substring(iss.dropFirst("https://".count))
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        if authority.contains("@") {
            throw fail("holds a user name or password, which every card would publish; remove the part before '@'")
        }
        if authority.hasPrefix("[") {
            throw fail("has an IP address as host; verifiers and the VCI directory expect a DNS name")
        }
        var host = authority
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(port),
                (1...65535).contains(value)
            else { throw fail("has port \(Quote.text(port)), which is not a number from 1 to 65535") }
        }
        guard !host.isEmpty else { throw fail("has no host") }
        if !host.unicodeScalars.allSatisfy(\.isASCII) {
            throw fail("has a non-ASCII host; write it in its ASCII (punycode, xn--…) form")
        }
        let hostOK = host.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "." }
        guard hostOK, !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..") else {
            throw fail("has host \(Quote.text(host)), which is not a DNS name (letters, digits, '-' and '.')")
        }
        // An IPv4 literal (10.0.0.5, or a malformed one like 999.999.999.999): no top-level domain is all digits.
        if let last = host.split(separator: ".").last, last.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw fail("has an IP address as host; verifiers and the VCI directory expect a DNS name")
        }
        // RFC 1035 section 2.3.4: a label is at most 63 octets, a name at most 255 (253 written without the
        // final dot); resolvers refuse longer ones, so no verifier could fetch the key set.
        if let label = host.split(separator: ".").first(where: { $0.utf8.count > 63 }) {
            throw fail("has a host label of \(label.utf8.count) characters (\(Quote.text(label, limit: 20))); DNS allows at most 63 per label")
        }
        if host.utf8.count > 253 {
            throw fail("has a host of \(host.utf8.count) characters; DNS allows at most 253")
        }
        if host.split(separator: ".").contains(where: { $0.hasPrefix("-") || $0.hasSuffix("-") }) {
            throw fail("has host \(Quote.text(host)): a DNS label cannot start or end with '-'")
        }
        // iss is compared as a string (with the key set's URL and the VCI directory): write it the one
        // canonical way, so the same issuer is never written two ways.
        if host.unicodeScalars.contains(where: { ("A"..."Z").contains($0) }) {
            throw fail("has capital letters in its host; write it in lowercase (\(Quote.text(host.lowercased()))) so that iss is always the same string")
        }
        if authority.hasSuffix(":443") {
            throw fail("names the default port 443; leave ':443' out so that iss is always the same string")
        }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            if segment.isEmpty || segment == "." || segment == ".." {
                throw fail("has an empty, '.' or '..' segment in its path; write the path in its plain form")
            }
        }
        let pathScalars = Array(path.unicodeScalars)
        var i = 0
        while i < pathScalars.count {
            let c = pathScalars[i]
            if c == "%" {
                guard i + 2 < pathScalars.count, pathScalars[i + 1].properties.isASCIIHexDigit, pathScalars[i + 2].properties.isASCIIHexDigit else {
                    throw fail("has a '%' that does not start a %XX escape")
                }
                i += 3
                continue
            }
            guard c.isASCII, ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "-._~!$&'()*+,;=:@/".unicodeScalars.contains(c) else {
                throw fail("has \(Quote.text(String(c))) in its path, which a URL path cannot hold unescaped")
            }
            i += 1
        }
    }
}
