import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The SMART Health Links protocol of the server (links-specification "SMART Health Link Manifest Request",
/// "`.files.location` links", "Polling manifest for changes", "Direct File Request"), as routes whose handlers
/// are functions of the request, the store and the time: no sockets (the front is `HTTPServer`).
///
/// - `POST <base>/<id>` with `{recipient, passcode?, embeddedLengthMax?}`: the manifest
///   `{files: [{contentType, location | embedded, lastUpdated, fhirVersion?}]}`. A body that is not a JSON
///   object, or whose `recipient` is missing, not a string or empty, or whose `passcode` or `embeddedLengthMax`
///   has the wrong type, is 400. An unknown, deactivated, expired or disabled link is 404 with one body for all.
///   A `P` link without a passcode is 401 with `{"remainingAttempts": n}` (nothing is counted: no guess was
///   made); a wrong one counts one attempt (atomically) and is 401 with what is left; at 0 the link is
///   disabled for good and answers 404. `embedded` is given only for a file whose JWE fits `embeddedLengthMax`
///   (characters); every other file gets a fresh `location`. `L` links carry `Retry-After` and answer 429 with
///   `Retry-After` to a recipient polling again sooner.
/// - `GET <base>/file/<secret>`: the JWE of a location, `application/jose`, while it lives (at most an hour;
///   consumed at first use when single-use).
/// - `GET <base>/<id>?recipient=…`: a `U` link's one JWE (400 without `recipient`).
/// - `GET /healthz`: 200 when the database commits a write, else 503 (for a load balancer).
///
/// Every access to a link is recorded (`AuditEntry`); content is answered only once its record is stored or queued
/// for the store's group commit (a manifest's with single-use locations: committed with their rows; docs/server.md,
/// "The access record"). A manifest's other locations are sealed (`SealedLocation`): nothing is stored for them. A
/// database that cannot be reached gives 503 with `Retry-After`.
public struct LinkService: Sendable {
    public struct Configuration: Sendable {
        public var baseURL: BaseURL
        /// Seconds a location URL lives (1...3600: the IG's "SHALL NOT exceed one hour").
        public var locationLifetime: Int64 = 3600
        /// Location URLs answer once.
        public var singleUseLocations = false
        /// Seconds a recipient of an `L` link should wait between manifest requests (`Retry-After`).
        public var pollInterval: Int64 = 60
        /// Most bytes of a manifest request body.
        public var manifestBodyLimit = 16 * 1024
        /// Requests for links (manifests, locations, `U` links: each one writes an access record) one client address
        /// may make a minute (a token bucket: this many at once, then one every 60/N seconds); more are answered
        /// 429 with `Retry-After` and write nothing. 0: no budget (behind a proxy, where every request comes from the
        /// proxy's address: limit clients there). With the recipient's bound, it bounds how fast one address can
        /// grow the database (docs/server.md, "Limits").
        public var requestBudgetPerMinute = 600
        /// Access records older than this many days are deleted by `maintain` (nil: kept for ever).
        public var auditDays: Int?

        public init(baseURL: BaseURL) { self.baseURL = baseURL }
    }

    public let configuration: Configuration
    public let store: LinkStore
    /// The time requests are judged at.
    public let clock: any WallClock
    public let log: ServerLog
    /// Passcode hashes run here, on threads of their own, never on the request threads.
    let passcodeChecks: PasscodePool
    let budget: RequestBudget
    /// Links without a passcode, with their files, as manifests last read them (see `manifestLink`).
    let linkCache = LinkCache.make()
    /// The `database` warnings, at most one a second.
    let databaseWarnings = OncePerSecond()
    /// The keys of sealed locations (`SealedLocation`), one an hour, read from the store on first use.
    let locationKeys = LocationKeys()
    /// Log tags (`linkTag`: a SHA-256 each) of the links last answered for, by id.
    let tags = BoundedCache<String, String>(maxBytes: 1 << 20, maxCount: 8192) { $0.utf8.count + 96 }
    public let metrics: ServerMetrics?
    /// Most bytes (UTF-8) of a `recipient`. The IG sets no limit; receivers send a person's or an organization's
    /// name ("Dr Ada Lovelace, St. Mary's Hospital Emergency Department" is 57 bytes; 256 bytes hold 85 characters
    /// of any script, CJK included). Each access record stores it, so the limit bounds what one request can make
    /// the database keep (docs/server.md, "Limits"). Longer is refused with 400 before anything is read or written.
    public static let maxRecipientBytes = 256

    /// When `maintain` last ran (seconds since 1970); a request at least a minute later runs it again.
    let lastMaintenance: Maintenance
    /// Seconds between two runs of `maintain`.
    public static let maintenanceInterval: Int64 = 60

    /// The one body of every 404 for a link: unknown, deactivated, expired and disabled look the same.
    public static let notFoundBody: JSONValue = .object([
        "error":
            "no active SMART Health Link here: it is unknown, was deactivated or expired, or its passcode attempts are used up"
    ])

    /// - Parameters:
    ///   - passcodeChecksAtOnce: the threads of the passcode pool: derivations run at most this many at a time (each
    ///     takes the passcode hash's memory, 32 MiB for the default scrypt cost), on threads of their own.
    ///   - passcodeQueueLimit: passcode requests that may wait for a thread of the pool; with the queue full a
    ///     passcode request is answered 429 with `Retry-After` (nothing counted: no guess was checked).
    public init(
        configuration: Configuration, store: LinkStore, clock: any WallClock, log: ServerLog,
        passcodeChecksAtOnce: Int = 2, passcodeQueueLimit: Int = 64, metrics: ServerMetrics? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.log = log
        self.passcodeChecks = PasscodePool(threads: passcodeChecksAtOnce, queueLimit: passcodeQueueLimit)
        self.budget = RequestBudget(perMinute: configuration.requestBudgetPerMinute)
        self.metrics = metrics
        self.lastMaintenance = Maintenance(at: clock.nowSeconds())
        let pool = passcodeChecks
        metrics?.passcodeQueue { pool.depth }
    }

    /// Ends the passcode pool's threads once their queue is done and commits every queued access record (a clean
    /// stop: SIGTERM, SIGINT). Call it once no request is in flight.
    public func stop() {
        passcodeChecks.stop()
        let left = store.flush(seconds: 10)
        if left > 0 {
            log.error(
                "audit",
                [
                    "reason": .string(
                        "\(left) access record(s) could not be written before the stop (the database is not taking writes)"
                    )
                ])
        }
    }

    /// Passcode checks waiting or running.
    public var passcodeQueueDepth: Int { passcodeChecks.depth }

    /// The routes, under the base URL's path.
    public var routes: [Route] {
        let base = configuration.baseURL.pathSegments.map { PathSegment.literal($0) }
        let id = PathSegment.parameter("id", { LinkID.isValid($0) })
        return [
            Route(name: "manifest", method: "POST", pattern: base + [id], bodyLimit: configuration.manifestBodyLimit) {
                maintainWhenDue()
                return manifest($0)
            },
            Route(name: "direct", method: "GET", pattern: base + [id], bodyLimit: 0) { direct($0) },
            Route(
                name: "file", method: "GET",
                pattern: base + [
                    .literal("file"),
                    .parameter("secret", { LinkID.isValid($0) || SealedLocation.textLengths.contains($0.utf8.count) }),
                ],
                bodyLimit: 0
            ) { file($0) },
            Route(name: "health", method: "GET", pattern: [.literal("healthz")], bodyLimit: 0) { _ in health() },
        ]
    }

    /// Runs `maintain` when the last run is `maintenanceInterval` old (one request of many does it).
    func maintainWhenDue() {
        let now = clock.nowSeconds()
        let last = lastMaintenance.at.load(ordering: .relaxed)
        guard now - last >= Self.maintenanceInterval,
            lastMaintenance.at.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        maintain()
    }

    // MARK: answers

    /// The log tag of a link id (`linkTag`), computed once per link while it is cached.
    func tag(_ id: String) -> String {
        if let known = tags[id] { return known }
        let made = linkTag(id)
        tags[id] = made
        return made
    }

    /// 429 with `Retry-After` when the client address has spent its request budget, else nil (one taken).
    func overBudget(_ request: HTTPRequest, now: Int64, id: String?) -> HTTPResponse? {
        guard let wait = budget.take(request.peer, now: now) else { return nil }
        var response = HTTPResponse.error(
            429,
            "this address made more than \(configuration.requestBudgetPerMinute) link requests in a minute; "
                + "try again in \(wait) s", outcome: "over-budget")
        response.setHeader("Retry-After", String(wait))
        response.linkTag = id.map(tag)
        return response
    }

    func notFound(_ outcome: String, _ id: String?) -> HTTPResponse {
        var response = HTTPResponse.json(404, Self.notFoundBody, outcome: outcome)
        response.linkTag = id.map(tag)
        return response
    }

    func failure(_ error: Error, _ id: String?) -> HTTPResponse {
        var response: HTTPResponse
        metrics?.databaseError()
        if let error = StoreError.unavailable(error) {
            response = .error(503, "the link database is not available; try again shortly", outcome: "unavailable")
            response.setHeader("Retry-After", "5")
            // At most one line a second: a database that is away fails every request (a trial saw 7,200 lines in
            // 4 s); the next line says how many were left out.
            databaseWarnings.warning(log, "database", ["reason": .string(error.message)], now: clock.nowSeconds())
        } else {
            response = .error(500, "the server failed", outcome: "failed")
            log.error("failure", ["reason": .string("\(error)")])
        }
        response.linkTag = id.map(tag)
        return response
    }

    /// Records an access whose answer holds no content; a failure to record is logged, not answered.
    func note(
        _ id: String, _ kind: String, _ recipient: String?, _ outcome: String, _ status: Int, at now: Int64,
        grant: String? = nil
    ) {
        do {
            try store.record(
                AuditEntry(
                    at: now, linkID: id, kind: kind, recipient: recipient, outcome: outcome, status: status,
                    grant: grant))
        } catch {
            log.error("audit", ["reason": .string("\(error)"), "link": .string(tag(id))])
        }
    }

    // MARK: manifest

    /// The manifest request's members, checked.
    struct ManifestRequest {
        var recipient: String
        var passcode: String?
        var embeddedLengthMax: Int?
    }

    enum Parsed {
        case success(ManifestRequest)
        case failure(HTTPResponse)
    }

    /// 400 when a recipient (`name` says which, for the message) holds a control character (a NUL, an escape
    /// sequence, a line break): a name of who is asking is kept in the access record and shown to the link's owner.
    static func recipientHasControl(_ recipient: String, called name: String) -> HTTPResponse? {
        guard let control = recipient.unicodeScalars.first(where: ControlCharacters.isTerminalControl) else { return nil }
        return .error(
            400,
            "\(name) holds the control character \(ControlCharacters.codePoint(control)); send the name of who is asking "
                + "as plain text", outcome: "bad-request")
    }

    /// 400 when a recipient is over `maxRecipientBytes` (UTF-8).
    static func recipientTooLong(_ recipient: String, called name: String) -> HTTPResponse? {
        guard recipient.utf8.count > maxRecipientBytes else { return nil }
        return .error(
            400,
            "\(name) is \(recipient.utf8.count) bytes; at most \(maxRecipientBytes) (UTF-8) are accepted: send a "
                + "shorter name of who is asking", outcome: "recipient-too-long")
    }

    static func parseManifestRequest(_ body: [UInt8]) -> Parsed {
        let value: JSONValue
        do {
            value = try JSONParser.parseFailing(body)
        } catch {
            // What the parser found and where (a duplicate member, a stray byte), cut short: a member name the
            // client sent is echoed back to it, never a page of it.
            let found = error.description.count > 160 ? String(error.description.prefix(157)) + "…" : error.description
            return .failure(
                .error(
                    400, "the manifest request body is not valid JSON (\(found)): send an object such as "
                        + #"{"recipient":"…"}"#, outcome: "bad-request"))
        }
        guard let object = value.objectValue else {
            return .failure(
                .error(
                    400, "the manifest request body is JSON but not an object: send an object such as "
                        + #"{"recipient":"…"}"#, outcome: "bad-request"))
        }
        guard let recipient = object["recipient"]?.stringValue else {
            return .failure(
                .error(400, "the manifest request has no recipient string (who is asking)", outcome: "bad-request"))
        }
        guard recipient.contains(where: { !$0.isWhitespace }) else {
            return .failure(.error(400, "the manifest request's recipient is empty", outcome: "bad-request"))
        }
        let name = "the manifest request's recipient"
        if let refused = recipientHasControl(recipient, called: name) ?? recipientTooLong(recipient, called: name) {
            return .failure(refused)
        }
        var request = ManifestRequest(recipient: recipient)
        if let passcode = object["passcode"] {
            guard let text = passcode.stringValue else {
                return .failure(.error(400, "the manifest request's passcode is not a string", outcome: "bad-request"))
            }
            request.passcode = text
        }
        if let limit = object["embeddedLengthMax"] {
            guard let lexeme = limit.numberLexeme, let number = Int(lexeme) ?? wholeNumber(lexeme), number >= 0
            else {
                return .failure(
                    .error(
                        400, "the manifest request's embeddedLengthMax is not a whole number ≥ 0",
                        outcome: "bad-request"))
            }
            request.embeddedLengthMax = number
        }
        return .success(request)
    }

    func manifest(_ request: HTTPRequest) -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        let now = clock.nowSeconds()
        let asked: ManifestRequest
        switch Self.parseManifestRequest(request.body) {
        case .failure(var response):
            response.linkTag = tag(id)
            return response
        case .success(let parsed): asked = parsed
        }
        if let refused = overBudget(request, now: now, id: id) { return refused }
        do {
            guard let link = try manifestLink(id) else { return notFound("unknown", id) }
            let state = link.state(at: now)
            guard state == .active, !link.isDirect else {
                let outcome = link.isDirect ? "direct-link" : state.rawValue
                note(id, "manifest", asked.recipient, outcome, 404, at: now)
                return notFound(outcome, id)
            }
            guard link.needsPasscode else { return serve(link, asked, now: now) }
            guard let hash = link.passcode else { return notFound("no-passcode-hash", link.id) }
            guard let given = asked.passcode else {
                note(link.id, "manifest", asked.recipient, "no-passcode", 401, at: now)
                return remaining(link.remainingAttempts ?? 0, "no-passcode", link.id)
            }
            // The hash runs on the passcode pool; this request thread goes on with other requests meanwhile.
            let service = self
            return .later { done in
                let queued = service.passcodeChecks.submit {
                    done(service.afterPasscode(link, hash, given, asked, now: now))
                }
                guard queued else {
                    service.metrics?.passcodeQueueFull()
                    var busy = HTTPResponse.error(
                        429, "too many passcodes are being checked now; try again in a second",
                        outcome: "passcode-queue-full")
                    busy.setHeader("Retry-After", "1")
                    busy.linkTag = tag(id)
                    done(busy)
                    return
                }
            }
        } catch {
            return failure(error, id)
        }
    }

    /// The rest of a `P` link's manifest request, on the passcode pool: the hash, then a wrong passcode counted or
    /// the manifest served.
    func afterPasscode(_ link: StoredLink, _ hash: PasscodeHash, _ given: String, _ asked: ManifestRequest, now: Int64)
        -> HTTPResponse
    {
        do {
            if try hash.matches(given) { return serve(link, asked, now: now) }
            guard let left = try store.spendAttempt(linkID: link.id, now: now) else {
                note(link.id, "manifest", asked.recipient, "disabled", 404, at: now)
                return notFound("disabled", link.id)
            }
            note(link.id, "manifest", asked.recipient, "wrong-passcode", 401, at: now)
            return remaining(left, "wrong-passcode", link.id)
        } catch {
            return failure(error, link.id)
        }
    }

    /// The manifest of a link that opens for this request (the passcode, if any, was right).
    func serve(_ link: StoredLink, _ asked: ManifestRequest, now: Int64) -> HTTPResponse {
        let id = link.id
        do {
            // The hour's location key before a long-term link's poll is counted: a key that cannot be read must not
            // leave the recipient waiting a poll interval for a manifest it never got.
            let sealing = configuration.singleUseLocations ? nil : try locationKeys.sealingKey(at: now, store)
            if link.isLongTerm,
                let wait = try store.poll(
                    linkID: id, recipientHash: LinkID.hash(asked.recipient), now: now,
                    interval: configuration.pollInterval)
            {
                note(id, "manifest", asked.recipient, "rate-limited", 429, at: now)
                var response = HTTPResponse.error(
                    429, "this link was asked for by this recipient less than \(configuration.pollInterval) s ago",
                    outcome: "rate-limited")
                response.setHeader("Retry-After", String(wait))
                response.linkTag = tag(id)
                return response
            }
            // A long-term link updated between the read and the grant is read again (its new version, whole): a
            // manifest hands out one version's files, never a mix.
            var current = link
            for _ in 0..<3 {
                var files: [JSONValue] = []
                var tickets: [LocationTicket] = []
                var sealedCount = 0
                let expiresAt = now + min(3600, max(1, configuration.locationLifetime))
                // Sealed locations (nothing stored: see `SealedLocation`), unless each location is consumed on its
                // own (single-use: a row each, deleted by its use) or a position does not fit in a seal.
                let grant =
                    sealing == nil || current.files.contains { $0.position > SealedLocation.maxPosition }
                    ? nil : try SealedLocation.newGrant()
                for file in current.files {
                    var entry: JSONObject = ["contentType": .string(file.contentType)]
                    if let max = asked.embeddedLengthMax, file.jwe.utf8.count <= max {
                        entry["embedded"] = .string(file.jwe)
                    } else if let grant, let sealing {
                        let location = SealedLocation(
                            linkID: id, version: current.version, position: file.position, expiresAt: expiresAt,
                            grant: grant)
                        let secret = try location.sealed(with: sealing.key, hour: sealing.hour)
                        entry["location"] = .string(configuration.baseURL.location(secret))
                        sealedCount += 1
                    } else {
                        let secret = try LinkID.random()
                        tickets.append(
                            LocationTicket(
                                hash: LinkID.hash(secret), position: file.position, expiresAt: expiresAt,
                                singleUse: configuration.singleUseLocations, version: current.version))
                        entry["location"] = .string(configuration.baseURL.location(secret))
                    }
                    entry["lastUpdated"] = .string(Clock.iso8601(file.lastUpdated))
                    if let version = file.fhirVersion { entry["fhirVersion"] = .string(version) }
                    files.append(.object(entry))
                }
                let audit = AuditEntry(
                    at: now, linkID: id, kind: "manifest", recipient: asked.recipient, outcome: "served", status: 200,
                    detail: "\(files.count) file(s), \(tickets.count + sealedCount) location(s)",
                    grant: grant.map(SealedLocation.grantText))
                let admitted =
                    tickets.isEmpty
                    ? try store.admit(linkID: id, version: current.version, audit: audit, now: now)
                    : try store.grant(linkID: id, version: current.version, tickets: tickets, audit: audit, now: now)
                if admitted {
                    var response = HTTPResponse.json(200, .object(["files": .array(files)]), outcome: "served")
                    if link.isLongTerm { response.setHeader("Retry-After", String(configuration.pollInterval)) }
                    response.linkTag = tag(id)
                    return response
                }
                // Deactivated, expired or disabled since it was read (or cached); or updated (read it again).
                linkCache[id] = nil
                guard let again = try store.link(id: id, withFiles: true) else { return notFound("unknown", id) }
                let state = again.state(at: now)
                guard state == .active else {
                    note(id, "manifest", asked.recipient, state.rawValue, 404, at: now)
                    return notFound(state.rawValue, id)
                }
                guard again.version != current.version else { return notFound("not-active", id) }
                if !again.needsPasscode { linkCache[id] = again }
                current = again
            }
            var busy = HTTPResponse.error(
                503, "the link's content changed during the request; try again", outcome: "updating")
            busy.setHeader("Retry-After", "1")
            busy.linkTag = tag(id)
            return busy
        } catch {
            return failure(error, id)
        }
    }

    /// The link a manifest request names, with its files: from the cache when it is there. A cached link may be
    /// stale (deactivated, expired or updated since): `grant` checks the link's state and version in the database
    /// in the same transaction as its writes, and a refused grant reads the link again, so a stale copy is never
    /// served. Only links without a passcode are cached (a `P` link's remaining attempts are read fresh).
    func manifestLink(_ id: String) throws -> StoredLink? {
        if let link = linkCache[id] { return link }
        guard let link = try store.link(id: id, withFiles: true) else { return nil }
        if !link.needsPasscode && !link.isDirect && link.state(at: clock.nowSeconds()) == .active {
            linkCache[id] = link
        }
        return link
    }

    func remaining(_ count: Int, _ outcome: String, _ id: String) -> HTTPResponse {
        var response = HTTPResponse.json(401, .object(["remainingAttempts": .integer(Int64(count))]), outcome: outcome)
        response.linkTag = tag(id)
        return response
    }

    // MARK: files

    func jose(_ jwe: String, _ id: String) -> HTTPResponse {
        var response = HTTPResponse(
            status: 200, headers: [("Content-Type", "application/jose")], body: Array(jwe.utf8), outcome: "served")
        response.linkTag = tag(id)
        return response
    }

    func file(_ request: HTTPRequest) -> HTTPResponse {
        let now = clock.nowSeconds()
        let secret = request.parameters["secret"] ?? ""
        if let refused = overBudget(request, now: now, id: nil) { return refused }
        do {
            switch try locationFile(secret, now: now) {
            case .closed(let outcome, let linkID):
                // One answer for every location that does not open; the log line says why, as the record does.
                var response = HTTPResponse.error(
                    404, "no such file: the location expired, was used, or its link is no longer active",
                    outcome: outcome)
                response.linkTag = linkID.map(tag)
                return response
            case .open(let link, let file, let recipient, let grant):
                try store.record(
                    AuditEntry(
                        at: now, linkID: link.id, kind: "file", recipient: recipient, outcome: "served", status: 200,
                        detail: "file \(file.position + 1)", grant: grant))
                return jose(file.jwe, link.id)
            }
        } catch {
            return failure(error, nil)
        }
    }

    /// The file a location secret opens at `now`, with what its access record holds of the manifest that gave it:
    /// a stored ticket's recipient, or a sealed location's grant (`SealedLocation`: the seal opened with the
    /// location key, its expiry, then the link's state and version). `.closed` for all that does not open: with
    /// the link's state (or `location-expired`, `superseded`, `no-file`) for a sealed location of a link this
    /// server knows, which is recorded; `unknown` otherwise.
    func locationFile(_ secret: String, now: Int64) throws -> LocationAnswer {
        if LinkID.isValid(secret) {
            guard
                let redeemed = try store.redeem(
                    ticketHash: LinkID.hash(secret), manifestTicket: ManifestLocation.ticket(of: secret), now: now)
            else { return .closed(outcome: "unknown", linkID: nil) }
            return .open(link: redeemed.link, file: redeemed.file, recipient: redeemed.recipient, grant: nil)
        }
        // A server of single-use locations seals none (and opens none: a sealed one would open more than once).
        guard !configuration.singleUseLocations, let hourByte = SealedLocation.hourByte(of: secret),
            let key = try locationKeys.openingKey(hourByte: hourByte, at: now, store),
            let location = SealedLocation.open(secret, key: key),
            location.expiresAt <= now + SealedLocation.maxLifetime
        else { return .closed(outcome: "unknown", linkID: nil) }
        let grant = SealedLocation.grantText(location.grant)
        if location.expiresAt > now,
            let (link, file) = try store.locationFile(
                linkID: location.linkID, version: location.version, position: location.position, now: now),
            !link.isDirect  // a `U` link has no manifest, so no location of it was ever sealed
        {
            return .open(link: link, file: file, recipient: nil, grant: grant)
        }
        // A location this server sealed, of a link that no longer opens it: an access to that link, recorded (the
        // seal names the link; a stored ticket's row is gone by then).
        if let link = try store.link(id: location.linkID, withFiles: false), !link.isDirect {
            let state = link.state(at: now)
            let outcome =
                state != .active
                ? state.rawValue
                : location.expiresAt <= now
                    ? "location-expired" : link.version != location.version ? "superseded" : "no-file"
            note(link.id, "file", nil, outcome, 404, at: now, grant: grant)
            return .closed(outcome: outcome, linkID: link.id)
        }
        return .closed(outcome: "unknown", linkID: nil)
    }

    /// What a location secret opens (`locationFile`).
    enum LocationAnswer {
        /// The file, with what its access record holds of the manifest that gave it: a stored ticket's recipient,
        /// or a sealed location's grant.
        case open(link: StoredLink, file: StoredFile, recipient: String?, grant: String?)
        /// Nothing: why (for the log line; the answer is the same 404 for all), and the link when the location is
        /// one this server sealed for a link it knows.
        case closed(outcome: String, linkID: String?)
    }

    func direct(_ request: HTTPRequest) -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        let now = clock.nowSeconds()
        if let recipient = request.query["recipient"], var response = Self.recipientTooLong(recipient, called: "the recipient") {
            response.linkTag = tag(id)
            return response
        }
        if let refused = overBudget(request, now: now, id: id) { return refused }
        do {
            guard let link = try store.link(id: id, withFiles: true) else { return notFound("unknown", id) }
            let recipient = request.query["recipient"]
            let state = link.state(at: now)
            guard state == .active, link.isDirect, let file = link.files.first else {
                let outcome = link.isDirect ? state.rawValue : "manifest-link"
                note(id, "direct", recipient, outcome, 404, at: now)
                return notFound(outcome, id)
            }
            guard let recipient, recipient.contains(where: { !$0.isWhitespace }) else {
                note(id, "direct", recipient, "no-recipient", 400, at: now)
                var response = HTTPResponse.error(
                    400,
                    "a U link is fetched with ?recipient= naming who asks"
                        + (recipient == nil ? "" : "; the recipient given is empty"),
                    outcome: "no-recipient")
                response.linkTag = tag(id)
                return response
            }
            if var response = Self.recipientHasControl(recipient, called: "the recipient") {
                note(id, "direct", nil, "bad-request", 400, at: now)
                response.linkTag = tag(id)
                return response
            }
            if link.isLongTerm,
                let wait = try store.poll(
                    linkID: id, recipientHash: LinkID.hash(recipient), now: now, interval: configuration.pollInterval)
            {
                note(id, "direct", recipient, "rate-limited", 429, at: now)
                var response = HTTPResponse.error(
                    429, "this link was fetched by this recipient less than \(configuration.pollInterval) s ago",
                    outcome: "rate-limited")
                response.setHeader("Retry-After", String(wait))
                response.linkTag = tag(id)
                return response
            }
            try store.record(
                AuditEntry(at: now, linkID: id, kind: "direct", recipient: recipient, outcome: "served", status: 200))
            var response = jose(file.jwe, id)
            if link.isLongTerm { response.setHeader("Retry-After", String(configuration.pollInterval)) }
            return response
        } catch {
            return failure(error, id)
        }
    }

    /// 200 only when the store commits a write now: a full disk or a read-only database, which make every link
    /// request 503 (its access cannot be recorded), make this 503 too.
    func health() -> HTTPResponse {
        let now = clock.nowSeconds()
        let status: String
        if !store.canWrite(now: now) {
            status = "the database cannot be written (unreachable, full or read-only)"
        } else if !configuration.singleUseLocations, (try? locationKeys.sealingKey(at: now, store)) == nil {
            status = "the location key of this hour cannot be read or stored (setting location_key.<hour> of hc_settings)"
        } else {
            return .json(200, .object(["status": "ok"]), outcome: "ok")
        }
        var response = HTTPResponse.json(503, .object(["status": .string(status)]), outcome: "unavailable")
        response.setHeader("Retry-After", "5")
        return response
    }

    /// Drops expired location URLs and old poll records (the server calls this every minute).
    public func maintain() {
        let now = clock.nowSeconds()
        do {
            try store.purge(now: now, pollsBefore: now - max(configuration.pollInterval, 3600))
            if let days = configuration.auditDays {
                let pruned = try store.pruneAudit(before: now - Int64(days) * 86400)
                if pruned > 0 { log.info("audit", ["pruned": .integer(Int64(pruned)), "days": .integer(Int64(days))]) }
            }
        } catch {
            log.warning("maintenance", ["reason": .string("\(error)")])
        }
        budget.forgetFull(now: now)
    }
}

/// A JSON number lexeme with a fraction or exponent that is a whole number in range (`1e4`), else nil.
func wholeNumber(_ lexeme: String) -> Int? {
    guard let value = Double(lexeme), value.isFinite, value.rounded() == value, abs(value) < 1e15 else { return nil }
    return Int(value)
}

/// When maintenance last ran.
final class Maintenance: Sendable {
    let at: Atomic<Int64>
    init(at: Int64) { self.at = Atomic(at) }
}

/// The passcode pool: `threads` threads of its own run passcode checks (each takes the hash function's memory),
/// at most `queueLimit` wait; `submit` refuses more. Request threads never compute a hash, so a burst of
/// passcodes for one link never holds up requests for others.
final class PasscodePool: @unchecked Sendable {
    /// The queue and its threads; the threads hold it, so it outlives the pool until they end.
    final class Queue: @unchecked Sendable {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        // Guarded by `mutex`.
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var running = 0
        var stopping = false

        init() {
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(ready, nil)
        }
        deinit {
            pthread_cond_destroy(ready)
            pthread_mutex_destroy(mutex)
            ready.deallocate()
            mutex.deallocate()
        }

        func work() {
            pthread_mutex_lock(mutex)
            while true {
                if head < jobs.count {
                    let job = jobs[head]
                    // The queue keeps no job it handed out: a job holds its request's answer, and through it the
                    // server that holds this pool, so a job kept here after it ran was a cycle that nothing freed
                    // (LeakSanitizer reported the whole server at the exit of `serve`).
                    jobs[head] = {}
                    head += 1
                    if head > 64 && head * 2 > jobs.count {
                        jobs.removeFirst(head)
                        head = 0
                    }
                    running += 1
                    pthread_mutex_unlock(mutex)
                    job()
                    pthread_mutex_lock(mutex)
                    running -= 1
                } else if stopping {
                    break
                } else {
                    pthread_cond_wait(ready, mutex)
                }
            }
            pthread_mutex_unlock(mutex)
        }
    }

    let queue = Queue()
    let threads: Int
    let queueLimit: Int
    private let started = Atomic<Bool>(false)

    init(threads: Int, queueLimit: Int) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit)
    }

    deinit { stop() }

    /// Starts the threads at the first job (a service that never sees a passcode starts none).
    private func startThreads() {
        guard started.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return }
        for _ in 0..<threads {
            var thread = pthread_t()
            let box = Unmanaged.passRetained(queue).toOpaque()
            if pthread_create(
                &thread, nil,
                { argument in
                    guard let argument else { return nil }
                    Unmanaged<Queue>.fromOpaque(argument).takeRetainedValue().work()
                    return nil
                }, box) == 0
            {
                pthread_detach(thread)
            } else {
                Unmanaged<Queue>.fromOpaque(box).release()
            }
        }
    }

    /// Queues `job`; false when `queueLimit` jobs already wait (or the pool stopped).
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        startThreads()
        pthread_mutex_lock(queue.mutex)
        defer { pthread_mutex_unlock(queue.mutex) }
        guard !queue.stopping, queue.jobs.count - queue.head < max(1, queueLimit) else { return false }
        queue.jobs.append(job)
        pthread_cond_signal(queue.ready)
        return true
    }

    /// Checks waiting or running.
    var depth: Int {
        pthread_mutex_lock(queue.mutex)
        defer { pthread_mutex_unlock(queue.mutex) }
        return queue.jobs.count - queue.head + queue.running
    }

    /// The threads end once the queue is empty; later jobs are refused.
    func stop() {
        pthread_mutex_lock(queue.mutex)
        queue.stopping = true
        pthread_cond_broadcast(queue.ready)
        pthread_mutex_unlock(queue.mutex)
    }
}

/// A token bucket per client address for manifest requests: `perMinute` at once, refilled at `perMinute` a
/// minute. Addresses whose bucket is full again are forgotten (memory stays bounded by the addresses active in
/// the last minute).
final class RequestBudget: Sendable {
    struct Bucket {
        var tokens: Double
        var at: Int64
    }
    let perMinute: Int
    private let buckets = Locked<[String: Bucket]>([:])
    /// Most addresses remembered; past it the full buckets are dropped, then all (a flood from very many addresses
    /// forgets budgets rather than exhausting memory).
    static let maxAddresses = 100_000

    init(perMinute: Int) { self.perMinute = max(0, perMinute) }

    /// Takes one request from `peer`'s budget: nil when it may go ahead, or the seconds to wait (at least 1).
    func take(_ peer: String, now: Int64) -> Int64? {
        guard perMinute > 0 else { return nil }
        let capacity = Double(perMinute)
        let rate = capacity / 60
        return buckets.withLock { buckets in
            var bucket = buckets[peer] ?? Bucket(tokens: capacity, at: now)
            bucket.tokens = min(capacity, bucket.tokens + Double(max(0, now - bucket.at)) * rate)
            bucket.at = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                if buckets.count >= Self.maxAddresses && buckets[peer] == nil { buckets.removeAll() }
                buckets[peer] = bucket
                return nil
            }
            buckets[peer] = bucket
            return max(1, Int64(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }

    /// Drops the buckets that are full again at `now`.
    func forgetFull(now: Int64) {
        guard perMinute > 0 else { return }
        let capacity = Double(perMinute)
        buckets.withLock { buckets in
            buckets = buckets.filter { $0.value.tokens + Double(max(0, now - $0.value.at)) * capacity / 60 < capacity }
        }
    }
}

/// Links (with their files) by id, up to `maxBytes` of JWE and `maxLinks` links.
enum LinkCache {
    static let maxBytes = 32 << 20
    static let maxLinks = 4096
    static func make() -> BoundedCache<String, StoredLink> {
        BoundedCache(maxBytes: maxBytes, maxCount: maxLinks) { link in link.files.reduce(0) { $0 + $1.jwe.utf8.count } }
    }
}

/// The locations of one manifest as one stored row, as servers of schema 4 made them (now `SealedLocation`; a
/// database upgraded within a location's lifetime still holds such rows, and they open until they expire): a
/// random 42-character base64url prefix (252 bits) shared by the manifest's locations, each location that prefix
/// and one base64url character naming the file's position (0…63). The row holds the SHA-256 of the prefix (never
/// the prefix) and position `anyPosition`; a location opens the file at its last character's position, of the
/// version the manifest handed out.
struct ManifestLocation {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// The `position` of a manifest's one row.
    static let anyPosition = -1
    let prefix: Substring

    init() throws { prefix = try LinkID.random().prefix(LinkID.length - 1) }

    var hash: String { LinkID.hash(prefix) }

    /// The location secret of the file at `position` (0…63).
    func secret(_ position: Int) -> String { String(prefix) + String(UnicodeScalar(Self.alphabet[position])) }

    /// The row a location secret may belong to (the hash of its prefix) and the position it names.
    static func ticket(of secret: String) -> (hash: String, position: Int)? {
        guard let last = secret.utf8.last, let position = alphabet.firstIndex(of: last) else { return nil }
        return (LinkID.hash(secret.dropLast()), position)
    }
}
