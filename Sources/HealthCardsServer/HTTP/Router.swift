import HealthCardsCore

/// One segment of a route's path: a literal, or a named parameter its validator accepts.
public enum PathSegment: Sendable {
    case literal(String)
    case parameter(String, @Sendable (Substring) -> Bool)
}

/// One route: a method and path pattern, the most body bytes it reads, and its handler.
///
/// The limit is enforced by the front before the handler runs, on every path: a declared `Content-Length`
/// over it is answered 413 without reading the body, and a chunked body that grows past it is cut off
/// (`HTTPServer`); `Router.respond` checks it again for callers without a front.
public struct Route: Sendable {
    /// For the request log (`manifest`, `file`, `direct`, `health`); never the path, which may hold an id.
    public var name: String
    public var method: String
    public var pattern: [PathSegment]
    /// Most request body bytes.
    public var bodyLimit: Int
    /// Request headers a browser may send cross-origin (the CORS preflight's `Access-Control-Allow-Headers`).
    public var allowedHeaders: [String]
    public var handler: @Sendable (HTTPRequest) -> HTTPResponse

    public init(
        name: String, method: String, pattern: [PathSegment], bodyLimit: Int,
        allowedHeaders: [String] = ["Content-Type"],
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        self.name = name
        self.method = method
        self.pattern = pattern
        self.bodyLimit = bodyLimit
        self.allowedHeaders = allowedHeaders
        self.handler = handler
    }

    /// The parameters of `segments` when they match the pattern.
    func match(_ segments: [Substring]) -> [String: String]? {
        guard segments.count == pattern.count else { return nil }
        // The literals first, by their bytes, and nothing allocated: most routes a request is tried against
        // differ from its path in a literal (callgrind: routing was 11k instructions a location GET).
        for (segment, part) in zip(segments, pattern) {
            if case .literal(let text) = part, !segment.utf8.elementsEqual(text.utf8) { return nil }
        }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, pattern) {
            if case .parameter(let name, let valid) = part {
                guard valid(segment) else { return nil }
                parameters[name] = String(segment)
            }
        }
        return parameters
    }
}

/// Routes requests to handlers, answers CORS preflights, and puts the headers every answer carries on
/// every answer: `Cache-Control: no-store` (nothing here may be kept by a cache), CORS for browser viewers
/// (`Access-Control-Allow-Origin: *`, `Retry-After` readable), `X-Content-Type-Options: nosniff` and
/// `Referrer-Policy: no-referrer`.
///
/// `respond` is the whole server without sockets: tests call it as the front does.
public struct Router: Sendable {
    public var routes: [Route]
    /// Most body bytes of a request that matches no route (an answer needs none).
    public static let unmatchedBodyLimit = 0

    public init(routes: [Route]) { self.routes = routes }

    public enum Match {
        case route(Route, parameters: [String: String])
        /// A CORS preflight (`OPTIONS`) for a path some routes serve.
        case preflight([Route])
        /// The path is served, but not with this method.
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    /// Splits a path into segments after its leading `/`; nil for a path that does not start with `/`.
    static func segments(_ path: String) -> [Substring]? {
        // Split on the byte `/` (never part of another character in UTF-8): the offsets found in the contiguous
        // bytes, then each segment sliced once. (By Character, which walks grapheme clusters, it was a tenth of a
        // file request's instructions; by the generic `split` of the UTF-8 view, 4 %, by callgrind.)
        var path = path
        var ends: [Int] = []
        let starts = path.withUTF8 { bytes -> Bool in
            guard bytes.first == UInt8(ascii: "/") else { return false }
            for offset in 1..<bytes.count where bytes[offset] == UInt8(ascii: "/") { ends.append(offset) }
            ends.append(bytes.count)
            return true
        }
        guard starts else { return nil }
        let utf8 = path.utf8
        var segments: [Substring] = []
        segments.reserveCapacity(ends.count)
        var start = utf8.index(after: utf8.startIndex)
        for end in ends {
            let stop = utf8.index(utf8.startIndex, offsetBy: end)
            segments.append(path[start..<stop])
            if stop != utf8.endIndex { start = utf8.index(after: stop) }
        }
        return segments
    }

    public func match(method: String, path: String) -> Match {
        guard let segments = Self.segments(path) else { return .notFound }
        // The route of this method and path, without copying the others (nearly every request has one).
        for route in routes where route.method == method {
            if let parameters = route.match(segments) { return .route(route, parameters: parameters) }
        }
        var onPath: [(Route, [String: String])] = []
        for route in routes {
            if let parameters = route.match(segments) { onPath.append((route, parameters)) }
        }
        guard !onPath.isEmpty else { return .notFound }
        if let (route, parameters) = onPath.first(where: { $0.0.method == method }) {
            return .route(route, parameters: parameters)
        }
        // HEAD where GET is allowed: the GET's handler (the front sends its headers, never its body).
        if method == "HEAD", let (route, parameters) = onPath.first(where: { $0.0.method == "GET" }) {
            return .route(route, parameters: parameters)
        }
        if method == "OPTIONS" { return .preflight(onPath.map(\.0)) }
        return .methodNotAllowed(allowed: onPath.flatMap { $0.0.method == "GET" ? ["GET", "HEAD"] : [$0.0.method] })
    }

    /// The most body bytes a request for `method` and `path` may send.
    public func bodyLimit(method: String, path: String) -> Int {
        if case .route(let route, _) = match(method: method, path: path) { return route.bodyLimit }
        return Self.unmatchedBodyLimit
    }

    /// Answers a request: 404/405/preflight without a handler, 413 over the route's limit, else the handler's
    /// answer; then the common headers.
    public func respond(_ request: HTTPRequest) -> (response: HTTPResponse, route: String) {
        switch match(method: request.method, path: request.path) {
        case .notFound:
            return (Self.finish(.error(404, "not found", outcome: "no-route")), "none")
        case .methodNotAllowed(let allowed):
            var response = HTTPResponse.error(405, "method not allowed", outcome: "method")
            response.setHeader("Allow", (allowed + ["OPTIONS"]).joined(separator: ", "))
            return (Self.finish(response), "none")
        case .preflight(let routes):
            var response = HTTPResponse(status: 204, outcome: "preflight")
            response.setHeader(
                "Access-Control-Allow-Methods", (routes.map(\.method) + ["OPTIONS"]).joined(separator: ", "))
            let headers = routes.flatMap(\.allowedHeaders).reduce(into: [String]()) {
                if !$0.contains($1) { $0.append($1) }
            }
            response.setHeader("Access-Control-Allow-Headers", headers.joined(separator: ", "))
            response.setHeader("Access-Control-Max-Age", "600")
            return (Self.finish(response), "preflight")
        case .route(let route, let parameters):
            guard request.body.count <= route.bodyLimit else {
                return (Self.finish(Self.tooLarge(route.bodyLimit)), route.name)
            }
            var request = request
            request.parameters = parameters
            var response = route.handler(request)
            if let deferred = response.deferred { response = deferred.wait() }
            return (Self.finish(response), route.name)
        }
    }

    /// 413 for a body over `limit` bytes.
    public static func tooLarge(_ limit: Int) -> HTTPResponse {
        .error(
            413,
            limit == 0
                ? "this request takes no body (a GET or HEAD here carries none); send it without one"
                : "the request body is over \(limit) bytes", outcome: "too-large")
    }

    /// The headers every answer carries (made once, not for every answer).
    static let commonHeaders = [
        ("Cache-Control", "no-store"), ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", "Retry-After"), ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]

    /// The headers every answer carries, added to `response`.
    public static func finish(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        // Replacing a handler's own only when it has any (most have one or two headers, none of these).
        let common = Self.commonHeaders
        if response.headers.contains(where: { header in common.contains { sameHeaderName($0.0, header.name) } }) {
            for (name, value) in common { response.setHeader(name, value) }
        } else {
            response.headers.reserveCapacity(response.headers.count + common.count)
            for (name, value) in common { response.headers.append((name, value)) }
        }
        return response
    }
}
