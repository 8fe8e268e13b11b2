import Foundation
import HealthCardsCore
import HealthCardsTestSupport
import Synchronization
import Testing

@testable import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

/// The server's SQLite write-ahead log stays bounded while requests keep writing and reading
/// (docs/server.md, "Databases"): the checkpointer restarts it, so a busy server cannot fill the disk with it.
/// Before the restart, every PASSIVE checkpoint trailed the newest commit and the log never started over:
/// 1.2 GB after 6 s of manifest requests.
@Suite(.serialized)
struct WriteAheadLogBoundTests {
    /// One transaction that replaces the table's one access record with one whose `detail` is `detail`.
    static func replaceRecord(_ c: SQLConnection, _ n: Int, _ detail: String) throws {
        try c.transaction(write: true) {
            _ = try c.query("DELETE FROM hc_audit", [])
            _ = try c.query(
                "INSERT INTO hc_audit (at, link_id, kind, recipient, outcome, status, detail) "
                    + "VALUES (?, 'link', 'file', 'r', 'served', 200, ?)",
                [.integer(LinkServiceTests.start + Int64(n)), .text(detail)])
        }
    }

    @Test func theLogStaysBoundedUnderContinuousWritesAndReads() throws {
        let dir = try TestSupport.tempDir("wal-bound")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("links.db").path
        let database = try Database(
            url: .sqlite(path: path), role: .server, create: true, maxConnections: 6, now: LinkServiceTests.start)
        defer { database.close() }
        // Each transaction replaces one access record whose detail spills over 16 pages: ~64 KiB of log a commit,
        // while the database file itself stays small (the freed pages are reused).
        let detail = String(repeating: "x", count: 64 * 1024)
        let transactions = 2_600
        let stop = Atomic<Bool>(false)
        let readers = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: readers) {
                while !stop.load(ordering: .relaxed) {
                    _ = try? database.withConnection { c in
                        try c.transaction(write: false) { try c.scalar("SELECT count(*) FROM hc_audit") }
                    }
                }
            }
        }
        var largest: Int64 = 0
        var st = stat()
        for n in 0..<transactions {
            try database.withConnection { c in try Self.replaceRecord(c, n, detail) }
            if stat(path + "-wal", &st) == 0 { largest = max(largest, Int64(st.st_size)) }
        }
        stop.store(true, ordering: .relaxed)
        readers.wait()
        let written = Int64(transactions) * Int64(detail.utf8.count)
        // Over 160 MiB went through the log; it never held more than the size it is truncated back to.
        #expect(written > 160 << 20)
        #expect(largest > 0)
        #expect(largest <= Database.walSizeLimitBytes, "the log reached \(largest) bytes after \(written) written")
        #expect(try database.withConnection { c in try c.scalar("SELECT count(*) FROM hc_audit") } == .integer(1))
    }

    /// The checkpointer's thread cannot run at all (here: it waits for the pool's one connection, which the writer
    /// holds throughout), as on a machine whose CPU is taken by request threads: the writer restarts the log itself
    /// once it passes three quarters of its limit. Before, the log grew by all 170 MiB written.
    @Test func theWriterBoundsTheLogWhenTheCheckpointerCannotRun() throws {
        let dir = try TestSupport.tempDir("wal-starved")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("links.db").path
        let database = try Database(
            url: .sqlite(path: path), role: .server, create: true, maxConnections: 1, now: LinkServiceTests.start)
        defer { database.close() }
        let detail = String(repeating: "z", count: 64 * 1024)
        var largest: Int64 = 0
        var st = stat()
        try database.withConnection { c in
            for n in 0..<2_600 {
                try Self.replaceRecord(c, n, detail)
                if stat(path + "-wal", &st) == 0 { largest = max(largest, Int64(st.st_size)) }
            }
        }
        #expect(largest > Database.walSizeLimitBytes / 2, "the log was restarted before the writer's bound")
        #expect(largest <= Database.walSizeLimitBytes, "the log reached \(largest) bytes")
    }

    /// A reader that keeps the old log (a backup, another process's long read) makes the restart give up after
    /// `restartWaitMilliseconds`, and writes go on: no write waits the busy timeout (5 s) for it. Before the short
    /// wait, every commit past the mark woke a RESTART that held this process's writers for the whole 5 s.
    @Test func aLongReaderNeverHoldsWritesBackForTheBusyTimeout() throws {
        let dir = try TestSupport.tempDir("wal-reader")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("links.db").path
        let database = try Database(
            url: .sqlite(path: path), role: .server, create: true, maxConnections: 4, now: LinkServiceTests.start)
        defer { database.close() }
        // Another process's reader (its own pool), in a read transaction for the whole test.
        let other = try Database(
            url: database.url, role: .operatorCommand, create: false, maxConnections: 1, now: LinkServiceTests.start)
        defer { other.close() }
        let detail = String(repeating: "y", count: 64 * 1024)
        try database.withConnection { c in
            _ = try c.query(
                "INSERT INTO hc_audit (at, link_id, kind, recipient, outcome, status, detail) "
                    + "VALUES (0, 'link', 'file', 'r', 'served', 200, ?)", [.text(detail)])
        }
        var longest = 0.0
        var writes = 0
        try other.withConnection { reader in
            try reader.begin(write: false, durable: false)
            defer { reader.rollback() }
            #expect(try reader.scalar("SELECT count(*) FROM hc_audit") == .integer(1))
            // 3 s of writes: well past the log's restart mark (16 pages a write), with the reader holding on.
            let start = Clock.monotonicSeconds()
            var n: Int64 = 0
            while Clock.monotonicSeconds() - start < 3 {
                n += 1
                let before = Clock.monotonicSeconds()
                try database.withConnection { c in
                    try c.transaction(write: true) {
                        _ = try c.query(
                            "UPDATE hc_audit SET at = ?, detail = ?", [.integer(n), .text(detail + String(n))])
                    }
                }
                longest = max(longest, Clock.monotonicSeconds() - before)
            }
            // The reader still sees its snapshot: the log it needs was kept.
            #expect(try reader.scalar("SELECT at FROM hc_audit") == .integer(0))
            writes = Int(n)
        }
        #expect(writes > 100, "\(writes) writes in 3 s")
        // Half the busy timeout: a write that waited for it would show 5 s.
        #expect(longest < 2.5, "a write waited \(longest) s")
        // Restarts that the reader made fail held the writers back for under half of the 3 s (0.55-0.81 s in 3
        // runs), not all of it: without the backoff they were tried at every round once the log passed 32 MiB, each
        // holding the writers 250 ms (2.9 s here; a trial: the server at 1-6 % of its rate while a `sqlite3` session
        // sat in a transaction).
        let restarts = database.restartStatistics
        #expect(restarts.tries > 0)
        #expect(restarts.failedSeconds < 1.5, "failed restarts held the writers \(restarts.failedSeconds) s of 3 s")
    }
}
