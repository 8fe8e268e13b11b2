// libFuzzer target: the link server's requests as the router gets them (method, path, query, body), answered
// by the real routes without sockets over a SQLite store holding a plain, a passcode and a U link; and the
// texts the server reads from its configuration and database (`DatabaseURL`, `BaseURL`, `PasscodeHash`).
// Also `$health-cards-issue` and its discovery (`HealthCardsIssueService`, authorization off, over a card store
// that knows one person, P-1), and the texts that operation reads: access tokens (`AccessTokens.verify`, against a
// key set of a fresh EC key) and FHIR dateTimes.
// Properties: every answer carries `Cache-Control: no-store` and CORS; a 404 for a link path is the one body;
// the server never answers 500 or 503 (its own store is there); a stored hash that reads writes back the same;
// every answer of a /fhir/ route is FHIR or JSON; no token made of the fuzzer's bytes passes; a dateTime's interval
// is never empty.
@testable import HealthCardsCore
@testable import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

final class FuzzClock: WallClock {
    func nowSeconds() -> Int64 { 1_800_000_000 }
}

/// The routes over a store made once, in a fresh temporary folder.
let fuzzRouter: Router = {
    var template = Array("/tmp/hc-fuzz-server-XXXXXX".utf8CString)
    let folder = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    let database = try! Database(
        url: .sqlite(path: folder + "/links.db"), role: .server, create: true, now: 1_800_000_000)
    let store = DatabaseLinkStore(database: database)
    let base = try! BaseURL("https://links.example.org/shl")
    // Links with known ids (A…, B…, C…: plain, passcode "pin", U), so that mutations reach every answer.
    let key = try! AES256Key.random()
    let card = try! JWE.encrypt(Array(#"{"verifiableCredential":["a.b.c"]}"#.utf8), key: key)
    let file = StoredFile(position: 0, contentType: JWE.smartHealthCard, jwe: card.compact, lastUpdated: 1_800_000_000)
    let pin = try! Array("pin".utf8).withUnsafeBytes { try PasscodeHash.make(passcode: $0, function: .pbkdf2SHA256(iterations: 1000)) }
    for (letter, flags) in [("A", ""), ("B", "P"), ("C", "LU")] {
        try! store.create(
            StoredLink(
                id: String(repeating: letter, count: 43), flags: flags, createdAt: 1_800_000_000,
                passcode: flags == "P" ? pin : nil, maxAttempts: flags == "P" ? 1000 : nil, files: [file]))
    }
    let service = LinkService(
        configuration: LinkService.Configuration(baseURL: base), store: store, clock: FuzzClock(), log: MemoryLog())
    let cards = DatabaseCardStore(database: database)
    _ = try! cards.load(
        CardRun(source: folder + "/out", runAt: 1, people: ["P-1"], cards: [], revoked: []), now: 1) { _, _, _ in false }
    let fhir = HealthCardsIssueService(
        configuration: .init(authorization: .disabledForTesting), store: cards, clock: FuzzClock(), log: MemoryLog())
    return Router(routes: service.routes + fhir.routes)
}()

/// A verifier of tokens signed by a key no input can hold.
let fuzzTokens: AccessTokens = {
    let key = try! P256Key.generate()
    let set = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"\#(Base64URL.encode(key.x))","y":"\#(Base64URL.encode(key.y))"}]}"#
    return try! AccessTokens(issuer: "https://auth.example.org", audience: "https://fhir.example.org", keySet: Array(set.utf8), source: "fuzz")
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Method, path and query up to the first three newlines; the rest is the body.
    let lines = bytes.split(separator: 0x0A, maxSplits: 3, omittingEmptySubsequences: false)
    let text = { (i: Int) in i < lines.count ? String(decoding: lines[i], as: UTF8.self) : "" }
    let methods = ["GET", "POST", "OPTIONS", "PUT", text(0)]
    let method = methods[Int(bytes.first ?? 0) % methods.count]
    var query: [String: String] = [:]
    if !text(2).isEmpty { query["recipient"] = text(2) }
    let body = lines.count > 3 ? Array(lines[3]) : []
    let (response, _) = fuzzRouter.respond(HTTPRequest(method: method, path: text(1), query: query, body: body))
    precondition(response.header("Cache-Control") == "no-store", "an answer without Cache-Control: no-store")
    precondition(response.header("Access-Control-Allow-Origin") == "*", "an answer without CORS")
    precondition(response.status < 500, "the server failed: \(response.status)")
    if response.status == 404, text(1).hasPrefix("/shl/"), LinkID.isValid(text(1).dropFirst(5)) {
        precondition(response.body == JSONWriter.minified(LinkService.notFoundBody), "a link 404 with another body")
    }
    if text(1).hasPrefix("/fhir/") {
        let type = response.header("Content-Type") ?? ""
        precondition(type == "application/fhir+json" || type == "application/json", "a FHIR answer of type \(type)")
    }
    for candidate in [text(0), text(1), String(decoding: bytes, as: UTF8.self)] {
        if case .granted = fuzzTokens.check(authorization: "Bearer " + candidate, now: 1_800_000_000) {
            preconditionFailure("a token passed")
        }
        if let date = FHIRDateTime(candidate) { precondition(date.latest >= date.earliest, "an empty dateTime interval") }
        _ = try? DatabaseURL(candidate)
        _ = try? BaseURL(candidate)
        if let hash = PasscodeHash(stored: candidate) {
            precondition(PasscodeHash(stored: hash.stored) == hash, "a stored hash does not read back the same")
        }
    }
    return 0
}
