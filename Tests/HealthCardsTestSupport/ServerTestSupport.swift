import Foundation
import Testing

import HealthCardsCore

/// The databases a server test runs against.
package enum DatabaseKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite
    case postgresql
    package var description: String { rawValue }
}

/// Real link servers for the tests: the `healthcards serve` program on 127.0.0.1, PostgreSQL 15 started by the
/// tests themselves, and the independent Python receiver (`Tests/Tools/shl_client.py`).
package enum ServerTestSupport {
    package static let client = VerifyFixtures.repoRoot.appendingPathComponent("Tests/Tools/shl_client.py").path
    package static let card = TestSupport.spec("example-00-e-file.smart-health-card").path
    package static let bundle = TestSupport.spec("example-00-a-fhirBundle.json").path
    package static let specJWKS = TestSupport.spec("issuer/.well-known/jwks.json").path
    /// A cheap passcode hash for tests whose subject is not the hash's cost.
    package static let fastKDF = ["--kdf", "pbkdf2-sha256:i=1000"]

    /// Whether the Python receiver can run (the test Python with pyca/cryptography).
    package static var clientAvailable: Bool { SHLTestSupport.pythonCryptoAvailable }
    package static var clientMissing: Comment { SHLTestSupport.pythonCryptoMissing }

    /// Runs the Python receiver; returns what it printed.
    package static func client(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
        let python = try #require(TestSupport.python)
        let run = try TestSupport.run(python, [client] + arguments)
        #expect(run.status == 0, "shl_client \(arguments.first ?? ""): \(run.stderr)", sourceLocation: sourceLocation)
        return try JSONParser.parse(Array(run.stdout.utf8))
    }

    /// A port that was free a moment ago (the kernel's choice for port 0; `NginxServer.freePort`).
    package static func freePort() throws -> UInt16 { UInt16(try NginxServer.freePort()) }

    /// A new, empty database of `kind`: a SQLite file in `dir`, or a database in the shared PostgreSQL.
    package static func database(_ kind: DatabaseKind, in dir: URL) throws -> String {
        switch kind {
        case .sqlite: return "sqlite:" + dir.appendingPathComponent("links.db").path
        case .postgresql: return try PostgresCluster.shared.get().createDatabase()
        }
    }

    /// `healthcards link ARGS` with `--db` and `--base-url`.
    @discardableResult
    package static func link(
        _ command: String, db: String, base: String, _ arguments: [String], expect status: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> TestSupport.Run {
        let run = try TestSupport.cli(
            ["link", command, "--db", db] + (base.isEmpty ? [] : ["--base-url", base]) + arguments)
        #expect(run.status == status, "link \(command): \(run.stderr)", sourceLocation: sourceLocation)
        return run
    }

    /// Makes a link and writes its text to `dir/<name>.txt`; returns the file and the link's id.
    package static func makeLink(
        _ name: String, db: String, base: String, in dir: URL, _ arguments: [String], files: [String] = [card],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (file: String, id: String) {
        let file = dir.appendingPathComponent("\(name).txt").path
        try link("create", db: db, base: base, arguments + ["--out", file] + files, sourceLocation: sourceLocation)
        let text = try VerifyFixtures.text(URL(fileURLWithPath: file)).trimmingCharacters(in: .whitespacesAndNewlines)
        let url = try SHLinkText.parse(text).url
        return (file, String(url.split(separator: "/").last ?? ""))
    }

    /// A passcode file (mode 0600) in `dir`.
    package static func passcodeFile(_ passcode: String, in dir: URL, name: String = "passcode") throws -> String {
        let path = try TestSupport.write(passcode + "\n", to: name, in: dir)
        chmod(path, 0o600)
        return path
    }

    /// `healthcards verify` on a card file with the spec's key set's key 3Kfdg… alone (the set's other key carries an
    /// example x5c leaf that expired in 2022, an error on the whole set): 0 errors.
    package static func verifyCard(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try TestSupport.cli(["verify", "--jwks", try TestSupport.specKeySetOfKey0(), path])
        #expect(
            run.status == 0 && (run.stdout + run.stderr).contains(" 0 error(s)"),
            "verify \(path): \(run.stdout)\(run.stderr)",
            sourceLocation: sourceLocation)
    }
}

/// One running `healthcards serve`, its log in a file.
package final class ServerProcess {
    package let process: Process
    package let port: UInt16
    package let log: URL
    package let base: String

    /// Starts `healthcards serve --db DB --listen 127.0.0.1:PORT --base-url BASE ARGS` and waits for its start line.
    /// - Parameters:
    ///   - port: the port to listen on (a free one when nil).
    ///   - base: the base URL (`http://127.0.0.1:<port>/shl` when nil).
    package init(
        db: String, port: UInt16? = nil, base: String? = nil, _ arguments: [String] = [], in dir: URL,
        name: String = "server"
    )
        throws
    {
        var lastError: Error?
        for _ in 0..<(port == nil ? 3 : 1) {
            let port = try port ?? ServerTestSupport.freePort()
            let base = base ?? "http://127.0.0.1:\(port)/shl"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: TestSupport.healthcards)
            process.arguments = ["serve", "--db", db, "--listen", "127.0.0.1:\(port)", "--base-url", base] + arguments
            process.currentDirectoryURL = dir
            let log = dir.appendingPathComponent("\(name)-\(port).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: log)
            process.standardOutput = FileHandle.nullDevice
            var environment = ProcessInfo.processInfo.environment
            if let options = environment["HEALTHCARDS_CHILD_ASAN_OPTIONS"] { environment["ASAN_OPTIONS"] = options }
            process.environment = environment
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let text = try? String(contentsOf: log, encoding: .utf8), text.contains("\"event\":\"start\"") {
                    self.process = process
                    self.port = port
                    self.log = log
                    self.base = base
                    return
                }
                if !process.isRunning { break }
                usleep(20_000)
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            lastError = HealthCardError(
                .io, "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        throw lastError ?? HealthCardError(.io, "serve did not start")
    }

    /// The URL of a link id on this instance (its own port, whatever the base URL says).
    package func url(_ id: String) -> String { "http://127.0.0.1:\(port)/shl/\(id)" }

    /// SIGTERM, then waits; returns the exit status.
    @discardableResult
    package func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL, then waits.
    package func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The log lines, parsed (every line must be one JSON object).
    package func logLines(sourceLocation: SourceLocation = #_sourceLocation) throws -> [JSONValue] {
        settleLog()
        let text = try String(contentsOf: log, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let parsed = try? JSONParser.parse(Array(line.utf8))
            #expect(
                parsed?.objectValue != nil, "a log line that is not a JSON object: \(line)",
                sourceLocation: sourceLocation)
            return parsed
        }
    }

    package var logText: String {
        settleLog()
        return (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    }

    /// Waits until the log has not grown for 150 ms (at most 5 s): `serve` writes request lines in batches up to
    /// 50 ms after their answer (`JSONLinesLog.bufferMilliseconds`).
    private func settleLog() {
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: log.path))?[.size] as? Int) ?? -1 }
        var last = size()
        for _ in 0..<33 {
            usleep(150_000)
            let now = size()
            if now == last { return }
            last = now
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// PostgreSQL 15 from Debian (`postgresql-15`), started once per test run as the `postgres` user (when the tests
/// run as root) in a scratch folder, listening on a Unix socket only, with `fsync` off (its data is thrown away).
/// A watchdog stops it when the test process ends, however it ends.
package final class PostgresCluster: @unchecked Sendable {
    package static let binaries = "/usr/lib/postgresql/15/bin"
    package static var available: Bool { FileManager.default.isExecutableFile(atPath: binaries + "/initdb") }
    package static let missing: Comment = "PostgreSQL 15 (Debian postgresql-15) is not installed: `make test` installs it"

    /// The shared cluster of this test run.
    package static let shared: Result<PostgresCluster, Error> = Result { try PostgresCluster(name: "shared") }

    package let folder: URL
    package var socketDirectory: String { folder.path }
    private let counter = NSLock()
    private var databases = 0

    /// Runs a PostgreSQL program as the postgres user (directly when not root).
    package static func asPostgres(_ program: String, _ arguments: [String]) throws -> TestSupport.Run {
        if getuid() == 0 {
            return try spawn("/usr/sbin/runuser", ["-u", "postgres", "--", binaries + "/" + program] + arguments)
        }
        return try spawn(binaries + "/" + program, arguments)
    }

    /// Runs a program to its end with posix_spawn and waitpid, its output (both streams) in a file, and no other
    /// descriptor of this process open in it. Not Foundation's `Process`: it learns that a child ended when a
    /// socket it gave the child closes, and `pg_ctl start` leaves the PostgreSQL server holding it, so the wait
    /// never returned (swift-corelibs-foundation issue 4795). And every descriptor above 2 is closed in the child
    /// for the same reason: a server started here would otherwise hold the sockets of whatever `Process` another
    /// test was starting at that moment, and that test would wait forever.
    package static func spawn(_ path: String, _ arguments: [String]) throws -> TestSupport.Run {
        let output = "/tmp/hc-pg-spawn-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        _ = spawnCloseFrom(&actions, 3)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw HealthCardError(.io, "cannot run \(path): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return TestSupport.Run(status: code, stdout: text, stderr: text)
    }

    /// initdb and start a new cluster (about a second).
    package init(name: String) throws {
        guard Self.available else { throw HealthCardError(.io, "PostgreSQL 15 is not installed") }
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent(
            "hc-pg-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            _ = try Self.spawn("/bin/chown", ["postgres", folder.path])
        }
        chmod(folder.path, 0o700)
        let initdb = try Self.asPostgres(
            "initdb", ["-D", folder.path + "/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        guard initdb.status == 0 else { throw HealthCardError(.io, "initdb failed: \(initdb.stderr)") }
        try start()
        // Stop the server and remove the folder when this process is gone (however it ends).
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        let stop =
            (getuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : "")
            + "\(Self.binaries)/pg_ctl -D '\(folder.path)/data' -m immediate stop"
        watchdog.arguments = [
            "-c",
            "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf '\(folder.path)'",
        ]
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
    }

    package func start() throws {
        let options =
            "-c listen_addresses='' -c unix_socket_directories='\(folder.path)' -c fsync=off -c synchronous_commit=off "
            + "-c full_page_writes=off -c max_connections=300 -c shared_buffers=32MB"
        let run = try Self.asPostgres(
            "pg_ctl",
            ["-D", folder.path + "/data", "-l", folder.path + "/log", "-w", "-t", "30", "-o", options, "start"])
        guard run.status == 0 else {
            throw HealthCardError(
                .io,
                "pg_ctl start failed: \(run.stderr) \((try? String(contentsOfFile: folder.path + "/log", encoding: .utf8)) ?? "")"
            )
        }
    }

    package func stop() throws {
        let run = try Self.asPostgres("pg_ctl", ["-D", folder.path + "/data", "-m", "fast", "-w", "stop"])
        guard run.status == 0 else { throw HealthCardError(.io, "pg_ctl stop failed: \(run.stderr)") }
    }

    /// A new empty database; returns its `postgresql://` URL.
    package func createDatabase() throws -> String {
        counter.lock()
        databases += 1
        let name = "hc_test_\(databases)"
        counter.unlock()
        let run = try Self.asPostgres("createdb", ["-h", socketDirectory, "-U", "postgres", name])
        guard run.status == 0 else { throw HealthCardError(.io, "createdb failed: \(run.stderr)") }
        return "postgresql://postgres@/\(name)?host=\(socketDirectory)"
    }
}

/// A JSON number as an integer, or nil.
package func int(_ value: JSONValue?) -> Int? { value?.numberLexeme.flatMap { Int($0) } }

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which the Glibc module does not import.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
package func spawnCloseFrom(
    _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32
) -> Int32
