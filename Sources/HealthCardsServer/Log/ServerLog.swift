import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the server's log lines go (levels are the library's `LogLevel`). Callers pass only what may be logged:
/// a link as its tag (`linkTag`, the library's `LogRedaction.fingerprint` of its id), never an id, a key, a
/// passcode, a recipient or file contents.
public protocol ServerLog: Sendable {
    /// One event: `event` names it (`request`, `start`, `stop`, `database`), `fields` say the rest.
    func log(_ level: LogLevel, _ event: String, _ fields: JSONObject)
}

extension ServerLog {
    public func info(_ event: String, _ fields: JSONObject = [:]) { log(.info, event, fields) }
    public func warning(_ event: String, _ fields: JSONObject = [:]) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: JSONObject = [:]) { log(.error, event, fields) }
}

/// How a log line names a link: `LogRedaction.fingerprint` of its id (12 base64url characters of its SHA-256),
/// enough to tell links apart and to find one in `link list`, nothing of the id itself.
public func linkTag(_ id: String) -> String { LogRedaction.fingerprint(id) }

/// One JSON object a line (`{"time":"2026-…Z","level":"info","event":"request",…}`), each line written with a
/// single `write(2)` under a lock, so lines from several threads never interleave. It is also a
/// `HealthCardsLogger`, so the library's own records (`LogRecord`) go to the same stream.
public final class JSONLinesLog: ServerLog, HealthCardsLogger {
    private let fd: Int32
    private let clock: @Sendable () -> (seconds: Int64, milliseconds: Int)
    private let lock = Mutex(())

    /// - Parameters:
    ///   - fd: the file descriptor written (2, standard error, by default; not closed here).
    ///   - clock: the time of each line: seconds since 1970 and milliseconds.
    public init(
        fd: Int32 = 2, clock: @escaping @Sendable () -> (seconds: Int64, milliseconds: Int) = JSONLinesLog.wallClock
    ) {
        self.fd = fd
        self.clock = clock
    }

    /// The system's real-time clock.
    public static let wallClock: @Sendable () -> (seconds: Int64, milliseconds: Int) = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (Int64(ts.tv_sec), Int(ts.tv_nsec / 1_000_000))
    }

    /// The least level a library record is written at.
    public var minimumLevel: LogLevel { .info }

    /// A library record: its event, message and fields.
    public func log(_ record: LogRecord) {
        var fields: JSONObject = ["message": .string(record.message)]
        for (key, value) in record.fields.sorted(by: { $0.key < $1.key }) { fields[key] = .string(value) }
        log(record.level, record.event, fields)
    }

    public func log(_ level: LogLevel, _ event: String, _ fields: JSONObject) {
        let now = clock()
        // Written straight into the line (a request's line was a tenth of its instructions when built as a second
        // JSONObject): `time`, `level` and `event` first, a field of the same name in their place, then the
        // other fields in their order.
        var line: [UInt8] = []
        line.reserveCapacity(256)
        for (index, name) in ["time", "level", "event"].enumerated() {
            line.append(contentsOf: index == 0 ? #"{""#.utf8 : #",""#.utf8)
            line.append(contentsOf: name.utf8)
            line.append(contentsOf: #"":"#.utf8)
            if let value = fields[name] {
                JSONWriter.write(value, into: &line)
            } else {
                switch index {
                case 0: JSONWriter.writeString(Clock.iso8601(now.seconds, milliseconds: now.milliseconds), into: &line)
                case 1: JSONWriter.writeString(level.description, into: &line)
                default: JSONWriter.writeString(event, into: &line)
                }
            }
        }
        for (key, value) in fields.members where key != "time" && key != "level" && key != "event" {
            line.append(0x2C)
            JSONWriter.writeString(key, into: &line)
            line.append(0x3A)
            JSONWriter.write(value, into: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        lock.withLock { _ in
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return }
                    offset += n
                }
            }
        }
    }
}

/// Keeps every line in memory (tests).
public final class MemoryLog: ServerLog {
    // A pthread mutex (`Locked`), which ThreadSanitizer sees, not the futex of the standard library's Mutex: the
    // HTTP threads and libmicrohttpd's logger write here at once.
    private let lines = Locked<[JSONValue]>([])

    public init() {}

    public func log(_ level: LogLevel, _ event: String, _ fields: JSONObject) {
        var object: JSONObject = ["level": .string(level.description), "event": .string(event)]
        for (key, value) in fields { object[key] = value }
        lines.withLock { $0.append(.object(object)) }
    }

    public var entries: [JSONValue] { lines.withLock { $0 } }
}
