import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP request as the handlers see it: the front (`HTTPServer`) has already matched its route and read
/// its body within the route's limit.
public struct HTTPRequest: Sendable {
    /// `GET`, `POST`, … as sent.
    public var method: String
    /// The path, percent-decoded, without the query.
    public var path: String
    /// Query parameters, decoded (`+` and `%20` are spaces); a name given twice keeps its first value.
    public var query: [String: String]
    /// Header values by lowercase name.
    public var headers: [String: String]
    public var body: [UInt8]
    /// The client's address (the proxy's, behind one), for logs and limits.
    public var peer: String
    /// The route's parameters (`{id}` segments) by name, filled in by the router.
    public var parameters: [String: String] = [:]

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = [], peer: String = "test"
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// One HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Headers in order; the server adds `Content-Length`, `Date` and the ones every answer carries.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// What the request log says happened (e.g. `served`, `wrong-passcode`), never a secret.
    public var outcome: String?
    /// The first 8 characters of the link id concerned, for the log.
    public var linkTag: String?
    /// When set, the answer is not this one but what `deferred` gives later, on another thread (the front
    /// suspends the connection meanwhile; `Router.respond` waits for it).
    public var deferred: DeferredResponse?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], outcome: String? = nil)
    {
        self.status = status
        self.headers = headers
        self.body = body
        self.outcome = outcome
    }

    /// A JSON body (`application/json`).
    public static func json(_ status: Int, _ value: JSONValue, outcome: String? = nil) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: JSONWriter.minified(value),
            outcome: outcome)
    }

    /// A JSON error body `{"error": message}`; the message must hold nothing secret.
    public static func error(_ status: Int, _ message: String, outcome: String? = nil) -> HTTPResponse {
        json(status, .object(["error": .string(message)]), outcome: outcome ?? "error")
    }

    /// An answer computed later by `work`, which is handed the function to call with it exactly once.
    public static func later(_ work: @escaping @Sendable (@escaping @Sendable (HTTPResponse) -> Void) -> Void)
        -> HTTPResponse
    {
        var response = HTTPResponse(status: 500, outcome: "deferred")
        response.deferred = DeferredResponse(work)
        return response
    }

    public func header(_ name: String) -> String? {
        headers.first { sameHeaderName($0.name, name) }?.value
    }

    /// Sets a header, replacing one of the same name.
    public mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { sameHeaderName($0.name, name) }
        headers.append((name, value))
    }

    /// The reason phrase of a status, for logs.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}

/// An answer that comes later: `run` starts the work and calls its argument once with the answer, from any thread.
public final class DeferredResponse: Sendable {
    let work: @Sendable (@escaping @Sendable (HTTPResponse) -> Void) -> Void

    init(_ work: @escaping @Sendable (@escaping @Sendable (HTTPResponse) -> Void) -> Void) { self.work = work }

    public func run(_ done: @escaping @Sendable (HTTPResponse) -> Void) { work(done) }

    /// Waits for the answer (callers without a front, such as tests).
    public func wait() -> HTTPResponse {
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        defer {
            sem_destroy(semaphore)
            semaphore.deallocate()
        }
        let box = Mutex<HTTPResponse?>(nil)
        let pointer = UnsafeSendable(semaphore)
        run { answer in
            box.withLock { $0 = answer }
            sem_post(pointer.value)
        }
        while sem_wait(semaphore) != 0 && errno == EINTR {}
        return box.withLock { $0 } ?? HTTPResponse.error(500, "the server failed", outcome: "failed")
    }
}

/// A pointer carried across threads where the caller guarantees its lifetime.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Whether two header names are the same (ASCII letters compared without case, RFC 9110 section 5.1), without
/// making lowercased copies.
func sameHeaderName(_ a: String, _ b: String) -> Bool {
    var a = a
    var b = b
    return a.withUTF8 { x in
        b.withUTF8 { y in
            guard x.count == y.count else { return false }
            for i in 0..<x.count where x[i] != y[i] {
                let p = x[i] | 0x20
                guard p == y[i] | 0x20, p >= UInt8(ascii: "a"), p <= UInt8(ascii: "z") else { return false }
            }
            return true
        }
    }
}
