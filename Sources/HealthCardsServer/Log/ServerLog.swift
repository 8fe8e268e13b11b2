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
    /// One request's line: the same as `log(request.level, "request", request.fields)` (the default), which a log
    /// may write without building the `JSONObject` (`JSONLinesLog` does: a request's line was 8 % of a location
    /// GET's instructions by callgrind).
    func logRequest(_ request: RequestLogLine)
}

extension ServerLog {
    public func logRequest(_ request: RequestLogLine) { log(request.level, "request", request.fields) }
}

/// What the line of one answered request says, in this order: method, route, status, outcome, link, ms (the
/// milliseconds from its head to its answer), bytes (of the answer's body), peer.
public struct RequestLogLine: Sendable {
    public var level: LogLevel
    /// At most 16 characters of the method as sent.
    public var method: String
    public var route: String
    public var status: Int
    public var outcome: String?
    /// The link's tag (`linkTag`), never its id.
    public var link: String?
    public var milliseconds: JSONNumber
    public var bytes: Int
    public var peer: String

    public init(
        level: LogLevel, method: String, route: String, status: Int, outcome: String?, link: String?,
        milliseconds: JSONNumber, bytes: Int, peer: String
    ) {
        self.level = level
        self.method = method
        self.route = route
        self.status = status
        self.outcome = outcome
        self.link = link
        self.milliseconds = milliseconds
        self.bytes = bytes
        self.peer = peer
    }

    /// The fields as a `JSONObject`, in the line's order.
    public var fields: JSONObject {
        var fields: JSONObject = [
            "method": .string(method), "route": .string(route), "status": .integer(Int64(status)),
        ]
        if let outcome { fields["outcome"] = .string(outcome) }
        if let link { fields["link"] = .string(link) }
        fields["ms"] = .number(milliseconds)
        fields["bytes"] = .integer(Int64(bytes))
        fields["peer"] = .string(peer)
        return fields
    }
}

extension ServerLog {
    public func info(_ event: String, _ fields: JSONObject = [:]) { log(.info, event, fields) }
    public func warning(_ event: String, _ fields: JSONObject = [:]) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: JSONObject = [:]) { log(.error, event, fields) }
}

/// How a log line names a link: `LogRedaction.fingerprint` of its id (12 base64url characters of its SHA-256),
/// enough to tell links apart and to find one in `link list`, nothing of the id itself.
public func linkTag(_ id: String) -> String { LogRedaction.fingerprint(id) }

/// One JSON object a line (`{"time":"2026-…Z","level":"info","event":"request",…}`), lines from several threads
/// never interleaved. It is also a `HealthCardsLogger`, so the library's own records (`LogRecord`) go to the same
/// stream.
///
/// With `bufferMilliseconds` above 0, `request` lines at `info` are gathered and written together by a thread of the
/// log's own at most that many milliseconds later (or at once past `bufferBytes`), the way nginx's `access_log …
/// buffer= flush=` does: one `write(2)` for many requests instead of one each under a lock every request thread
/// waited on (perf, 2026-12-06: the lock's spinning alone was 4 % of a location GET's CPU). Every other line
/// (start, stop, warnings, errors, a request answered 5xx) is written at once, after the lines gathered before
/// it, so the order is kept and nothing waits behind a failure. A crash (`kill -9`) loses at most the last
/// `bufferMilliseconds` of request lines; `close()` (and a clean stop's `stop` line) writes them. A buffered log's
/// flusher holds it until `close()`: close it when done.
public final class JSONLinesLog: ServerLog, HealthCardsLogger, @unchecked Sendable {
    private let fd: Int32
    private let clock: @Sendable () -> (seconds: Int64, milliseconds: Int)
    /// Most milliseconds a request line waits (0: each line is written at once).
    public let bufferMilliseconds: Int
    /// Gathered request lines past this many bytes are written at once.
    public static let bufferBytes = 32 << 10
    /// Most bytes of request lines held: past them a request line is written by its own thread, which waits for
    /// the write (when nothing reads the log, the request threads wait as they would without a buffer).
    public static let maxPendingBytes = 1 << 20
    /// Held while writing: the gathered lines are taken and written under it, so lines keep their order.
    private let writing = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Guards `pending`, `flusher` and `closed`; `due` wakes the flusher.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let due = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var pending: [UInt8] = []
    private var flusher: pthread_t?
    private var closed = false

    /// - Parameters:
    ///   - fd: the file descriptor written (2, standard error, by default; not closed here).
    ///   - clock: the time of each line: seconds since 1970 and milliseconds.
    ///   - bufferMilliseconds: most milliseconds a request line is held before it is written (0, the default:
    ///     every line at once; `healthcards serve` gives 50).
    public init(
        fd: Int32 = 2, clock: @escaping @Sendable () -> (seconds: Int64, milliseconds: Int) = JSONLinesLog.wallClock,
        bufferMilliseconds: Int = 0
    ) {
        self.fd = fd
        self.clock = clock
        self.bufferMilliseconds = max(0, bufferMilliseconds)
        pthread_mutex_init(writing, nil)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(due, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        close()
        pthread_cond_destroy(due)
        pthread_mutex_destroy(mutex)
        pthread_mutex_destroy(writing)
        due.deallocate()
        mutex.deallocate()
        writing.deallocate()
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
        emit(Self.line(clock(), level, event, fields), request: level == .info && event == "request")
    }

    public func logRequest(_ request: RequestLogLine) {
        emit(Self.requestLine(clock(), request), request: request.level == .info)
    }

    /// `line(now, request.level, "request", request.fields)`, written without the `JSONObject`.
    static func requestLine(_ now: (seconds: Int64, milliseconds: Int), _ request: RequestLogLine) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line.append(contentsOf: #"{"time":"#.utf8)
        JSONWriter.writeString(Clock.iso8601(now.seconds, milliseconds: now.milliseconds), into: &line)
        line.append(contentsOf: #","level":"#.utf8)
        JSONWriter.writeString(request.level.description, into: &line)
        line.append(contentsOf: #","event":"request","method":"#.utf8)
        JSONWriter.writeString(request.method, into: &line)
        line.append(contentsOf: #","route":"#.utf8)
        JSONWriter.writeString(request.route, into: &line)
        line.append(contentsOf: #","status":"#.utf8)
        line.append(contentsOf: String(request.status).utf8)
        if let outcome = request.outcome {
            line.append(contentsOf: #","outcome":"#.utf8)
            JSONWriter.writeString(outcome, into: &line)
        }
        if let link = request.link {
            line.append(contentsOf: #","link":"#.utf8)
            JSONWriter.writeString(link, into: &line)
        }
        line.append(contentsOf: #","ms":"#.utf8)
        line.append(contentsOf: request.milliseconds.lexeme.utf8)
        line.append(contentsOf: #","bytes":"#.utf8)
        line.append(contentsOf: String(request.bytes).utf8)
        line.append(contentsOf: #","peer":"#.utf8)
        JSONWriter.writeString(request.peer, into: &line)
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    /// Writes `line`, gathered with the others when it is a request's at `info` and the log has a buffer.
    private func emit(_ line: [UInt8], request: Bool) {
        if bufferMilliseconds > 0 && request {
            pthread_mutex_lock(mutex)
            // Past `maxPendingBytes` (standard error not read: a stalled journal, a pipe nobody drains) the line is
            // written as without a buffer, so this thread waits for the write as it did before: memory stays bounded.
            if !closed && pending.count < Self.maxPendingBytes {
                let wasEmpty = pending.isEmpty
                pending.append(contentsOf: line)
                if flusher == nil { startFlusher() }
                // One wake-up a batch (the flusher then waits out its interval), and one when it is full.
                if wasEmpty || pending.count >= Self.bufferBytes { pthread_cond_signal(due) }
                pthread_mutex_unlock(mutex)
                return
            }
            pthread_mutex_unlock(mutex)
        }
        writeOut(then: line)
    }

    /// Writes the gathered lines now.
    public func flush() { writeOut(then: []) }

    /// Writes the gathered lines and ends the flusher; later request lines are written at once.
    public func close() {
        pthread_mutex_lock(mutex)
        closed = true
        let thread = flusher
        flusher = nil
        pthread_cond_signal(due)
        pthread_mutex_unlock(mutex)
        if let thread { pthread_join(thread, nil) }
        flush()
    }

    /// The gathered lines, then `line`, in one `write(2)` where it takes them (under `writing`: in order).
    private func writeOut(then line: [UInt8]) {
        pthread_mutex_lock(writing)
        defer { pthread_mutex_unlock(writing) }
        pthread_mutex_lock(mutex)
        var bytes = pending
        pending.removeAll(keepingCapacity: true)
        pthread_mutex_unlock(mutex)
        if bytes.isEmpty { bytes = line } else { bytes.append(contentsOf: line) }
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Starts the flusher (`mutex` held).
    private func startFlusher() {
        var handle = pthread_t()
        let box = Unmanaged.passUnretained(self).toOpaque()
        // The thread holds the log while it runs (a buffered log lives until `close()`, which joins it).
        let created = pthread_create(
            &handle, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<JSONLinesLog>.fromOpaque(argument).takeUnretainedValue().flushLoop()
                return nil
            }, box)
        // Without a thread, request lines are written at once (as with no buffer).
        if created == 0 { flusher = handle } else { closed = true }
    }

    /// The flusher: waits for a first gathered line, lets `bufferMilliseconds` pass (or the buffer fill), writes.
    private func flushLoop() {
        pthread_mutex_lock(mutex)
        while !closed {
            if pending.isEmpty {
                pthread_cond_wait(due, mutex)
                continue
            }
            var limit = timespec()
            clock_gettime(CLOCK_MONOTONIC, &limit)
            limit.tv_nsec += bufferMilliseconds % 1000 * 1_000_000
            limit.tv_sec += bufferMilliseconds / 1000 + limit.tv_nsec / 1_000_000_000
            limit.tv_nsec %= 1_000_000_000
            while !closed && pending.count < Self.bufferBytes {
                if pthread_cond_timedwait(due, mutex, &limit) == ETIMEDOUT { break }
            }
            pthread_mutex_unlock(mutex)
            flush()
            pthread_mutex_lock(mutex)
        }
        pthread_mutex_unlock(mutex)
    }

    /// One line: `time`, `level` and `event` first, a field of the same name in their place, then the other
    /// fields in their order, and a line feed.
    static func line(
        _ now: (seconds: Int64, milliseconds: Int), _ level: LogLevel, _ event: String, _ fields: JSONObject
    ) -> [UInt8] {
        // Written straight into the line (a request's line was a tenth of its instructions when built as a second
        // JSONObject).
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
        return line
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

/// A warning that every request can raise at once (the database away fails them all): logged at most once in each
/// second of the caller's clock, the next one carrying `suppressed`, the number left out since. Shared by the
/// threads of one service.
final class OncePerSecond: Sendable {
    private let state = Locked<(second: Int64, suppressed: Int)>((Int64.min, 0))

    /// Logs `event` at warning level with `fields` unless one was logged in the second `now` (seconds of the clock).
    func warning(_ log: ServerLog, _ event: String, _ fields: JSONObject, now: Int64) {
        let left: Int? = state.withLock { state in
            if state.second == now {
                state.suppressed += 1
                return nil
            }
            let left = state.suppressed
            state = (now, 0)
            return left
        }
        guard let left else { return }
        var fields = fields
        if left > 0 { fields["suppressed"] = .integer(Int64(left)) }
        log.warning(event, fields)
    }
}
