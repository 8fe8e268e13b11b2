/// How important a log record is, least first.
public enum LogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case debug, info, notice, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .notice: return "notice"
        case .warning: return "warning"
        case .error: return "error"
        }
    }
}

/// One thing that happened, for a log: a stable event name, a sentence and fields, none of which holds health
/// data. Records made from errors carry the error's `logDescription` (kind, code, where), never its message,
/// which may quote a record's values; values that identify a person go in only as `LogRedaction.fingerprint`.
public struct LogRecord: Sendable, Equatable {
    public var level: LogLevel
    /// A stable, dotted name: `batch.started`, `batch.record-rejected`, `site.lock-wait`.
    public var event: String
    /// A sentence for a person reading the log, free of health data.
    public var message: String
    /// Fields a program can filter on (`code`, `kind`, `file`, `line`, counts), free of health data.
    public var fields: [String: String]

    public init(_ level: LogLevel, _ event: String, _ message: String, fields: [String: String] = [:]) {
        self.level = level
        self.event = event
        self.message = message
        self.fields = fields
    }

    /// A record of an error: its `logDescription` as the message, and its kind, code and place as fields.
    public init(_ level: LogLevel, _ event: String, error: HealthCardError, fields: [String: String] = [:]) {
        var all = fields
        all["kind"] = error.kind.name
        all["code"] = error.reportedCode.rawValue
        if let file = error.location.file { all["file"] = file }
        if let line = error.location.line { all["line"] = String(line) }
        if let column = error.location.column { all["column"] = column }
        if let path = error.location.path { all["path"] = path }
        self.init(level, event, error.logDescription, fields: all)
    }
}

/// Where a program sends the library's log records (after swift-log's `LogHandler`): the library calls it
/// from the thread doing the work, so it must be safe to call from several at once.
public protocol HealthCardsLogger: Sendable {
    /// The least important level it wants; records below it are not made.
    var minimumLevel: LogLevel { get }
    /// Takes one record.
    func log(_ record: LogRecord)
}

extension HealthCardsLogger {
    /// Logs a record made only when `level` is at least `minimumLevel`.
    public func log(_ level: LogLevel, _ event: String, _ message: @autoclosure () -> String, fields: [String: String] = [:]) {
        guard level >= minimumLevel else { return }
        log(LogRecord(level, event, message(), fields: fields))
    }
}

/// A logger that drops every record: the default wherever a caller gives none.
public struct NoLogger: HealthCardsLogger {
    public init() {}
    public var minimumLevel: LogLevel { .error }
    public func log(_ record: LogRecord) {}
}

/// How a value that identifies a person (a patient id, a link id) goes into a log: never as it is.
public enum LogRedaction {
    /// The first 12 base64url characters (72 bits) of the SHA-256 of `value`: enough to tell two log lines
    /// about the same value apart from lines about others, not enough to read the value back, and the same in
    /// every run (so logs of several runs can be matched). Not a secret: an id short enough to guess can be
    /// guessed from it, so logs stay private as the data do.
    public static func fingerprint(_ value: String) -> String {
        String(Base64URL.encode(Digest.sha256(Array(value.utf8))).prefix(12))
    }
}
