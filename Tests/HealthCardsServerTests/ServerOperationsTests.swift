import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// Running the server as a service: the systemd unit (checked by `systemd-analyze verify`), readiness over
/// `NOTIFY_SOCKET`, `/metrics` on its own address, and backups restored into a new database serving the same links.
@Suite struct ServerOperationsTests {
    static let unit = VerifyFixtures.repoRoot.appendingPathComponent("contrib/systemd/healthcards-serve.service")
    static let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The unit holds what the docs promise, and `systemd-analyze verify` finds nothing to say about it (with the
    /// program path pointed at the built binary, which must exist for verify; man pages are not installed here).
    @Test(.enabled(if: analyze != nil, "systemd-analyze is not installed (Debian package systemd): the unit is not verified"))
    func theSystemdUnitVerifies() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        for line in [
            "Type=notify", "User=healthcards", "ProtectSystem=strict", "NoNewPrivileges=yes",
            "ReadWritePaths=/var/lib/healthcards", "StateDirectory=healthcards", "Restart=on-failure",
        ] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "the unit has no \(line)")
        }
        let dir = try TestSupport.tempDir("systemd-unit")
        let copy = dir.appendingPathComponent("healthcards-serve.service")
        try text.replacingOccurrences(of: "/usr/bin/healthcards", with: TestSupport.healthcards)
            .write(to: copy, atomically: true, encoding: .utf8)
        // Its messages to standard error, never to a journal (a test run under systemd has JOURNAL_STREAM set).
        let console = ["SYSTEMD_LOG_TARGET": "console"]
        let run = try TestSupport.run(
            try #require(Self.analyze), ["verify", "--man=no", copy.path], environment: console,
            unset: ["JOURNAL_STREAM"])
        #expect(run.status == 0 && run.stderr.isEmpty && run.stdout.isEmpty, "\(run.stdout)\(run.stderr)")
        // The check itself notices a bad value.
        try text.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=strictly")
            .replacingOccurrences(of: "/usr/bin/healthcards", with: TestSupport.healthcards)
            .write(to: copy, atomically: true, encoding: .utf8)
        let bad = try TestSupport.run(
            try #require(Self.analyze), ["verify", "--man=no", copy.path], environment: console,
            unset: ["JOURNAL_STREAM"])
        #expect(bad.stderr.contains("protect system") || bad.stdout.contains("protect system"), "\(bad.stdout)\(bad.stderr)")
    }

    /// `healthcards serve` with `NOTIFY_SOCKET` sends `READY=1` once it listens, and `STOPPING=1` on SIGTERM (what
    /// `Type=notify` waits for); `--metrics-listen` serves `/metrics` there and not on the main address.
    @Test func serveNotifiesSystemdAndServesMetricsApart() throws {
        let dir = try TestSupport.tempDir("sd-notify")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let port = try ServerTestSupport.freePort()
        let metricsPort = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        let link = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        // The notification socket, as systemd makes it.
        let socketPath = dir.appendingPathComponent("notify").path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.healthcards)
        process.arguments = [
            "serve", "--db", db, "--listen", "127.0.0.1:\(port)", "--base-url", base,
            "--metrics-listen", "127.0.0.1:\(metricsPort)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = socketPath
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        func receive() -> String {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        }
        let ready = receive()
        #expect(ready.hasPrefix("READY=1\n") && ready.contains("STATUS=serving"), "\(ready)")
        // Ready means serving: a manifest at once.
        let manifest = RawHTTP.exchange(RawHTTP.post("/shl/\(link.id)", #"{"recipient":"r"}"#), port: port)
        #expect(manifest?.status == 200)
        let metrics = try #require(
            RawHTTP.exchange("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: metricsPort))
        let text = String(decoding: metrics.body, as: UTF8.self)
        #expect(metrics.status == 200 && metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(text.contains(#"healthcards_requests_total{route="manifest",status="200"} 1"#), "\(text)")
        #expect(text.contains(#"healthcards_request_duration_seconds_count 1"#))
        #expect(text.contains("healthcards_passcode_queue 0") && text.contains("healthcards_database_errors_total 0"))
        let elsewhere = RawHTTP.exchange("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port)
        #expect(elsewhere?.status == 404, "metrics are not on the links' address")
        kill(process.processIdentifier, SIGTERM)
        #expect(receive() == "STOPPING=1")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// `--metrics-listen` on `--listen`'s own address and port is refused before anything starts, saying so; a
    /// metrics port another program holds is named as `--metrics-listen`'s (it used to be a bare "could not start"),
    /// and the links' listener is not left running.
    @Test func metricsListenClashesAreNamed() throws {
        let dir = try TestSupport.tempDir("metrics-clash")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let port = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        _ = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        for metrics in ["127.0.0.1:\(port)", "0.0.0.0:\(port)"] {
            let run = try TestSupport.run(
                TestSupport.healthcards,
                ["serve", "--db", db, "--listen", "127.0.0.1:\(port)", "--base-url", base, "--metrics-listen", metrics])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("is the address and port of --listen") && run.stderr.contains("port of their own"), "\(run.stderr)")
        }
        // A malformed --metrics-listen is named as such (it was reported as --listen).
        let malformed = try TestSupport.run(
            TestSupport.healthcards,
            ["serve", "--db", db, "--listen", "127.0.0.1:\(port)", "--base-url", base, "--metrics-listen", "foo"])
        #expect(malformed.status == 2 && malformed.stderr.contains("--metrics-listen 'foo' has no port"), "\(malformed.stderr)")
        // A port held by a listening socket of this test.
        let (held, heldPort) = try NginxServer.boundSocket()
        defer { close(held) }
        try #require(listen(held, 1) == 0)
        let run = try TestSupport.run(
            TestSupport.healthcards,
            ["serve", "--db", db, "--listen", "127.0.0.1:\(port)", "--base-url", base, "--metrics-listen", "127.0.0.1:\(heldPort)"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--metrics-listen 127.0.0.1:\(heldPort): libmicrohttpd could not start"), "\(run.stderr)")
        #expect(RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port) == nil)
    }

    /// `--listen` values that are not an IP address and port are refused before anything starts, each saying what
    /// is wrong (they were: a C message without the option, "in use" for a mapped address, or taken as another
    /// address).
    @Test func listenAddressesThatCannotBeListenedOnAreNamed() throws {
        let dir = try TestSupport.tempDir("listen-values")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let base = "http://127.0.0.1:8080/shl"
        _ = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        for (listen, expected) in [
            ("localhost:0", "'localhost' is not an IP address (a host name is not looked up)"),
            ("::1:8080", "an IPv6 address goes in brackets before its port"),
            ("[::ffff:127.0.0.1]:0", "IPv4-mapped IPv6 address, which cannot be listened on: give the IPv4 address itself, e.g. --listen 127.0.0.1:0"),
            ("[fe80::1%lo]:0", "has a zone (%…), which is not supported"),
            ("[::1:0", "is not [IPv6]:PORT"),
        ] {
            let run = try TestSupport.run(
                TestSupport.healthcards, ["serve", "--db", db, "--listen", listen, "--base-url", base])
            #expect(run.status == 2, "\(listen): \(run.stderr)")
            #expect(run.stderr.contains("--listen '\(listen)'") && run.stderr.contains(expected), "\(listen): \(run.stderr)")
        }
    }

    /// Metrics count requests by route and status, their latency, database errors and the passcode queue.
    @Test func metricsCountRequestsByRouteAndStatus() throws {
        let metrics = ServerMetrics()
        metrics.request(route: "manifest", status: 200, seconds: 0.004)
        metrics.request(route: "manifest", status: 200, seconds: 0.02)
        metrics.request(route: "file", status: 404, seconds: 3)
        metrics.databaseError()
        metrics.passcodeQueue { 7 }
        let text = metrics.text()
        #expect(text.contains(#"healthcards_requests_total{route="manifest",status="200"} 2"#))
        #expect(text.contains(#"healthcards_requests_total{route="file",status="404"} 1"#))
        #expect(text.contains(#"healthcards_request_duration_seconds_bucket{le="0.005"} 1"#))
        #expect(text.contains(#"healthcards_request_duration_seconds_bucket{le="0.025"} 2"#))
        #expect(text.contains(#"healthcards_request_duration_seconds_bucket{le="2.5"} 2"#))
        #expect(text.contains(#"healthcards_request_duration_seconds_bucket{le="+Inf"} 3"#))
        #expect(text.contains("healthcards_passcode_queue 7") && text.contains("healthcards_database_errors_total 1"))
    }

    /// SQLite's online backup (`sqlite3 DB ".backup COPY"`, as docs/server.md says) taken while a server runs,
    /// restored as a new database: a new server on it serves the same links (the manifest's file decrypts to the
    /// card) with the same remaining passcode attempts.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "the sqlite3 program is not installed (Debian package sqlite3)"))
    func aSQLiteBackupServesTheSameLinks() throws {
        let s = try InProcessServer()
        let plain = try s.create()
        let guarded = try s.create(InProcessServer.passcode("pin", attempts: 5))
        #expect(RawHTTP.exchange(RawHTTP.post("/shl/\(guarded.id)", #"{"recipient":"r","passcode":"no"}"#), port: s.port)?.status == 401)
        let copy = s.dir.appendingPathComponent("restored.db").path
        let backup = try TestSupport.run(
            "/usr/bin/sqlite3", [s.dir.appendingPathComponent("links.db").path, ".backup '\(copy)'"])
        #expect(backup.status == 0, "\(backup.stderr)")
        let restored = try InProcessServer(db: copy)
        try Self.servesTheSame(plain, guarded, port: restored.port, card: s.card)
    }

    /// `pg_dump -Fc` of a live database restored with `pg_restore` into a new one: the same links, served.
    @Test(.enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func aPostgreSQLDumpServesTheSameLinks() throws {
        let cluster = try PostgresCluster.shared.get()
        let url = try cluster.createDatabase()
        let database = try Database(url: DatabaseURL(url), role: .server, create: false, now: LinkServiceTests.start)
        let store = DatabaseLinkStore(database: database)
        let publisher = LinkPublisher(store: store, baseURL: try BaseURL(InProcessServer.base))
        let card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
        let content = [LinkContent(contentType: JWE.smartHealthCard, bytes: card)]
        let plain = try publisher.create(content, options: .init(), now: LinkServiceTests.start)
        let guarded = try publisher.create(
            content, options: InProcessServer.passcode("pin", attempts: 5), now: LinkServiceTests.start)
        _ = try store.spendAttempt(linkID: guarded.id, now: LinkServiceTests.start)
        database.close()
        func name(_ url: String) -> String {
            String(url.components(separatedBy: "@/").last!.prefix { $0 != "?" })
        }
        let dump = "/tmp/hc-pgdump-\(getpid())-\(name(url)).dump"
        defer { unlink(dump) }
        let dumped = try PostgresCluster.asPostgres(
            "pg_dump", ["-h", cluster.socketDirectory, "-U", "postgres", "-Fc", "-f", dump, name(url)])
        #expect(dumped.status == 0, "\(dumped.stderr)")
        let target = try cluster.createDatabase()
        let targetName = name(target)
        let restoredRun = try PostgresCluster.asPostgres(
            "pg_restore", ["-h", cluster.socketDirectory, "-U", "postgres", "-d", targetName, dump])
        #expect(restoredRun.status == 0, "\(restoredRun.stderr)")
        let restored = try Database(
            url: DatabaseURL(target), role: .server, create: false, now: LinkServiceTests.start)
        defer { restored.close() }
        let service = LinkService(
            configuration: LinkService.Configuration(baseURL: try BaseURL(InProcessServer.base)),
            store: DatabaseLinkStore(database: restored), clock: TestClock(LinkServiceTests.start), log: MemoryLog())
        let server = HTTPServer(
            configuration: { var c = HTTPServer.Configuration(); c.port = 0; return c }(),
            router: Router(routes: service.routes), log: MemoryLog())
        let port = try server.start()
        defer { server.stop(graceSeconds: 1) }
        try Self.servesTheSame(plain, guarded, port: port, card: card)
    }

    static func servesTheSame(
        _ plain: LinkPublisher.Created, _ guarded: LinkPublisher.Created, port: UInt16, card: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let manifest = try #require(
            RawHTTP.exchange(RawHTTP.post("/shl/\(plain.id)", #"{"recipient":"after restore"}"#), port: port))
        #expect(manifest.status == 200, sourceLocation: sourceLocation)
        let location = try #require(JSONParser.parse(manifest.body)["files"]?[0]?["location"]?.stringValue)
        let path = String(location.dropFirst("https://links.example.org".count))
        let file = try #require(
            RawHTTP.exchange("GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port))
        let opened = try JWE(compact: String(decoding: file.body, as: UTF8.self)).decrypt(
            key: try #require(AES256Key.decode(base64url: plain.link.key)))
        #expect(opened.plaintext == card, sourceLocation: sourceLocation)
        let wrong = try #require(
            RawHTTP.exchange(RawHTTP.post("/shl/\(guarded.id)", #"{"recipient":"r","passcode":"no"}"#), port: port))
        #expect(int(try JSONParser.parse(wrong.body)["remainingAttempts"]) == 3, "the count survived the restore",
            sourceLocation: sourceLocation)
    }
}
