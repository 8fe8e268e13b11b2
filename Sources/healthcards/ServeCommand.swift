import HealthCardsCore
import HealthCardsSite
import HealthCardsIssuing
import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

enum ServeCommand {
    static let help = """
        Usage: healthcards serve --db DB --listen ADDRESS:PORT --base-url URL [--threads N] [--timeout SECONDS]
                                 [--request-deadline SECONDS] [--max-connections N]
                                 [--max-connections-per-client N] [--grace SECONDS]
                                 [--location-lifetime SECONDS] [--single-use-locations] [--poll-interval SECONDS]
                                 [--passcode-checks N] [--passcode-queue N] [--request-budget N]
                                 [--audit-days DAYS] [--metrics-listen ADDRESS:PORT] [--cards OUT]... [--site SITE]
                                 [--accept-unverified-cards]
                                 [--auth-issuer URL --auth-jwks FILE --audience URL [--auth-authorize URL]
                                 [--auth-token URL] | --no-authorization-for-testing]

        Serves the SMART Health Links that `healthcards link create` put in DB (docs/server.md), over HTTP/1.1,
        behind a TLS reverse proxy (nginx: contrib/nginx-healthcards-serve.conf). It speaks the links specification:
          POST BASE/<id>            the manifest of a link: {"recipient": …, "passcode"?: …, "embeddedLengthMax"?: …}
                                    → {"files": [{"contentType", "location" | "embedded", "lastUpdated",
                                    "fhirVersion"?}]}; 400 without a recipient string; 404 (one body) for an
                                    unknown, deactivated, expired or disabled link; 401 {"remainingAttempts": n}
                                    for a wrong passcode (counted exactly, across instances; at 0 the link is
                                    disabled for good); L links get Retry-After, and 429 with Retry-After when a
                                    recipient asks again sooner
          GET BASE/file/<secret>    a manifest's location: the JWE (application/jose), for at most an hour
                                    (sealed with the server's location key of the hour; nothing stored)
          GET BASE/<id>?recipient=  a U link's one JWE
          GET /healthz              200 while the database commits a write and holds this hour's location
                                    key, else 503 (for a load balancer)
        With --auth-issuer (or --no-authorization-for-testing) it is also the FHIR endpoint wallets and Apple Health
        "connect" to (SMART Health Cards and Links IG, $health-cards-issue; docs/server.md), serving the cards
        `healthcards cards import` (or --cards) loaded, as the batch signed them (no signing key here):
          POST /fhir/Patient/<id>/$health-cards-issue
                                    a FHIR Parameters body: credentialType 1..* (AND: Immunization, Observation,
                                    https://smarthealth.cards#covid19, …), credentialValueSet 0..*, _since 0..1;
                                    → Parameters with a verifiableCredential per matching card, or
                                    {"resourceType":"Parameters"} for none; 401/403 without a good token for
                                    this patient and the types asked, 404 an unknown patient, 400 a bad body
                                    (OperationOutcome)
          GET /fhir/.well-known/smart-configuration, GET /fhir/metadata
                                    discovery: capabilities with health-cards; the CapabilityStatement
        Every answer has CORS (Access-Control-Allow-Origin: *) and Cache-Control: no-store. Every access to a
        link is recorded (`healthcards link audit`). The server holds no link key: the files are JWEs made on
        the operator's machine. Bodies over 16 KiB are refused with 413 before they are read; idle connections
        close after the timeout; connections are limited in all and per client address.

        The log goes to standard error, one JSON object a line (start, stop, each request: method, route,
        status, outcome, a 12-character fingerprint of the link id as `healthcards link list` shows it,
        milliseconds, client address; request lines are written in batches at most 50 ms after their answer,
        every other line at once); it never holds a link id, a key, a passcode, a recipient or file contents.
        SIGTERM or SIGINT: stop accepting, let requests in flight finish (at most --grace seconds), close the database, exit 0. A database that goes away
        (PostgreSQL restarting) gives 503 until it is back; the server reconnects by itself.

        Options:
          --db DB               sqlite:PATH (the default kind: an embedded file, made with mode 0600 when
                                missing) or postgresql://[USER@]HOST[:PORT]/DATABASE (several instances may
                                share one; a local socket folder: postgresql:///DATABASE?host=/run/postgresql);
                                a password comes from ~/.pgpass or PGPASSFILE, never the URL
          --listen ADDRESS:PORT the address to listen on, e.g. 127.0.0.1:8080 or [::1]:8080; [::]:8080 takes
                                IPv4 clients too (port 0: any free port, named in the start line of the log)
          --base-url URL        the public https URL the proxy serves the links at, e.g.
                                https://links.example.org/shl; the one `link create` was given (at most 84
                                characters, so a link URL stays within 128)
          --threads N           threads answering requests (default \(defaultThreads): four per core, at least 16)
          --timeout SECONDS     close a connection idle this long (default 15; 1 to 3600)
          --request-deadline SECONDS
                                close a connection whose request (line, headers and body) is not all in after
                                this long, however slowly it trickles (default 30; 1 to 3600)
          --max-connections N   connections at once (default 1024)
          --max-connections-per-client N
                                connections at once from one client address (default 64, a sixteenth of
                                --max-connections; behind a proxy every client is the proxy: limit clients in
                                the proxy and raise this)
          --grace SECONDS       on SIGTERM, how long requests in flight may take to finish (default 10)
          --location-lifetime SECONDS
                                how long a manifest's location URLs live (default 3600, the most the
                                specification allows)
          --single-use-locations
                                a location URL answers once
          --poll-interval SECONDS
                                Retry-After for long-term (L) links: a recipient asking again sooner gets 429
                                (default 60)
          --passcode-checks N   threads computing passcode hashes, apart from the request threads (default 2;
                                each takes its hash's memory, 32 MiB at the default cost)
          --passcode-queue N    passcode requests that may wait for those threads (default 64); more are
                                answered 429 with Retry-After, nothing counted
          --request-budget N    link requests (manifests, locations, U links) one client address may make a
                                minute (default 600); more are answered 429 with Retry-After. 0: none (behind a
                                proxy every request comes from the proxy's address: limit clients there, e.g.
                                nginx limit_req)
          --audit-days DAYS     delete access records older than DAYS days, every minute (default: keep all;
                                `healthcards link audit --prune DAYS` does it once)
          --metrics-listen ADDRESS:PORT
                                serve GET /metrics (Prometheus text format: requests by route and status, a
                                latency histogram, the passcode queue, database errors) on this address only,
                                a port other than --listen's (default: no metrics)
          --cards OUT           load the cards of the batch output OUT at start (as `healthcards cards import`;
                                repeatable); needs --site, or --accept-unverified-cards
          --accept-unverified-cards
                                load --cards without checking their signatures (no --site)
          --site SITE           the issuer's site whose revocation lists apply: a card they revoke is never
                                loaded (--cards) nor served (each list read again once `revoke` replaced it);
                                its keys verify each --cards card (one whose signature fails is not loaded)
          --auth-issuer URL     the authorization server whose access tokens are accepted (their iss)
          --auth-jwks FILE      its JWK Set (EC P-256 and RSA keys): tokens signed ES256 or RS256 with one of
                                them; alg none and HMAC are refused
          --audience URL        this server's FHIR base as the tokens' aud names it, e.g.
                                https://fhir.example.org/fhir
          --auth-authorize URL  the authorization server's authorization endpoint, for smart-configuration
          --auth-token URL      its token endpoint, for smart-configuration
          --no-authorization-for-testing
                                serve $health-cards-issue to anyone (tests only: warned at start and on every
                                request)
          -h, --help            show this help

        Exit status: 0 stopped by SIGTERM/SIGINT after a clean shutdown; 2 usage or configuration error, or the
        database or address could not be opened.
        """

    /// Four per core, at least 16, at most 256: a request thread waits on the database (a read, the group commit's
    /// back-pressure) as often as it computes, and on 2 cores 16 threads answered 20–30 % more requests a second than
    /// 4 (docs/performance.md).
    static var defaultThreads: Int { min(256, max(16, 4 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))) }

    /// Whether two listen addresses can clash on one port: the same address, or either is a wildcard (every
    /// address of the machine).
    static func overlap(_ a: String, _ b: String) -> Bool {
        let wildcards: Set<String> = ["0.0.0.0", "::", "0:0:0:0:0:0:0:0"]
        return a == b || wildcards.contains(a) || wildcards.contains(b)
    }

    /// `--listen ADDRESS:PORT` (or `--metrics-listen`: `option` names it in messages).
    static func parseListen(_ text: String, option: String = "listen") throws -> (address: String, port: UInt16) {
        let example = "e.g. --\(option) 127.0.0.1:8080 or --\(option) '[::1]:8080'"
        var address: Substring
        var port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw HealthCardError(.configuration, "--\(option) \(Quote.text(text)) is not [IPv6]:PORT; \(example)")
            }
            address = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw HealthCardError(.configuration, "--\(option) \(Quote.text(text)) has no port; \(example)")
            }
            address = text[..<colon]
            port = text[text.index(after: colon)...]
            if address.contains(":") {
                // `::1:8080` could be the address `::1:8080` with no port as well as `[::1]:8080`.
                throw HealthCardError(
                    .configuration,
                    "--\(option) \(Quote.text(text)): an IPv6 address goes in brackets before its port; \(example)")
            }
        }
        guard let number = UInt16(port) else {
            throw HealthCardError(
                .configuration, "--\(option) \(Quote.text(text)): the port is not 0 to 65535; \(example)")
        }
        guard !address.isEmpty else {
            throw HealthCardError(.configuration, "--\(option) \(Quote.text(text)) has no address; \(example)")
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        let isV4 = inet_pton(AF_INET, String(address), &v4) == 1
        let isV6 = !isV4 && inet_pton(AF_INET6, String(address), &v6) == 1
        if !isV4 && !isV6 {
            let why =
                address.contains("%")
                ? "has a zone (%…), which is not supported: listen on [::] or on an address without one"
                : "is not an IP address (a host name is not looked up): give 127.0.0.1, 0.0.0.0, [::1] or [::]"
            throw HealthCardError(
                .configuration, "--\(option) \(Quote.text(text)): \(Quote.text(String(address))) \(why)")
        }
        // ::ffff:a.b.c.d: libmicrohttpd fails to bind it, which read as "in use, or not permitted".
        let mapped = withUnsafeBytes(of: v6) { b in
            b.prefix(10).allSatisfy { $0 == 0 } && b[10] == 0xff && b[11] == 0xff
        }
        if isV6 && mapped {
            let ipv4 = withUnsafeBytes(of: v6) { b in b.suffix(4).map { String($0) }.joined(separator: ".") }
            throw HealthCardError(
                .configuration,
                "--\(option) \(Quote.text(text)) is an IPv4-mapped IPv6 address, which cannot be listened on: give the "
                    + "IPv4 address itself, e.g. --\(option) \(ipv4):\(port)")
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

    /// `--auth-issuer`, `--auth-jwks`, `--audience`, or `--no-authorization-for-testing`; nil for neither (no FHIR
    /// routes).
    static func authorization(_ parsed: Arguments) throws -> HealthCardsIssueService.Authorization? {
        let names = ["auth-issuer", "auth-jwks", "audience"]
        let given = names.filter { parsed.value($0) != nil }
        if parsed.has("no-authorization-for-testing") {
            guard given.isEmpty else {
                throw HealthCardError(
                    .configuration, "--no-authorization-for-testing and --\(given[0]) contradict each other: give one")
            }
            return .disabledForTesting
        }
        guard !given.isEmpty else {
            for name in ["auth-authorize", "auth-token"] where parsed.value(name) != nil {
                throw HealthCardError(.configuration, "--\(name) needs --auth-issuer, --auth-jwks and --audience")
            }
            return nil
        }
        guard given.count == names.count else {
            let missing = names.filter { parsed.value($0) == nil }.map { "--" + $0 }
            throw HealthCardError(
                .configuration, "access tokens are checked with --auth-issuer, --auth-jwks and --audience together; "
                    + "missing \(missing.joined(separator: ", "))")
        }
        let file = parsed.value("auth-jwks")!
        let tokens = try AccessTokens(
            issuer: parsed.value("auth-issuer")!, audience: parsed.value("audience")!,
            keySet: try FileIO.read(file, maxBytes: 1 << 20), source: file)
        return .tokens(tokens)
    }

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args,
            valued: [
                "db", "listen", "base-url", "threads", "timeout", "max-connections", "max-connections-per-client",
                "grace", "request-deadline", "passcode-queue", "request-budget", "audit-days", "metrics-listen",
                "location-lifetime", "poll-interval", "passcode-checks", "cards", "site", "auth-issuer", "auth-jwks",
                "audience", "auth-authorize", "auth-token",
            ],
            flagNames: ["single-use-locations", "no-authorization-for-testing", "accept-unverified-cards"], command: "serve")
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
            parsed, "max-connections-per-client", default: max(1, http.maxConnections / 16),
            range: 1...http.maxConnections)
        http.requestDeadlineSeconds = try integer(parsed, "request-deadline", default: 30, range: 1...3600)
        let grace = try integer(parsed, "grace", default: 10, range: 0...3600)
        var service = LinkService.Configuration(baseURL: base)
        service.locationLifetime = Int64(try integer(parsed, "location-lifetime", default: 3600, range: 1...3600))
        service.singleUseLocations = parsed.has("single-use-locations")
        service.pollInterval = Int64(try integer(parsed, "poll-interval", default: 60, range: 1...86400))
        let passcodeChecks = try integer(parsed, "passcode-checks", default: 2, range: 1...64)
        let passcodeQueue = try integer(parsed, "passcode-queue", default: 64, range: 1...100_000)
        service.requestBudgetPerMinute = try integer(parsed, "request-budget", default: 600, range: 0...1_000_000)
        if parsed.value("audit-days") != nil {
            service.auditDays = try integer(parsed, "audit-days", default: 0, range: 1...36500)
        }
        let metricsListen = try parsed.value("metrics-listen").map { try parseListen($0, option: "metrics-listen") }
        if let metricsListen, metricsListen.port != 0, metricsListen.port == listen.port,
            Self.overlap(metricsListen.address, listen.address)
        {
            throw HealthCardError(
                .configuration,
                "--metrics-listen \(parsed.value("metrics-listen") ?? "") is the address and port of --listen "
                    + "\(parsed.value("listen") ?? ""): the metrics need a port of their own, e.g. --metrics-listen "
                    + "127.0.0.1:9100")
        }
        let metrics = metricsListen == nil ? nil : ServerMetrics()
        let authorization = try authorization(parsed)
        if !parsed.values("cards").isEmpty && authorization == nil {
            throw HealthCardError(
                .configuration,
                "--cards serves cards through $health-cards-issue, which needs --auth-issuer, --auth-jwks and --audience "
                    + "(or --no-authorization-for-testing, for tests only)")
        }
        if let site = parsed.value("site") {
            guard authorization != nil else {
                throw HealthCardError(
                    .configuration, "--site applies to $health-cards-issue, which needs --auth-issuer, --auth-jwks and --audience")
            }
            guard FileIO.isDirectory(site) else {
                throw HealthCardError(.configuration, "--site \(Quote.text(site)) is not a folder")
            }
        }

        // Request lines are written in batches, at most 50 ms late (JSONLinesLog); every other line at once.
        let log = JSONLinesLog(bufferMilliseconds: 50)
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
                // The request threads, the passcode pool's (which finish their manifests), maintenance and the
                // WAL checkpointer.
                url: url, role: .server, create: true, maxConnections: http.threads + passcodeChecks + 2,
                now: Clock.nowSeconds())
        } catch {
            throw HealthCardError(.configuration, "cannot open the database \(url): \(error.message)", code: error.code)
        }
        let store = DatabaseLinkStore(database: database)
        do {
            try LinkPublisher(store: store, baseURL: base).checkBaseURL()
        } catch let error as HealthCardError where StoreError.codes.contains(error.reportedCode) {
            throw HealthCardError(.configuration, "cannot read the database \(url): \(error.message)")
        }
        var options = ServerApplication.Options(links: service)
        options.passcodeChecksAtOnce = passcodeChecks
        options.passcodeQueueLimit = passcodeQueue
        if let authorization {
            var fhir = HealthCardsIssueService.Configuration(authorization: authorization)
            fhir.authorizeEndpoint = parsed.value("auth-authorize")
            fhir.tokenEndpoint = parsed.value("auth-token")
            fhir.revocationLists = parsed.value("site").map { RevocationLists(directory: IssuerSite(root: $0).crlDirectory) }
            let cards = DatabaseCardStore(database: database)
            if parsed.value("site") == nil, !parsed.values("cards").isEmpty {
                try CardsCommand.requireKeySource(site: nil, accept: parsed.has("accept-unverified-cards"), command: "serve --cards")
                log.warning("cards", ["reason": "the cards' signatures are not checked (--accept-unverified-cards): give --site SITE to verify them with the site's keys"])
            }
            let imported = try CardsCommand.load(parsed.values("cards"), site: parsed.value("site"), into: cards, url: url)
            // The files are named by patient: the log says only the folder and the rule (`cards import` names them).
            for (folder, card) in imported.refusals {
                log.warning("cards", ["refused": .string(folder), "code": .string(card.code.rawValue)])
            }
            for line in imported.lines {
                log.info("cards", ["import": .string(line)])
            }
            if case .disabledForTesting = authorization {
                log.warning(
                    "authorization",
                    ["reason": "--no-authorization-for-testing: $health-cards-issue serves any person's cards to anyone"])
            }
            options.issue = fhir
        }
        // The routes are the library's (`ServerApplication`), the same ones the in-process tests call.
        // The store the base URL was checked on serves the links too (one file cache, not two).
        let application = ServerApplication(
            options: options, linkStore: store,
            cardStore: options.issue == nil ? nil : DatabaseCardStore(database: database), clock: SystemWallClock(),
            log: log, metrics: metrics)
        let links = application.links
        let server = HTTPServer(configuration: http, router: application.router, log: log, metrics: metrics)
        var metricsServer: HTTPServer?
        if let metricsListen, let metrics {
            var configuration = HTTPServer.Configuration()
            configuration.address = metricsListen.address
            configuration.port = metricsListen.port
            configuration.threads = 1
            configuration.maxConnections = 16
            configuration.maxConnectionsPerClient = 16
            configuration.requestDeadlineSeconds = 10
            metricsServer = HTTPServer(configuration: configuration, router: Router(routes: metrics.routes), log: log)
        }
        if case .sqlite(let path) = url, let mode = FileIO.mode(path), mode & 0o077 != 0 {
            log.warning(
                "database",
                [
                    "reason": .string(
                        "the database file can be read by group or others (mode \(String(mode & 0o7777, radix: 8))): it holds "
                            + "the encrypted files, passcode hashes, location keys and the access record; make it 0600")
                ])
        }
        let port = try server.start()
        let metricsPort: UInt16?
        do {
            metricsPort = try metricsServer?.start()
        } catch {
            server.stop(graceSeconds: 0)
            var named = error
            named.text = "--metrics-listen \(parsed.value("metrics-listen") ?? ""): " + error.text
            throw named
        }
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
                "requestDeadlineSeconds": .integer(Int64(http.requestDeadlineSeconds)),
                "requestBudgetPerMinute": .integer(Int64(service.requestBudgetPerMinute)),
                "auditDays": service.auditDays.map { .integer(Int64($0)) } ?? .null,
                "metricsPort": metricsPort.map { .integer(Int64($0)) } ?? .null,
                "version": .string(Versions.toolkit),
            ])
        // Under systemd with Type=notify: ready now (listening, database open).
        SystemdNotify.send("READY=1\nSTATUS=serving on \(listen.address):\(port)")
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        log.info(
            "stopping",
            ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT"), "graceSeconds": .integer(Int64(grace))])
        SystemdNotify.send("STOPPING=1")
        let unfinished = server.stop(graceSeconds: Double(grace))
        metricsServer?.stop(graceSeconds: 0)
        links.stop()
        database.close()
        log.info("stop", ["unfinishedRequests": .integer(Int64(unfinished))])
        log.close()
        return .ok
    }
}

/// systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram to the `AF_UNIX` socket
/// `NOTIFY_SOCKET` names (a path, or `@name` in the abstract namespace). Nothing when it is not set.
enum SystemdNotify {
    static func send(_ state: String) {
        guard let name = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !name.isEmpty else { return }
        var path = Array(name.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        var address = sockaddr_un()
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let message = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
    }
}
