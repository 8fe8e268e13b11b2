import HealthCardsCore
import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

enum ServeCommand {
    static let help = """
        Usage: healthcards serve --db DB --listen ADDRESS:PORT --base-url URL [--threads N] [--timeout SECONDS]
                                 [--max-connections N] [--max-connections-per-client N] [--grace SECONDS]
                                 [--location-lifetime SECONDS] [--single-use-locations] [--poll-interval SECONDS]
                                 [--passcode-checks N]

        Serves the SMART Health Links that `healthcards link create` put in DB (docs/server.md), over HTTP/1.1,
        behind a TLS reverse proxy (nginx: contrib/nginx-healthcards-serve.conf). It speaks the links specification:
          POST BASE/<id>            the manifest of a link: {"recipient": …, "passcode"?: …, "embeddedLengthMax"?: …}
                                    → {"files": [{"contentType", "location" | "embedded", "lastUpdated"}]};
                                    400 without a recipient string; 404 (one body) for an unknown, deactivated or
                                    expired link; 401 {"remainingAttempts": n} for a wrong passcode (counted
                                    exactly, across instances; at 0 the link is disabled for good); L links get
                                    Retry-After, and 429 with Retry-After when a recipient asks again sooner
          GET BASE/file/<secret>    a manifest's location: the JWE (application/jose), for at most an hour
          GET BASE/<id>?recipient=  a U link's one JWE
          GET /healthz              200 while the database answers, else 503 (for a load balancer)
        Every answer has CORS (Access-Control-Allow-Origin: *) and Cache-Control: no-store. Every access to a
        link is recorded (`healthcards link audit`). The server holds no link key: the files are JWEs made on
        the operator's machine. Bodies over 16 KiB are refused with 413 before they are read; idle connections
        close after the timeout; connections are limited in all and per client address.

        The log goes to standard error, one JSON object a line (start, stop, each request: method, route,
        status, outcome, a 12-character fingerprint of the link id as `healthcards link list` shows it,
        milliseconds, client address); it never holds a link id, a key, a passcode, a recipient or file contents. SIGTERM or SIGINT: stop accepting, let
        requests in flight finish (at most --grace seconds), close the database, exit 0. A database that goes away
        (PostgreSQL restarting) gives 503 until it is back; the server reconnects by itself.

        Options:
          --db DB               sqlite:PATH (the default kind: an embedded file, made with mode 0600 when
                                missing) or postgresql://[USER@]HOST[:PORT]/DATABASE (several instances may
                                share one); a password comes from ~/.pgpass or PGPASSFILE, never the URL
          --listen ADDRESS:PORT the address to listen on, e.g. 127.0.0.1:8080 or [::1]:8080 (port 0: any free
                                port, named in the start line of the log)
          --base-url URL        the public https URL the proxy serves the links at, e.g.
                                https://links.example.org/shl; the one `link create` was given (at most 84
                                characters, so a link URL stays within 128)
          --threads N           threads answering requests (default \(defaultThreads), twice the cores, at least 4)
          --timeout SECONDS     close a connection idle this long (default 15; 1 to 3600)
          --max-connections N   connections at once (default 1024)
          --max-connections-per-client N
                                connections at once from one client address (default 256; behind a proxy every
                                client is the proxy: limit clients in the proxy)
          --grace SECONDS       on SIGTERM, how long requests in flight may take to finish (default 10)
          --location-lifetime SECONDS
                                how long a manifest's location URLs live (default 3600, the most the
                                specification allows)
          --single-use-locations
                                a location URL answers once
          --poll-interval SECONDS
                                Retry-After for long-term (L) links: a recipient asking again sooner gets 429
                                (default 60)
          --passcode-checks N   passcode hashes computed at once (default 2; each takes its hash's memory,
                                32 MiB at the default cost)
          -h, --help            show this help

        Exit status: 0 stopped by SIGTERM/SIGINT after a clean shutdown; 2 usage or configuration error, or the
        database or address could not be opened.
        """

    static var defaultThreads: Int { max(4, 2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// `--listen ADDRESS:PORT`.
    static func parseListen(_ text: String) throws -> (address: String, port: UInt16) {
        let example = "e.g. --listen 127.0.0.1:8080 or --listen '[::1]:8080'"
        var address: Substring
        var port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw HealthCardError(.configuration, "--listen \(Quote.text(text)) is not [IPv6]:PORT; \(example)")
            }
            address = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw HealthCardError(.configuration, "--listen \(Quote.text(text)) has no port; \(example)")
            }
            address = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard let number = UInt16(port) else {
            throw HealthCardError(
                .configuration, "--listen \(Quote.text(text)): the port is not 0 to 65535; \(example)")
        }
        guard !address.isEmpty else {
            throw HealthCardError(.configuration, "--listen \(Quote.text(text)) has no address; \(example)")
        }
        return (String(address), number)
    }

    static func integer(_ parsed: Arguments, _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int
    {
        guard let text = parsed.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw HealthCardError(
                .configuration,
                "--\(name) \(Quote.text(text)) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args,
            valued: [
                "db", "listen", "base-url", "threads", "timeout", "max-connections", "max-connections-per-client",
                "grace",
                "location-lifetime", "poll-interval", "passcode-checks",
            ],
            flagNames: ["single-use-locations"], command: "serve")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards serve` takes no arguments (found \(Quote.text(parsed.positionals[0]))); see `healthcards serve --help`"
            )
        }
        let url = try DatabaseURL(try parsed.required("db", command: "serve"))
        let listen = try parseListen(try parsed.required("listen", command: "serve"))
        let base = try BaseURL(try parsed.required("base-url", command: "serve"))
        var http = HTTPServer.Configuration()
        http.address = listen.address
        http.port = listen.port
        http.threads = try integer(parsed, "threads", default: defaultThreads, range: 1...256)
        http.connectionTimeoutSeconds = try integer(parsed, "timeout", default: 15, range: 1...3600)
        http.maxConnections = try integer(parsed, "max-connections", default: 1024, range: 1...65536)
        http.maxConnectionsPerClient = try integer(
            parsed, "max-connections-per-client", default: min(256, http.maxConnections), range: 1...http.maxConnections
        )
        let grace = try integer(parsed, "grace", default: 10, range: 0...3600)
        var service = LinkService.Configuration(baseURL: base)
        service.locationLifetime = Int64(try integer(parsed, "location-lifetime", default: 3600, range: 1...3600))
        service.singleUseLocations = parsed.has("single-use-locations")
        service.pollInterval = Int64(try integer(parsed, "poll-interval", default: 60, range: 1...86400))
        let passcodeChecks = try integer(parsed, "passcode-checks", default: 2, range: 1...64)

        let log = JSONLinesLog()
        // Signals are taken by this thread only (sigwait below): blocked before any other thread starts, so the
        // server's threads inherit the mask and never run a handler.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let database: Database
        do {
            database = try Database(
                url: url, role: .server, create: true, maxConnections: http.threads + 2, now: Clock.nowSeconds())
        } catch {
            throw HealthCardError(.configuration, "cannot open the database \(url): \(error.message)")
        }
        let store = DatabaseLinkStore(database: database)
        do {
            try LinkPublisher(store: store, baseURL: base).checkBaseURL()
        } catch let error as StoreError {
            throw HealthCardError(.configuration, "cannot read the database \(url): \(error.message)")
        }
        let links = LinkService(
            configuration: service, store: store, clock: SystemWallClock(), log: log,
            passcodeChecksAtOnce: passcodeChecks)
        let server = HTTPServer(configuration: http, router: Router(routes: links.routes), log: log)
        if case .sqlite(let path) = url, let mode = FileIO.mode(path), mode & 0o077 != 0 {
            log.warning(
                "database",
                [
                    "reason": .string(
                        "the database file can be read by group or others (mode \(String(mode & 0o7777, radix: 8))): it holds "
                            + "the encrypted files, passcode hashes and the access record; make it 0600")
                ])
        }
        let port = try server.start()
        log.info(
            "start",
            [
                "address": .string(listen.address), "port": .integer(Int64(port)), "baseURL": .string(base.text),
                "database": .string(url.description), "threads": .integer(Int64(http.threads)),
                "timeoutSeconds": .integer(Int64(http.connectionTimeoutSeconds)),
                "maxConnections": .integer(Int64(http.maxConnections)),
                "maxConnectionsPerClient": .integer(Int64(http.maxConnectionsPerClient)),
                "locationLifetimeSeconds": .integer(service.locationLifetime),
                "singleUseLocations": .bool(service.singleUseLocations),
                "pollIntervalSeconds": .integer(service.pollInterval),
                "version": .string(Versions.toolkit),
            ])
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        log.info(
            "stopping",
            ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT"), "graceSeconds": .integer(Int64(grace))])
        let unfinished = server.stop(graceSeconds: Double(grace))
        database.close()
        log.info("stop", ["unfinishedRequests": .integer(Int64(unfinished))])
        return .ok
    }
}
