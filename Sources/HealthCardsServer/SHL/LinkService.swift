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
/// - `GET /healthz`: 200 when the database answers, else 503 (for a load balancer).
///
/// Every access to a link is recorded (`AuditEntry`); content is answered only once its record is stored. A
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

        public init(baseURL: BaseURL) { self.baseURL = baseURL }
    }

    public let configuration: Configuration
    public let store: LinkStore
    /// The time requests are judged at.
    public let clock: any WallClock
    public let log: ServerLog
    let passcodeChecks: PasscodeGate
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
    ///   - passcodeChecksAtOnce: passcode derivations run at most this many at a time (each takes the
    ///     passcode hash's memory, 32 MiB for the default scrypt cost), others wait.
    public init(
        configuration: Configuration, store: LinkStore, clock: any WallClock, log: ServerLog,
        passcodeChecksAtOnce: Int = 2
    ) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.log = log
        self.passcodeChecks = PasscodeGate(slots: passcodeChecksAtOnce)
        self.lastMaintenance = Maintenance(at: clock.nowSeconds())
    }

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
                pattern: base + [.literal("file"), .parameter("secret", { LinkID.isValid($0) })],
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

    func notFound(_ outcome: String, _ id: String?) -> HTTPResponse {
        var response = HTTPResponse.json(404, Self.notFoundBody, outcome: outcome)
        response.linkTag = id.map(linkTag)
        return response
    }

    func failure(_ error: Error, _ id: String?) -> HTTPResponse {
        var response: HTTPResponse
        if let error = error as? StoreError, error.reason == .unavailable {
            response = .error(503, "the link database is not available; try again shortly", outcome: "unavailable")
            response.setHeader("Retry-After", "5")
            log.warning("database", ["reason": .string(error.message)])
        } else {
            response = .error(500, "the server failed", outcome: "failed")
            log.error("failure", ["reason": .string("\(error)")])
        }
        response.linkTag = id.map(linkTag)
        return response
    }

    /// Records an access whose answer holds no content; a failure to record is logged, not answered.
    func note(_ id: String, _ kind: String, _ recipient: String?, _ outcome: String, _ status: Int, at now: Int64) {
        do {
            try store.record(
                AuditEntry(at: now, linkID: id, kind: kind, recipient: recipient, outcome: outcome, status: status))
        } catch {
            log.error("audit", ["reason": .string("\(error)"), "link": .string(linkTag(id))])
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

    static func parseManifestRequest(_ body: [UInt8]) -> Parsed {
        guard let value = try? JSONParser.parse(body), let object = value.objectValue else {
            return .failure(.error(400, "the manifest request body is not a JSON object", outcome: "bad-request"))
        }
        guard let recipient = object["recipient"]?.stringValue else {
            return .failure(
                .error(400, "the manifest request has no recipient string (who is asking)", outcome: "bad-request"))
        }
        guard recipient.contains(where: { !$0.isWhitespace }) else {
            return .failure(.error(400, "the manifest request's recipient is empty", outcome: "bad-request"))
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
            response.linkTag = linkTag(id)
            return response
        case .success(let parsed): asked = parsed
        }
        do {
            guard let link = try store.link(id: id, withFiles: true) else { return notFound("unknown", id) }
            let state = link.state(at: now)
            guard state == .active, !link.isDirect else {
                let outcome = link.isDirect ? "direct-link" : state.rawValue
                note(id, "manifest", asked.recipient, outcome, 404, at: now)
                return notFound(outcome, id)
            }
            if link.needsPasscode, let answer = try checkPasscode(link, asked, now: now) { return answer }
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
                response.linkTag = linkTag(id)
                return response
            }
            var files: [JSONValue] = []
            var tickets: [LocationTicket] = []
            for file in link.files {
                var entry: JSONObject = ["contentType": .string(file.contentType)]
                if let max = asked.embeddedLengthMax, file.jwe.utf8.count <= max {
                    entry["embedded"] = .string(file.jwe)
                } else {
                    let secret = try LinkID.random()
                    tickets.append(
                        LocationTicket(
                            hash: LinkID.hash(secret), position: file.position,
                            expiresAt: now + min(3600, max(1, configuration.locationLifetime)),
                            singleUse: configuration.singleUseLocations, recipient: asked.recipient))
                    entry["location"] = .string(configuration.baseURL.location(secret))
                }
                entry["lastUpdated"] = .string(Clock.iso8601(file.lastUpdated))
                if let version = file.fhirVersion { entry["fhirVersion"] = .string(version) }
                files.append(.object(entry))
            }
            let audit = AuditEntry(
                at: now, linkID: id, kind: "manifest", recipient: asked.recipient, outcome: "served", status: 200,
                detail: "\(files.count) file(s), \(tickets.count) location(s)")
            guard try store.grant(linkID: id, tickets: tickets, audit: audit, now: now) else {
                // Deactivated, expired or disabled between the read and now.
                return notFound("not-active", id)
            }
            var response = HTTPResponse.json(200, .object(["files": .array(files)]), outcome: "served")
            if link.isLongTerm { response.setHeader("Retry-After", String(configuration.pollInterval)) }
            response.linkTag = linkTag(id)
            return response
        } catch {
            return failure(error, id)
        }
    }

    /// Checks the passcode of a `P` link.
    /// - Returns: the answer when the request stops here (401, or 404 when the attempts ran out), nil when the
    ///   passcode is right.
    func checkPasscode(_ link: StoredLink, _ asked: ManifestRequest, now: Int64) throws -> HTTPResponse? {
        guard let hash = link.passcode else { return notFound("no-passcode-hash", link.id) }
        guard let given = asked.passcode else {
            note(link.id, "manifest", asked.recipient, "no-passcode", 401, at: now)
            return remaining(link.remainingAttempts ?? 0, "no-passcode", link.id)
        }
        let right = try passcodeChecks.run { () throws(HealthCardError) -> Bool in try hash.matches(given) }
        if right { return nil }
        guard let left = try store.spendAttempt(linkID: link.id, now: now) else {
            note(link.id, "manifest", asked.recipient, "disabled", 404, at: now)
            return notFound("disabled", link.id)
        }
        note(link.id, "manifest", asked.recipient, "wrong-passcode", 401, at: now)
        return remaining(left, "wrong-passcode", link.id)
    }

    func remaining(_ count: Int, _ outcome: String, _ id: String) -> HTTPResponse {
        var response = HTTPResponse.json(401, .object(["remainingAttempts": .integer(Int64(count))]), outcome: outcome)
        response.linkTag = linkTag(id)
        return response
    }

    // MARK: files

    func jose(_ jwe: String, _ id: String) -> HTTPResponse {
        var response = HTTPResponse(
            status: 200, headers: [("Content-Type", "application/jose")], body: Array(jwe.utf8), outcome: "served")
        response.linkTag = linkTag(id)
        return response
    }

    func file(_ request: HTTPRequest) -> HTTPResponse {
        let now = clock.nowSeconds()
        let secret = request.parameters["secret"] ?? ""
        do {
            guard let (link, file, recipient) = try store.redeem(ticketHash: LinkID.hash(secret), now: now) else {
                return .error(
                    404, "no such file: the location expired, was used, or its link is no longer active",
                    outcome: "unknown")
            }
            try store.record(
                AuditEntry(
                    at: now, linkID: link.id, kind: "file", recipient: recipient, outcome: "served", status: 200,
                    detail: "file \(file.position + 1)"))
            return jose(file.jwe, link.id)
        } catch {
            return failure(error, nil)
        }
    }

    func direct(_ request: HTTPRequest) -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        let now = clock.nowSeconds()
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
                    400, "a U link is fetched with ?recipient= naming who asks", outcome: "no-recipient")
                response.linkTag = linkTag(id)
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
                response.linkTag = linkTag(id)
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

    func health() -> HTTPResponse {
        if store.isReachable() { return .json(200, .object(["status": "ok"]), outcome: "ok") }
        var response = HTTPResponse.json(503, .object(["status": "database unavailable"]), outcome: "unavailable")
        response.setHeader("Retry-After", "5")
        return response
    }

    /// Drops expired location URLs and old poll records (the server calls this every minute).
    public func maintain() {
        let now = clock.nowSeconds()
        do {
            try store.purge(now: now, pollsBefore: now - max(configuration.pollInterval, 3600))
        } catch {
            log.warning("maintenance", ["reason": .string("\(error)")])
        }
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

/// At most `slots` passcode derivations at once (a counting semaphore): each takes the hash function's memory.
final class PasscodeGate: @unchecked Sendable {
    // sem_t is used only through sem_wait/sem_post, which are thread-safe.
    private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init(slots: Int) { sem_init(semaphore, 0, UInt32(max(1, slots))) }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    func run<T>(_ body: () throws(HealthCardError) -> T) throws(HealthCardError) -> T {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
        defer { sem_post(semaphore) }
        return try body()
    }
}
