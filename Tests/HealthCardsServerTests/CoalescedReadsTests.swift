import Foundation
import HealthCardsTestSupport
import Synchronization
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer

/// Reads that arrive together made as one statement (`CoalescedReads`, the server's link-row reads on PostgreSQL):
/// every reader gets its own key's value, never one read before it asked, at most `maxBatch` keys a statement and
/// `maxInFlight` statements at once; a failed statement fails exactly the reads it held.
@Suite struct CoalescedReadsTests {
    /// Runs `body(i)` on `count` threads started together.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for i in 0..<count {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                body(i)
                group.leave()
            }
        }
        for _ in 0..<count { start.signal() }
        group.wait()
    }

    @Test func everyReaderGetsItsOwnKeysValueFromFewerStatements() throws {
        struct Seen: Sendable {
            var inFlight = 0
            var mostInFlight = 0
            var largest = 0
        }
        let seen = Locked(Seen())
        let reads = CoalescedReads<String>(maxBatch: 4, maxInFlight: 2) { keys in
            seen.withLock {
                $0.inFlight += 1
                $0.mostInFlight = max($0.mostInFlight, $0.inFlight)
                $0.largest = max($0.largest, keys.count)
            }
            usleep(20_000)  // a round trip: the others arrive meanwhile
            seen.withLock { $0.inFlight -= 1 }
            // "missing-*" keys have no row.
            return Dictionary(
                uniqueKeysWithValues: keys.filter { !$0.hasPrefix("missing") }.map { ($0, "row of \($0)") })
        }
        let answers = Locked([Int: String?]())
        let failures = Locked(0)
        Self.concurrently(64) { i in
            // Some keys read by several readers at once (one row for them all).
            let key = i % 5 == 0 ? "missing-\(i)" : "link-\(i % 24)"
            do {
                let value = try reads.value(key)
                answers.withLock { $0[i] = value }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let got = answers.withLock { $0 }
        #expect(got.count == 64)
        for (i, value) in got {
            #expect(value == (i % 5 == 0 ? nil : "row of link-\(i % 24)"), "reader \(i)")
        }
        let statements = reads.statementsMade
        #expect(statements < 64, "64 reads in \(statements) statements")
        #expect(statements >= 64 / 4 / 2, "at most 4 distinct keys a statement")
        let s = seen.withLock { $0 }
        #expect(s.mostInFlight <= 2 && s.largest <= 4, "\(s)")
    }

    /// The value each reader gets was read after it asked: a reader that saw the source at version v gets v or later.
    @Test func noReaderIsAnsweredFromBeforeItAsked() throws {
        let version = Atomic<Int>(0)
        let reads = CoalescedReads<Int>(maxBatch: 8, maxInFlight: 1) { keys in
            let now = version.load(ordering: .sequentiallyConsistent)
            usleep(1_000)
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, now) })
        }
        let stale = Locked([String]())
        Self.concurrently(48) { i in
            for round in 0..<20 {
                // A change committed before this read was asked (as a `link deactivate` before a request arrives).
                let asked = version.add(1, ordering: .sequentiallyConsistent).newValue
                let got = (try? reads.value("link-\(i % 3)")) ?? -1
                if got < asked {
                    stale.withLock { $0.append("reader \(i) round \(round): asked at \(asked), got \(got)") }
                }
            }
        }
        #expect(stale.withLock { $0 }.isEmpty, "\(stale.withLock { $0.prefix(5) })")
        #expect(reads.statementsMade < 48 * 20)
    }

    @Test func aFailedStatementFailsTheReadsItHeldAndTheNextOnesSucceed() throws {
        struct Down: Error {}
        let failing = Atomic<Bool>(true)
        let reads = CoalescedReads<String>(maxBatch: 16, maxInFlight: 1) { keys in
            usleep(2_000)
            if failing.load(ordering: .sequentiallyConsistent) { throw Down() }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, $0) })
        }
        let errors = Locked(0)
        Self.concurrently(16) { i in
            do {
                _ = try reads.value("k\(i)")
            } catch is Down {
                errors.withLock { $0 += 1 }
            } catch {}
        }
        #expect(errors.withLock { $0 } == 16)
        failing.store(false, ordering: .sequentiallyConsistent)
        #expect(try reads.value("k1") == "k1")
    }

    /// On PostgreSQL the server's store reads link rows through it: concurrent reads of different links get their
    /// own rows, and a link deactivated is read as such by the next read.
    @Test(.enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func theServersLinkReadsOnPostgreSQLAreCoalescedAndFresh() throws {
        let url = try DatabaseURL(try PostgresCluster.shared.get().createDatabase())
        let database = try Database(url: url, role: .server, create: false, maxConnections: 6, now: 1_765_000_000)
        let store = DatabaseLinkStore(database: database)
        #expect(store.linkReads != nil)
        let ids = (0..<20).map { i in "link-\(i)-" + String(repeating: "x", count: 30) }
        for (i, id) in ids.enumerated() {
            try store.create(
                StoredLink(id: id, flags: i % 2 == 0 ? "L" : "", label: "label \(i)", createdAt: 1_765_000_000))
        }
        let wrong = Locked([String]())
        Self.concurrently(40) { i in
            for round in 0..<25 {
                let id = ids[(i + round) % ids.count]
                do {
                    let link = try store.link(id: id, withFiles: false)
                    if link?.id != id || link?.label != "label \((i + round) % ids.count)" {
                        wrong.withLock { $0.append("\(id): \(String(describing: link?.id))") }
                    }
                    if try store.link(id: "no-such-\(i)", withFiles: false) != nil {
                        wrong.withLock { $0.append("no-such-\(i) found") }
                    }
                } catch {
                    wrong.withLock { $0.append("\(id): \(error)") }
                }
            }
        }
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
        let statements = try #require(store.linkReads).statementsMade
        #expect(statements < 40 * 25 * 2, "\(statements) statements for \(40 * 25 * 2) reads")
        #expect(try store.deactivate(linkID: ids[3], now: 1_765_000_100))
        #expect(try store.link(id: ids[3], withFiles: false)?.active == false)
        #expect(try store.link(id: ids[4], withFiles: false)?.active == true)
        store.flush(seconds: 5)
        database.close()
    }
}
