import Foundation
import HealthCardsCore
import HealthCardsTestSupport
import Testing

@testable import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

/// Another process holding SQLite's write lock (`sqlite3 links.db` then `BEGIN IMMEDIATE;` left open) must not
/// stall the server past a bounded time (issue #34): a manifest's grant still queued for the group commit after
/// its deadline is answered 503 (its body never runs), one already taken into a batch is answered by that batch's
/// outcome (bounded by the busy timeout), and reads go on meanwhile (docs/server.md, "How records reach the
/// database"). Before the bound a queued grant waited for the batch in progress and then for one of its own, and
/// every request thread sat in it, so reads of other links queued behind them.
///
/// The waits are shortened here (`Database.WriteWaits`); the lock is held by a second SQLite handle with no share
/// of the pool's writer lock, as another process's would be.
@Suite(.serialized)
struct ForeignWriteLockTests {
    /// A connection of "another process" holding the write lock from `init` until `release`.
    final class ForeignWriter {
        let connection: SQLiteConnection
        private(set) var releasedAt: Double?
        init(_ path: String) throws {
            connection = try SQLiteConnection(
                path: path, create: false, busyTimeoutMilliseconds: 1000, fullSync: false)
            try connection.execute("BEGIN IMMEDIATE")
        }
        func release() {
            guard releasedAt == nil else { return }
            try? connection.execute("ROLLBACK")
            releasedAt = Clock.monotonicSeconds()
        }
        deinit {
            release()
            connection.close()
        }
    }

    /// A server's pool on a new SQLite file with `waits`, a link (version 1) to grant manifests of, and another
    /// process's write lock held on it from the start. `close` releases the lock, closes the pool and removes the
    /// folder.
    final class Fixture {
        let dir: URL
        let database: Database
        let store: DatabaseLinkStore
        let id: String
        let groupCommit: GroupCommit
        let foreign: ForeignWriter

        init(_ name: String, _ waits: Database.WriteWaits) throws {
            dir = try TestSupport.tempDir(name)
            database = try Database(
                url: .sqlite(path: dir.appendingPathComponent("links.db").path), role: .server, create: true,
                maxConnections: 12, writeWaits: waits, now: LinkServiceTests.start)
            store = DatabaseLinkStore(database: database)
            let publisher = LinkPublisher(store: store, baseURL: try BaseURL(LinkServiceTests.base))
            let card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
            id = try publisher.create(
                [LinkContent(contentType: JWE.smartHealthCard, bytes: card)], options: .init(),
                now: LinkServiceTests.start
            ).id
            groupCommit = try #require(store.groupCommit)
            foreign = try ForeignWriter(database.url.sqlitePath)
        }

        func close() {
            foreign.release()
            database.close()
            try? FileManager.default.removeItem(at: dir)
        }
    }

    static func manifestRecord(_ id: String, _ recipient: String) -> AuditEntry {
        AuditEntry(
            at: LinkServiceTests.start, linkID: id, kind: "manifest", recipient: recipient, outcome: "served",
            status: 200, detail: "1 file(s), 0 location(s)")
    }

    /// Polls `condition` (state of another thread, not a time) until it holds or `seconds` pass.
    static func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let end = Clock.monotonicSeconds() + seconds
        while !condition() {
            if Clock.monotonicSeconds() > end { return false }
            usleep(1000)
        }
        return true
    }

    /// What one caller got: when it returned (monotonic seconds) and its result.
    struct Outcome {
        var returnedAt: Double
        var result: Result<Bool, Error>
        var isUnavailable: Bool {
            if case .failure(let error) = result { return StoreError.unavailable(error) != nil }
            return false
        }
    }

    /// Runs `body` on a thread of its own; its outcome lands in `outcomes[index]`.
    static func start(
        _ group: DispatchGroup, _ outcomes: Locked<[Int: Outcome]>, _ index: Int,
        _ body: @escaping @Sendable () throws -> Bool
    ) {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            let result = Result { try body() }
            outcomes.withLock { $0[index] = Outcome(returnedAt: Clock.monotonicSeconds(), result: result) }
        }
    }

    /// N concurrent grants while another process holds the write lock past the busy timeout: each is answered
    /// (unavailable) while the lock is still held, none is committed, and a grant after the release is.
    /// Before the deadline, the grants queued behind the first batch went into a second one, which waited for the
    /// lock until its release and then committed: answered only after the lock was let go.
    @Test func concurrentGrantsAreAnsweredWhileTheLockIsHeld() throws {
        let waits = Database.WriteWaits(busyTimeoutMilliseconds: 3000, queuedSeconds: 0.5)
        let f = try Fixture("foreign-lock-grants", waits)
        defer { f.close() }
        let (store, id, groupCommit, foreign) = (f.store, f.id, f.groupCommit, f.foreign)
        let held = Clock.monotonicSeconds()
        // Held well past the first batch's busy timeout (3 s): 5 s of margin for a loaded machine.
        let hold = 8.0
        let outcomes = Locked<[Int: Outcome]>([:])
        let group = DispatchGroup()
        let grant: @Sendable (Int) throws -> Bool = { n in
            try store.grant(
                linkID: id, version: 1, tickets: [], audit: Self.manifestRecord(id, "r\(n)"),
                now: LinkServiceTests.start)
        }
        // The first in a batch of its own (it waits for the lock), then the others queued behind it.
        Self.start(group, outcomes, 0) { try grant(0) }
        #expect(Self.eventually { groupCommit.backlog.inBatch == 1 })
        let others = 6
        for n in 1...others { Self.start(group, outcomes, n) { try grant(n) } }
        let answeredInTime = group.wait(timeout: .now() + max(0, hold - (Clock.monotonicSeconds() - held))) == .success
        // The lock still held, with no record to retry: a grant asked now is refused at once (the writer tries the
        // database with empty transactions meanwhile), not after another busy timeout (3 s).
        let asked = Clock.monotonicSeconds()
        let late = Outcome(returnedAt: 0, result: Result { try grant(50) })
        let lateWait = Clock.monotonicSeconds() - asked
        #expect(late.isUnavailable && lateWait < 1.5, "\(late.result) after \(lateWait) s")
        foreign.release()
        // No thread is left running: with the lock gone every grant ends.
        group.wait()
        let got = outcomes.withLock { $0 }
        #expect(answeredInTime, "a grant was still waiting \(hold) s into the foreign lock")
        #expect(got.count == others + 1)
        for (n, outcome) in got.sorted(by: { $0.key < $1.key }) {
            #expect(outcome.isUnavailable, "grant \(n): \(outcome.result)")
            // Answered while the lock was held, within about the deadline + one busy timeout (generously).
            #expect(outcome.returnedAt < foreign.releasedAt!, "grant \(n) was answered after the lock's release")
            #expect(outcome.returnedAt - held < 12)
        }
        // None of them was committed; with the lock released a grant is.
        #expect(try store.audit(linkID: id).isEmpty)
        // The writer's own next try commits, and writes are taken again.
        #expect(Self.eventually { !groupCommit.backlog.refusing })
        #expect(try grant(100))
        #expect(try store.audit(linkID: id).compactMap(\.recipient) == ["r100"])
    }

    /// A write still queued at its deadline is taken out of the queue and answered unavailable, and its body never
    /// runs (no grant is committed for an answer already given); a write already taken into a batch waits for that
    /// batch, past its own deadline, and is answered by what it did: committed, true.
    /// Before the deadline the queued write waited for the batch ahead of it, then ran in the next one.
    @Test func aQueuedWriteGivesUpAtItsDeadlineAndATakenOneGetsItsBatchOutcome() throws {
        // A busy timeout far past the test: the first batch is still waiting for the lock when it is released.
        let waits = Database.WriteWaits(busyTimeoutMilliseconds: 20_000, queuedSeconds: 0.5)
        let f = try Fixture("foreign-lock-deadline", waits)
        defer { f.close() }
        let (store, id, groupCommit, foreign) = (f.store, f.id, f.groupCommit, f.foreign)
        let outcomes = Locked<[Int: Outcome]>([:])
        let queuedBodyRan = Locked(false)
        let group = DispatchGroup()
        Self.start(group, outcomes, 0) {
            try groupCommit.perform { c in
                try GroupCommit.insert([Self.manifestRecord(id, "taken")], c)
                return true
            }
        }
        #expect(Self.eventually { groupCommit.backlog.inBatch == 1 })
        let queuedAt = Clock.monotonicSeconds()
        let queuedDone = DispatchGroup()
        queuedDone.enter()
        Self.start(group, outcomes, 1) {
            defer { queuedDone.leave() }
            return try groupCommit.perform { c in
                queuedBodyRan.withLock { $0 = true }
                try GroupCommit.insert([Self.manifestRecord(id, "queued")], c)
                return true
            }
        }
        // The queued write is answered while the lock is still held (8 s: far past its 0.5 s deadline).
        let queuedAnswered = queuedDone.wait(timeout: .now() + 8) == .success
        foreign.release()
        group.wait()
        let got = outcomes.withLock { $0 }
        #expect(queuedAnswered, "the queued write was still waiting 8 s into the foreign lock")
        let queued = try #require(got[1])
        #expect(queued.isUnavailable, "\(queued.result)")
        #expect(queued.returnedAt - queuedAt < 5)
        // The taken write was answered after the release, by its committed batch: true, not unavailable.
        let taken = try #require(got[0])
        #expect((try? taken.result.get()) == true, "\(taken.result)")
        #expect(taken.returnedAt >= foreign.releasedAt!)
        // The writer is idle again, and never ran the abandoned body.
        #expect(groupCommit.flush(seconds: 10) == 0)
        #expect(try groupCommit.perform { _ in true })
        #expect(queuedBodyRan.withLock { $0 } == false)
        #expect(try store.audit(linkID: id).compactMap(\.recipient) == ["taken"])
    }

    /// After a batch failed with the database busy (it waited the whole busy timeout), the writes queued while it
    /// waited are answered at once rather than starting a busy timeout of their own (the type's comment says why).
    /// Their deadline is set far out here, so only that answers them while the lock is held.
    @Test func writesQueuedDuringABusyBatchFailWithIt() throws {
        let waits = Database.WriteWaits(busyTimeoutMilliseconds: 3000, queuedSeconds: 60)
        let f = try Fixture("foreign-lock-fail-fast", waits)
        defer { f.close() }
        let (groupCommit, foreign) = (f.groupCommit, f.foreign)
        let held = Clock.monotonicSeconds()
        let hold = 8.0
        let outcomes = Locked<[Int: Outcome]>([:])
        let group = DispatchGroup()
        Self.start(group, outcomes, 0) { try groupCommit.perform { _ in true } }
        #expect(Self.eventually { groupCommit.backlog.inBatch == 1 })
        for n in 1...3 { Self.start(group, outcomes, n) { try groupCommit.perform { _ in true } } }
        #expect(Self.eventually { groupCommit.backlog.queued == 3 })
        let answeredInTime = group.wait(timeout: .now() + max(0, hold - (Clock.monotonicSeconds() - held))) == .success
        foreign.release()
        group.wait()
        #expect(answeredInTime, "a write was still waiting \(hold) s into the foreign lock")
        for (n, outcome) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            #expect(outcome.isUnavailable, "write \(n): \(outcome.result)")
        }
        // The lock released, the writer's next try commits, and writes go through again.
        #expect(Self.eventually { !groupCommit.backlog.refusing })
        #expect(try groupCommit.perform { _ in true })
    }

    /// After a batch failed with the database busy, while the next batch tries again (here: the access record it
    /// could not write), a new waiting write is refused at once instead of waiting another busy timeout behind
    /// it; once a batch commits, writes go through as before. Before, it waited for the retry's whole busy timeout
    /// (3 s here).
    @Test func whileTheDatabaseIsRetriedNewWritesAreRefusedAtOnce() throws {
        let waits = Database.WriteWaits(busyTimeoutMilliseconds: 3000, queuedSeconds: 60)
        let f = try Fixture("foreign-lock-breaker", waits)
        defer { f.close() }
        let (store, id, groupCommit, foreign) = (f.store, f.id, f.groupCommit, f.foreign)
        defer { foreign.release() }
        try groupCommit.record(Self.manifestRecord(id, "queued record"))
        // The first batch (the record) failed after its busy timeout; the second, trying it again, is waiting.
        #expect(Self.eventually { groupCommit.backlog.failedBatches >= 1 && groupCommit.backlog.inBatch == 1 })
        let asked = Clock.monotonicSeconds()
        let bodyRan = Locked(false)
        let refused = Result {
            try groupCommit.perform { _ in
                bodyRan.withLock { $0 = true }
                return true
            }
        }
        #expect(Outcome(returnedAt: 0, result: refused).isUnavailable, "\(refused)")
        let waited = Clock.monotonicSeconds() - asked
        #expect(waited < 1.5, "refused after \(waited) s; the retry's busy timeout is 3 s")
        #expect(bodyRan.withLock { $0 } == false)
        foreign.release()
        // The retried record commits, and writes queue and commit again.
        #expect(groupCommit.flush(seconds: 10) == 0)
        #expect(Self.eventually { !groupCommit.backlog.refusing })
        #expect(try groupCommit.perform { _ in true })
        #expect(try store.audit(linkID: id).compactMap(\.recipient) == ["queued record"])
    }

    /// While the database refuses the group commit's batches, the server's other writes (a wrong passcode's count, a
    /// poll, the health check) are refused at once too: a trial saw seven wrong passcodes wait in line on the pool's
    /// writer lock, 5 s each, the last answered after 45 s. Once a batch commits they go through again.
    @Test func otherServerWritesAreRefusedAtOnceWhileTheDatabaseIs() throws {
        let f = try Fixture("foreign-lock-other-writes", Database.WriteWaits(busyTimeoutMilliseconds: 3000, queuedSeconds: 60))
        defer { f.close() }
        let (store, id, groupCommit, foreign) = (f.store, f.id, f.groupCommit, f.foreign)
        try groupCommit.record(Self.manifestRecord(id, "queued record"))
        #expect(Self.eventually { groupCommit.backlog.failedBatches >= 1 })
        let outcomes = Locked<[Int: Outcome]>([:])
        let group = DispatchGroup()
        let asked = Clock.monotonicSeconds()
        for n in 0..<6 {
            Self.start(group, outcomes, n) {
                n % 2 == 0
                    ? try store.spendAttempt(linkID: id, now: LinkServiceTests.start) != nil
                    : try store.poll(linkID: id, recipientHash: "h\(n)", now: LinkServiceTests.start, interval: 60) != nil
            }
        }
        group.wait()
        let waited = Clock.monotonicSeconds() - asked
        for (n, outcome) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            #expect(outcome.isUnavailable, "write \(n): \(outcome.result)")
        }
        // One busy timeout is 3 s; six writes in line were 18 s.
        #expect(waited < 1.5, "the six writes took \(waited) s")
        foreign.release()
        #expect(Self.eventually { !groupCommit.backlog.refusing })
        #expect(try store.poll(linkID: id, recipientHash: "after", now: LinkServiceTests.start, interval: 60) == nil)
    }

    /// The same when the first writes after another program took the lock are not the group commit's (wrong
    /// passcodes, health checks, before any manifest or record): the first waits the busy timeout, and from then
    /// on the others are refused at once; the group commit's writer, woken, tries the database and opens it
    /// again once the lock is gone. A trial saw four wrong passcodes answered after 9, 13, 17 and 25 s.
    @Test func theFirstRefusedDirectWriteRefusesTheOthers() throws {
        let f = try Fixture("foreign-lock-direct-first", Database.WriteWaits(busyTimeoutMilliseconds: 2000, queuedSeconds: 60))
        defer { f.close() }
        let (store, id, groupCommit, foreign) = (f.store, f.id, f.groupCommit, f.foreign)
        let outcomes = Locked<[Int: Outcome]>([:])
        let group = DispatchGroup()
        let asked = Clock.monotonicSeconds()
        for n in 0..<5 {
            Self.start(group, outcomes, n) { try store.spendAttempt(linkID: id, now: LinkServiceTests.start) != nil }
        }
        group.wait()
        let waited = Clock.monotonicSeconds() - asked
        for (n, outcome) in outcomes.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            #expect(outcome.isUnavailable, "write \(n): \(outcome.result)")
        }
        // One busy timeout (2 s) and a little; five in line were 10 s.
        #expect(waited < 4, "the five writes took \(waited) s")
        #expect(groupCommit.backlog.refusing)
        foreign.release()
        #expect(Self.eventually { !groupCommit.backlog.refusing })
        #expect(try store.poll(linkID: id, recipientHash: "after", now: LinkServiceTests.start, interval: 60) == nil)
    }

    /// An operator's command that only reads (`link list`, `link audit`) opens the database and reads while
    /// another process holds its write lock (the schema check reads; it used to take the write lock and fail after
    /// the busy timeout); one that writes fails saying another program holds the lock.
    @Test func readsOpenTheDatabaseWhileAnotherProgramWrites() throws {
        let f = try Fixture("foreign-lock-operator", Database.WriteWaits(busyTimeoutMilliseconds: 300, queuedSeconds: 1))
        defer { f.close() }
        let reader = try Database(
            url: f.database.url, role: .operatorCommand, create: false,
            writeWaits: Database.WriteWaits(busyTimeoutMilliseconds: 300), now: LinkServiceTests.start)
        defer { reader.close() }
        let store = DatabaseLinkStore(database: reader)
        #expect(try store.links().map(\.id) == [f.id])
        #expect(try store.audit(linkID: f.id).isEmpty)
        do {
            _ = try store.deactivate(linkID: f.id, now: LinkServiceTests.start)
            Issue.record("a write went through another program's write lock")
        } catch {
            #expect("\(error)".contains("another program holds the database's write lock"), "\(error)")
        }
    }

    /// Over a real socket, with single-use locations (a manifest's grant writes their rows and waits for the
    /// commit): while another process holds the write lock, manifest requests still queued are answered 503 with
    /// Retry-After at their deadline, which frees the request threads, so a `U` link's GET (a read, its record
    /// queued) is answered 200 meanwhile; the request whose grant was already in a batch is answered 200 once the lock is gone
    /// (its grant committed). Before the deadline all four request threads waited in the grant until the release,
    /// and the location with them.
    @Test func singleUseManifestsAre503AndLocationsServedWhileTheLockIsHeld() throws {
        // One busy timeout longer than the test: no batch fails while the lock is held. A deadline of 2 s: the
        // manifests are all queued before the first gives up, however slow the machine.
        let s = try InProcessServer(
            service: { $0.singleUseLocations = true },
            writeWaits: .init(busyTimeoutMilliseconds: 20_000, queuedSeconds: 2))
        let created = try s.create()
        let port = s.port
        let groupCommit = try #require(s.store.groupCommit)
        let first = try #require(
            RawHTTP.exchange(RawHTTP.post("/shl/\(created.id)", #"{"recipient":"before"}"#), port: port))
        #expect(first.status == 200)
        var options = LinkPublisher.Options()
        options.direct = true
        let path = "/shl/\(try s.create(options).id)?recipient=reader"

        let foreign = try ForeignWriter(s.database.url.sqlitePath)
        let held = Clock.monotonicSeconds()
        let hold = 8.0
        let answers = Locked<[Int: (at: Double, answer: RawHTTP.Answer?)]>([:])
        let group = DispatchGroup()
        func send(_ n: Int, _ request: String) {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let answer = RawHTTP.exchange(request, port: port, seconds: 30)
                answers.withLock { $0[n] = (Clock.monotonicSeconds(), answer) }
            }
        }
        // One manifest request per request thread (4), each sent once the one before is in the writer's hands, so
        // that no thread holds two: the first taken into a batch, the others queued behind it.
        let threads = 4
        for n in 0..<threads {
            send(n, RawHTTP.post("/shl/\(created.id)", #"{"recipient":"during-\#(n)"}"#))
            #expect(Self.eventually { groupCommit.backlog.inBatch == 1 && groupCommit.backlog.queued == n })
        }
        send(threads, "GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        // Every answer but the first manifest's comes while the lock is held.
        _ = Self.eventually(max(0, hold - (Clock.monotonicSeconds() - held))) {
            answers.withLock { $0.count } == threads
        }
        foreign.release()
        group.wait()
        let got = answers.withLock { $0 }
        let get = try #require(got[threads])
        #expect(get.answer?.status == 200, "the U link answered \(get.answer?.status ?? 0)")
        #expect(get.at < foreign.releasedAt!, "the U link was answered only after the lock's release")
        #expect(get.answer?.body.isEmpty == false)
        for n in 1..<threads {
            let post = try #require(got[n])
            #expect(post.answer?.status == 503, "manifest \(n) answered \(post.answer?.status ?? 0)")
            #expect(post.answer?.header("Retry-After") == "5")
            #expect(post.at < foreign.releasedAt!, "manifest \(n) was answered only after the lock's release")
            #expect(post.at - held < 12)
        }
        // The one taken into the batch: committed once the lock went, so 200 (never 503 for a committed grant).
        let taken = try #require(got[0])
        #expect(taken.answer?.status == 200, "the taken manifest answered \(taken.answer?.status ?? 0)")
        // After the release manifests are served again; only the grants answered 200 were recorded.
        let after = try #require(
            RawHTTP.exchange(RawHTTP.post("/shl/\(created.id)", #"{"recipient":"after"}"#), port: port))
        #expect(after.status == 200)
        #expect(s.store.flush(seconds: 10) == 0)
        let manifests = try s.store.audit(linkID: created.id).filter { $0.kind == "manifest" }
        #expect(manifests.compactMap(\.recipient) == ["before", "during-0", "after"])
    }

    /// Over a real socket, with sealed locations (nothing written for them): while another process holds the write
    /// lock, manifests and their locations are answered 200 at once, their access records queued; the records are
    /// committed, every one, once the lock is gone.
    @Test func sealedManifestsAreServedWhileTheLockIsHeldAndRecordedAfter() throws {
        let s = try InProcessServer(writeWaits: .init(busyTimeoutMilliseconds: 20_000, queuedSeconds: 2))
        let created = try s.create()
        let port = s.port
        #expect(
            RawHTTP.exchange(RawHTTP.post("/shl/\(created.id)", #"{"recipient":"before"}"#), port: port)?.status == 200)
        #expect(s.store.flush(seconds: 10) == 0)
        let foreign = try ForeignWriter(s.database.url.sqlitePath)
        var statuses: [Int] = []
        for n in 0..<6 {
            let answer = try #require(
                RawHTTP.exchange(RawHTTP.post("/shl/\(created.id)", #"{"recipient":"during-\#(n)"}"#), port: port))
            statuses.append(answer.status)
            let location = try #require((try JSONParser.parse(answer.body))["files"]?[0]?["location"]?.stringValue)
            let path = String(location.dropFirst("https://links.example.org".count))
            statuses.append(
                RawHTTP.exchange("GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port)?.status ?? 0)
        }
        #expect(foreign.releasedAt == nil, "answered while the lock was held")
        foreign.release()
        #expect(statuses == Array(repeating: 200, count: 12))
        #expect(s.store.flush(seconds: 10) == 0)
        let records = try s.store.audit(linkID: created.id)
        #expect(records.filter { $0.kind == "manifest" }.compactMap(\.recipient) == ["before"] + (0..<6).map { "during-\($0)" })
        #expect(records.filter { $0.kind == "file" }.compactMap(\.recipient) == (0..<6).map { "during-\($0)" })
    }
}

extension DatabaseURL {
    /// The SQLite file's path (these tests are on SQLite only).
    fileprivate var sqlitePath: String {
        if case .sqlite(let path) = self { return path }
        return ""
    }
}
