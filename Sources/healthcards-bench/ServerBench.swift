import HealthCardsCore
import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

/// `healthcards-bench server`: the link server measured with wrk (Debian `wrk`), manifest POSTs at 64
/// connections against `healthcards serve` on 127.0.0.1, with SQLite and with a PostgreSQL 15 this program
/// starts in its scratch folder, without and with a passcode; and, apart, what one passcode check costs at each
/// hash function (the server pays it for every passcode it checks). See docs/performance.md.
enum ServerBench {
    struct WrkResult {
        var requestsPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var non2xx: Int
        var errors: Int
    }

    static func log(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    /// Runs a program to its end, its output (both streams) in `output` (or /dev/null); returns its exit status.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], output: String = "/dev/null", asPostgres: Bool = false)
        throws
        -> Int32
    {
        let (path, argv) =
            asPostgres && getuid() == 0
            ? ("/usr/sbin/runuser", ["/usr/sbin/runuser", "-u", "postgres", "--", program] + arguments)
            : (program, [program] + arguments)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, path, &actions, nil, cArgs, environ)
        guard status == 0 else { throw BenchError("cannot run \(path): \(String(cString: strerror(status)))") }
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR {}
        return (waitStatus & 0x7F) == 0 ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
    }

    /// Starts a program in the background, its standard error in `log`.
    static func start(_ program: String, _ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let cArgs: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, program, &actions, nil, cArgs, environ)
        guard status == 0 else { throw BenchError("cannot run \(program): \(String(cString: strerror(status)))") }
        return pid
    }

    /// User and system CPU seconds of a running process (`/proc/PID/stat`, fields 14 and 15, in clock ticks).
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let bytes = try? FileIO.read("/proc/\(pid)/stat") else { return 0 }
        let text = String(decoding: bytes, as: UTF8.self)
        // After the command name in parentheses, which may hold spaces.
        guard let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw BenchError("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Parses wrk's `--latency` report.
    static func parseWrk(_ text: String) throws -> WrkResult {
        func milliseconds(_ value: Substring) -> Double? {
            let number = value.prefix { $0.isNumber || $0 == "." }
            guard let n = Double(number) else { return nil }
            let unit = value.dropFirst(number.count)
            switch unit {
            case "us": return n / 1000
            case "ms": return n
            case "s": return n * 1000
            case "m": return n * 60000
            default: return nil
            }
        }
        var result = WrkResult(requestsPerSecond: 0, p50Milliseconds: 0, p99Milliseconds: 0, non2xx: 0, errors: 0)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), let value = fields.last.flatMap({ Double($0) }) {
                result.requestsPerSecond = value
            }
            if fields.first == "50%", fields.count == 2, let value = milliseconds(fields[1]) {
                result.p50Milliseconds = value
            }
            if fields.first == "99%", fields.count == 2, let value = milliseconds(fields[1]) {
                result.p99Milliseconds = value
            }
            if line.contains("Non-2xx or 3xx responses:"), let value = fields.last.flatMap({ Int($0) }) {
                result.non2xx = value
            }
            if line.contains("Socket errors:") {
                result.errors = fields.compactMap { Int($0.trimmingSuffix(",")) }.reduce(0, +)
            }
        }
        guard result.requestsPerSecond > 0 else { throw BenchError("wrk printed no Requests/sec:\n\(text)") }
        return result
    }

    /// One HTTP/1.1 request on a new connection to 127.0.0.1 (`Connection: close`); the status and body.
    static func fetch(port: UInt16, method: String, path: String, body: String = "") throws -> (Int, [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw BenchError("cannot connect to 127.0.0.1:\(port)") }
        let request = Array(
            ("\(method) \(path) HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)").utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += buffer[0..<n]
        }
        guard
            let end = (0..<max(0, data.count - 3)).first(where: { data[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }),
            let status = Int(String(decoding: data[9..<min(12, data.count)], as: UTF8.self))
        else { throw BenchError("no HTTP answer from 127.0.0.1:\(port)\(path)") }
        return (status, Array(data[(end + 4)...]))
    }

    /// wrk once: `script` (a Lua file) or a plain GET.
    static func measure(
        _ wrk: String, url: String, script: String?, connections: Int, seconds: Int, output: String
    ) throws -> WrkResult {
        try run(
            wrk,
            ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency"] + (script.map { ["-s", $0] } ?? []) + [url],
            output: output)
        return try parseWrk(String(decoding: try FileIO.read(output), as: UTF8.self))
    }

    /// `rounds` alternating wrk runs at `connections` for `seconds` each: nginx at `nginxURL` first, then
    /// `otherURL`, the same requests (`script`) on both. Both sides get the same requests; an error answer or a socket
    /// error from the yardstick makes any ratio against it meaningless, so it is refused here.
    static func alternate(
        _ wrk: String, rounds: Int, nginxURL: String, otherURL: String, script: String?, connections: Int,
        seconds: Int, work: String, other: String
    ) throws -> (nginx: [WrkResult], other: [WrkResult]) {
        var nginxRuns: [WrkResult] = []
        var otherRuns: [WrkResult] = []
        for _ in 0..<max(1, rounds) {
            nginxRuns.append(
                try measure(
                    wrk, url: nginxURL, script: script, connections: connections, seconds: seconds,
                    output: work + "/wrk-nginx.out"))
            otherRuns.append(
                try measure(
                    wrk, url: otherURL, script: script, connections: connections, seconds: seconds,
                    output: work + "/wrk-\(other).out"))
        }
        guard nginxRuns.failures == 0 else {
            throw BenchError(
                "nginx answered \(nginxRuns.failures) requests with an error or a socket error: no ratio against it")
        }
        return (nginxRuns, otherRuns)
    }

    /// nginx (Debian's) serving `root` on 127.0.0.1:`port`, its default access log on: the static-file yardstick.
    /// Its workers run as this user (as root, nginx would make them `www-data`, which cannot read the bench's
    /// files, mode 0600: every answer would be a 403), and a `POST` gets the file too (nginx's static files
    /// answer 405 to a `POST` otherwise).
    static func startNginx(work: String, root: String, port: UInt16) throws -> pid_t? {
        let nginx = "/usr/sbin/nginx"
        guard access(nginx, X_OK) == 0 else { return nil }
        let user = geteuid() == 0 ? "user root;\n" : ""
        let conf = """
            daemon off;
            \(user)\
            worker_processes auto;
            pid \(work)/nginx.pid;
            error_log \(work)/nginx-error.log;
            events { worker_connections 1024; }
            http {
                access_log \(work)/nginx-access.log;
                client_body_temp_path \(work)/nginx-body;
                proxy_temp_path \(work)/nginx-proxy;
                fastcgi_temp_path \(work)/nginx-fastcgi;
                uwsgi_temp_path \(work)/nginx-uwsgi;
                scgi_temp_path \(work)/nginx-scgi;
                default_type application/octet-stream;
                server { listen 127.0.0.1:\(port); root \(root); location / { error_page 405 =200 $uri; } }
            }
            """
        try FileIO.writeAtomically(Array(conf.utf8), to: work + "/nginx.conf", access: .ownerOnly)
        let pid = try start(nginx, ["-p", work, "-c", work + "/nginx.conf"], log: work + "/nginx.out")
        for _ in 0..<200 {
            if (try? fetch(port: port, method: "GET", path: "/nothing"))?.0 == 404 { return pid }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        throw BenchError("nginx did not start; see \(work)/nginx-error.log")
    }

    static func run(_ options: Options) throws {
        let work =
            options["work"] ?? ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/healthcards-bench-server")
        let seconds = options.int("duration", 10)
        let connections = options.int("connections", 64)
        let healthcards =
            options["healthcards"] ?? (realPath(CommandLine.arguments[0]).map { FileIO.parent(of: $0) } ?? ".")
            + "/healthcards"
        let jsonPath = options["json"] ?? "bench-server.json"
        guard FileIO.isRegularFile(healthcards) else { throw BenchError("no healthcards program at \(healthcards)") }
        let wrkPaths: [String] = ["/usr/bin/wrk", "/usr/local/bin/wrk"]
        guard let wrk = wrkPaths.first(where: { access($0, X_OK) == 0 }) else {
            throw BenchError("wrk is not installed (Debian package wrk; `make bench` installs it)")
        }
        _ = try run("/bin/rm", ["-rf", work])
        try FileIO.createDirectories(work, mode: 0o755)
        var results: [JSONValue] = []

        // What one passcode check costs, per function (one derivation, this thread).
        var kdf: [JSONValue] = []
        for function in [
            PasscodeHash.Function.standard, .scrypt(log2N: 14, r: 8, p: 1), .pbkdf2SHA256(iterations: 600_000),
        ] {
            let hash = try Array("correct horse".utf8).withUnsafeBytes {
                try PasscodeHash.make(passcode: $0, function: function)
            }
            let start = monotonic()
            var checks = 0
            while monotonic() - start < 1.0 || checks < 3 {
                _ = try hash.matches("wrong horse")
                checks += 1
            }
            let milliseconds = (monotonic() - start) * 1000 / Double(checks)
            log(
                "passcode check  \(function.description.padding(44))\(fmt(milliseconds, 1)) ms (\(fmt(1000 / milliseconds, 1)) checks/s per core)"
            )
            kdf.append(.object(["function": .string(function.description), "milliseconds": number(milliseconds, 2)]))
        }

        // The databases: a SQLite file, and a PostgreSQL 15 of our own when it is installed.
        var databases: [(name: String, url: String)] = [("sqlite", "sqlite:\(work)/links.db")]
        let pgBin = "/usr/lib/postgresql/15/bin"
        var pgData: String?
        if access(pgBin + "/initdb", X_OK) == 0 {
            let folder = work + "/pg"
            try FileIO.createDirectories(folder, mode: 0o700)
            if getuid() == 0 { try run("/bin/chown", ["postgres", folder]) }
            let data = folder + "/data"
            guard
                try run(
                    pgBin + "/initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"],
                    asPostgres: true) == 0,
                try run(
                    pgBin + "/pg_ctl",
                    [
                        "-D", data, "-l", folder + "/log", "-w", "-o",
                        "-c listen_addresses='' -c unix_socket_directories='\(folder)' -c max_connections=200 -c shared_buffers=128MB",
                        "start",
                    ], asPostgres: true) == 0,
                try run(pgBin + "/createdb", ["-h", folder, "-U", "postgres", "links"], asPostgres: true) == 0
            else { throw BenchError("could not start PostgreSQL in \(folder) (see its log)") }
            pgData = data
            databases.append(("postgresql", "postgresql://postgres@/links?host=\(folder)"))
        } else {
            log("PostgreSQL 15 is not installed: measuring SQLite only")
        }
        defer {
            if let pgData { _ = try? run(pgBin + "/pg_ctl", ["-D", pgData, "-m", "fast", "stop"], asPostgres: true) }
        }

        // The yardstick: nginx serving static files of the sizes of a manifest answer and of a file.
        let staticRoot = work + "/static"
        try FileIO.createDirectories(staticRoot, mode: 0o755)
        try FileIO.writeAtomically([0x7B, 0x7D], to: staticRoot + "/manifest.json")
        try FileIO.writeAtomically([0x7B, 0x7D], to: staticRoot + "/file.jwe")
        let nginxPort = try freePort()
        let nginxPID = try startNginx(work: work, root: staticRoot, port: nginxPort)
        if nginxPID == nil { log("nginx is not installed: no ratios (Debian package nginx)") }
        defer {
            if let nginxPID {
                kill(nginxPID, SIGQUIT)
                var status: Int32 = 0
                waitpid(nginxPID, &status, 0)
            }
        }
        let compareConnections = options.int("compare-connections", 16)
        let rounds = options.int("rounds", 2)
        var ratios: [JSONValue] = []
        // Where the databases are: it must be a real disk for the figures docs/performance.md records.
        let mounts = (try? FileIO.read("/proc/self/mounts")).map { String(decoding: $0, as: UTF8.self) } ?? ""
        var mountPoint = ""
        var fileSystem = "unknown"
        for line in mounts.split(separator: "\n") {
            let fields: [Substring] = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let point = String(fields[1])
            if work.hasPrefix(point) && point.count >= mountPoint.count {
                mountPoint = point
                fileSystem = String(fields[2])
            }
        }
        let memory = fileSystem == "tmpfs" ? ": memory, not a disk" : ""
        log("databases in \(work), on \(mountPoint) (\(fileSystem))\(memory)")

        let passcodeFile = work + "/passcode"
        try FileIO.writeAtomically(Array("correct horse\n".utf8), to: passcodeFile, access: .ownerOnly)
        let card = options["card"] ?? "Tests/Fixtures/spec-examples/example-00-e-file.smart-health-card"
        for (name, url) in databases {
            let port = try freePort()
            let base = "http://127.0.0.1:\(port)/shl"
            func makeLink(_ extra: [String]) throws -> String {
                let out = work + "/link-\(name)-\(extra.count).txt"
                guard
                    try run(
                        healthcards, ["link", "create", "--db", url, "--base-url", base, "--out", out] + extra + [card])
                        == 0
                else { throw BenchError("link create failed for \(name)") }
                let text = String(decoding: try FileIO.read(out), as: UTF8.self).filter { !$0.isWhitespace }
                return try SHLinkText.parse(text).url
            }
            let plain = try makeLink([])
            // A cheap hash for the passcode run: it measures the server's passcode path; the hash's own cost is above.
            let guarded = try makeLink([
                "--passcode-file", passcodeFile, "--kdf", "pbkdf2-sha256:i=1000", "--max-attempts", "1000",
            ])
            let serverLog = work + "/serve-\(name).log"
            let pid = try start(
                healthcards,
                // wrk is one address: no per-address request budget (it would answer 429 past 600 a minute), and
                // all the connections to it (the default per-address cap, 64, is wrk's -c64 exactly).
                [
                    "serve", "--db", url, "--listen", "127.0.0.1:\(port)", "--base-url", base, "--request-budget", "0",
                    "--max-connections-per-client", "1024",
                ],
                log: serverLog)
            defer {
                kill(pid, SIGTERM)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            var started = false
            for _ in 0..<500 {
                if let text = try? FileIO.read(serverLog),
                    String(decoding: text, as: UTF8.self).contains("\"event\":\"start\"")
                {
                    started = true
                    break
                }
                usleep(10_000)
            }
            guard started else { throw BenchError("the server did not start; see \(serverLog)") }
            for (label, link, body) in [
                ("no passcode", plain, #"{"recipient":"bench"}"#),
                ("passcode (PBKDF2 1000)", guarded, #"{"recipient":"bench","passcode":"correct horse"}"#),
            ] {
                let script = work + "/post.lua"
                let lua = """
                    wrk.method = "POST"
                    wrk.body = '\(body)'
                    wrk.headers["Content-Type"] = "application/json"
                    """
                try FileIO.writeAtomically(Array(lua.utf8), to: script, access: .ownerOnly)
                let output = work + "/wrk.out"
                let cpuBefore = cpuSeconds(pid)
                try run(
                    wrk, ["-t2", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", script, link], output: output)
                let cpu = cpuSeconds(pid) - cpuBefore
                let wrkText = String(decoding: try FileIO.read(output), as: UTF8.self)
                let result = try parseWrk(wrkText)
                let requests =
                    wrkText.split(separator: "\n").first { $0.contains("requests in") }
                    .flatMap { Double($0.split(separator: " ").first ?? "") } ?? 0
                let cpuPerRequest = requests > 0 ? cpu / requests * 1e6 : 0
                log(
                    "\(name.padding(11))\(label.padding(24))\(fmt(result.requestsPerSecond, 0)) manifests/s  p50 "
                        + "\(fmt(result.p50Milliseconds, 2)) ms  p99 \(fmt(result.p99Milliseconds, 2)) ms  server CPU "
                        + "\(fmt(cpuPerRequest, 0)) µs/request  non-2xx \(result.non2xx)  socket errors \(result.errors)"
                )
                results.append(
                    .object([
                        "database": .string(name), "case": .string(label), "connections": .integer(Int64(connections)),
                        "seconds": .integer(Int64(seconds)),
                        "requestsPerSecond": number(result.requestsPerSecond, 0),
                        "p50Milliseconds": number(result.p50Milliseconds, 2),
                        "p99Milliseconds": number(result.p99Milliseconds, 2),
                        "serverCPUMicrosecondsPerRequest": number(cpuPerRequest, 0),
                        "non2xx": .integer(Int64(result.non2xx)), "socketErrors": .integer(Int64(result.errors)),
                    ]))
            }
            // Beside nginx, in alternating rounds, at the same connections: manifest POSTs against a static file of
            // the manifest answer's size, location GETs against one of the file's size.
            guard nginxPID != nil else { continue }
            let linkPath = String(plain.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
            let (manifestStatus, manifestBody) = try fetch(
                port: port, method: "POST", path: linkPath, body: #"{"recipient":"bench"}"#)
            guard manifestStatus == 200,
                let location = try JSONParser.parse(manifestBody)["files"]?[0]?["location"]?
                    .stringValue
            else { throw BenchError("the manifest request for the comparison failed (\(manifestStatus))") }
            let locationPath = String(location.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
            let (fileStatus, fileBody) = try fetch(port: port, method: "GET", path: locationPath)
            guard fileStatus == 200 else { throw BenchError("the location fetch for the comparison failed") }
            try FileIO.writeAtomically(manifestBody, to: staticRoot + "/manifest.json")
            try FileIO.writeAtomically(fileBody, to: staticRoot + "/file.jwe")
            // The yardstick answers what the server answers: 200 and the same bytes, to a POST and to a GET.
            for (method, path, expected) in [("POST", "/manifest.json", manifestBody), ("GET", "/file.jwe", fileBody)] {
                let (status, body) = try fetch(
                    port: nginxPort, method: method, path: path, body: method == "POST" ? "{}" : "")
                guard status == 200, body == expected else {
                    throw BenchError(
                        "nginx answered \(method) \(path) with \(status) (\(body.count) bytes), not 200 and the "
                            + "file; see \(work)/nginx-error.log")
                }
            }
            let postScript = work + "/compare-post.lua"
            try FileIO.writeAtomically(
                Array(
                    #"wrk.method = "POST"\#nwrk.body = '{"recipient":"bench"}'\#nwrk.headers["Content-Type"] = "application/json"\#n"#
                        .utf8), to: postScript, access: .ownerOnly)
            let comparisons: [(String, String, String?, String)] = [
                (
                    "manifest POST", "http://127.0.0.1:\(port)\(linkPath)", Optional(postScript),
                    "http://127.0.0.1:\(nginxPort)/manifest.json"
                ),
                (
                    "file GET", "http://127.0.0.1:\(port)\(locationPath)", nil,
                    "http://127.0.0.1:\(nginxPort)/file.jwe"
                ),
            ]
            for (label, serveURL, script, nginxURL) in comparisons {
                let (nginxRuns, serveRuns) = try alternate(
                    wrk, rounds: rounds, nginxURL: nginxURL, otherURL: serveURL, script: script,
                    connections: compareConnections, seconds: seconds, work: work, other: "serve")
                let serveRate = serveRuns.meanRate
                let nginxRate = nginxRuns.meanRate
                let serveP99 = serveRuns.worstP99
                let nginxP99 = nginxRuns.worstP99
                let ratio = nginxRate > 0 ? serveRate / nginxRate : 0
                log(
                    "\(name.padding(11))\(label.padding(14)) c\(compareConnections): serve \(fmt(serveRate, 0))/s p99 "
                        + "\(fmt(serveP99, 2)) ms  nginx \(fmt(nginxRate, 0))/s p99 \(fmt(nginxP99, 2)) ms  ratio "
                        + "\(fmt(ratio, 2))x (target >= 0.4x, p99 <= 10 ms)  non-2xx \(serveRuns.map(\.non2xx).reduce(0, +))"
                )
                ratios.append(
                    .object([
                        "database": .string(name), "case": .string(label),
                        "connections": .integer(Int64(compareConnections)), "rounds": .integer(Int64(rounds)),
                        "serveRequestsPerSecond": number(serveRate, 0), "serveP99Milliseconds": number(serveP99, 2),
                        "nginxRequestsPerSecond": number(nginxRate, 0), "nginxP99Milliseconds": number(nginxP99, 2),
                        "ratio": number(ratio, 3),
                    ]))
            }
        }
        // The HTTP library's floor: libmicrohttpd as the server starts it, answering the same bytes with nothing
        // else to do, in the same alternating rounds beside nginx (once: it has no database).
        var floors: [JSONValue] = []
        let selfDir = FileIO.parent(of: (try? Bench.readLink("/proc/self/exe")) ?? CommandLine.arguments[0])
        let mhdfloor = options["mhdfloor"] ?? "\(selfDir)/mhdfloor"
        if nginxPID != nil, access(mhdfloor, X_OK) == 0, access(staticRoot + "/file.jwe", R_OK) == 0 {
            let floorPort = try freePort()
            let threads = max(4, 2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
            let floorPID = try start(
                mhdfloor, ["\(floorPort)", "\(threads)", staticRoot + "/manifest.json", staticRoot + "/file.jwe"],
                log: work + "/mhdfloor.out")
            defer {
                kill(floorPID, SIGTERM)
                var status: Int32 = 0
                waitpid(floorPID, &status, 0)
            }
            var ready = false
            for _ in 0..<200 where !ready {
                ready = (try? fetch(port: floorPort, method: "GET", path: "/file.jwe"))?.0 == 200
                if !ready { usleep(10_000) }
            }
            guard ready else { throw BenchError("the HTTP floor did not start; see \(work)/mhdfloor.out") }
            let postScript = work + "/compare-post.lua"
            for (label, path, script, nginxPath) in [
                ("manifest POST", "/x", Optional(postScript), "/manifest.json"), ("file GET", "/x", nil, "/file.jwe"),
            ] {
                let (nginxRuns, floorRuns) = try alternate(
                    wrk, rounds: rounds, nginxURL: "http://127.0.0.1:\(nginxPort)\(nginxPath)",
                    otherURL: "http://127.0.0.1:\(floorPort)\(path)", script: script, connections: compareConnections,
                    seconds: seconds, work: work, other: "floor")
                let floorRate = floorRuns.meanRate
                let nginxRate = nginxRuns.meanRate
                let errors = floorRuns.failures
                guard errors == 0 else { throw BenchError("\(errors) error answers while measuring the HTTP floor") }
                let floorP99 = floorRuns.worstP99
                log(
                    "http floor \(label.padding(14)) c\(compareConnections): libmicrohttpd alone \(fmt(floorRate, 0))/s p99 "
                        + "\(fmt(floorP99, 2)) ms  nginx \(fmt(nginxRate, 0))/s  ratio \(fmt(floorRate / max(1, nginxRate), 2))x"
                )
                floors.append(
                    .object([
                        "case": .string(label), "connections": .integer(Int64(compareConnections)),
                        "floorRequestsPerSecond": number(floorRate, 0), "floorP99Milliseconds": number(floorP99, 2),
                        "nginxRequestsPerSecond": number(nginxRate, 0),
                        "ratio": number(floorRate / max(1, nginxRate), 3),
                    ]))
            }
        } else if nginxPID != nil {
            log("no HTTP floor program at \(mhdfloor): `make bench` builds it (gcc bench/mhdfloor.c)")
        }
        // PostgreSQL against SQLite (target: within 0.7x).
        for label in ["manifest POST", "file GET"] {
            let rate = { (database: String) -> Double? in
                ratios.first { $0["database"]?.stringValue == database && $0["case"]?.stringValue == label }?[
                    "serveRequestsPerSecond"]?.doubleValue
            }
            if let sqlite = rate("sqlite"), let postgres = rate("postgresql"), sqlite > 0 {
                log("postgresql/sqlite \(label.padding(14)) \(fmt(postgres / sqlite, 2))x (target >= 0.7x)")
            }
        }
        var load = [Double](repeating: 0, count: 3)
        getloadavg(&load, 3)
        log(
            "load average during the runs: \(fmt(load[0], 2)) (1 min), \(fmt(load[1], 2)) (5 min) on \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores"
        )
        let figures = JSONValue.object([
            "manifests": .array(results), "passcodeChecks": .array(kdf), "loadAverage": number(load[0], 2),
            "besideNginx": .array(ratios), "httpFloor": .array(floors),
        ])
        try FileIO.writeAtomically(JSONWriter.pretty(figures) + [0x0A], to: jsonPath)
        log("figures written to \(jsonPath)")
    }
}

/// A JSON number with `digits` decimals.
func number(_ value: Double, _ digits: Int) -> JSONValue {
    .number(JSONNumber(fmt(value, digits)) ?? JSONNumber(Int64(0)))
}

extension Substring {
    func trimmingSuffix(_ suffix: String) -> Substring { hasSuffix(suffix) ? dropLast(suffix.count) : self }
}

extension [ServerBench.WrkResult] {
    /// Requests per second, averaged over the runs.
    var meanRate: Double { isEmpty ? 0 : map(\.requestsPerSecond).reduce(0, +) / Double(count) }
    /// The worst p99 of the runs, in milliseconds.
    var worstP99: Double { map(\.p99Milliseconds).max() ?? 0 }
    /// Answers that were not 2xx, and socket errors, over the runs.
    var failures: Int { map { $0.non2xx + $0.errors }.reduce(0, +) }
}
