import Testing

@testable import HealthCardsServer

/// `Router.segments` (the byte scan a request path is split with) agrees with the standard library's split of the
/// UTF-8 view on every kind of path: empty segments, a trailing `/`, characters of several bytes, no leading `/`;
/// and the router's match for a method finds the route the full scan found.
@Suite struct RouterSegmentsTests {
    static func reference(_ path: String) -> [String]? {
        guard path.utf8.first == UInt8(ascii: "/") else { return nil }
        return path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            String(Substring($0))
        }
    }

    @Test func segmentsAgreeWithTheStandardSplit() {
        var paths = [
            "/", "//", "///", "/a", "/a/", "/a//b", "/file/abc", "/shl/x/y/z/", "/é/ü/ß", "/\u{1F600}/x", "", "a/b",
            "/%2F/x", "/a b/c", "/\u{0}/x",
        ]
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("/ab/é\u{1F600}/%")
        for _ in 0..<500 {
            let length = Int.random(in: 0...12, using: &generator)
            paths.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for path in paths {
            #expect(
                Router.segments(path).map { $0.map(String.init) } == Self.reference(path), "\(path.debugDescription)")
        }
    }

    @Test func aMethodsRouteIsTheOneTheFullScanFinds() {
        func route(_ name: String, _ method: String, _ pattern: [PathSegment]) -> Route {
            Route(name: name, method: method, pattern: pattern, bodyLimit: 0) { _ in HTTPResponse(status: 200) }
        }
        let id = PathSegment.parameter("id") { !$0.isEmpty }
        let router = Router(routes: [
            route("get-any", "GET", [id]), route("post-link", "POST", [.literal("shl"), id]),
            route("get-link", "GET", [.literal("shl"), id]), route("health", "GET", [.literal("healthz")]),
        ])
        func name(_ method: String, _ path: String) -> String? {
            if case .route(let route, _) = router.match(method: method, path: path) { return route.name }
            return nil
        }
        #expect(name("GET", "/healthz") == "get-any")  // the first route in order that matches, as before
        #expect(name("POST", "/shl/abc") == "post-link")
        #expect(name("GET", "/shl/abc") == "get-link")
        #expect(name("HEAD", "/shl/abc") == "get-link")
        #expect(name("PUT", "/shl/abc") == nil)
        if case .methodNotAllowed(let allowed) = router.match(method: "PUT", path: "/shl/abc") {
            #expect(allowed == ["POST", "GET", "HEAD"])
        } else {
            Issue.record("PUT /shl/abc is not a 405")
        }
        if case .route(_, let parameters) = router.match(method: "POST", path: "/shl/abc") {
            #expect(parameters == ["id": "abc"])
        }
    }
}
