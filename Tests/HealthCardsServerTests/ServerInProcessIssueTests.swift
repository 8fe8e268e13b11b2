import Foundation
import HealthCardsCore
import HealthCardsServer
import Testing

/// `$health-cards-issue` (SMART Health Cards and Links IG) over cards imported into the store, asked of the routes
/// `healthcards serve` serves (`ServerApplication`) in the test's process, with access tokens signed here by a key
/// made for the test and judged at the injected clock's time.
@Suite struct ServerInProcessIssueTests {
    typealias Served = ServedApplication
    static let issuer = "https://auth.example.org"
    static let audience = "https://fhir.example.org/fhir"
    static let healthCard = "https://smarthealth.cards#health-card"

    /// An authorization server made for the test: a P-256 key, its JWK Set, and tokens it signs.
    struct Authority {
        let key: P256PrivateKey
        let tokens: AccessTokens

        init() throws {
            key = try P256PrivateKey.generate()
            let jwks: JSONValue = .object([
                "keys": .array([
                    .object([
                        "kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "alg": "ES256",
                        "x": .string(Base64URL.encode(key.publicKey.x)), "y": .string(Base64URL.encode(key.publicKey.y)),
                    ])
                ])
            ])
            tokens = try AccessTokens(
                issuer: ServerInProcessIssueTests.issuer, audience: ServerInProcessIssueTests.audience,
                keySet: JSONWriter.minified(jwks), source: "test key set")
        }

        /// A token for `patient` issued at the start of the test's clock, living an hour.
        func token(
            patient: String, scope: String = "launch/patient patient/Immunization.read patient/Observation.read",
            overrides: JSONObject = [:]
        ) throws -> String {
            var claims: JSONObject = [
                "iss": .string(ServerInProcessIssueTests.issuer), "aud": .string(ServerInProcessIssueTests.audience),
                "iat": .integer(Served.start), "exp": .integer(Served.start + 3600), "patient": .string(patient),
                "scope": .string(scope),
            ]
            for (name, value) in overrides { claims[name] = value }
            let header: JSONValue = .object(["alg": "ES256", "typ": "JWT", "kid": "ec-1"])
            let input = Base64URL.encode(JSONWriter.minified(header)) + "." + Base64URL.encode(JSONWriter.minified(.object(claims)))
            var signer = try ES256Signer(key: key)
            return input + "." + Base64URL.encode(try signer.sign(Array(input.utf8)))
        }
    }

    /// A server whose store holds the spec's example 00 card (three immunizations, the last on 2022-09-05; its only type is #health-card) for
    /// P-1001, with tokens from `authority` (or none checked).
    static func served(_ authority: Authority?) throws -> (Served, String) {
        var issue = HealthCardsIssueService.Configuration(
            authorization: authority.map { .tokens($0.tokens) } ?? .disabledForTesting)
        issue.authorizeEndpoint = issuer + "/authorize"
        issue.tokenEndpoint = issuer + "/token"
        let s = try Served(issue: issue)
        let jws = String(decoding: try Served.example("example-00-d-jws.txt"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let content = try CardContent(jws: jws)
        let card = StoredCard(
            patient: PatientIdentity.normalize("P-1001"), source: s.dir.path, position: 0, runAt: Served.start,
            kid: nil, rid: content.rid, nbf: content.nbf, types: content.types, jws: jws)
        let run = CardRun(
            source: s.dir.path, runAt: Served.start, people: [card.patient], cards: [card], revoked: [])
        let loaded = try DatabaseCardStore(database: s.database).load(run, now: Served.start) { _, _, _ in false }
        #expect(loaded.loaded && loaded.cards == 1)
        return (s, jws)
    }

    static func parameters(_ parts: [(String, String, String)]) -> String {
        let list = parts.map { name, kind, value in JSONValue.object(["name": .string(name), kind: .string(value)]) }
        return JSONWriter.minifiedString(.object(["resourceType": "Parameters", "parameter": .array(list)]))
    }

    static func ask(
        _ s: Served, _ parts: [(String, String, String)], patient: String = "P-1001", token: String?
    ) -> HTTPResponse {
        var headers = ["Content-Type": "application/fhir+json"]
        if let token { headers["Authorization"] = "Bearer " + token }
        return s.respond(
            "POST", "/fhir/Patient/\(patient)/$health-cards-issue", headers: headers, body: parameters(parts))
    }

    static func credentials(_ answer: HTTPResponse) -> [String] {
        ((try? Served.json(answer))?["parameter"]?.arrayValue ?? [])
            .filter { $0["name"]?.stringValue == "verifiableCredential" }.compactMap { $0["valueString"]?.stringValue }
    }

    /// Discovery: smart-configuration names the endpoints and the health-cards capability; the CapabilityStatement
    /// lists the operation on Patient.
    @Test func discoveryNamesTheOperation() throws {
        let (s, _) = try Self.served(try Authority())
        let configuration = s.get("/fhir/.well-known/smart-configuration")
        #expect(configuration.status == 200)
        let json = try Served.json(configuration)
        #expect(json["capabilities"]?.arrayValue?.contains("health-cards") == true)
        #expect(json["token_endpoint"]?.stringValue == Self.issuer + "/token")
        #expect(json["authorization_endpoint"]?.stringValue == Self.issuer + "/authorize")
        let metadata = s.get("/fhir/metadata")
        let statement = try Served.json(metadata)
        #expect(metadata.status == 200 && statement["resourceType"] == "CapabilityStatement")
        #expect(statement["date"]?.stringValue == Clock.todayUTC(Served.start), "judged at the injected clock")
        let resources = statement["rest"]?[0]?["resource"]?.arrayValue ?? []
        #expect(
            resources.contains { resource in
                resource["type"] == "Patient"
                    && (resource["operation"]?.arrayValue ?? []).contains { $0["name"] == "health-cards-issue" }
            })
        let preflight = s.respond("OPTIONS", "/fhir/Patient/P-1001/$health-cards-issue")
        #expect(preflight.status == 204 && preflight.header("Access-Control-Allow-Headers") == "Content-Type, Authorization")
    }

    /// The card as imported, whole, to its patient's token: credentialType is an AND, `_since` compares at the
    /// precision given, an unknown value set matches nothing, and no match is exactly `{"resourceType":"Parameters"}`.
    @Test func importedCardsAreServedAsStoredAndFiltered() throws {
        let authority = try Authority()
        let (s, jws) = try Self.served(authority)
        let token = try authority.token(patient: "P-1001")
        let answer = Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], token: token)
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/fhir+json")
        #expect(Self.credentials(answer) == [jws])
        #expect(answer.header("Cache-Control") == "no-store")
        #expect(Self.credentials(Self.ask(s, [("credentialType", "valueUri", "Immunization"), ("credentialType", "valueUri", Self.healthCard)], token: token)) == [jws])
        let none = Self.ask(s, [("credentialType", "valueUri", "Immunization"), ("credentialType", "valueUri", "Observation")], token: token)
        #expect(none.status == 200 && Served.text(none) == #"{"resourceType":"Parameters"}"#)
        for (since, count) in [
            ("2022", 1), ("2023", 0), ("2022-09", 1), ("2022-10", 0), ("2022-09-05", 1), ("2022-09-06", 0),
            ("2022-09-05T23:59:59Z", 1), ("2022-09-06T00:00:00+02:00", 1),
        ] {
            let got = Self.credentials(Self.ask(s, [("credentialType", "valueUri", Self.healthCard), ("_since", "valueDateTime", since)], token: token))
            #expect(got.count == count, "_since \(since)")
        }
        // A value set the terminology data knows (the card's CVX codes), and one it does not: nothing matches.
        #expect(Self.credentials(Self.ask(s, [("credentialType", "valueUri", Self.healthCard), ("credentialValueSet", "valueUri", "https://terminology.smarthealth.cards/ValueSet/immunization-covid-cvx")], token: token)) == [jws])
        #expect(Self.credentials(Self.ask(s, [("credentialType", "valueUri", Self.healthCard), ("credentialValueSet", "valueUri", "https://example.org/ValueSet/unknown")], token: token)).isEmpty)
        // A SMART v2 scope.
        let v2 = try authority.token(patient: "P-1001", scope: "patient/Immunization.rs")
        #expect(Self.credentials(Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], token: v2)) == [jws])
        // The access record: the person as a fingerprint, never the id.
        let audit = try s.store.audit(linkID: nil).filter { $0.kind == "health-cards-issue" }
        #expect(audit.count == 14 && audit.allSatisfy { !($0.detail ?? "").contains("P-1001") })
        #expect(audit.first?.at == Served.start)
    }

    /// 404 OperationOutcome for a person no run issued for; 400 for a body that is not Parameters with a
    /// credentialType (rule OPERATION_BODY_INVALID); without a token, 401 before the body is looked at.
    @Test func unknownPatientsAndBadBodies() throws {
        let authority = try Authority()
        let (s, _) = try Self.served(authority)
        let unknown = Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], patient: "P-9999", token: try authority.token(patient: "P-9999"))
        #expect(try unknown.status == 404 && (Served.json(unknown))["resourceType"] == "OperationOutcome")
        let token = try authority.token(patient: "P-1001")
        let path = "/fhir/Patient/P-1001/$health-cards-issue"
        let badSince = Self.parameters([("credentialType", "valueUri", "Immunization"), ("_since", "valueDateTime", "2021-13")])
        for body in [#"{"resourceType":"Patient"}"#, #"{"resourceType":"Parameters"}"#, "not json", badSince] {
            let bad = s.respond("POST", path, headers: ["Authorization": "Bearer " + token], body: body)
            #expect(try bad.status == 400 && (Served.json(bad))["resourceType"] == "OperationOutcome", "\(body)")
            #expect(Served.text(bad).contains("OPERATION_BODY_INVALID"))
            let anonymous = s.respond("POST", path, body: body)
            #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        }
        #expect(s.respond("GET", path).status == 405)
    }

    /// Tokens refused with the right status and a Bearer challenge, nothing served: another patient's or a narrower
    /// scope (403); a wrong audience or issuer, alg none, a signature that does not verify (401); and a good token
    /// once the injected clock passes its exp and the allowed skew (401), not a second before.
    @Test func tokensAreJudgedAtTheInjectedClock() throws {
        let authority = try Authority()
        let (s, _) = try Self.served(authority)
        let good = try authority.token(patient: "P-1001")
        let unsigned =
            Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "."
            + (good.split(separator: ".").dropFirst().first.map(String.init) ?? "") + "."
        // The classic confusion: HS256 keyed with the authorization server's public key (its PEM).
        let hmacInput =
            Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT","kid":"ec-1"}"#.utf8)) + "."
            + (good.split(separator: ".").dropFirst().first.map(String.init) ?? "")
        let hmac = hmacInput + "." + Base64URL.encode(
            try Digest.hmacSHA256(key: try authority.key.publicKey.pem(), message: Array(hmacInput.utf8)))
        // Another patient's claims under this token's signature.
        let otherParts = try authority.token(patient: "P-1003").split(separator: ".")
        let goodParts = good.split(separator: ".")
        let tampered = [goodParts[0], otherParts[1], goodParts[2]].joined(separator: ".")
        let refused: [(String, String, Int)] = [
            ("HS256 with the public key", hmac, 401),
            ("tampered", tampered, 401),
            ("missing exp", try authority.token(patient: "P-1001", overrides: ["exp": .null]), 401),
            ("other patient", try authority.token(patient: "P-1003"), 403),
            ("Observation scope only", try authority.token(patient: "P-1001", scope: "patient/Observation.read"), 403),
            ("wrong aud", try authority.token(patient: "P-1001", overrides: ["aud": "https://other.example.org/fhir"]), 401),
            ("wrong iss", try authority.token(patient: "P-1001", overrides: ["iss": "https://evil.example.org"]), 401),
            ("not yet valid", try authority.token(patient: "P-1001", overrides: ["nbf": .integer(Served.start + 3600)]), 401),
            ("alg none", unsigned, 401),
            ("another key", try Authority().token(patient: "P-1001"), 401),
        ]
        for (name, token, status) in refused {
            let answer = Self.ask(s, [("credentialType", "valueUri", "Immunization")], token: token)
            #expect(answer.status == status, "\(name): \(Served.text(answer))")
            #expect(answer.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(name)")
            #expect(Self.credentials(answer).isEmpty && !Served.text(answer).contains("eyJ"), "\(name)")
        }
        s.clock.advance(3600 + 59)
        #expect(Self.credentials(Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], token: good)).count == 1, "within the skew")
        s.clock.advance(1)
        let expired = Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], token: good)
        #expect(expired.status == 401 && Served.text(expired).contains("expired"))
    }

    /// Without authorization (the test mode) anyone is served, and every request warns in the log.
    @Test func theTestModeServesAnyoneAndWarns() throws {
        let (s, jws) = try Self.served(nil)
        let answer = Self.ask(s, [("credentialType", "valueUri", Self.healthCard)], token: nil)
        #expect(answer.status == 200 && Self.credentials(answer) == [jws])
        #expect(s.log.entries.contains { $0["event"] == "authorization" && $0["level"] == "warning" })
    }
}
