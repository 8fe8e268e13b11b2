import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The server's group commit of access records (docs/server.md, "The access record"): records from many requests
/// share a transaction; a full queue makes the request wait, then 503; a clean stop of a real `serve` under load
/// leaves a record for every answer given; `kill -9` loses at most the queue's bound.
@Suite(.serialized)
struct GroupCommitTests {
    static func serverStore(_ dir: URL) throws -> (Database, DatabaseLinkStore) {
        let database = try Database(
            url: .sqlite(path: dir.appendingPathComponent("links.db").path), role: .server, create: true,
            maxConnections: 12, now: LinkServiceTests.start)
        return (database, DatabaseLinkStore(database: database))
    }

    static func entry(_ n: Int) -> AuditEntry {
        AuditEntry(
            at: LinkServiceTests.start + Int64(n), linkID: "link", kind: "file", recipient: "r\(n)", outcome: "served",
            status: 200)
    }

    @Test func recordsFromManyThreadsShareTransactions() throws {
        let dir = try TestSupport.tempDir("group-commit")
        let (database, store) = try Self.serverStore(dir)
        defer { database.close() }
        let threads = 8
        let each = 250
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<each { try? store.record(Self.entry(t * each + i)) }
        }
        #expect(store.flush(seconds: 10) == 0)
        let rows = try store.audit(linkID: "link")
        #expect(rows.count == threads * each)
        // Every record once, whatever batch it was in.
        #expect(Set(rows.compactMap(\.recipient)) == Set((0..<threads * each).map { "r\($0)" }))
        let committed = store.groupCommitted
        #expect(committed.records == threads * each)
        // Grouped: far fewer transactions than records.
        #expect(committed.batches > 0 && committed.batches < threads * each / 2, "\(committed.batches) batches")
    }

    /// A batch of records only waits for more (`gatherSeconds`): records queued one after another go as one batch.
    /// The wait ends at once for a flush, for a write whose caller waits (`perform`), and when a statement's worth
    /// (`rowsPerStatement`) is queued. (A 60 s window here: any of those that waited for it would time the test out.)
    @Test func theWriterGathersRecordsButNeverMakesAFlushOrAWaitingWriteWait() throws {
        let dir = try TestSupport.tempDir("group-commit-gather")
        let (database, _) = try Self.serverStore(dir)
        defer { database.close() }
        let queue = GroupCommit(database: database, gatherSeconds: 60)
        defer { queue.stop() }
        for n in 0..<10 { try queue.record(Self.entry(n)) }
        #expect(queue.flush(seconds: 30) == 0)
        #expect(queue.committed.batches == 1)
        #expect(queue.committed.records == 10)

        try queue.record(Self.entry(10))
        let waited = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            waited.withLock { $0 = (try? queue.perform { _ in true }) ?? false }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success, "a waiting write waited for the writer's gathering")
        #expect(waited.withLock { $0 } == true)
        #expect(queue.committed.batches == 2)
        #expect(queue.committed.records == 11)

        for n in 11..<(11 + GroupCommit.rowsPerStatement) { try queue.record(Self.entry(n)) }
        let deadline = Date().addingTimeInterval(30)
        while queue.committed.records < 11 + GroupCommit.rowsPerStatement && Date() < deadline { usleep(5_000) }
        #expect(queue.committed.records == 11 + GroupCommit.rowsPerStatement, "a full statement waited to gather")
        #expect(queue.committed.batches == 3)
    }

    @Test func aFullQueueMakesTheRequestWaitThenFailsAsUnavailable() throws {
        let dir = try TestSupport.tempDir("group-commit-full")
        let (database, _) = try Self.serverStore(dir)
        defer { database.close() }
        let queue = GroupCommit(database: database, capacity: 4, waitSeconds: 1)
        // Another process's writer holds the database's write lock (a second pool, as `link update` would).
        let other = try Database(
            url: database.url, role: .operatorCommand, create: false, maxConnections: 1, now: LinkServiceTests.start)
        defer { other.close() }
        try other.withConnection { c in
            try c.begin(write: true, durable: false)
            for n in 0..<4 { try queue.record(Self.entry(n)) }
            let started = Clock.monotonicSeconds()
            #expect(throws: StoreError.self) { try queue.record(Self.entry(4)) }
            // It waited for room (back-pressure) before giving up.
            #expect(Clock.monotonicSeconds() - started >= 0.9)
            c.rollback()
        }
        // The lock released, the four queued records are committed.
        #expect(queue.stop() == 0)
        let store = DatabaseLinkStore(database: other)
        #expect(try store.audit(linkID: "link").count == 4)
    }

    /// Clients asking for manifests and their locations as fast as they can, counting the 200 answers by kind.
    final class Load: @unchecked Sendable {
        let served = Locked<[String: Int]>([:])
        let running = Locked(true)

        func run(port: UInt16, id: String, clients: Int) -> DispatchGroup {
            let group = DispatchGroup()
            for _ in 0..<clients {
                DispatchQueue.global().async(group: group) {
                    while self.running.withLock({ $0 }) {
                        guard
                            let manifest = RawHTTP.exchange(
                                RawHTTP.post("/shl/\(id)", #"{"recipient":"load"}"#), port: port, seconds: 5),
                            manifest.status == 200
                        else { continue }
                        self.served.withLock { $0["manifest", default: 0] += 1 }
                        guard
                            let location = (try? JSONParser.parse(manifest.body))?["files"]?[0]?["location"]?
                                .stringValue,
                            let path = location.range(of: "/shl/").map({ String(location[$0.lowerBound...]) })
                        else { continue }
                        for _ in 0..<3 {
                            guard
                                let file = RawHTTP.exchange(
                                    "GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port,
                                    seconds: 5), file.status == 200
                            else { continue }
                            self.served.withLock { $0["file", default: 0] += 1 }
                        }
                    }
                }
            }
            return group
        }
    }

    /// Rows of the access record by kind, outcome `served`.
    static func servedRows(_ db: String) throws -> [String: Int] {
        let database = try Database(
            url: try DatabaseURL(db), role: .operatorCommand, create: false, now: LinkServiceTests.start)
        defer { database.close() }
        var rows: [String: Int] = [:]
        try database.withConnection { c in
            for row in try c.query(
                "SELECT kind, count(*) FROM hc_audit WHERE outcome = 'served' GROUP BY kind", [])
            {
                if let kind = row[0].text, let n = row[1].integer { rows[kind] = Int(n) }
            }
        }
        return rows
    }

    func underLoad(stop: (ServerProcess) -> Void) throws -> (served: [String: Int], rows: [String: Int]) {
        let dir = try TestSupport.tempDir("group-commit-serve")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let port = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        let (_, id) = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        let server = try ServerProcess(
            db: db, port: port, base: base, ["--request-budget", "0", "--max-connections-per-client", "256"], in: dir)
        let load = Load()
        let group = load.run(port: port, id: id, clients: 8)
        // Until a few hundred answers are in (not a fixed time: the machine may be slow).
        let deadline = Clock.monotonicSeconds() + 60
        while load.served.withLock({ ($0["file"] ?? 0) }) < 300 && Clock.monotonicSeconds() < deadline {
            usleep(20_000)
        }
        // Stopped while the clients still send.
        stop(server)
        load.running.withLock { $0 = false }
        group.wait()
        return (load.served.withLock { $0 }, try Self.servedRows(db))
    }

    @Test func aCleanStopUnderLoadLeavesARecordForEveryAnswer() throws {
        let (served, rows) = try underLoad { server in #expect(server.stop() == 0) }
        #expect((served["file"] ?? 0) >= 300)
        // Every answer given has its record (a request answered just as the stop closed its connection may have a
        // record whose answer did not arrive: never the other way).
        #expect((rows["manifest"] ?? 0) >= (served["manifest"] ?? 0), "\(rows) records for \(served) answers")
        #expect((rows["file"] ?? 0) >= (served["file"] ?? 0), "\(rows) records for \(served) answers")
        #expect((rows["file"] ?? 0) <= (served["file"] ?? 0) + 8)
    }

    @Test func aKilledServerLosesAtMostTheQueuesBound() throws {
        let (served, rows) = try underLoad { server in server.kill9() }
        // A manifest's record (its locations sealed) and a location's may be in the queue: at most the queue's bound
        // of them lost, together.
        let lost = ["manifest", "file"].reduce(0) { $0 + max(0, (served[$1] ?? 0) - (rows[$1] ?? 0)) }
        #expect(lost <= GroupCommit.defaultCapacity, "\(rows) records for \(served) answers")
        #expect((rows["file"] ?? 0) > 0 && (rows["manifest"] ?? 0) > 0, "records were committed before the kill")
    }
}
