import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer

/// Hostile clients against the real server over real sockets (the Python client's `raw` probes): bodies over
/// 16 KiB, over-long headers, a slow client, too many connections from one address, pipelining, paths that try
/// to leave the routes. The server stays up and reads or writes no file but its database and log.
@Suite struct ServerLimitsTests {

    @Test(.enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing))
    func hostileClientsAreBounded() throws {
        let dir = try TestSupport.tempDir("limits")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        // The server runs in an empty folder of its own: nothing may appear in it.
        let cwd = dir.appendingPathComponent("cwd")
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        let port = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        let link = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        let server = try ServerProcess(
            db: db, port: port, base: base, ["--timeout", "1", "--max-connections-per-client", "4"], in: cwd)
        let host = "127.0.0.1"
        let portText = String(server.port)

        // Too many connections from one address: 4 are served, the others refused.
        let connections = try ServerTestSupport.client(["raw", host, portText, "connections", "7"])
        #expect(int(connections["answered"]) == 4 && int(connections["refused"]) == 3, "\(connections)")

        // A body over 16 KiB: 413 before the handler (nothing is recorded for the link), declared or chunked; a
        // chunked body far over the limit is cut off.
        let big = #"{"recipient":""# + String(repeating: "x", count: 17 * 1024) + #""}"#
        let declared = try ServerTestSupport.client(["post", server.url(link.id), big])
        #expect(int(declared["status"]) == 413)
        let chunked = try ServerTestSupport.client(["raw", host, portText, "chunked", "/shl/\(link.id)", "20000"])
        #expect(chunked["statuses"] == .array([.integer(413)]), "\(chunked)")
        let flood = try ServerTestSupport.client(["raw", host, portText, "chunked", "/shl/\(link.id)", "2000000"])
        #expect(flood["statuses"] == .array([]), "\(flood)")
        #expect(try server.logLines().contains { $0["outcome"] == "too-large-closed" && int($0["status"]) == 413 })
        // Exactly at the limit the handler runs (members it does not know are ignored, as the IG says).
        let head = #"{"recipient":"x","pad":""#
        let padded = head + String(repeating: "y", count: 16 * 1024 - head.utf8.count - 2) + #""}"#
        #expect(padded.utf8.count == 16 * 1024)
        #expect(int(try ServerTestSupport.client(["post", server.url(link.id), padded])["status"]) == 200)

        // Headers over the limit: 431.
        let headers = try ServerTestSupport.client(["raw", host, portText, "headers", "40000"])
        #expect(headers["statuses"] == .array([.integer(431)]), "\(headers)")

        // A client that sends half a request line and waits: closed after the 1 s timeout.
        let slow = try ServerTestSupport.client(["raw", host, portText, "slow", "10"])
        let closedAfter = slow["closedAfter"]?.doubleValue ?? 99
        #expect(closedAfter >= 0.9 && closedAfter < 5, "\(slow)")

        // Pipelining: 1500 requests in one write are answered in turn up to 1000, then the connection closes (the
        // last answers may be lost to the client in the reset of a close with requests still unread: the server's
        // log counts what it answered).
        let before = try server.logLines().filter { $0["route"] == "health" }.count
        let pipeline = try ServerTestSupport.client(["raw", host, portText, "pipeline", "1500"])
        let answered = pipeline["statuses"]?.arrayValue ?? []
        #expect(
            answered.count > 900 && answered.count <= 1000 && answered.allSatisfy { $0 == .integer(200) },
            "\(answered.count)")
        #expect(try server.logLines().filter { $0["route"] == "health" }.count - before == 1000)

        // Paths that try to leave the routes: 404, never a file.
        for path in [
            "/shl/../../etc/passwd", "/shl/%2e%2e/%2e%2e/etc/passwd", "/shl/file/..%2f..%2fetc%2fpasswd",
            "/../links.db",
            "/shl/" + String(repeating: "A", count: 42) + "%00", "/links.db",
            "/shl/file/" + link.id + "/../../links.db",
        ] {
            let answer = try ServerTestSupport.client(["get", "http://127.0.0.1:\(server.port)" + path])
            #expect(int(answer["status"]) == 404, "\(path): \(answer)")
            let text = JSONWriter.minifiedString(answer["body"] ?? .null)
            #expect(!text.contains("root:"), "\(path): \(text)")
        }
        #expect(int(try ServerTestSupport.client(["get", "http://127.0.0.1:\(server.port)/healthz"])["status"]) == 200)

        // The only files the server has open are its database (with -wal and -shm) and its log.
        let pid = server.process.processIdentifier
        let dbPath = String(db.dropFirst("sqlite:".count))
        let allowed = Set([dbPath, dbPath + "-wal", dbPath + "-shm", server.log.path, "/dev/null"])
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                target.hasPrefix("/")
            else { continue }
            #expect(allowed.contains(target), "the server has \(target) open")
        }
        #expect(server.stop() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cwd.path).filter { !$0.hasSuffix(".log") }.isEmpty)
        // None of this reached the link's handler: its only access is the one request at the limit.
        let audit = try ServerTestSupport.link("audit", db: db, base: "", ["--json", "--id", link.id]).stdout
        #expect(audit.split(separator: "\n").count == 1, "\(audit)")
    }
}
