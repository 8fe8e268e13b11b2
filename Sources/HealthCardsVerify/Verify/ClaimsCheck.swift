import HealthCardsCore

/// Checks the JWT claims of a health card (digest section 2): `iss`, `nbf`, `exp`, `vc.type`,
/// `vc.credentialSubject` and `vc.rid`.
struct ClaimsCheck {
    /// Seconds since the epoch to judge `nbf` and `exp` against.
    var now: Int64

    /// Any NumericDate at or above this is taken for milliseconds (year 5138 in seconds).
    static let millisecondsThreshold = NumericDate.millisecondsThreshold

    func check(_ payload: JSONValue, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        guard payload.objectValue != nil else {
            add(.payloadNotJSON, "payload", "the payload is not a JSON object", nil)
            return
        }
        checkIssuer(payload["iss"], add: add)
        let nbf = checkTime(payload["nbf"], name: "nbf", add: add)
        if payload["nbf"] == nil { add(.nbfMissing, "nbf", "nbf (issuance time, seconds since 1970) is required", nil) }
        if let nbf, nbf.value > Double(now) {
            add(.nbfNotYetValid, "nbf", "the card is not valid yet: nbf is \(Clock.describe(nbf.whole)), now is \(Clock.describe(now))", nil)
        }
        if payload["exp"] != nil, let exp = checkTime(payload["exp"], name: "exp", add: add) {
            if exp.value < Double(now) {
                add(.expExpired, "exp", "the card expired at \(Clock.describe(exp.whole)) (now is \(Clock.describe(now))); verifiers SHALL reject it", nil)
            }
            if let nbf, exp.value <= nbf.value { add(.expBeforeNbf, "exp", "exp (\(Clock.describe(exp.whole))) is not after nbf", nil) }
        }
        if payload["@context"] != nil || payload["vc"]?["@context"] != nil {
            add(.vcContext, "vc.@context", "@context comes from the W3C VC mapping of old drafts; health cards leave it out", nil)
        }
        guard let vc = payload["vc"], vc.objectValue != nil else {
            // Absent, or there and of another JSON type: say which, so `"vc":[]` is not read as a missing member.
            // An array is counted, not quoted: it may hold the whole credential.
            let found = payload["vc"].map { value in
                let shown = value.arrayValue.map { "an array of \($0.count) element\($0.count == 1 ? "" : "s")" }
                    ?? (value == .null ? "null" : "\(value.typeName) (\(quoted(value)))")
                return "vc is \(shown) where an object is required"
            } ?? "the payload has no vc object"
            add(.vcMissing, "vc", found + #"; the credential goes in vc as an object: "vc":{"type":[…],"credentialSubject":{…}}"#, nil)
            return
        }
        let types = vc["type"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !types.contains(Payload.CardType.healthCard.rawValue) {
            add(.vcTypeHealthCard, "vc.type", "vc.type must contain \"\(Payload.CardType.healthCard.rawValue)\", found \(quoted(vc["type"]))", nil)
        }
        if types.contains("VerifiableCredential") {
            add(.vcTypeLegacy, "vc.type", "\"VerifiableCredential\" belongs to the W3C VC mapping, not to the health card; leave it out", nil)
        }
        let subject = vc["credentialSubject"]
        let version = subject?["fhirVersion"]?.stringValue ?? ""
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count != 3 || !parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) {
            add(.vcFHIRVersion, "vc.credentialSubject.fhirVersion", "fhirVersion should be a FHIR version such as \"4.0.1\", found \(quoted(subject?["fhirVersion"]))", nil)
        }
        if subject?["fhirBundle"]?.objectValue == nil {
            add(.vcBundleMissing, "vc.credentialSubject.fhirBundle", "the card carries no FHIR Bundle (vc.credentialSubject.fhirBundle)", nil)
        }
        if let rid = vc["rid"] {
            if rid.stringValue.map(RID.isValid) != true {
                add(.ridInvalid, "vc.rid", "vc.rid must be 1 to \(RID.maxLength) base64url characters, found \(quoted(rid))", nil)
            }
        }
    }

    private func checkIssuer(_ value: JSONValue?, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        guard let iss = value?.stringValue, !iss.isEmpty else {
            // Absent, empty, or of another JSON type: say which, so `"iss":[…]` is not read as a missing member.
            let found: String
            switch value {
            case nil: found = "iss (the issuer URL) is required, and the payload has none"
            case .string?: found = "iss is an empty string"
            case .null?: found = "iss is null where a string (an https URL) is required"
            case let other?: found = "iss is \(other.typeName) (\(quoted(other))) where a string (an https URL) is required"
            }
            add(.issMissing, "iss", found + "; write the issuer's https URL with no trailing '/', query or fragment, "
                + #"e.g. "iss":"https://issuer.example.org""#, nil)
            return
        }
        // The rules `issue` applies (`IssuerURL`): what the spec rules out is an error, a URL that works but is
        // not written in its one canonical form (capital letters, :443, an IP address, dot segments) a warning.
        guard let problem = IssuerURL.problem(iss) else { return }
        let expected = "expected an https URL with no trailing '/', query or fragment, e.g. https://issuer.example.org"
        let said = IssuerURL.sentence(problem, iss: iss)
        switch problem {
        case .trailingSlash:
            add(.issTrailingSlash, "iss", "iss \(Quote.text(iss)) \(said.replacingFirst("would fetch", with: "fetch"))", nil)
        case _ where !problem.breaksSpec:
            add(.issNotCanonical, "iss", "iss \(Quote.text(iss)) \(said); verifiers and key-set URLs compare iss as a string", nil)
        default:
            add(problem.code, "iss", "iss \(Quote.text(iss)) \(said); \(expected)", nil)
        }
    }

    /// Checks a NumericDate; returns its value in seconds when it is a usable number (`NumericDate`).
    private func checkTime(_ value: JSONValue?, name: String, add: (RuleCode, String?, String, Finding.Severity?) -> Void) -> NumericDate? {
        guard let value else { return nil }
        let notNumber: RuleCode = name == "nbf" ? .nbfNotNumber : .expNotNumber
        let milliseconds: RuleCode = name == "nbf" ? .nbfMilliseconds : .expMilliseconds
        let outOfRange: RuleCode = name == "nbf" ? .nbfOutOfRange : .expOutOfRange
        guard let lexeme = value.numberLexeme, let seconds = Double(lexeme) else {
            add(notNumber, name, "\(name) must be a JSON number of seconds since 1970, found \(quoted(value))", nil)
            return nil
        }
        if let asSeconds = NumericDate(seconds / 1000), seconds >= NumericDate.millisecondsThreshold {
            add(milliseconds, name, "\(name) \(lexeme) is in milliseconds (as seconds it is after the year 5000); use seconds: \(asSeconds.whole) (\(Clock.describe(asSeconds.whole)))", nil)
            return nil
        }
        guard let date = NumericDate(seconds) else {
            add(outOfRange, name, "\(name) \(lexeme) is not a time a card can carry: a NumericDate is seconds since 1970 (RFC 7519 section 2), "
                + "from 0 to below 100000000000 (the year 5138); issuers write the current time, e.g. \(now)", nil)
            return nil
        }
        if name == "nbf", lexeme.contains(".") || lexeme.contains("e") || lexeme.contains("E") {
            add(.nbfFractional, name, "nbf \(lexeme) is not a whole number of seconds; allowed (RFC 7519) but issuers should emit integers", nil)
        }
        return date
    }
}

/// A JWT NumericDate (RFC 7519 section 2) that a card can carry: seconds since 1970 from 0 to below
/// `millisecondsThreshold` (the year 5138). Anything else is refused before it is converted, so no
/// value from a card (`-1e300`, `1e400`, a year past 5138) ever reaches an integer conversion that
/// could trap.
package struct NumericDate: Sendable, Equatable {
    /// Any NumericDate at or above this is taken for milliseconds (year 5138 in seconds).
    package static let millisecondsThreshold = 100_000_000_000.0

    /// The value as written (it may have a fraction), in seconds.
    let value: Double
    /// The value rounded down to whole seconds.
    let whole: Int64

    /// nil unless `seconds` is in 0 ..< `millisecondsThreshold` (so `whole` cannot overflow).
    init?(_ seconds: Double) {
        guard seconds >= 0, seconds < Self.millisecondsThreshold else { return nil }
        value = seconds
        whole = Int64(seconds.rounded(.down))
    }

    /// The NumericDate of a JSON number member (`nbf`, `exp`), or nil when it is absent, not a number,
    /// or out of range.
    init?(_ json: JSONValue?) {
        guard let seconds = json?.doubleValue else { return nil }
        self.init(seconds)
    }
}
