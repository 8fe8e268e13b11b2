import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

/// What one address can make the database keep: a request budget per address (429 with Retry-After), the audit
/// pruned by age (`serve --audit-days`, `link audit --prune`), and the growth a minute of one address's requests
/// causes at most.
@Suite struct BoundedStorageTests {
    static func request(_ method: String, _ path: String, body: String = "", peer: String) -> HTTPRequest {
        HTTPRequest(method: method, path: path, body: Array(body.utf8), peer: peer)
    }

    @Test func eachAddressHasARequestBudgetAMinute() throws {
        let f = try LinkServiceTests.Fixture { $0.requestBudgetPerMinute = 5 }
        let link = try f.create()
        let statuses = (0..<6).map { _ in
            f.router.respond(Self.request("POST", "/shl/\(link.id)", body: #"{"recipient":"r"}"#, peer: "192.0.2.1"))
                .response
        }
        #expect(statuses.map(\.status) == [200, 200, 200, 200, 200, 429])
        #expect(statuses.last?.header("Retry-After") == "12", "one request every 60/5 s")
        #expect(statuses.last?.outcome == "over-budget")
        // Another address has its own budget; locations count against the same budget.
        let manifest = f.router.respond(
            Self.request("POST", "/shl/\(link.id)", body: #"{"recipient":"r"}"#, peer: "192.0.2.2")
        ).response
        #expect(manifest.status == 200)
        let location = try #require(LinkServiceTests.json(manifest)["files"]?[0]?["location"]?.stringValue)
        #expect(f.router.respond(Self.request("GET", f.path(location), peer: "192.0.2.1")).response.status == 429)
        #expect(try f.store.audit(linkID: link.id).count == 6, "refused requests write nothing")
        f.clock.advance(12)
        #expect(f.router.respond(Self.request("GET", f.path(location), peer: "192.0.2.1")).response.status == 200)
    }

    @Test func theAuditIsPrunedByAgeAndKeepsTheNewestRow() throws {
        let f = try LinkServiceTests.Fixture()
        let link = try f.create()
        for day in 0..<5 {
            try f.store.record(
                AuditEntry(
                    at: f.clock.now + Int64(day) * 86400, linkID: link.id, kind: "manifest", recipient: "r",
                    outcome: "served", status: 200))
        }
        #expect(try f.store.pruneAudit(before: f.clock.now + 2 * 86400) == 2)
        #expect(try f.store.audit(linkID: link.id).map(\.at) == (2..<5).map { f.clock.now + Int64($0) * 86400 })
        // The newest row stays even when it is old: sequence numbers never go back.
        #expect(try f.store.pruneAudit(before: f.clock.now + 100 * 86400) == 2)
        #expect(try f.store.audit(linkID: link.id).count == 1)

        // serve --audit-days: the service's maintenance prunes.
        let service = LinkService(
            configuration: {
                var configuration = LinkService.Configuration(baseURL: try! BaseURL(LinkServiceTests.base))
                configuration.auditDays = 1
                return configuration
            }(), store: f.store, clock: f.clock, log: MemoryLog())
        try f.store.record(
            AuditEntry(at: f.clock.now + 200 * 86400, linkID: link.id, kind: "file", recipient: "r", outcome: "served", status: 200))
        f.clock.advance(200 * 86400 + 86400 + 1)
        service.maintain()
        #expect(try f.store.audit(linkID: link.id).map(\.kind) == ["file"])
    }

    @Test func linkAuditPruneDeletesOldAccesses() throws {
        let dir = try TestSupport.tempDir("audit-prune")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let base = "https://links.example.org/shl"
        _ = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        let run = try ServerTestSupport.link("audit", db: db, base: "", ["--prune", "30"])
        #expect(run.stderr.contains("0 access(es) older than 30 day(s)"), "\(run.stderr)")
        try ServerTestSupport.link("audit", db: db, base: "", ["--prune", "0"], expect: 2)
    }

    /// A minute of one address at its budget (600 manifest requests, each with a 256-byte recipient, one location
    /// each) grows the SQLite file by less than the 1 MiB a minute docs/server.md states; the 601st writes nothing.
    @Test func oneAddressGrowsTheDatabaseByAtMostTheDocumentedAmountAMinute() throws {
        let f = try LinkServiceTests.Fixture { $0.requestBudgetPerMinute = 600 }
        let link = try f.create()
        func size() throws -> Int {
            _ = try f.store.database.withConnection { c in try c.query("PRAGMA wal_checkpoint(TRUNCATE)", []) }
            let attributes = try FileManager.default.attributesOfItem(atPath: f.dir.appendingPathComponent("links.db").path)
            return (attributes[.size] as? Int) ?? 0
        }
        let before = try size()
        var served = 0
        for n in 0..<650 {
            let recipient = String(repeating: "r", count: 250) + String(format: "%06d", n)
            let answer = f.router.respond(
                Self.request("POST", "/shl/\(link.id)", body: #"{"recipient":"\#(recipient)"}"#, peer: "198.51.100.7")
            ).response
            if answer.status == 200 { served += 1 }
        }
        let growth = try size() - before
        #expect(served == 600)
        #expect(growth < 1 << 20, "grew \(growth) bytes")
    }
}
