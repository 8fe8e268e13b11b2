import Foundation
import Synchronization
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// A clock the tests move by hand.
final class TestClock: WallClock {
    let seconds: Atomic<Int64>
    init(_ start: Int64) { seconds = Atomic(start) }
    var now: Int64 { seconds.load(ordering: .relaxed) }
    func nowSeconds() -> Int64 { now }
    func advance(_ by: Int64) { seconds.add(by, ordering: .relaxed) }
}

/// The protocol handler and router called directly, without sockets (as Hummingbird tests its responder), on
/// a SQLite store in a temporary folder and a clock moved by hand: lifetimes, polling and expiry to the
/// second, without waiting.
@Suite struct LinkServiceTests {
    static let start: Int64 = 1_800_000_000
    static let base = "https://links.example.org/shl"

    struct Fixture {
        let dir: URL
        let clock: TestClock
        let store: DatabaseLinkStore
        let publisher: LinkPublisher
        let router: Router
        let card: [UInt8]

        init(_ configure: (inout LinkService.Configuration) -> Void = { _ in }) throws {
            dir = try TestSupport.tempDir("link-service")
            clock = TestClock(LinkServiceTests.start)
            let database = try Database(
                url: .sqlite(path: dir.appendingPathComponent("links.db").path), role: .server, create: true,
                now: LinkServiceTests.start)
            store = DatabaseLinkStore(database: database)
            let baseURL = try BaseURL(LinkServiceTests.base)
            publisher = LinkPublisher(store: store, baseURL: baseURL)
            var configuration = LinkService.Configuration(baseURL: baseURL)
            configure(&configuration)
            router = Router(
                routes: LinkService(configuration: configuration, store: store, clock: clock, log: MemoryLog()).routes)
            card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
        }

        func create(_ options: LinkPublisher.Options = .init(), files: [LinkContent]? = nil) throws
            -> LinkPublisher.Created
        {
            try publisher.create(
                files ?? [LinkContent(contentType: JWE.smartHealthCard, bytes: card)], options: options, now: clock.now)
        }

        func post(_ id: String, _ body: String) -> HTTPResponse {
            router.respond(HTTPRequest(method: "POST", path: "/shl/\(id)", body: Array(body.utf8))).response
        }

        func get(_ path: String, query: [String: String] = [:]) -> HTTPResponse {
            router.respond(HTTPRequest(method: "GET", path: path, query: query)).response
        }

        /// The path of a location URL.
        func path(_ location: String) -> String { String(location.dropFirst("https://links.example.org".count)) }
    }

    static func json(_ response: HTTPResponse) throws -> JSONValue { try JSONParser.parse(response.body) }

    @Test func routerAnswersWithoutAHandlerAndPutsCommonHeadersOnEveryAnswer() throws {
        let f = try Fixture()
        let link = try f.create()
        let responses = [
            f.get("/nothing/here"),
            f.router.respond(HTTPRequest(method: "PUT", path: "/shl/\(link.id)")).response,
            f.router.respond(HTTPRequest(method: "OPTIONS", path: "/shl/\(link.id)")).response,
            f.post(link.id, #"{"recipient":"r"}"#),
            f.router.respond(
                HTTPRequest(
                    method: "POST", path: "/shl/\(link.id)", body: [UInt8](repeating: 0x20, count: 16 * 1024 + 1))
            ).response,
        ]
        #expect(responses.map(\.status) == [404, 405, 204, 200, 413])
        #expect(responses[1].header("Allow") == "POST, GET, HEAD, OPTIONS")
        #expect(responses[2].header("Access-Control-Allow-Methods") == "POST, GET, OPTIONS")
        #expect(responses[2].header("Access-Control-Allow-Headers") == "Content-Type")
        for response in responses {
            #expect(response.header("Cache-Control") == "no-store")
            #expect(response.header("Access-Control-Allow-Origin") == "*")
            #expect(response.header("X-Content-Type-Options") == "nosniff")
        }
        // The oversized body never reached the handler: one access recorded, the 200.
        #expect(try f.store.audit(linkID: link.id).map(\.status) == [200])
    }

    @Test func oneNotFoundBodyForUnknownDeactivatedExpiredAndDisabledLinks() throws {
        let f = try Fixture()
        var expiring = LinkPublisher.Options()
        expiring.exp = Self.start + 100
        let expired = try f.create(expiring)
        let closed = try f.create()
        _ = try f.store.deactivate(linkID: closed.id, now: f.clock.now)
        var guarded = LinkPublisher.Options()
        guarded.passcode = Array("pin".utf8).withUnsafeBytes { SecretBytes(copying: $0) }
        guarded.passcodeFunction = .pbkdf2SHA256(iterations: 1000)
        guarded.maxAttempts = 1
        let disabled = try f.create(guarded)
        #expect(f.post(disabled.id, #"{"recipient":"r","passcode":"nope"}"#).status == 401)
        #expect(f.post(expired.id, #"{"recipient":"r"}"#).status == 200, "before exp")
        f.clock.advance(100)
        let answers = [
            f.post(String(repeating: "Q", count: 43), #"{"recipient":"r"}"#), f.post(closed.id, #"{"recipient":"r"}"#),
            f.post(expired.id, #"{"recipient":"r"}"#), f.post(disabled.id, #"{"recipient":"r","passcode":"pin"}"#),
        ]
        #expect(answers.map(\.status) == [404, 404, 404, 404])
        #expect(Set(answers.map(\.body)).count == 1)
        #expect(answers.map(\.outcome) == ["unknown", "deactivated", "expired", "disabled"])
    }

    @Test func locationsLiveTheirLifetimeToTheSecondAndSingleUseOnesAnswerOnce() throws {
        let f = try Fixture { $0.locationLifetime = 600 }
        let link = try f.create()
        let manifest = try Self.json(f.post(link.id, #"{"recipient":"r"}"#))
        let location = try #require(manifest["files"]?[0]?["location"]?.stringValue)
        f.clock.advance(599)
        let fetched = f.get(f.path(location))
        #expect(fetched.status == 200 && fetched.header("Content-Type") == "application/jose")
        let opened = try JWE(compact: String(decoding: fetched.body, as: UTF8.self)).decrypt(
            key: try #require(AES256Key.decode(base64url: link.link.key)))
        #expect(opened.plaintext == f.card && opened.parts.contentType == JWE.smartHealthCard)
        #expect(f.get(f.path(location)).status == 200, "reusable within its lifetime")
        f.clock.advance(1)
        #expect(f.get(f.path(location)).status == 404, "expired at 600 s")

        let once = try Fixture {
            $0.singleUseLocations = true
            $0.locationLifetime = 99999
        }
        let other = try once.create()
        let first = try Self.json(once.post(other.id, #"{"recipient":"r"}"#))
        let single = try #require(first["files"]?[0]?["location"]?.stringValue)
        #expect(once.get(once.path(single)).status == 200)
        #expect(once.get(once.path(single)).status == 404)
        // A lifetime over an hour is held to one hour.
        let second = try Self.json(once.post(other.id, #"{"recipient":"r"}"#))
        let later = try #require(second["files"]?[0]?["location"]?.stringValue)
        once.clock.advance(3600)
        #expect(once.get(once.path(later)).status == 404)
        // Deactivating a link ends its live locations.
        let third = try Self.json(once.post(other.id, #"{"recipient":"r"}"#))
        let live = try #require(third["files"]?[0]?["location"]?.stringValue)
        _ = try once.store.deactivate(linkID: other.id, now: once.clock.now)
        #expect(once.get(once.path(live)).status == 404)
    }

    @Test func embeddedOnlyWhenTheJWEFitsEmbeddedLengthMax() throws {
        let f = try Fixture()
        let link = try f.create()
        let jwe = try #require(try f.store.link(id: link.id, withFiles: true)?.files.first?.jwe)
        for (limit, embedded) in [(jwe.utf8.count, true), (jwe.utf8.count - 1, false), (0, false)] {
            let manifest = try Self.json(f.post(link.id, #"{"recipient":"r","embeddedLengthMax":\#(limit)}"#))
            let file = try #require(manifest["files"]?[0])
            #expect(
                (file["embedded"]?.stringValue == jwe) == embedded && (file["location"] == nil) == embedded, "\(limit)")
        }
        #expect(f.post(link.id, #"{"recipient":"r","embeddedLengthMax":-1}"#).status == 400)
        #expect(f.post(link.id, #"{"recipient":"r","embeddedLengthMax":"10"}"#).status == 400)
        #expect(f.post(link.id, #"{"recipient":"r","embeddedLengthMax":1e4}"#).status == 200)
    }

    @Test func longTermLinksAskPollersToWaitToTheSecond() throws {
        let f = try Fixture { $0.pollInterval = 60 }
        var options = LinkPublisher.Options()
        options.longTerm = true
        let link = try f.create(options)
        let first = f.post(link.id, #"{"recipient":"EHR"}"#)
        #expect(first.status == 200 && first.header("Retry-After") == "60")
        f.clock.advance(10)
        let soon = f.post(link.id, #"{"recipient":"EHR"}"#)
        #expect(soon.status == 429 && soon.header("Retry-After") == "50")
        #expect(f.post(link.id, #"{"recipient":"another EHR"}"#).status == 200)
        f.clock.advance(50)
        #expect(f.post(link.id, #"{"recipient":"EHR"}"#).status == 200)
        // A link that is not long-term is never rate limited.
        let plain = try f.create()
        #expect(f.post(plain.id, #"{"recipient":"EHR"}"#).header("Retry-After") == nil)
        #expect(f.post(plain.id, #"{"recipient":"EHR"}"#).status == 200)
    }

    @Test func directLinksNeedARecipientAndAnswerTheirOneFile() throws {
        let f = try Fixture()
        var options = LinkPublisher.Options()
        options.direct = true
        let link = try f.create(options)
        #expect(link.link.flag == "U")
        let answer = f.get("/shl/\(link.id)", query: ["recipient": "A clinic"])
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/jose")
        #expect(f.get("/shl/\(link.id)").status == 400)
        #expect(f.get("/shl/\(link.id)", query: ["recipient": "  "]).status == 400)
        #expect(f.post(link.id, #"{"recipient":"r"}"#).status == 404)
        #expect(
            try f.store.audit(linkID: link.id).map(\.outcome) == [
                "served", "no-recipient", "no-recipient", "direct-link",
            ])
        #expect(try f.store.audit(linkID: link.id).first?.recipient == "A clinic")
    }

    /// 64 threads counting wrong passcodes at once on a link allowing 10: exactly 10 are counted, each count once.
    @Test func attemptsAreCountedExactlyUnderParallelCalls() throws {
        let f = try Fixture()
        var options = LinkPublisher.Options()
        options.passcode = Array("pin".utf8).withUnsafeBytes { SecretBytes(copying: $0) }
        options.passcodeFunction = .pbkdf2SHA256(iterations: 1000)
        options.maxAttempts = 10
        let link = try f.create(options)
        let results = Mutex<[Int?]>([])
        let store = f.store
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            let left = try? store.spendAttempt(linkID: link.id, now: Self.start)
            results.withLock { $0.append(left ?? nil) }
        }
        let counted = results.withLock { $0 }.compactMap { $0 }.sorted()
        #expect(counted == Array(0..<10))
        #expect(try f.store.link(id: link.id, withFiles: false)?.remainingAttempts == 0)
    }

    /// A stolen database holds no key and no passcode: neither the key's text or bytes nor the passcode are in
    /// the database file or its write-ahead log.
    @Test func theDatabaseHoldsNoKeyAndNoPasscode() throws {
        let f = try Fixture()
        var options = LinkPublisher.Options()
        let passcode = "a very particular passcode"
        options.passcode = passcode.utf8CString.withUnsafeBytes {
            SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0.dropLast()))
        }
        options.passcodeFunction = .pbkdf2SHA256(iterations: 1000)
        let created = try f.create(options)
        _ = f.post(created.id, #"{"recipient":"r","passcode":"\#(passcode)"}"#)
        let key = try #require(AES256Key.decode(base64url: created.link.key))
        var stored: [UInt8] = []
        for name in ["links.db", "links.db-wal"] {
            stored += (try? VerifyFixtures.bytes(f.dir.appendingPathComponent(name))) ?? []
        }
        #expect(stored.count > 10_000)
        func contains(_ needle: [UInt8]) -> Bool {
            guard needle.count <= stored.count else { return false }
            return (0...(stored.count - needle.count)).contains { stored[$0..<$0 + needle.count].elementsEqual(needle) }
        }
        #expect(!contains(Array(created.link.key.utf8)))
        #expect(!contains(key.withUnsafeBytes { Array($0) }))
        #expect(!contains(Array(passcode.utf8)))
        #expect(contains(Array(created.id.utf8)), "the search itself works")
    }
}
