/// The one error type of the library (after jwt-kit's `JWTError`): a domain kind a client can switch over, the
/// rule code when one applies, a severity, a structured location, a message that says what was found, what
/// was expected and what to do, and a description free of health data for logs.
///
/// Messages are in the library's own terms: the values and parameters it was given, never a program's
/// options or commands. A program that shows them may add its own advice by `code` and say `setting` (the
/// parameter a message begins with) its own way, as the command line does with its options.
///
/// One error may stand for several found together (every reason a record cannot be issued): `all` lists
/// them, and `self` is the first.
public struct HealthCardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which part of the work failed. New kinds may be added in any release: a `switch` over kinds needs a
    /// `default` (kinds are values, not enum cases, so adding one breaks no client).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case configuration, key, input, template, bundle, validation, crypto, compression, qr, png, io, link, pdf
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A setting or argument the caller gave that cannot be used (an issuer URL that is not https, a
        /// folder that is not a site, options that contradict each other).
        public static let configuration = Kind(.configuration)
        /// A key or key material that cannot be used (a key file, a PKCS#11 token, a revocation secret).
        public static let key = Kind(.key)
        /// An input that cannot be read or parsed (CSV, JSON, NDJSON, a report).
        public static let input = Kind(.input)
        /// A template that is malformed, or a row value that does not fit its placeholder.
        public static let template = Kind(.template)
        /// A Bundle that cannot be minimized (e.g. a reference that resolves to nothing).
        public static let bundle = Kind(.bundle)
        /// Content that a verifier would reject (the finding's rule code says which rule).
        public static let validation = Kind(.validation)
        /// A cryptographic operation failed in OpenSSL.
        public static let crypto = Kind(.crypto)
        /// DEFLATE or INFLATE failed.
        public static let compression = Kind(.compression)
        /// A QR symbol cannot be made or read.
        public static let qr = Kind(.qr)
        /// PNG (or other image) encoding or decoding failed.
        public static let png = Kind(.png)
        /// Reading or writing a file failed.
        public static let io = Kind(.io)
        /// A SMART Health Link could not be made, opened, or was replaced or updated.
        public static let link = Kind(.link)
        /// A printable card (PDF page) cannot be drawn: Cairo, Pango or a logo image failed.
        public static let pdf = Kind(.pdf)

        /// The kind's name: `configuration`, `key`, `input`, … (what `report.ndjson` writes as `kind`).
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }

        /// The rule code an error of this kind carries when no more specific rule applies, so every error in a
        /// report has a code a program can count.
        public var generalCode: RuleCode {
            switch base {
            case .configuration: return .configurationInvalid
            case .key: return .keyUnusable
            case .input: return .inputUnreadable
            case .template: return .templateValue
            case .bundle: return .bundleInvalid
            case .validation: return .validationFailed
            case .crypto: return .cryptoFailed
            case .compression: return .compressionFailed
            case .qr: return .qrFailed
            case .png: return .imageFailed
            case .io: return .outputFailed
            case .link: return .linkFailed
            case .pdf: return .pdfFailed
            }
        }
    }

    /// Where an error or finding is: any of a file, a line of it, a CSV column, a FHIR or JSON path, a
    /// credential of a card file and a QR chunk; what is unknown is nil.
    public struct Location: Sendable, Equatable, CustomStringConvertible {
        /// The file (or other named input) it is in.
        public var file: String?
        /// 1-based line of a text input: a CSV record's first line, an NDJSON line, a report line. For Bundle
        /// input it is the record's number in its file (`file:N`).
        public var line: Int?
        /// The CSV column (the header's name) whose value caused it.
        public var column: String?
        /// 0-based index of the JWS within a `.smart-health-card` file (or of the QR set in a folder).
        public var credential: Int?
        /// 1-based QR chunk number, for chunked QR codes.
        public var chunk: Int?
        /// A FHIR path (`Bundle.entry[1].resource.status`), a JSON path (`keys[0].kid`) or a JWS part
        /// (`header.alg`).
        public var path: String?
        /// 0-based byte offset within the input where it was found (a JSON text `JSONParser` refused). Not part
        /// of `description`: the messages of errors that have one say it ("… (byte 12)").
        public var offset: Int?

        public init(
            file: String? = nil, line: Int? = nil, column: String? = nil, credential: Int? = nil, chunk: Int? = nil,
            path: String? = nil, offset: Int? = nil
        ) {
            self.file = file
            self.line = line
            self.column = column
            self.credential = credential
            self.chunk = chunk
            self.path = path
            self.offset = offset
        }

        /// A location written `file:line` (a CSV record, a Bundle record), as `ReportLine.source` is; a text
        /// without a final `:N` is the file alone.
        public init(source: String) {
            self.init()
            if let colon = source.lastIndex(of: ":"), let number = Int(source[source.index(after: colon)...]),
                number >= 0
            {
                file = String(source[..<colon])
                line = number
            } else {
                file = source
            }
        }

        /// True when nothing is known.
        public var isEmpty: Bool { self == Location() }

        /// `file:line column C [credential N, chunk C] path`, leaving out what is unknown.
        public var description: String {
            var parts: [String] = []
            if let file { parts.append(line.map { "\(file):\($0)" } ?? file) }
            if let column { parts.append("column \(column)") }
            var inner: [String] = []
            if let credential { inner.append("credential \(credential)") }
            if let chunk { inner.append("chunk \(chunk)") }
            if !inner.isEmpty { parts.append("[" + inner.joined(separator: ", ") + "]") }
            if let path { parts.append(path) }
            return parts.joined(separator: " ")
        }

        /// The location without values that could come from a record (a CSV column name, a file name, a path
        /// are structure; none is health data): what `logDescription` shows.
        public var structure: String { description }
    }

    public var kind: Kind
    /// The rule that was broken, when one applies (every finding of a Bundle, card, key set or link has one).
    public var code: RuleCode?
    /// An error stops the record (or the command); a warning is reported and the work goes on.
    public var severity: Finding.Severity
    /// Where it happened.
    public var location: Location
    /// What was found, what was expected, and what to do, in the library's terms.
    public var text: String
    /// The library parameter the message is about when `text` begins with its name (`issuer`, `key set`,
    /// `output folder`): a program may say it as its own option. Nil when the message names none first.
    public var setting: String?
    /// Every error this one stands for when several were found together (itself first); empty when it is one.
    private var others: [HealthCardError]

    /// - Parameters:
    ///   - kind: which part failed.
    ///   - text: what was found, what was expected, what to do, in the library's terms.
    ///   - code: the rule that was broken, if one applies.
    ///   - location: where, as the text of a location (`file:line column C`, a FHIR path).
    public init(
        _ kind: Kind, _ text: String, code: RuleCode? = nil, severity: Finding.Severity = .error, at location: String?
    ) {
        self.init(kind, text, code: code, severity: severity, location: location.map(Self.parse) ?? Location())
    }

    /// An error of `kind` breaking the rule `code`, said first (`HealthCardError(.input, code: .csvQuoting, "…")`).
    public init(
        _ kind: Kind, code: RuleCode, severity: Finding.Severity = .error, _ text: String, at location: String? = nil
    ) {
        self.init(kind, text, code: code, severity: severity, location: location.map(Self.parse) ?? Location())
    }

    /// - Parameters:
    ///   - code: the rule that was broken, if one applies.
    ///   - severity: `.error` unless told.
    public init(
        _ kind: Kind, _ text: String, code: RuleCode? = nil, severity: Finding.Severity = .error,
        location: Location = Location()
    ) {
        self.kind = kind
        self.text = text
        self.code = code
        self.severity = severity
        self.location = location
        self.setting = nil
        self.others = []
    }

    /// This error, its message naming the library parameter `setting` first (`text` begins with it).
    public func about(_ setting: String) -> HealthCardError {
        var error = self
        error.setting = setting
        return error
    }

    /// A finding as an error: its code, severity, location and message kept.
    public init(_ finding: Finding, kind: Kind = .validation) {
        self.init(kind, finding.message, code: finding.code, severity: finding.severity, location: finding.location)
    }

    /// One error standing for several found together (every reason a record cannot be issued); `errors` must
    /// not be empty (an empty list stands for a generic failure of `kind`).
    public init(all errors: [HealthCardError], kind: Kind = .validation) {
        guard let first = errors.first else {
            self.init(kind, "failed")
            return
        }
        self = first
        others = errors.count > 1 ? errors.flatMap(\.all) : []
    }

    /// Every error this one stands for: itself, or the several found together.
    public var all: [HealthCardError] { others.isEmpty ? [self] : others }

    /// The code a report writes: the rule's, or the kind's general one.
    public var reportedCode: RuleCode { code ?? kind.generalCode }

    public var isError: Bool { severity == .error }

    /// The message: what was found, what was expected, what to do.
    public var message: String { text }

    /// `location: CODE: message`; several found together are joined with `; `.
    public var description: String { all.map { $0.described(\.message) }.joined(separator: "; ") }

    /// `location: CODE: message` with the message said by `say` (a program's own wording of this error's
    /// message, such as the command line's hint for its code); `CODE: ` when a rule's code was given.
    public func described(_ say: (HealthCardError) -> String) -> String {
        let at = location.description
        let said = (code.map { "\($0.rawValue): " } ?? "") + say(self)
        return at.isEmpty ? said : "\(at): \(said)"
    }

    /// For logs: kind, code, severity and where, never the message (which may quote a record's values).
    public var logDescription: String {
        let at = location.structure
        return "\(severity.rawValue) \(kind.name) \(reportedCode.rawValue)" + (at.isEmpty ? "" : " at \(at)")
    }

    /// Location text as callers wrote it before locations were structured: `file:line`, `file:line column C`,
    /// a FHIR path (`Bundle…`), or a file.
    private static func parse(_ text: String) -> Location {
        // A FHIR path starts with a resource type (`Bundle.entry[0]…`, `Observation.code`); a JSON path of the
        // payload or header with its member.
        let first = text.unicodeScalars.first
        if let first, ("A"..."Z").contains(first), !text.contains("/"), !text.contains(" ") {
            return Location(path: text)
        }
        if ["payload", "header", "vc.", "keys["].contains(where: { text.hasPrefix($0) }) { return Location(path: text) }
        let marker = Array(" column ".utf8)
        let bytes = Array(text.utf8)
        if bytes.count > marker.count,
            let start = (0...(bytes.count - marker.count)).first(where: { bytes[$0..<$0 + marker.count].elementsEqual(marker) })
        {
            var location = Location(source: String(decoding: bytes[..<start], as: UTF8.self))
            location.column = String(decoding: bytes[(start + marker.count)...], as: UTF8.self)
            return location
        }
        return Location(source: text)
    }
}
