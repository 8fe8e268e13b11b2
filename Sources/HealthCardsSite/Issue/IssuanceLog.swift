import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// One `issue` run as the issuance log records it.
public struct IssuanceRun: Sendable, Equatable {
    /// A random id (22 base64url characters) naming the run in the log.
    public var id: String
    /// When the run started, seconds since 1970.
    public var started: Int64
    /// The issuer URL (`iss`) of its cards.
    public var issuer: String
    /// The kid of the key that signed them.
    public var kid: String

    public init(id: String, started: Int64, issuer: String, kid: String) {
        self.id = id
        self.started = started
        self.issuer = issuer
        self.kid = kid
    }

    /// A new run id: 128 random bits, base64url.
    public static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Base64URL.encode(bytes)
    }
}

/// How a run ended, as the issuance log records it (`IssuanceLogWriter.end`).
public struct IssuanceRunEnd: Sendable, Equatable {
    public var issued: Int
    public var rejected: Int
    /// Records in the run's inputs (`issued + rejected` is less when it stopped).
    public var total: Int
    /// The signal that stopped it (SIGINT 2, SIGTERM 15), or 0.
    public var interruptedBy: Int32

    public init(issued: Int, rejected: Int, total: Int, interruptedBy: Int32) {
        self.issued = issued
        self.rejected = rejected
        self.total = total
        self.interruptedBy = interruptedBy
    }
}

/// One report line of a run, read back from an issuance log.
public struct IssuanceLogLine: Sendable {
    /// The run that wrote it (its `begin`), or nil when the log lost it (a line before any run's beginning).
    public var run: IssuanceRun?
    /// `<log>:<line>`, for messages.
    public var place: String
    /// The report line as `report.ndjson` has it (`ReportLine.ndjson`).
    public var reportLine: JSONValue
}

/// The append-only record of what every `issue` run into one output folder reported: each run's report lines,
/// whichever key signed its cards, kept after the next run has replaced `report.ndjson`. `revoke --report` reads
/// it (through `IssuedCards`), so a card of a run from before a key rotation can still be checked against the
/// run that issued it; `site --report` counts a key's cards from it.
///
/// Promises of every implementation:
/// - lines are only ever appended: nothing recorded is changed or removed;
/// - a run that stops in the middle (killed, power lost) leaves what it appended; the next run's beginning is
///   recorded whole after it, and readers skip a line that was cut off (the last one of a killed run);
/// - one writer at a time: `issue` holds the output folder's lock (`OutputLock`) while it appends.
///
/// The first implementation is a file in the output folder, `FileIssuanceLog` (`OUT/issuance-log.ndjson`).
public protocol IssuanceLog: AnyObject {
    /// Where the log is, for messages.
    var location: String { get }

    /// Records the beginning of a run.
    /// - Returns: where the run's report lines and its end are appended.
    /// - Throws: `HealthCardError(.io)` when the log cannot be written.
    func begin(_ run: IssuanceRun) throws -> any IssuanceLogWriter

    /// Calls `body` with every recorded report line, oldest first.
    /// - Throws: `HealthCardError(.configuration)` for a log that is not one (naming the line); what `body` throws.
    func forEachLine(_ body: (IssuanceLogLine) throws -> Void) throws
}

/// Appends one run's report lines to an issuance log.
public protocol IssuanceLogWriter: AnyObject {
    /// Appends one report line (the bytes `ReportLine.ndjson` wrote, final newline included).
    /// - Throws: `HealthCardError(.io)` when it cannot be written.
    func append(reportLine: [UInt8]) throws

    /// Records how the run ended and makes everything appended durable (flushed to disk).
    /// - Throws: `HealthCardError(.io)` when it cannot be written.
    func end(_ end: IssuanceRunEnd) throws
}

/// An issuance log in a file, one JSON object a line:
///
///     {"run":"<id>","begin":{"started":1700000000,"issuer":"https://…","kid":"…"}}
///     {"run":"<id>","line":{…the report line…}}
///     {"run":"<id>","end":{"issued":4,"rejected":0,"total":4,"interruptedBy":0}}
///
/// The file is opened for appending only (`O_APPEND`), created with the run's file mode (0600 unless the output
/// is shared: it names patients by id), and must be a regular file: a link, FIFO or device at its path is
/// refused (it is read back, and replacing or writing through such a path is never right). Lines are written
/// through a 64 KiB buffer and synced (`fsync`) at the end of the run.
public final class FileIssuanceLog: IssuanceLog {
    /// The log's name in an output folder.
    public static let fileName = "issuance-log.ndjson"

    public let path: String
    /// The mode of the file when it is created.
    public let access: OutputAccess

    public init(path: String, access: OutputAccess = .ownerOnly) {
        self.path = path
        self.access = access
    }

    /// The log of the output folder `outDir`.
    public convenience init(outDir: String, access: OutputAccess = .ownerOnly) {
        self.init(path: outDir + "/" + Self.fileName, access: access)
    }

    public var location: String { path }

    /// Refuses, before a run writes anything, a log path that is not a regular file (nor missing).
    /// - Throws: `HealthCardError(.io)` saying what is there.
    public func checkTarget() throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard st.st_mode & S_IFMT == S_IFREG else {
            let what = st.st_mode & S_IFMT == S_IFLNK ? "is a symbolic link" : FileKind.of(path).phrase
            throw HealthCardError(
                .io,
                "cannot write the issuance log \(path): it \(what); the log "
                    + "is appended to and read back, so it must be a regular file. Nothing was issued; move that away and run again"
            )
        }
    }

    public func begin(_ run: IssuanceRun) throws -> any IssuanceLogWriter {
        try checkTarget()
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, access.fileMode)
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot write the issuance log \(path): \(OS.errorText())")
        }
        // The run's mode whatever the umask, as every file the run writes (a shared hand-off folder shares its log).
        _ = fchmod(fd, mode_t(access.fileMode))
        let writer = FileIssuanceLogWriter(fd: fd, path: path, run: run.id)
        // A line a killed run cut off ends here, so this run's beginning starts a line of its own.
        var st = stat()
        var prefix: [UInt8] = []
        if fstat(fd, &st) == 0, st.st_size > 0 {
            var last: UInt8 = 0
            if pread(fd, &last, 1, off_t(st.st_size - 1)) == 1, last != 0x0A { prefix = [0x0A] }
        }
        let begin: JSONValue = .object([
            "run": .string(run.id),
            "begin": .object([
                "started": .integer(run.started), "issuer": .string(run.issuer), "kid": .string(run.kid),
            ]),
        ])
        try writer.write(prefix + JSONWriter.minified(begin) + [0x0A])
        return writer
    }

    public func forEachLine(_ body: (IssuanceLogLine) throws -> Void) throws {
        let lines: LineReader
        do { lines = try LineReader(path: path, maxLineBytes: InputBudget.reportLineBytes + 256) } catch let error
            as HealthCardError
        {
            throw HealthCardError(.configuration, "report: \(error.text)").about("report")
        }
        var runs: [String: IssuanceRun] = [:]
        // A line that is not JSON is a line a killed run cut off only when it is the last one, or when the next
        // line begins a run: anything else means the file is not an issuance log.
        var broken: Int?
        func notALog(_ number: Int) -> HealthCardError {
            HealthCardError(
                .configuration,
                "report \(path) line \(number) is not a line of an issuance log (\(Self.fileName)); give the "
                    + "report.ndjson or the \(Self.fileName) that an issue run wrote"
            ).about("report")
        }
        while let next = try lines.next() {
            guard let bytes = next.bytes else { throw notALog(next.number) }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            guard let json = try? JSONParser.parse(bytes), let id = json["run"]?.stringValue else {
                if let broken { throw notALog(broken) }
                broken = next.number
                continue
            }
            if let begin = json["begin"] {
                broken = nil
                runs[id] = IssuanceRun(
                    id: id, started: begin["started"]?.numberLexeme.flatMap { Int64($0) } ?? 0,
                    issuer: begin["issuer"]?.stringValue ?? "", kid: begin["kid"]?.stringValue ?? "")
            } else if let line = json["line"] {
                if let broken { throw notALog(broken) }
                guard line["status"]?.stringValue != nil, line["source"]?.stringValue != nil else {
                    throw notALog(next.number)
                }
                try body(IssuanceLogLine(run: runs[id], place: "\(path):\(next.number)", reportLine: line))
            } else if json["end"] != nil {
                if let broken { throw notALog(broken) }
            } else {
                throw notALog(next.number)
            }
        }
    }

    /// True when the first line of the file at `path` that holds anything is an issuance log's.
    static func looksLikeLog(_ path: String) -> Bool {
        guard let lines = try? LineReader(path: path, maxLineBytes: InputBudget.reportLineBytes + 256) else {
            return false
        }
        while let next = try? lines.next() {
            guard let bytes = next.bytes else { return false }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            guard let json = try? JSONParser.parse(bytes) else { return false }
            return json["run"]?.stringValue != nil
        }
        return false
    }
}

/// The writer of one run into a `FileIssuanceLog`.
final class FileIssuanceLogWriter: IssuanceLogWriter {
    private var fd: Int32
    private let path: String
    private let run: String
    private var buffer: [UInt8] = []
    private let linePrefix: [UInt8]
    /// Set when a write failed: nothing more is appended (the run stops), so the line cut off there is the last.
    private var failed = false

    init(fd: Int32, path: String, run: String) {
        self.fd = fd
        self.path = path
        self.run = run
        linePrefix = Array(#"{"run":""#.utf8) + Array(run.utf8) + Array(#"","line":"#.utf8)
        buffer.reserveCapacity(65536)
    }

    deinit {
        if fd >= 0 {
            _ = try? flush()
            close(fd)
        }
    }

    /// Writes `bytes` at once (the run's beginning).
    func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        try flush()
    }

    func append(reportLine: [UInt8]) throws {
        if failed { return }
        // `{"run":"<id>","line":` + the report line's object + `}`: the report line's bytes are kept as written.
        var line = reportLine[...]
        while line.last == 0x0A || line.last == 0x0D { line = line.dropLast() }
        buffer.append(contentsOf: linePrefix)
        buffer.append(contentsOf: line)
        buffer.append(contentsOf: [0x7D, 0x0A])
        if buffer.count >= 65536 { try flush() }
    }

    func end(_ end: IssuanceRunEnd) throws {
        if failed { return }
        let object: JSONValue = .object([
            "run": .string(run),
            "end": .object([
                "issued": .integer(Int64(end.issued)), "rejected": .integer(Int64(end.rejected)),
                "total": .integer(Int64(end.total)), "interruptedBy": .integer(Int64(end.interruptedBy)),
            ]),
        ])
        buffer.append(contentsOf: JSONWriter.minified(object) + [0x0A])
        try flush()
        guard fsync(fd) == 0 else {
            throw HealthCardError(.io, "cannot write the issuance log \(path): \(OS.errorText())")
        }
        close(fd)
        fd = -1
    }

    private func flush() throws {
        guard fd >= 0 else { return }
        var written = 0
        while written < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                // What could not be written is dropped and nothing more is appended: the line cut off here is the
                // run's last, which readers skip (the next run begins on a line of its own).
                buffer.removeAll(keepingCapacity: true)
                failed = true
                throw HealthCardError(.io, "cannot write the issuance log \(path): \(OS.errorText())")
            }
            written += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
