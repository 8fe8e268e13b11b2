import Foundation
import HealthCardsCore
import HealthCardsServer
import Synchronization
import Testing

/// A clock the in-process server tests move by hand: lifetimes, polling, expiry and budgets to the second, without
/// waiting.
final class ManualClock: WallClock {
    let seconds: Atomic<Int64>
    init(_ start: Int64) { seconds = Atomic(start) }
    var now: Int64 { seconds.load(ordering: .relaxed) }
    func nowSeconds() -> Int64 { now }
    func advance(_ by: Int64) { seconds.add(by, ordering: .relaxed) }
}

/// The server `healthcards serve` runs, built by the library's `ServerApplication` on a SQLite file in a temporary
/// folder with a `ManualClock`, and called in the test's process through its router (hummingbird's
/// `app.test(.router)`): the same routes and handlers as over a socket, without one. Public API only.
final class ServedApplication {
    static let start: Int64 = 1_800_000_000
    static let base = "https://links.example.org/shl"
    /// The spec's example files (the SMART Health Cards specification's examples, kept in the repository).
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/spec-examples")

    let dir: URL
    let clock: ManualClock
    let database: Database
    let store: DatabaseLinkStore
    let publisher: LinkPublisher
    let log = MemoryLog()
    let app: ServerApplication
    /// The spec's example card file (example 00), as a link file.
    let card: [UInt8]

    init(
        issue: HealthCardsIssueService.Configuration? = nil,
        _ configure: (inout LinkService.Configuration) -> Void = { _ in }
    ) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        clock = ManualClock(Self.start)
        database = try Database(
            url: .sqlite(path: dir.appendingPathComponent("links.db").path), role: .server, create: true,
            now: Self.start)
        store = DatabaseLinkStore(database: database)
        let baseURL = try BaseURL(Self.base)
        publisher = LinkPublisher(store: store, baseURL: baseURL)
        var links = LinkService.Configuration(baseURL: baseURL)
        configure(&links)
        var options = ServerApplication.Options(links: links, issue: issue)
        options.passcodeChecksAtOnce = 2
        app = ServerApplication(options: options, database: database, clock: clock, log: log)
        card = try Self.example("example-00-e-file.smart-health-card")
    }

    deinit {
        app.stop()
        database.close()
        try? FileManager.default.removeItem(at: dir)
    }

    static func example(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: examples.appendingPathComponent(name)))
    }

    /// A cheap passcode hash: these tests are about counting, not the hash's cost.
    static func passcode(_ text: String, attempts: Int) -> LinkPublisher.Options {
        var options = LinkPublisher.Options()
        options.passcode = Array(text.utf8).withUnsafeBytes { SecretBytes(copying: $0) }
        options.passcodeFunction = .pbkdf2SHA256(iterations: 1000)
        options.maxAttempts = attempts
        return options
    }

    func create(_ options: LinkPublisher.Options = .init(), files: [LinkContent]? = nil) throws
        -> LinkPublisher.Created
    {
        try publisher.create(
            files ?? [LinkContent(contentType: JWE.smartHealthCard, bytes: card)], options: options, now: clock.now)
    }

    func respond(
        _ method: String, _ path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: String = "", peer: String = "192.0.2.1"
    ) -> HTTPResponse {
        var request = HTTPRequest(method: method, path: path, query: query, body: Array(body.utf8))
        request.headers = Dictionary(uniqueKeysWithValues: headers.map { ($0.key.lowercased(), $0.value) })
        request.peer = peer
        return app.respond(request)
    }

    /// A manifest request for link `id`.
    func post(_ id: String, _ body: String, peer: String = "192.0.2.1") -> HTTPResponse {
        respond("POST", "/shl/\(id)", body: body, peer: peer)
    }

    func get(_ path: String, query: [String: String] = [:], peer: String = "192.0.2.1") -> HTTPResponse {
        respond("GET", path, query: query, peer: peer)
    }

    /// The path of a location URL (the router sees paths, the proxy in front has the host).
    func path(_ location: String) -> String { String(location.dropFirst("https://links.example.org".count)) }

    /// The outcomes recorded for a link, in order.
    func outcomes(_ id: String) throws -> [String] { try store.audit(linkID: id).map(\.outcome) }

    static func json(_ response: HTTPResponse) throws -> JSONValue { try JSONParser.parse(response.body) }

    /// Decrypts a JWE with a link's key (the receiver's side): its content type and plaintext.
    static func open(_ jwe: String, _ link: SHLink) throws -> (contentType: String?, plaintext: [UInt8], iv: [UInt8]) {
        let key = try #require(AES256Key.decode(base64url: link.key))
        let opened = try JWE(compact: jwe).decrypt(key: key)
        return (opened.parts.contentType, opened.plaintext, opened.parts.iv)
    }

    static func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }
}
