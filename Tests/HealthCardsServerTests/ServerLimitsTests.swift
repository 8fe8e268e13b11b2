import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

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

        // Paths that try to leave the routes: 404 (400 for an encoded NUL, which no path holds), never a file.
        for path in [
            "/shl/../../etc/passwd", "/shl/%2e%2e/%2e%2e/etc/passwd", "/shl/file/..%2f..%2fetc%2fpasswd",
            "/../links.db",
            "/shl/" + String(repeating: "A", count: 42) + "%00", "/links.db",
            "/shl/file/" + link.id + "/../../links.db",
        ] {
            let answer = try ServerTestSupport.client(["get", "http://127.0.0.1:\(server.port)" + path])
            #expect(int(answer["status"]) == (path.hasSuffix("%00") ? 400 : 404), "\(path): \(answer)")
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

    /// A TCP connection to 127.0.0.1:`port` from the loopback address `source` (127.0.0.2, …: every 127/8 address
    /// is this machine's), so that the server counts it against another client; -1 when it cannot connect.
    static func connect(from source: String, port: UInt16, timeoutSeconds: Int = 5) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr(host)
            a.sin_port = port.bigEndian
            return a
        }
        var local = address(source, 0)
        var remote = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 }
                    && r.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) == 0 }
            }
        }
        guard ok else {
            close(fd)
            return -1
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends `GET /healthz` on an open connection and reads the answer: its status line, or nil when the server
    /// closed the connection without one.
    static func health(_ fd: Int32) -> String? {
        let request = Array("GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".utf8)
        // MSG_NOSIGNAL: a write to a connection the server closed must not end the test process.
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 65536 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            answer += buffer[0..<n]
        }
        let text = String(decoding: answer, as: UTF8.self)
        return text.hasPrefix("HTTP/1.1 ") ? String(text.prefix { $0 != "\r" }) : nil
    }

    /// `serve --max-connections 4` serves at most 4 connections at once in all, whoever opens them: with 2 held from
    /// each of two clients (under their own limit of 2), a fifth from a third client, under its own limit, is not
    /// served while they are open; once they close, that client is served. Real server, real sockets (no Python: every connection
    /// comes from its own loopback address).
    @Test func maxConnectionsLimitsEveryClientTogether() throws {
        let dir = try TestSupport.tempDir("max-connections")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let port = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        _ = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        let server = try ServerProcess(
            db: db, port: port, base: base, ["--max-connections", "4", "--max-connections-per-client", "2", "--timeout", "10"],
            in: dir)
        defer { server.stop() }
        var held: [Int32] = []
        for source in ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"] {
            let fd = Self.connect(from: source, port: server.port)
            try #require(fd >= 0, "connect from \(source): \(String(cString: strerror(errno)))")
            held.append(fd)
        }
        usleep(300_000)  // the server accepts the four first
        // Not served while the four are open: closed by the server, or left unanswered (2 s).
        let fifth = Self.connect(from: "127.0.0.4", port: server.port, timeoutSeconds: 2)
        usleep(300_000)
        let fifthAnswer = fifth >= 0 ? Self.health(fifth) : nil
        if fifth >= 0 { close(fifth) }
        #expect(fifthAnswer == nil, "a fifth connection was answered: \(fifthAnswer ?? "")")
        let answers = held.map(Self.health)
        #expect(answers.allSatisfy { $0?.hasPrefix("HTTP/1.1 200") == true }, "\(answers)")
        for fd in held { close(fd) }
        usleep(300_000)
        let again = Self.connect(from: "127.0.0.4", port: server.port)
        try #require(again >= 0)
        let againAnswer = Self.health(again)
        #expect(againAnswer?.hasPrefix("HTTP/1.1 200") == true, "the limit is of connections at once: \(againAnswer ?? "none")")
        close(again)
        // Under the limit the per-client one still applies: a third connection from one client is refused.
        let one = (0..<3).map { _ in Self.connect(from: "127.0.0.5", port: server.port) }
        usleep(300_000)
        let oneAnswers = one.map { $0 >= 0 ? Self.health($0) : nil }
        for fd in one where fd >= 0 { close(fd) }
        #expect(oneAnswers.compactMap { $0 }.count == 2, "\(oneAnswers)")
    }
}
