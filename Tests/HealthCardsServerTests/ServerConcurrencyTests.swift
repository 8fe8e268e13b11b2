import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

/// What must hold when many things happen at once: wrong passcodes counted exactly across two server instances
/// sharing one database, no committed update lost and no half-written link when processes are killed, a
/// PostgreSQL restart survived, and SIGTERM finishing what is in flight.
@Suite struct ServerConcurrencyTests {

    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func parallelWrongPasscodesOverTwoInstancesWithPostgreSQL() throws { try Self.parallelWrongPasscodes(.postgresql) }

    @Test(.enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing))
    func parallelWrongPasscodesOverTwoInstancesWithSQLite() throws { try Self.parallelWrongPasscodes(.sqlite) }

    /// 50 parallel wrong passcodes spread over two instances sharing one database: a link allowing N takes exactly
    /// min(50, N) of them, each remaining count answered once, the others 404; the right passcode then gets 404
    /// when the limit was reached.
    static func parallelWrongPasscodes(_ kind: DatabaseKind) throws {
        let dir = try TestSupport.tempDir("passcodes-\(kind)")
        let db = try ServerTestSupport.database(kind, in: dir)
        let first = try ServerProcess(db: db, in: dir, name: "a")
        let second = try ServerProcess(db: db, base: first.base, in: dir, name: "b")
        let passcode = try ServerTestSupport.passcodeFile("1234", in: dir)
        for limit in [7, 60] {
            let link = try ServerTestSupport.makeLink(
                "limit-\(limit)", db: db, base: first.base, in: dir,
                ["--passcode-file", passcode, "--max-attempts", String(limit)] + ServerTestSupport.fastKDF)
            let burst = try ServerTestSupport.client([
                "burst", first.url(link.id), "50", "50", #"{"recipient":"attacker","passcode":"0000"}"#,
                second.url(link.id),
            ])
            let results = try #require(burst["results"]?.arrayValue)
            #expect(results.count == 50)
            let wrong = results.filter { int($0["status"]) == 401 }
            let counts = wrong.compactMap { int($0["body"]?["remainingAttempts"]) }.sorted()
            let taken = min(50, limit)
            #expect(counts == Array((limit - taken)..<limit), "limit \(limit): \(counts)")
            #expect(results.filter { int($0["status"]) == 404 }.count == 50 - taken, "\(results.map { $0["status"] })")
            let listed = try ServerTestSupport.link("list", db: db, base: "", ["--json"]).stdout
            let row = try #require(
                listed.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }.first {
                    $0["id"]?.stringValue == link.id
                })
            #expect(int(row["remainingAttempts"]) == limit - taken)
            let right = try ServerTestSupport.client([
                "post", second.url(link.id), #"{"recipient":"owner","passcode":"1234"}"#,
            ])
            #expect(int(right["status"]) == (limit > 50 ? 200 : 404), "\(right)")
            #expect(row["state"]?.stringValue == (limit > 50 ? "active" : "disabled"))
        }
        #expect(first.stop() == 0 && second.stop() == 0)
    }

    @Test(.enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing))
    func killedProcessesLoseNoCommittedUpdateWithSQLite() throws { try Self.killedProcesses(.sqlite) }

    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func killedProcessesLoseNoCommittedUpdateWithPostgreSQL() throws { try Self.killedProcesses(.postgresql) }

    /// A burst of `link update`s of a long-term link while receivers ask for it: the server is killed with SIGKILL
    /// in the middle, and so is one `link update`. After each update that exited 0 the database holds exactly its
    /// content; after the kills every stored file decrypts whole, and a new server answers the last update.
    static func killedProcesses(_ kind: DatabaseKind) throws {
        let dir = try TestSupport.tempDir("kill-\(kind)")
        let db = try ServerTestSupport.database(kind, in: dir)
        let v0 = try TestSupport.write(#"{"resourceType":"Basic","id":"update-0"}"#, to: "update-0.json", in: dir)
        var server = try ServerProcess(db: db, in: dir, name: "first")
        let link = try ServerTestSupport.makeLink(
            "long", db: db, base: server.base, in: dir, ["--long-term"], files: [v0])
        let key = try #require(
            AES256Key.decode(base64url: try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: link.file))).key))
        let database = try Database(
            url: try DatabaseURL(db), role: .operatorCommand, create: false, maxConnections: 1, now: Clock.nowSeconds())
        let store = DatabaseLinkStore(database: database)
        func stored() throws -> [UInt8] {
            let files = try #require(try store.link(id: link.id, withFiles: true)?.files)
            #expect(files.count == 1)
            return try JWE(compact: try #require(files.first).jwe).decrypt(key: key).plaintext
        }
        // Receivers asking all along (their requests write the access record while the server is killed).
        let python = try #require(TestSupport.python)
        let receivers = Process()
        receivers.executableURL = URL(fileURLWithPath: python)
        receivers.arguments = [
            ServerTestSupport.client, "burst", server.url(link.id), "4", "400", #"{"recipient":"poller"}"#,
        ]
        receivers.standardOutput = FileHandle.nullDevice
        try receivers.run()
        var lastCommitted = 0
        for update in 1...16 {
            let content = #"{"resourceType":"Basic","id":"update-\#(update)"}"#
            let file = try TestSupport.write(content, to: "update-\(update).json", in: dir)
            let (process, _, errors) = try TestSupport.start(
                ["link", "update", "--db", db, "--base-url", server.base, "--link", link.file, file],
                log: "update-\(update)",
                in: dir)
            if update == 6 {
                usleep(UInt32.random(in: 1_000...40_000))
                kill(process.processIdentifier, SIGKILL)
            }
            if update == 9 { server.kill9() }
            process.waitUntilExit()
            let now = try stored()
            if process.terminationReason == .exit && process.terminationStatus == 0 {
                lastCommitted = update
                #expect(now == Array(content.utf8), "update \(update) exited 0 but the database holds another content")
            } else {
                #expect(
                    update == 6, "update \(update) failed: \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
                // Killed: the database holds its content (it committed) or the one before, whole either way.
                #expect(
                    now == Array(content.utf8)
                        || now == Array(#"{"resourceType":"Basic","id":"update-\#(lastCommitted)"}"#.utf8))
            }
        }
        // SIGKILL: a child started from a test thread may have SIGTERM blocked.
        kill(receivers.processIdentifier, SIGKILL)
        receivers.waitUntilExit()
        #expect(lastCommitted == 16)
        if case .sqlite = try DatabaseURL(db) {
            let check = try database.withConnection { try $0.scalar("PRAGMA integrity_check")?.text }
            #expect(check == "ok")
        }
        database.close()
        server = try ServerProcess(db: db, port: server.port, base: server.base, in: dir, name: "second")
        let resolved = try ServerTestSupport.client([
            "resolve", link.file, dir.appendingPathComponent("after").path, "--recipient", "after the kill",
        ])
        #expect(int(resolved["status"]) == 200)
        #expect(
            try VerifyFixtures.bytes(dir.appendingPathComponent("after/file-1"))
                == Array(#"{"resourceType":"Basic","id":"update-16"}"#.utf8))
        #expect(server.stop() == 0)
    }

    /// PostgreSQL stopped under a running server: 503 with Retry-After (and /healthz 503), no crash; started again,
    /// the server answers again by itself.
    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func postgresRestartGives503ThenRecovers() throws {
        let dir = try TestSupport.tempDir("pg-restart")
        // Its own cluster: the shared one serves the other tests meanwhile.
        let cluster = try PostgresCluster(name: "restart")
        let db = try cluster.createDatabase()
        let server = try ServerProcess(db: db, in: dir)
        let link = try ServerTestSupport.makeLink("plain", db: db, base: server.base, in: dir, [])
        let body = #"{"recipient":"during a restart"}"#
        #expect(int(try ServerTestSupport.client(["post", server.url(link.id), body])["status"]) == 200)
        try cluster.stop()
        let down = try ServerTestSupport.client(["post", server.url(link.id), body])
        #expect(int(down["status"]) == 503 && down["retryAfter"] == "5", "\(down)")
        #expect(int(try ServerTestSupport.client(["get", "http://127.0.0.1:\(server.port)/healthz"])["status"]) == 503)
        try cluster.start()
        var status = 0
        for _ in 0..<50 {
            status = int(try ServerTestSupport.client(["post", server.url(link.id), body])["status"]) ?? 0
            if status == 200 { break }
            usleep(100_000)
        }
        #expect(status == 200)
        #expect(int(try ServerTestSupport.client(["get", "http://127.0.0.1:\(server.port)/healthz"])["status"]) == 200)
        #expect(server.process.isRunning)
        #expect(server.stop() == 0)
        #expect(try server.logLines().contains { $0["event"] == "database" && $0["level"] == "warning" })
        try cluster.stop()
    }

    /// SIGTERM while a request is in flight (its body half sent): the request is answered, then the server closes
    /// the database and exits 0.
    @Test(.enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing))
    func sigtermFinishesTheRequestInFlight() throws {
        let dir = try TestSupport.tempDir("sigterm")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let server = try ServerProcess(db: db, ["--grace", "20"], in: dir)
        let link = try ServerTestSupport.makeLink("plain", db: db, base: server.base, in: dir, [])
        let ready = dir.appendingPathComponent("ready").path
        let go = dir.appendingPathComponent("go").path
        let python = try #require(TestSupport.python)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: python)
        client.arguments = [
            ServerTestSupport.client, "raw", "127.0.0.1", String(server.port), "inflight", "/shl/\(link.id)",
            #"{"recipient":"in flight"}"#, ready, go,
        ]
        let out = Pipe()
        client.standardOutput = out
        try client.run()
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: ready) && Date() < deadline { usleep(10_000) }
        usleep(100_000)
        kill(server.process.processIdentifier, SIGTERM)
        usleep(300_000)
        #expect(server.process.isRunning, "the server waits for the request in flight")
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        let answer = try JSONParser.parse(Array(out.fileHandleForReading.readDataToEndOfFile()))
        client.waitUntilExit()
        server.process.waitUntilExit()
        #expect(answer["statuses"] == .array([.integer(200)]), "\(answer)")
        #expect(server.process.terminationStatus == 0)
        let lines = try server.logLines()
        #expect(lines.contains { $0["event"] == "stopping" && $0["signal"] == "SIGTERM" })
        #expect(lines.contains { $0["event"] == "stop" && int($0["unfinishedRequests"]) == 0 })
    }
}
