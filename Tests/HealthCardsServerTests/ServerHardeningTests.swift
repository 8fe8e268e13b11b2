import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

/// Bounded recipients, locations that do not copy them, `/healthz` that fails when the database cannot be
/// written, and HTTP framing: unmatched routes whatever their body, conflicting `Content-Length`, HEAD.
@Suite struct ServerHardeningTests {
    typealias Fixture = LinkServiceTests.Fixture

    /// 256 bytes of UTF-8 are accepted, 257 refused with 400 before anything is read or written (manifest and U
    /// link); bytes, not characters: 85 three-byte characters pass, 86 do not.
    @Test func recipientIsAtMost256BytesOfUTF8() throws {
        let f = try Fixture()
        let link = try f.create()
        for (recipient, status) in [
            (String(repeating: "a", count: 256), 200), (String(repeating: "a", count: 257), 400),
            (String(repeating: "病", count: 85), 200), (String(repeating: "病", count: 86), 400),
        ] {
            let answer = f.post(link.id, #"{"recipient":"\#(recipient)"}"#)
            #expect(answer.status == status, "\(recipient.utf8.count) bytes")
            if status == 400 {
                #expect(answer.outcome == "recipient-too-long")
                #expect(String(decoding: answer.body, as: UTF8.self).contains("at most 256"))
            }
        }
        #expect(try f.store.audit(linkID: link.id).count == 2, "a refused request is not recorded")
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try f.create(options)
        #expect(f.get("/shl/\(direct.id)", query: ["recipient": String(repeating: "b", count: 256)]).status == 200)
        #expect(f.get("/shl/\(direct.id)", query: ["recipient": String(repeating: "b", count: 257)]).status == 400)
        #expect(try f.store.audit(linkID: direct.id).count == 1)
    }

    /// Over a real socket, a `U` link's `?recipient=` is read whole: a `%00` in it is refused with 400 naming
    /// U+0000 (libmicrohttpd's C strings ended it there, and `a%00b` was served and recorded as `a`), and a
    /// `%20` is a space in the access record.
    @Test func aQueryRecipientIsReadWholeOverASocket() throws {
        let s = try InProcessServer()
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try s.create(options)
        func fetch(_ query: String) -> RawHTTP.Answer? {
            RawHTTP.exchange(
                "GET /shl/\(direct.id)?recipient=\(query) HTTP/1.1\r\nHost: links.example.org\r\nConnection: close\r\n\r\n",
                port: s.port)
        }
        let nul = try #require(fetch("a%00b"))
        #expect(nul.status == 400 && String(decoding: nul.body, as: UTF8.self).contains("U+0000"), "\(nul.head)")
        // Bytes that are no UTF-8 text (a lone %ff, half a character, a surrogate, an overlong NUL) are refused at
        // the front: they reached the handler with U+FFFD in their place, and were served and recorded so.
        for bad in ["a%ffb", "a%c3", "a%ed%a0%80b", "a%c0%80b", "a%f4%90%80%80"] {
            let answer = try #require(fetch(bad))
            #expect(answer.status == 400 && String(decoding: answer.body, as: UTF8.self).contains("not UTF-8"), "\(bad)")
        }
        let spaced = try #require(fetch("A%20clinic"))
        #expect(spaced.status == 200)
        #expect(try #require(fetch("caf%C3%A9")).status == 200, "UTF-8 text is taken")
        // A recipient given twice is refused (it was served and recorded as the first), as a manifest body's is.
        let twice = try #require(fetch("first&recipient=second"))
        #expect(twice.status == 400 && String(decoding: twice.body, as: UTF8.self).contains("more than once"))
        let audit = try s.store.audit(linkID: direct.id)
        #expect(audit.map(\.outcome) == ["bad-request", "served", "served"])
        #expect(audit.map(\.recipient) == [nil, "A clinic", "café"])
    }

    /// Over a real socket, a path holding `%00`, or a request line holding a NUL byte, is refused with 400 and not
    /// recorded: libmicrohttpd decodes the path and hands it on as a C string, which ended there, so
    /// `/shl/ID%00zzz` was served as `/shl/ID`. A connection that sends such a request line and goes away before
    /// its headers leaves the server serving.
    @Test func aPathHoldingAnEncodedNULIsRefusedOverASocket() throws {
        let s = try InProcessServer()
        let link = try s.create()
        let body = #"{"recipient":"r"}"#
        for path in ["/shl/\(link.id)%00zzz", "/shl/\(link.id)%00", "/shl%00/\(link.id)", "/healthz%00"] {
            let answer = try #require(RawHTTP.exchange(RawHTTP.post(path, body), port: s.port), "\(path)")
            #expect(answer.status == 400, "\(path): \(answer.head)")
            #expect(String(decoding: answer.body, as: UTF8.self).contains("NUL"), "\(path)")
        }
        // Only the path: a `%00` in the query reaches the handler (which refuses a recipient holding U+0000).
        #expect(try #require(RawHTTP.exchange(RawHTTP.post("/shl/\(link.id)?a=%00", body), port: s.port)).status == 200)
        // A NUL byte in the request line, in the path or the query (a new-user trial: served as `/shl/ID`, and a
        // `U` link's recipient recorded cut at it).
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try s.create(options)
        for raw in [
            RawHTTP.post("/shl/\(link.id)\u{0}junk", body), RawHTTP.post("/shl/\(link.id)\u{0}", body),
            "GET /shl/\(direct.id)?recipient=NulBob\u{0}junk HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        ] {
            let answer = try #require(RawHTTP.exchange(raw, port: s.port))
            #expect(answer.status == 400 && String(decoding: answer.body, as: UTF8.self).contains("NUL"), "\(answer.head)")
        }
        #expect(try s.store.audit(linkID: direct.id).isEmpty)
        let fd = ServerLimitsTests.connect(from: "127.0.0.1", port: s.port)
        try #require(fd >= 0)
        let partial = Array("POST /shl/\(link.id)%00 HTTP/1.1\r\n".utf8)
        #expect(partial.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == partial.count)
        usleep(100_000)
        close(fd)
        #expect(try #require(RawHTTP.exchange(RawHTTP.post("/shl/\(link.id)", body), port: s.port)).status == 200)
        #expect(s.store.flush(seconds: 10) == 0)
        #expect(try s.store.audit(linkID: link.id).map(\.outcome) == ["served", "served"])
        let refused = s.log.entries.filter { $0["outcome"]?.stringValue == "bad-path" }
        #expect(refused.count == 7 && refused.allSatisfy { $0["status"]?.numberLexeme == "400" })
    }

    /// `[::]` listens on IPv4 too (IPv4-mapped addresses, logged as the IPv4 address), as an operator who writes it
    /// expects; `[::1]` only on IPv6. Skipped where this machine has no IPv6 loopback.
    @Test(.enabled(if: ServerHardeningTests.hasIPv6Loopback, "no IPv6 loopback (::1) here"))
    func everyAddressOfIPv6TakesIPv4ClientsToo() throws {
        let s = try InProcessServer(http: { $0.address = "::" })
        let answer = try #require(
            RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port))
        #expect(answer.status == 200)
        // Logged as the IPv4 address it is, not ::ffff:127.0.0.1.
        let peers = s.log.entries.filter { $0["event"]?.stringValue == "request" }.map { $0["peer"]?.stringValue }
        #expect(peers == ["127.0.0.1"])
        let v6only = try InProcessServer(http: { $0.address = "::1" })
        #expect(ServerLimitsTests.connect(from: "127.0.0.1", port: v6only.port) < 0, "::1 is not 127.0.0.1")
    }

    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()

    /// A manifest's locations store nothing (sealed), and a file's access record does not copy the recipient
    /// (one copy, in the manifest's record, found through the grant both hold); the file fetched is still listed
    /// with the manifest's recipient.
    @Test func locationsDoNotCopyTheRecipient() throws {
        let f = try Fixture()
        let files = (0..<3).map { _ in LinkContent(contentType: JWE.smartHealthCard, bytes: f.card) }
        let link = try f.create(files: files)
        let recipient = String(repeating: "R", count: 256)
        let manifest = try LinkServiceTests.json(f.post(link.id, #"{"recipient":"\#(recipient)"}"#))
        let locations = (manifest["files"]?.arrayValue ?? []).compactMap { $0["location"]?.stringValue }
        #expect(locations.count == 3)
        #expect(f.get(f.path(locations[1])).status == 200)
        #expect(f.store.flush(seconds: 10) == 0, "both records committed")
        let stored = try f.store.database.withConnection { c in
            (
                tickets: try c.scalar("SELECT count(*) FROM hc_tickets", [])?.integer,
                records: try c.query("SELECT kind, recipient, grant_id FROM hc_audit ORDER BY seq", [])
            )
        }
        #expect(stored.tickets == 0)
        try #require(stored.records.map { $0[0].text } == ["manifest", "file"])
        #expect(stored.records[0][1].text == recipient && stored.records[1][1] == .null, "\(stored.records)")
        #expect(stored.records[0][2].text?.utf8.count == 14 && stored.records[0][2] == stored.records[1][2])
        let audit = try f.store.audit(linkID: link.id)
        #expect(audit.map(\.kind) == ["manifest", "file"])
        #expect(audit.allSatisfy { $0.recipient == recipient })
        #expect(audit.last?.detail == "file 2")
    }

    /// HEAD is routed wherever GET is (and named in 405's Allow).
    @Test func headIsAllowedWhereGetIs() throws {
        let f = try Fixture()
        let link = try f.create()
        let manifest = try LinkServiceTests.json(f.post(link.id, #"{"recipient":"r"}"#))
        let location = try #require(manifest["files"]?[0]?["location"]?.stringValue)
        let head = f.router.respond(HTTPRequest(method: "HEAD", path: f.path(location))).response
        #expect(head.status == 200 && head.header("Content-Type") == "application/jose")
        #expect(f.router.respond(HTTPRequest(method: "HEAD", path: "/healthz")).response.status == 200)
        let put = f.router.respond(HTTPRequest(method: "PUT", path: "/shl/\(link.id)")).response
        #expect(put.status == 405 && put.header("Allow") == "POST, GET, HEAD, OPTIONS")
    }

    /// Over a real socket: an unmatched route is 404 (or 405) whatever body it declares, never 413; two
    /// differing Content-Length headers are 400; HEAD on a location answers its headers and no body.
    @Test func framingOverARealSocket() throws {
        let s = try InProcessServer()
        let link = try s.create()
        let body = String(repeating: "x", count: 100)
        let unmatched = RawHTTP.exchange(RawHTTP.post("/nothing/here", body), port: s.port)
        #expect(unmatched?.status == 404, "\(unmatched?.head ?? "no answer")")
        let wrongMethod = RawHTTP.exchange(
            "PUT /shl/\(link.id) HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\nConnection: close\r\n\r\n" + body,
            port: s.port)
        #expect(wrongMethod?.status == 405, "\(wrongMethod?.head ?? "no answer")")
        let large = RawHTTP.exchange(
            "POST /nothing HTTP/1.1\r\nHost: t\r\nContent-Length: 999999\r\nConnection: close\r\n\r\n", port: s.port)
        #expect(large?.status == 404, "\(large?.head ?? "no answer")")

        let recipient = #"{"recipient":"r"}"#
        let conflicting = RawHTTP.exchange(
            "POST /shl/\(link.id) HTTP/1.1\r\nHost: t\r\nContent-Length: \(recipient.utf8.count)\r\n"
                + "Content-Length: 5\r\nConnection: close\r\n\r\n" + recipient, port: s.port)
        #expect(conflicting?.status == 400, "\(conflicting?.head ?? "no answer")")
        #expect(try s.store.audit(linkID: link.id).isEmpty, "the conflicting request reached no handler")

        let manifest = try #require(RawHTTP.exchange(RawHTTP.post("/shl/\(link.id)", recipient), port: s.port))
        #expect(manifest.status == 200)
        let location = try #require(JSONParser.parse(manifest.body)["files"]?[0]?["location"]?.stringValue)
        let path = String(location.dropFirst("https://links.example.org".count))
        let get = try #require(
            RawHTTP.exchange("GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port))
        let head = try #require(
            RawHTTP.exchange("HEAD \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port))
        #expect(get.status == 200 && !get.body.isEmpty)
        #expect(head.status == 200 && head.body.isEmpty, "\(head.head) + \(head.body.count) bytes")
        #expect(head.header("Content-Length") == String(get.body.count))
        #expect(head.header("Content-Type") == "application/jose")
    }

    /// `/healthz` is 503 when the database cannot be written: the SQLite file on a tmpfs filled to the last
    /// byte (a link request then fails too; a one-row write may still fit where the failed request's frames were,
    /// so SQLite's health also wants 1 MiB free). Skipped when not root (a tmpfs cannot be mounted).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root: the full-disk case is skipped"))
    func healthFailsWhenTheDiskIsFull() throws {
        let mount = try TestSupport.tempDir("full-disk").appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        let mounted = try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mount.path])
        try #require(mounted.status == 0, "mount -t tmpfs as root failed: \(mounted.stderr)")
        defer { _ = try? TestSupport.run("/bin/umount", ["-l", mount.path]) }
        // Single-use locations: a manifest then waits for its commit (its location rows), so a full disk shows in
        // its answer (a sealed manifest's record is queued; /healthz is what tells a load balancer).
        let s = try InProcessServer(
            db: mount.appendingPathComponent("links.db").path, service: { $0.singleUseLocations = true })
        let link = try s.create()
        let healthy = RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port)
        #expect(healthy?.status == 200)
        // Fill the file system: the rest of its space in one file.
        let filler = mount.appendingPathComponent("filler").path
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let chunk = [UInt8](repeating: 0, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        // The write-ahead log may still have room for a few commits: post until the link request fails.
        var statuses: [Int] = []
        for n in 0..<400 {
            let answer = RawHTTP.exchange(
                RawHTTP.post(
                    "/shl/\(link.id)", #"{"recipient":"filler \#(n) \#(String(repeating: "z", count: 200))"}"#),
                port: s.port)
            statuses.append(answer?.status ?? 0)
            if answer?.status == 503 { break }
        }
        #expect(statuses.last == 503, "link requests never failed on a full disk: \(Set(statuses))")
        let health = RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port)
        #expect(health?.status == 503, "\(health?.head ?? "no answer")")
        #expect(health?.header("Retry-After") == "5")
        unlink(filler)
        // Healthy again once there is room, as soon as the writer's next try (at most a second after the last)
        // commits: until then the server's writes, the health check's among them, are refused at once.
        var again: RawHTTP.Answer?
        for _ in 0..<50 {
            again = RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port)
            if again?.status == 200 { break }
            usleep(100_000)
        }
        #expect(again?.status == 200, "healthy again once there is room")
    }
}
