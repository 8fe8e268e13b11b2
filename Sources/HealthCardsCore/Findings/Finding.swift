/// One problem `verify` (or the issue-time `BundleValidator`) found: a stable code, a severity, where it
/// is, and a sentence a person understands (what was found, what was expected, what to do).
///
/// Codes never change meaning once published; `docs/error-codes.md` lists each with its fix.
public struct Finding: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable {
        /// The card (or key set) is not acceptable: verifiers reject it.
        case error
        /// Allowed, but likely to cause trouble or against a SHOULD of the spec.
        case warning
    }

    /// Where a finding is.
    public struct Location: Sendable, Equatable {
        /// The file the credential or key set came from.
        public var file: String?
        /// 0-based index of the JWS within a `.smart-health-card` file (or of the QR set in a folder).
        public var credential: Int?
        /// 1-based QR chunk number, for chunked QR codes.
        public var chunk: Int?
        /// A FHIR path (`Bundle.entry[1].resource.status`), a JSON path (`keys[0].kid`) or a JWS part
        /// (`header.alg`).
        public var path: String?

        public init(file: String? = nil, credential: Int? = nil, chunk: Int? = nil, path: String? = nil) {
            self.file = file
            self.credential = credential
            self.chunk = chunk
            self.path = path
        }

        /// `file [credential N, chunk C] path`, leaving out what is unknown.
        public var description: String {
            var parts: [String] = []
            if let file { parts.append(file) }
            var inner: [String] = []
            if let credential { inner.append("credential \(credential)") }
            if let chunk { inner.append("chunk \(chunk)") }
            if !inner.isEmpty { parts.append("[" + inner.joined(separator: ", ") + "]") }
            if let path { parts.append(path) }
            return parts.joined(separator: " ")
        }
    }

    public var code: RuleCode
    public var severity: Severity
    public var location: Location
    public var message: String

    public init(_ code: RuleCode, _ message: String, at location: Location = Location(), severity: Severity? = nil) {
        self.code = code
        self.severity = severity ?? code.severity
        self.location = location
        self.message = message
    }

    public var isError: Bool { severity == .error }

    /// `error CODE at LOCATION: message`.
    public var description: String {
        let at = location.description
        return "\(severity.rawValue) \(code.rawValue)\(at.isEmpty ? "" : " at " + at): \(message)"
    }

    /// The finding as JSON: `{"code","severity","file","credential","chunk","path","message"}` (absent
    /// members left out).
    public var json: JSONValue {
        var o: JSONObject = ["code": .string(code.rawValue), "severity": .string(severity.rawValue)]
        if let file = location.file { o["file"] = .string(file) }
        if let credential = location.credential { o["credential"] = .integer(Int64(credential)) }
        if let chunk = location.chunk { o["chunk"] = .integer(Int64(chunk)) }
        if let path = location.path { o["path"] = .string(path) }
        o["message"] = .string(message)
        return .object(o)
    }
}
