import HealthCardsCore

/// The FHIR side of the server: SMART Health Cards and Links IG, "`$health-cards-issue` Operation"
/// (`OperationDefinition-patient-i-health-cards-issue`), answering with cards a batch already signed
/// (`CardStore`), so the server never holds a signing key. Routes, under `/fhir`:
///
/// - `POST /fhir/Patient/<id>/$health-cards-issue` with a FHIR `Parameters` body: `credentialType` 1..* (logical
///   AND: a FHIR resource type the card's Bundle holds, e.g. `Immunization`, or a `vc.type` URI such as
///   `https://smarthealth.cards#covid19`), `credentialValueSet` 0..* (AND; the value sets `valueSets` knows, on
///   `Immunization.vaccineCode` / `Observation.code`; an unknown one matches nothing), `_since` 0..1 (a FHIR
///   dateTime at any precision: a card matches when one of its events' dates reaches it),
///   `includeIdentityClaim` (ignored: it would need re-signing). The answer is a `Parameters` with one
///   `verifiableCredential` (`valueString`, the compact JWS) per matching card; no match is
///   `{"resourceType":"Parameters"}` (the IG's rule). `<id>` is the report's id, normalized as the batch does.
/// - `GET /fhir/.well-known/smart-configuration`: capabilities with `health-cards` and the authorization
///   server's endpoints as configured.
/// - `GET /fhir/metadata`: a CapabilityStatement declaring the operation on `Patient`.
///
/// Errors are `OperationOutcome`s: 401 no usable token, 403 a token for another patient or without a scope for
/// the types asked, 400 a body that is not `Parameters` or lacks `credentialType`, 404 a person no imported run
/// issued for, 503 the database is not available. Each operation request is logged (the person as
/// `LogRedaction.fingerprint`, the types asked, the count served, the outcome) and, unless refused for want of
/// a good token (401), recorded in the access record (`hc_audit`, kind `health-cards-issue`); never a card.
public struct HealthCardsIssueService: Sendable {
    public enum Authorization: Sendable {
        /// Bearer tokens of the configured authorization server (`AccessTokens`).
        case tokens(AccessTokens)
        /// No authorization: tests only. A warning is logged for every request.
        case disabledForTesting
    }

    public struct Configuration: Sendable {
        public var authorization: Authorization
        /// The authorization server's endpoints for `smart-configuration` (absolute URLs), when known.
        public var authorizeEndpoint: String?
        public var tokenEndpoint: String?
        /// Most bytes of a request body.
        public var bodyLimit = 16 * 1024
        /// The site's revocation lists, checked on every answer (nil: only what the import checked).
        public var revocationLists: RevocationLists?

        public init(authorization: Authorization) { self.authorization = authorization }
    }

    public let configuration: Configuration
    public let store: CardStore
    public let clock: any WallClock
    public let log: ServerLog
    /// The `database` warnings, at most one a second (a database that is away fails every request).
    let databaseWarnings = OncePerSecond()

    /// The `vc.type` URIs (SMART Health Cards "Credential Types") and the resource types they stand for, for the
    /// scope check.
    static let typeResources: [String: String] = [
        "https://smarthealth.cards#immunization": "Immunization",
        "https://smarthealth.cards#laboratory": "Observation",
    ]

    /// The value sets `credentialValueSet` may name: their URL and the `system|code` pairs they hold, from the
    /// library's terminology data.
    public static let valueSets: [String: @Sendable (String, String) -> Bool] = [
        // terminology.smarthealth.cards: COVID-19 vaccines in CVX, SNOMED CT and ICD-11 (`Terminology.isCOVID19Code`).
        "https://terminology.smarthealth.cards/ValueSet/immunization-covid-all": { system, code in
            Terminology.isCOVID19Code(system: system, code: code)
        },
        // The same, CVX only.
        "https://terminology.smarthealth.cards/ValueSet/immunization-covid-cvx": { system, code in
            system == Terminology.cvx && CVX.isCOVID19Vaccine(code)
        },
    ]

    public init(configuration: Configuration, store: CardStore, clock: any WallClock, log: ServerLog) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.log = log
    }

    public var routes: [Route] {
        let id = PathSegment.parameter("id", { !$0.isEmpty && $0.utf8.count <= PatientIdentity.maxIDBytes })
        return [
            Route(
                name: "health-cards-issue", method: "POST",
                pattern: [.literal("fhir"), .literal("Patient"), id, .literal("$health-cards-issue")],
                bodyLimit: configuration.bodyLimit, allowedHeaders: ["Content-Type", "Authorization"]
            ) { issue($0) },
            Route(
                name: "smart-configuration", method: "GET",
                pattern: [.literal("fhir"), .literal(".well-known"), .literal("smart-configuration")], bodyLimit: 0
            ) { _ in smartConfiguration() },
            Route(name: "metadata", method: "GET", pattern: [.literal("fhir"), .literal("metadata")], bodyLimit: 0) {
                _ in capabilityStatement()
            },
        ]
    }

    // MARK: FHIR answers

    /// A FHIR JSON body (`application/fhir+json`).
    static func fhir(_ status: Int, _ value: JSONValue, outcome: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/fhir+json")], body: JSONWriter.minified(value),
            outcome: outcome)
    }

    /// An `OperationOutcome` with one error issue: its FHIR `code`, the library's rule code and what to say.
    static func operationOutcome(_ status: Int, code: String, rule: RuleCode, _ message: String, outcome: String)
        -> HTTPResponse
    {
        fhir(
            status,
            .object([
                "resourceType": "OperationOutcome",
                "issue": .array([
                    .object([
                        "severity": "error", "code": .string(code),
                        "details": .object([
                            "coding": .array([
                                .object([
                                    "system": .string(RuleCode.codeSystem),
                                    "code": .string(rule.rawValue),
                                ])
                            ]),
                            "text": .string(message),
                        ]),
                        "diagnostics": .string(message),
                    ])
                ]),
            ]), outcome: outcome)
    }

    public func smartConfiguration() -> HTTPResponse {
        var object: JSONObject = [
            "capabilities": .array([
                "health-cards", "launch-standalone", "context-standalone-patient", "client-confidential-asymmetric",
                "client-public", "permission-patient", "permission-v1", "permission-v2",
            ]),
            "grant_types_supported": .array(["authorization_code"]),
            "response_types_supported": .array(["code"]),
            "code_challenge_methods_supported": .array(["S256"]),
            "scopes_supported": .array([
                "launch/patient", "openid", "fhirUser", "patient/Immunization.read", "patient/Observation.read",
                "patient/Immunization.rs", "patient/Observation.rs", "patient/*.read",
            ]),
        ]
        if case .tokens(let tokens) = configuration.authorization { object["issuer"] = .string(tokens.issuer) }
        if let authorize = configuration.authorizeEndpoint { object["authorization_endpoint"] = .string(authorize) }
        if let token = configuration.tokenEndpoint { object["token_endpoint"] = .string(token) }
        var response = HTTPResponse.json(200, .object(object), outcome: "served")
        warnWhenOpen()
        response.outcome = "served"
        return response
    }

    public func capabilityStatement() -> HTTPResponse {
        let operation: JSONValue = .object([
            "name": "health-cards-issue",
            "definition": "http://hl7.org/fhir/uv/smart-health-cards-and-links/OperationDefinition/patient-i-health-cards-issue",
        ])
        var rest: JSONObject = [
            "mode": "server",
            "resource": .array([
                .object(["type": "Patient", "operation": .array([operation])])
            ]),
        ]
        if case .tokens = configuration.authorization {
            rest["security"] = .object([
                "service": .array([
                    .object([
                        "coding": .array([
                            .object([
                                "system": "http://terminology.hl7.org/CodeSystem/restful-security-service",
                                "code": "SMART-on-FHIR",
                            ])
                        ])
                    ])
                ])
            ])
        }
        warnWhenOpen()
        return Self.fhir(
            200,
            .object([
                "resourceType": "CapabilityStatement", "status": "active", "date": .string(Clock.todayUTC(clock.nowSeconds())),
                "kind": "instance", "fhirVersion": "4.0.1", "format": .array(["application/fhir+json"]),
                "software": .object(["name": "healthcards", "version": .string(Versions.toolkit)]),
                "implementation": .object(["description": "SMART Health Cards issued by a healthcards batch"]),
                "rest": .array([.object(rest)]),
            ]), outcome: "served")
    }

    func warnWhenOpen() {
        if case .disabledForTesting = configuration.authorization {
            log.warning(
                "authorization",
                ["reason": "authorization is disabled (a test mode): anyone may fetch any person's cards"])
        }
    }

    // MARK: the operation

    /// What a `Parameters` body asks for.
    struct Request: Equatable {
        var credentialTypes: [String] = []
        var valueSets: [String] = []
        var since: FHIRDateTime?
    }

    /// Reads a `Parameters` body. - Throws: a message for 400.
    static func parse(_ body: [UInt8]) throws(Refused) -> Request {
        func bad(_ message: String) -> Refused { Refused(status: 400, bearerError: nil, message: message) }
        guard let json = try? JSONParser.parse(body), json.objectValue != nil else {
            throw bad("the body is not JSON: it must be a FHIR Parameters resource")
        }
        guard json["resourceType"]?.stringValue == "Parameters" else {
            throw bad("the body's resourceType is \(json["resourceType"]?.stringValue ?? "absent"); Parameters is expected")
        }
        var request = Request()
        let list = json["parameter"]?.arrayValue ?? []
        for parameter in list {
            guard let name = parameter["name"]?.stringValue else { throw bad("a parameter has no name") }
            func text(_ kinds: [String]) throws(Refused) -> String {
                for kind in kinds { if let value = parameter[kind]?.stringValue { return value } }
                throw bad("parameter \(name) needs \(kinds[0])")
            }
            switch name {
            case "credentialType": request.credentialTypes.append(try text(["valueUri", "valueString", "valueCode"]))
            case "credentialValueSet": request.valueSets.append(try text(["valueUri", "valueCanonical", "valueString"]))
            case "_since":
                guard request.since == nil else { throw bad("_since is given more than once") }
                let value = try text(["valueDateTime", "valueInstant", "valueString"])
                guard let since = FHIRDateTime(value) else {
                    throw bad("_since \(Quote.text(value)) is not a FHIR dateTime (YYYY, YYYY-MM, YYYY-MM-DD or a time with a zone)")
                }
                request.since = since
            default: continue  // includeIdentityClaim and unknown parameters: ignored
            }
        }
        guard !request.credentialTypes.isEmpty else { throw bad("credentialType is required (1..*)") }
        return request
    }

    /// Whether a card matches every part of a request.
    static func matches(_ card: CardContent, _ request: Request) -> Bool {
        for type in request.credentialTypes {
            if type.contains(":") {
                guard card.types.contains(type) else { return false }
            } else {
                guard card.resourceTypes.contains(type) else { return false }
            }
        }
        for url in request.valueSets {
            guard let member = valueSets[url],
                card.codes.contains(where: { pair in
                    let parts = pair.split(separator: "|", maxSplits: 1).map(String.init)
                    return parts.count == 2 && member(parts[0], parts[1])
                })
            else { return false }
        }
        if let since = request.since {
            // A card matches unless all its events end before `_since` begins, compared as the date rules compare
            // two values (`FHIRDateTime.isBefore(sameZoneAs:)`): calendar days for two dates, instants for two
            // times, the widest reading when only one has a time.
            guard card.eventDates.contains(where: { FHIRDateTime($0).map { !$0.isBefore(sameZoneAs: since) } ?? false })
            else {
                return false
            }
        }
        return true
    }

    func issue(_ request: HTTPRequest) -> HTTPResponse {
        let now = clock.nowSeconds()
        let patient = PatientIdentity.normalize(request.parameters["id"] ?? "")
        let subject = LogRedaction.fingerprint(patient)
        var asked: [String] = []
        func finish(_ response: HTTPResponse, served: Int = 0) -> HTTPResponse {
            var fields: JSONObject = [
                "patient": .string(subject), "types": .array(asked.map { .string($0) }), "served": .integer(Int64(served)),
                "status": .integer(Int64(response.status)), "outcome": .string(response.outcome ?? ""),
            ]
            if case .disabledForTesting = configuration.authorization { fields["authorization"] = "disabled" }
            log.info("health-cards-issue", fields)
            warnWhenOpen()
            // A request without a good token (401) is only logged: scanners would fill the table.
            if response.status != 503 && response.status != 401 {
                let detail = "patient \(subject); types \(asked.joined(separator: " ")); served \(served)"
                do {
                    try store.record(
                        AuditEntry(
                            at: now, linkID: nil, kind: "health-cards-issue", recipient: nil,
                            outcome: response.outcome ?? "", status: response.status, detail: String(detail.prefix(1000))))
                } catch {
                    // The access must be on record before cards are given.
                    if served > 0 { return unavailable(error) }
                }
            }
            return response
        }
        // Authorization first: nothing of the request is looked at for a caller without a good token.
        var grant: AccessGrant?
        if case .tokens(let tokens) = configuration.authorization {
            switch tokens.check(authorization: request.header("Authorization"), now: now) {
            case .granted(let granted): grant = granted
            case .refused(let refused): return finish(refusal(refused))
            }
            guard let claim = grant?.patient, claim == patient else {
                return finish(
                    refusal(
                        AccessRefusal(
                            status: 403, bearerError: "insufficient_scope",
                            message: "the access token is not for this patient (its patient claim differs)")))
            }
        }
        let parsed: Request
        do {
            parsed = try Self.parse(request.body)
        } catch {
            return finish(
                Self.operationOutcome(400, code: "invalid", rule: .operationBody, error.message, outcome: "bad-request"))
        }
        asked = parsed.credentialTypes.map { String($0.prefix(100)) }
        if let grant {
            let needed = parsed.credentialTypes.compactMap { $0.contains(":") ? Self.typeResources[$0] : $0 }
            if let missing = needed.first(where: { !grant.allowsReading($0) }) {
                return finish(
                    refusal(
                        AccessRefusal(
                            status: 403, bearerError: "insufficient_scope",
                            message: "the access token's scope does not allow reading \(missing) (patient/\(missing).read or .rs)")))
            }
        }
        let stored: [StoredCard]?
        do {
            stored = try store.cards(patient: patient)
        } catch {
            return finish(unavailable(error))
        }
        guard let stored else {
            return finish(
                Self.operationOutcome(
                    404, code: "not-found", rule: .operationUnknownPatient, "no cards were issued for this patient",
                    outcome: "unknown-patient"))
        }
        var cards: [String] = []
        for card in stored {
            guard let content = try? CardContent(jws: card.jws), Self.matches(content, parsed) else { continue }
            if let lists = configuration.revocationLists, let kid = card.kid, let rid = card.rid {
                do {
                    if try lists.revokes(kid: kid, rid: rid, nbf: card.nbf) { continue }
                } catch {
                    // A list that cannot be read: nothing is served rather than a card it may revoke.
                    log.error("revocation", ["reason": .string("\(error)")])
                    var response = Self.operationOutcome(
                        503, code: "transient", rule: .operationUnavailable,
                        "the issuer's revocation list cannot be read; try again shortly", outcome: "revocation-list")
                    response.setHeader("Retry-After", "5")
                    return finish(response)
                }
            }
            // Every resource the card holds (but the Patient) must be one the token may read.
            if let grant, !content.resourceTypes.subtracting(["Patient"]).allSatisfy(grant.allowsReading) { continue }
            cards.append(card.jws)
        }
        var body: JSONObject = ["resourceType": "Parameters"]
        if !cards.isEmpty {
            body["parameter"] = .array(
                cards.map { .object(["name": "verifiableCredential", "valueString": .string($0)]) })
        }
        return finish(Self.fhir(200, .object(body), outcome: cards.isEmpty ? "none-matched" : "served"), served: cards.count)
    }

    func refusal(_ refusal: AccessRefusal) -> HTTPResponse {
        var response = Self.operationOutcome(
            refusal.status, code: refusal.status == 401 ? "login" : "forbidden",
            rule: refusal.status == 401 ? .operationUnauthorized : .operationForbidden, refusal.message,
            outcome: refusal.status == 401 ? "unauthorized" : "forbidden")
        var challenge = "Bearer"
        if let error = refusal.bearerError {
            challenge += " error=\"\(error)\""
        }
        response.setHeader("WWW-Authenticate", challenge)
        return response
    }

    func unavailable(_ error: Error) -> HTTPResponse {
        if let error = StoreError.unavailable(error) {
            var response = Self.operationOutcome(
                503, code: "transient", rule: .operationUnavailable, "the card database is not available; try again shortly",
                outcome: "unavailable")
            response.setHeader("Retry-After", "5")
            databaseWarnings.warning(log, "database", ["reason": .string(error.message)], now: clock.nowSeconds())
            return response
        }
        log.error("failure", ["reason": .string("\(error)")])
        return Self.operationOutcome(
            500, code: "exception", rule: .operationUnavailable, "the server failed", outcome: "failed")
    }
}
