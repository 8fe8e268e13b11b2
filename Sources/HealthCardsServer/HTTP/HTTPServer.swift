internal import CMicroHTTPD
import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP/1.1 front of the server: libmicrohttpd's daemon (owned here: started by `start`, stopped by
/// `stop`), handing each request to a `Router` on the daemon's own threads (blocking database work stays on
/// them, never on Swift's cooperative pool).
///
/// Bounds on hostile clients, all enforced before a handler runs:
/// - a body over the route's limit: 413 for a declared `Content-Length`, without reading the body; a chunked
///   body is cut off (the connection closed) once it passes the limit;
/// - a request line and headers over about `maxHeaderBytes`: libmicrohttpd answers 431 (414 for a long URL), or
///   just over it closes the connection without an answer;
/// - slow clients: a connection idle for `connectionTimeoutSeconds` (reading headers, a body, or between
///   requests) is closed, and one whose request (line, headers and body) is not all in within
///   `requestDeadlineSeconds` is closed too (a watcher thread shuts its socket down), however slowly it trickles;
/// - connections: at most `maxConnections` in all and `maxConnectionsPerClient` from one address; more are
///   refused at accept;
/// - a handler may answer later (`HTTPResponse.deferred`: passcode hashing on its own pool): the connection is
///   suspended meanwhile, so the request threads go on answering other requests;
/// - pipelining: requests on one connection are answered one after another, each within the connection's
///   memory; after `maxRequestsPerConnection` the answer says `Connection: close` and the connection ends.
///
/// `stop` stops accepting, lets requests in flight finish within a bound, then closes every connection.
public final class HTTPServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// An IPv4 or IPv6 literal (behind a proxy: `127.0.0.1`).
        public var address = "127.0.0.1"
        /// 0 for an ephemeral port (`start` returns the one bound).
        public var port: UInt16 = 8080
        /// Threads that run requests, each with its own event loop.
        public var threads = 4
        public var maxConnections = 1024
        /// At most a sixteenth of `maxConnections` by default: one address (or a few) cannot take every
        /// connection, and each slow one is closed at `requestDeadlineSeconds`.
        public var maxConnectionsPerClient = 64
        /// Seconds a connection may be idle (never 0: "no timeout" is not offered).
        public var connectionTimeoutSeconds = 15
        /// Seconds a request's line, headers and body may take in all, however the bytes trickle in (counted from
        /// the connection's start, or from the end of the previous answer on a kept-alive connection); past it the
        /// connection is closed. Not per read: a client sending one byte a second is closed at the deadline.
        public var requestDeadlineSeconds = 30
        /// About the most bytes of request line and headers: libmicrohttpd's memory per connection is this and 2 KiB
        /// (for the answer's headers).
        public var maxHeaderBytes = 16 * 1024
        public var maxRequestsPerConnection = 1000
        public var listenBacklog = 256

        public init() {}

        /// What is wrong with a setting (0, or out of range), or nil.
        public var problem: String? {
            if threads < 1 || threads > 256 { return "threads must be 1 to 256, not \(threads)" }
            if maxConnections < 1 || maxConnections > 65536 { return "the connection limit must be 1 to 65536" }
            if maxConnectionsPerClient < 1 || maxConnectionsPerClient > maxConnections {
                return "the per-client connection limit must be 1 to the connection limit (\(maxConnections))"
            }
            if connectionTimeoutSeconds < 1 || connectionTimeoutSeconds > 3600 {
                return "the connection timeout must be 1 to 3600 seconds (there is no 'never')"
            }
            if requestDeadlineSeconds < 1 || requestDeadlineSeconds > 3600 {
                return "the request deadline must be 1 to 3600 seconds (there is no 'never')"
            }
            if maxHeaderBytes < 2048 || maxHeaderBytes > 1 << 20 {
                return "the header limit must be 2048 to 1048576 bytes"
            }
            if maxRequestsPerConnection < 1 { return "requests per connection must be at least 1" }
            return nil
        }
    }

    /// Most bytes of an over-long body without a declared length read (and dropped) so that it can be answered
    /// 413; past this the connection is closed.
    public static let maxDiscardedBytes = 64 * 1024

    public let configuration: Configuration
    public let router: Router
    public let log: ServerLog
    private var daemon: OpaquePointer?
    private var logger = CMHD_logger()
    private let inFlight = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Requests answered (for tests and the stop message).
    private let answered = Atomic<Int>(0)
    /// Connections suspended while a deferred answer is computed (libmicrohttpd must have none at its stop).
    private let suspended = Atomic<Int>(0)
    /// Connections closed by the request deadline.
    private let deadlineClosed = Atomic<Int>(0)
    /// Open connections whose request is being read, for the deadline watcher. Taken by the watcher and by the
    /// connection-closed callback, which libmicrohttpd calls before it closes the socket: the watcher never
    /// shuts down a descriptor that already belongs to another connection.
    private let reading = Locked<[ObjectIdentifier: ConnectionState]>([:])
    private var watcher: pthread_t?
    private let watching = Atomic<Bool>(false)
    /// Counts requests by route and status and their latency (`/metrics`), when given.
    public let metrics: ServerMetrics?

    public init(configuration: Configuration, router: Router, log: ServerLog, metrics: ServerMetrics? = nil) {
        self.configuration = configuration
        self.router = router
        self.log = log
        self.metrics = metrics
    }

    /// Connections the request deadline closed so far.
    public var connectionsClosedByDeadline: Int { deadlineClosed.load(ordering: .acquiring) }

    deinit { stop(graceSeconds: 0) }

    /// Starts listening and serving.
    /// - Returns: the port bound.
    /// - Throws: `HealthCardError(.configuration)` for a bad setting, `.io` when the address cannot be bound.
    @discardableResult
    public func start() throws(HealthCardError) -> UInt16 {
        if let problem = configuration.problem { throw HealthCardError(.configuration, problem) }
        logger.context = Unmanaged.passUnretained(self).toOpaque()
        logger.function = { context, message in
            guard let context, let message else { return }
            let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
            server.log.warning("http", ["message": .string(scrubbed(String(cString: message)))])
        }
        var error = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let started = configuration.address.withCString { address -> OpaquePointer? in
            var config = CMHD_config(
                address: address, port: configuration.port, threads: UInt32(configuration.threads),
                connection_limit: UInt32(configuration.maxConnections),
                per_client_limit: UInt32(configuration.maxConnectionsPerClient),
                timeout_seconds: UInt32(configuration.connectionTimeoutSeconds),
                memory_limit: configuration.maxHeaderBytes + 2048, backlog: UInt32(configuration.listenBacklog))
            return withUnsafeMutablePointer(to: &logger) { loggerPointer in
                CMHD_start(
                    &config, accessCallback, context, completedCallback, context, connectionCallback, context,
                    loggerPointer, &error, error.count)
            }
        }
        guard let started else {
            throw HealthCardError(
                .io, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        daemon = started
        startWatcher()
        return CMHD_bound_port(started)
    }

    // MARK: the request deadline

    /// What the server keeps about one connection (its socket context).
    final class ConnectionState: Sendable {
        let fd: Int32
        /// Requests answered on it.
        let requests = Atomic<Int>(0)
        /// Monotonic milliseconds when its current request began to be read; 0 while none is (a handler runs, or
        /// an answer is being sent).
        let readingSince = Atomic<Int64>(0)
        init(fd: Int32) { self.fd = fd }
    }

    static func nowMilliseconds() -> Int64 { Int64(Clock.monotonicSeconds() * 1000) }

    private func startWatcher() {
        watching.store(true, ordering: .sequentiallyConsistent)
        var thread = pthread_t()
        // Unretained: `stop` (also from deinit) joins the thread before the server goes.
        let box = Unmanaged.passUnretained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<HTTPServer>.fromOpaque(argument).takeUnretainedValue().watch()
                return nil
            }, box)
        if created == 0 {
            watcher = thread
        } else {
            watching.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Every 100 ms: shuts down the socket of each connection whose request has been read for longer than the
    /// deadline (libmicrohttpd then sees the end of the stream and closes the connection itself).
    private func watch() {
        let limit = Int64(configuration.requestDeadlineSeconds) * 1000
        while watching.load(ordering: .relaxed) {
            usleep(100_000)
            let now = Self.nowMilliseconds()
            var closed = 0
            reading.withLock { connections in
                for connection in connections.values {
                    let since = connection.readingSince.load(ordering: .relaxed)
                    guard since > 0, now - since > limit else { continue }
                    connection.readingSince.store(0, ordering: .relaxed)
                    // Counted before the socket is shut down: whoever sees the close sees it counted.
                    deadlineClosed.add(1, ordering: .releasing)
                    shutdown(connection.fd, Int32(SHUT_RDWR))
                    closed += 1
                }
            }
            if closed > 0 {
                log.warning(
                    "deadline",
                    [
                        "closed": .integer(Int64(closed)),
                        "reason": .string(
                            "requests not read within \(configuration.requestDeadlineSeconds) s (slow clients)"),
                    ])
            }
        }
    }

    private func stopWatcher() {
        guard let thread = watcher else { return }
        watching.store(false, ordering: .sequentiallyConsistent)
        pthread_join(thread, nil)
        watcher = nil
    }

    /// Requests being handled now.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Stops: no new connections; answers already started finish (each says `Connection: close`) for up to
    /// `graceSeconds`; then every connection is closed and the daemon's threads end.
    /// - Returns: the requests still unanswered when the grace ran out (0 on a clean stop).
    @discardableResult
    public func stop(graceSeconds: Double) -> Int {
        guard let daemon else { return 0 }
        stopping.store(true, ordering: .sequentiallyConsistent)
        let listening = MHD_quiesce_daemon(daemon)
        let deadline = Clock.monotonicSeconds() + max(0, graceSeconds)
        while inFlight.load(ordering: .sequentiallyConsistent) > 0 && Clock.monotonicSeconds() < deadline {
            usleep(5_000)
        }
        let left = inFlight.load(ordering: .sequentiallyConsistent)
        // A suspended connection is waiting for a deferred answer (a passcode on its pool, which always ends):
        // libmicrohttpd must not be stopped with one.
        while suspended.load(ordering: .sequentiallyConsistent) > 0 { usleep(5_000) }
        stopWatcher()
        MHD_stop_daemon(daemon)
        if listening >= 0 { close(listening) }
        self.daemon = nil
        return left
    }

    // MARK: requests

    /// What one request carries between the daemon's calls.
    final class RequestState {
        let method: String
        let path: String
        let started = Clock.monotonicSeconds()
        var route: Route?
        var parameters: [String: String] = [:]
        var limit = 0
        var body: [UInt8] = []
        var tooLarge = false
        var discarded = 0
        /// A deferred answer, once computed (the connection is resumed to send it).
        var ready: HTTPResponse?
        var waiting = false
        var routeName = "none"
        /// The headers as received (read once, when they are in), and the client's address (formatted once).
        var headers: [(name: String, value: String)] = []
        var peer: String?

        init(method: String, path: String) {
            self.method = method
            self.path = path
        }
    }

    fileprivate func access(
        _ connection: OpaquePointer, _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
        _ upload: UnsafePointer<CChar>?, _ uploadSize: UnsafeMutablePointer<Int>,
        _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        // The path held `%00`, or the target a NUL byte (seen before libmicrohttpd decoded it, `CMHD_nul_in_path`):
        // the path and the query, read as C strings, end there, so `/shl/ID%00zzz` would be routed as `/shl/ID`.
        let nulInPath = context.pointee == CMHD_nul_in_path
        if nulInPath { context.pointee = nil }
        guard let stored = context.pointee else {
            // Headers are in: match the route and check the declared length before any body is read.
            let state = RequestState(
                method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "")
            context.pointee = Unmanaged.passRetained(state).toOpaque()  // released in `completed`
            inFlight.add(1, ordering: .sequentiallyConsistent)
            if nulInPath {
                return answer(
                    connection, state,
                    Router.finish(
                        .error(
                            400,
                            "the URL holds a NUL (%00 in its path, or a NUL byte), which no URL of this server has",
                            outcome: "bad-path")), route: "none")
            }
            // Two Content-Length headers that differ: which one frames the body is ambiguous (request smuggling
            // through a proxy that reads the other), so the request is refused before any of it is read.
            state.headers = pairs(connection, .HEADER_KIND)
            let lengths = state.headers.filter { sameHeaderName($0.name, "Content-Length") }.map(\.value)
            if Set(lengths.map { $0.filter { $0 != " " && $0 != "\t" } }).count > 1 {
                return answer(
                    connection, state,
                    Router.finish(
                        .error(
                            400, "the request has \(lengths.count) Content-Length headers that differ; send one",
                            outcome: "conflicting-length")), route: "none")
            }
            guard case .route(let route, let parameters) = router.match(method: state.method, path: state.path)
            else {
                // No handler will read a body: 404, 405 or the preflight now, whatever body is declared (the
                // connection is closed after the answer when a body is left unread).
                let (response, name) = router.respond(
                    HTTPRequest(method: state.method, path: state.path, peer: peer(connection)))
                return answer(connection, state, response, route: name)
            }
            state.route = route
            state.parameters = parameters
            state.limit = route.bodyLimit
            if let declared = value(connection, .HEADER_KIND, "Content-Length"), let length = Int(declared),
                length > state.limit
            {
                // Answered before the body is read; libmicrohttpd then closes the connection.
                return answer(connection, state, Router.finish(Router.tooLarge(state.limit)), route: route.name)
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(stored).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            if !state.tooLarge && state.body.count + count > state.limit { state.tooLarge = true }
            if state.tooLarge {
                // A body without a declared length that passes the limit: read on and drop it, so that the
                // answer can be a 413 (none can be queued while a body is read), but only so far: past
                // `maxDiscardedBytes` the connection is closed without an answer.
                state.discarded += count
                guard state.discarded <= Self.maxDiscardedBytes else {
                    logRequest(
                        state, status: 413, outcome: "too-large-closed", route: state.route?.name ?? "none",
                        peer: peer(connection))
                    return .NO
                }
                return .YES
            }
            if let upload {
                upload.withMemoryRebound(to: UInt8.self, capacity: count) {
                    state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            }
            return .YES
        }
        if state.tooLarge {
            return answer(
                connection, state, Router.finish(Router.tooLarge(state.limit)), route: state.route?.name ?? "none")
        }
        guard let route = state.route else {
            let (response, name) = router.respond(
                HTTPRequest(method: state.method, path: state.path, peer: peer(connection)))
            return answer(connection, state, response, route: name)
        }
        if state.waiting {
            // Resumed: the deferred answer is in.
            guard let ready = state.ready else { return .YES }
            state.waiting = false
            return answer(connection, state, ready, route: route.name)
        }
        // The whole request is in: the deadline no longer runs for it.
        connectionState(connection)?.readingSince.store(0, ordering: .relaxed)
        let (arguments, argumentsAreText) = collect(connection, .GET_ARGUMENT_KIND)
        guard argumentsAreText else {
            // A query value a handler reads (a `U` link's recipient, recorded) must be what the client sent: bytes
            // that are no UTF-8 text would reach it with U+FFFD in their place.
            let refused = HTTPResponse.error(
                400,
                "the query holds percent-escaped bytes that are not UTF-8 text (such as %ff or half a character); send "
                    + "its values as UTF-8, percent-encoded", outcome: "bad-query")
            return answer(connection, state, Router.finish(refused), route: route.name)
        }
        var seen = Set<String>()
        if let twice = arguments.first(where: { !seen.insert($0.name).inserted }) {
            // Which one a handler would take is a guess (a manifest body's duplicate member is refused too).
            let refused = HTTPResponse.error(
                400,
                "the query gives \(Quote.text(ControlCharacters.escaped(twice.name))) more than once; give each "
                    + "parameter once", outcome: "bad-query")
            return answer(connection, state, Router.finish(refused), route: route.name)
        }
        var request = HTTPRequest(
            method: state.method, path: state.path, query: Self.dictionary(arguments, lowercased: false),
            headers: Self.dictionary(state.headers, lowercased: true), body: state.body, peer: peer(connection, state))
        request.parameters = state.parameters
        let response = route.handler(request)
        if let deferred = response.deferred {
            // Answered later, on another thread: the connection waits suspended, this thread goes on serving.
            state.waiting = true
            suspended.add(1, ordering: .sequentiallyConsistent)
            MHD_suspend_connection(connection)
            // The request's state is kept until the completed callback (after the resume); the connection is
            // libmicrohttpd's until then too.
            let box = UnsafeSendable((Unmanaged.passRetained(state), connection))
            deferred.run { [self] answer in
                let state = box.value.0.takeRetainedValue()
                state.ready = Router.finish(answer)
                MHD_resume_connection(box.value.1)
                suspended.subtract(1, ordering: .sequentiallyConsistent)
            }
            return .YES
        }
        return answer(connection, state, Router.finish(response), route: route.name)
    }

    private func connectionState(_ connection: OpaquePointer) -> ConnectionState? {
        CMHD_socket_context(connection).map { Unmanaged<ConnectionState>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Queues `response` and logs the request.
    private func answer(_ connection: OpaquePointer, _ state: RequestState, _ response: HTTPResponse, route: String)
        -> MHD_Result
    {
        let served = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let served else { return .NO }
        defer { MHD_destroy_response(served) }
        // `withCString` lends a native string's own bytes; passing the String converts it to a new array each.
        for (name, value) in response.headers {
            _ = name.withCString { name in value.withCString { value in MHD_add_response_header(served, name, value) } }
        }
        var close = stopping.load(ordering: .relaxed)
        if let counter = connectionState(connection) {
            counter.readingSince.store(0, ordering: .relaxed)
            if counter.requests.add(1, ordering: .relaxed).newValue >= configuration.maxRequestsPerConnection {
                close = true
            }
        }
        if close { MHD_add_response_header(served, "Connection", "close") }
        let result = MHD_queue_response(connection, UInt32(response.status), served)
        answered.add(1, ordering: .relaxed)
        logRequest(
            state, status: response.status, outcome: response.outcome, route: route, peer: peer(connection, state),
            link: response.linkTag,
            bytes: response.body.count)
        return result
    }

    private func logRequest(
        _ state: RequestState, status: Int, outcome: String?, route: String, peer: String, link: String? = nil,
        bytes: Int = 0
    ) {
        let seconds = Clock.monotonicSeconds() - state.started
        log.logRequest(
            RequestLogLine(
                level: status >= 500 ? .error : .info, method: String(state.method.prefix(16)), route: route,
                status: status, outcome: outcome, link: link,
                milliseconds: JSONNumber(thousandths: max(0, Int64((seconds * 1_000_000).rounded()))), bytes: bytes,
                peer: peer))
        metrics?.request(route: route, status: status, seconds: seconds)
    }

    fileprivate func completed(
        _ connection: OpaquePointer?, _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) {
        // The next request on this connection is being read from now on (its deadline runs).
        if let connection {
            connectionState(connection)?.readingSince.store(Self.nowMilliseconds(), ordering: .relaxed)
        }
        guard let context, let stored = context.pointee else { return }
        context.pointee = nil
        // A request whose path held `%00` and that ended before its headers were in: no state was made for it.
        guard stored != CMHD_nul_in_path else { return }
        Unmanaged<RequestState>.fromOpaque(stored).release()
        inFlight.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// The client's address, formatted once a request.
    private func peer(_ connection: OpaquePointer, _ state: RequestState) -> String {
        if let peer = state.peer { return peer }
        let peer = peer(connection)
        state.peer = peer
        return peer
    }

    private func peer(_ connection: OpaquePointer) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            guard let base = buffer.baseAddress, CMHD_client_address(connection, base, buffer.count) == 0 else {
                return "unknown"
            }
            return String(cString: base)
        }
    }

    private func value(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, kind, name).map { String(cString: $0) }
    }

    /// Every (name, value) of one kind (headers, query arguments), in the order libmicrohttpd holds them.
    private func pairs(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(name: String, value: String)] {
        collect(connection, kind).pairs
    }

    /// The (name, value) pairs of one kind, and whether every name and value was UTF-8 text (one that was not is
    /// kept with U+FFFD in place of its bad bytes).
    private func collect(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> (
        pairs: [(name: String, value: String)], text: Bool
    ) {
        final class Collected {
            var pairs: [(name: String, value: String)] = []
            var text = true
        }
        let collected = Collected()
        withExtendedLifetime(collected) {
            // With their lengths: a query value decoded from `%00` holds a NUL, which a C string would end at (a
            // `U` link's `?recipient=a%00b` was recorded as `a`); the handlers then see, and refuse, the NUL.
            _ = MHD_get_connection_values_n(
                connection, kind,
                { context, _, key, keySize, value, valueSize in
                    guard let context, let key else { return .YES }
                    let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                    func text(_ start: UnsafePointer<CChar>, _ count: Int) -> String {
                        let bytes = UnsafeRawBufferPointer(start: start, count: count)
                        if let valid = String(validating: bytes, as: UTF8.self) { return valid }
                        collected.text = false
                        return String(decoding: bytes, as: UTF8.self)
                    }
                    collected.pairs.append((text(key, keySize), value.map { text($0, valueSize) } ?? ""))
                    return .YES
                }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return (collected.pairs, collected.text)
    }

    /// (name, value) pairs as a dictionary; the first of a repeated name is kept.
    static func dictionary(_ pairs: [(name: String, value: String)], lowercased: Bool) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in pairs {
            let key = lowercased ? name.lowercased() : name
            if values[key] == nil { values[key] = value }
        }
        return values
    }

    fileprivate func connectionEvent(
        _ connection: OpaquePointer?, _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, started: Bool
    ) {
        guard let context else { return }
        if started {
            let state = ConnectionState(fd: connection.map { CMHD_connection_fd($0) } ?? -1)
            state.readingSince.store(Self.nowMilliseconds(), ordering: .relaxed)
            context.pointee = Unmanaged.passRetained(state).toOpaque()
            if state.fd >= 0 { reading.withLock { $0[ObjectIdentifier(state)] = state } }
        } else if let stored = context.pointee {
            // Before libmicrohttpd closes the socket: the watcher cannot shut down a reused descriptor.
            let state = Unmanaged<ConnectionState>.fromOpaque(stored).takeRetainedValue()
            _ = reading.withLock { $0.removeValue(forKey: ObjectIdentifier(state)) }
            context.pointee = nil
        }
    }

    /// libmicrohttpd's version.
    public static var libraryVersion: String { String(cString: CMHD_version()) }
}

/// `text` with every run of 40 or more base64url characters cut to its first 8 and `…`: a message from
/// libmicrohttpd that quoted a URL would otherwise put a link id (43 characters) in the log.
func scrubbed(_ text: String) -> String {
    var out = ""
    var run = ""
    func flush() {
        out += run.count >= 40 ? String(run.prefix(8)) + "…" : run
        run = ""
    }
    for character in text {
        if character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_") {
            run.append(character)
        } else {
            flush()
            out.append(character)
        }
    }
    flush()
    return out
}

private let accessCallback: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, upload, uploadSize, requestContext in
    guard let context, let connection, let uploadSize, let requestContext else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.access(connection, url, method, upload, uploadSize, requestContext)
}

private let completedCallback: MHD_RequestCompletedCallback = { context, connection, requestContext, _ in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().completed(connection, requestContext)
}

private let connectionCallback: MHD_NotifyConnectionCallback = { context, connection, socketContext, event in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().connectionEvent(
        connection, socketContext, started: event == .CONNECTION_NOTIFY_STARTED)
}
