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

    /// Where a finding is: the location shared with `HealthCardError` (file, line, column, credential, chunk,
    /// path).
    public typealias Location = HealthCardError.Location

    public var code: RuleCode
    public var severity: Severity
    public var location: Location
    /// The sentence, in the library's terms (`message`).
    public var text: String

    public init(_ code: RuleCode, _ message: String, at location: Location = Location(), severity: Severity? = nil) {
        self.code = code
        self.severity = severity ?? code.severity
        self.location = location
        self.text = message
    }

    public var isError: Bool { severity == .error }

    /// The sentence: what was found, what was expected, what to do.
    public var message: String { text }

    /// `error CODE at LOCATION: message`.
    public var description: String {
        let at = location.description
        return "\(severity.rawValue) \(code.rawValue)\(at.isEmpty ? "" : " at " + at): \(message)"
    }

    /// The finding as JSON: `{"code","severity","file","line","column","credential","chunk","path","message"}` (absent
    /// members left out).
    public var json: JSONValue { json(say: \.message) }

    /// The finding as JSON, its message said by `say` (a program's own wording, such as the command line's
    /// hint for the code).
    public func json(say: (Finding) -> String) -> JSONValue {
        var o: JSONObject = ["code": .string(code.rawValue), "severity": .string(severity.rawValue)]
        if let file = location.file { o["file"] = .string(file) }
        if let line = location.line { o["line"] = .integer(Int64(line)) }
        if let column = location.column { o["column"] = .string(column) }
        if let credential = location.credential { o["credential"] = .integer(Int64(credential)) }
        if let chunk = location.chunk { o["chunk"] = .integer(Int64(chunk)) }
        if let path = location.path { o["path"] = .string(path) }
        o["message"] = .string(say(self))
        return .object(o)
    }
}
