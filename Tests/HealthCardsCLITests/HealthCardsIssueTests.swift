import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer
@testable import HealthCardsVerify
@testable import HealthCardsIssuing
@testable import HealthCardsSite
import HealthCardsTestSupport

/// `$health-cards-issue` (issue 24) on a real `healthcards serve` over a real socket, on SQLite and PostgreSQL:
/// Inferno's three checks, the cards it answers checked by `verify` and the independent checker, the filters,
/// and the access-token rules, with tokens minted here by the `openssl` program under a throw-away key.
@Suite(.serialized) struct HealthCardsIssueTests {
    static let issuer = "https://issuer.example.org"
    static let authIssuer = "https://auth.example.org"
    static let audience = "https://fhir.example.org/fhir"
    static let openssl = "/usr/bin/openssl"

    // MARK: a minimal HTTP/1.1 client (one request per connection)

    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var json: JSONValue? { try? JSONParser.parse(body) }
    }

    static func http(
        _ method: String, port: UInt16, _ path: String, body: String? = nil, headers: [String: String] = [:]
    ) throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HealthCardError(.io, "socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw HealthCardError(.io, "connect to \(port)") }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        let bytes = Array((body ?? "").utf8)
        if body != nil { request += "Content-Length: \(bytes.count)\r\n" }
        request += "\r\n"
        let out = Array(request.utf8) + bytes
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw HealthCardError(.io, "send") }
            sent += n
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, received.count - 3)).first(where: { Array(received[$0..<($0 + 4)]) == separator })
        else { throw HealthCardError(.io, "no HTTP answer") }
        let head = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var content = Array(received[(end + 4)...])
        if fields["transfer-encoding"]?.lowercased() == "chunked" { content = dechunk(content) }
        return Answer(status: status, headers: fields, body: content)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard let lineEnd = (i..<(bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[i..<lineEnd], as: UTF8.self), radix: 16), size > 0
            else { break }
            out += bytes[(lineEnd + 2)..<min(bytes.count, lineEnd + 2 + size)]
            i = lineEnd + 2 + size + 2
        }
        return out
    }

    // MARK: tokens

    /// A throw-away authorization server: an EC P-256 and an RSA 2048 key made by `openssl`, its JWK Set.
    struct AuthServer {
        var ecKey: String
        var rsaKey: String
        var jwks: String
        var ecPublicPEM: [UInt8]

        init(in dir: URL) throws {
            ecKey = dir.appendingPathComponent("auth-ec.pem").path
            rsaKey = dir.appendingPathComponent("auth-rsa.pem").path
            for (path, algorithm) in [(ecKey, ["EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), (rsaKey, ["RSA", "-pkeyopt", "rsa_keygen_bits:2048"])] {
                let run = try TestSupport.run(openssl, ["genpkey", "-algorithm"] + algorithm + ["-out", path])
                #expect(run.status == 0, "\(run.stderr)")
            }
            let ecPublic = try TestSupport.run(openssl, ["pkey", "-in", ecKey, "-pubout"])
            ecPublicPEM = Array(ecPublic.stdout.utf8)
            let point = try P256PublicKey(pem: ecPublicPEM, source: "auth key")
            let modulus = try TestSupport.run(openssl, ["rsa", "-in", rsaKey, "-noout", "-modulus"])
            let hex = modulus.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
            let keys: JSONValue = .object([
                "keys": .array([
                    .object([
                        "kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "alg": "ES256",
                        "x": .string(Base64URL.encode(point.x)), "y": .string(Base64URL.encode(point.y)),
                    ]),
                    .object([
                        "kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256",
                        "n": .string(Base64URL.encode(TestSupport.hex(hex))), "e": "AQAB",
                    ]),
                ])
            ])
            jwks = try TestSupport.write(String(decoding: JSONWriter.pretty(keys), as: UTF8.self), to: "auth-jwks.json", in: dir)
        }

        /// A JWT with `claims` (defaults: this server's iss and aud, exp in an hour, patient, scope) signed `alg`.
        func token(
            patient: String, scope: String = "launch/patient patient/Immunization.read patient/Observation.read",
            alg: String = "ES256", overrides: JSONObject = [:], in dir: URL
        ) throws -> String {
            let now = Int64(Date().timeIntervalSince1970)
            var claims: JSONObject = [
                "iss": .string(HealthCardsIssueTests.authIssuer), "aud": .string(HealthCardsIssueTests.audience),
                "exp": .integer(now + 3600), "iat": .integer(now), "patient": .string(patient), "scope": .string(scope),
            ]
            for (key, value) in overrides { claims[key] = value }
            var header: JSONObject = ["alg": .string(alg), "typ": "JWT"]
            if alg == "ES256" { header["kid"] = "ec-1" }
            if alg == "RS256" { header["kid"] = "rsa-1" }
            let input =
                Base64URL.encode(JSONWriter.minified(.object(header))) + "."
                + Base64URL.encode(JSONWriter.minified(.object(claims)))
            let signature: [UInt8]
            switch alg {
            case "none":
                signature = []
            case "HS256":
                // The classic confusion: the authorization server's public key as an HMAC secret.
                signature = try ecPublicPEM.withUnsafeBytes { try Digest.hmacSHA256(key: $0, message: Array(input.utf8)) }
            default:
                let file = dir.appendingPathComponent("input-\(UInt32.random(in: 0...UInt32.max)).txt")
                try Data(input.utf8).write(to: file)
                let sigFile = file.path + ".sig"
                let run = try TestSupport.run(
                    openssl, ["dgst", "-sha256", "-sign", alg == "ES256" ? ecKey : rsaKey, "-out", sigFile, file.path])
                #expect(run.status == 0, "\(run.stderr)")
                let der = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sigFile)))
                signature = alg == "ES256" ? try ES256.rawSignature(fromDER: der) : der
            }
            return input + "." + Base64URL.encode(signature)
        }
    }

    // MARK: batch outputs

    struct Batch {
        var dir: URL
        var site: URL
        var vax: URL
        var lab: URL
        var key: String
        var secret: String
    }

    /// The shipped sample CSVs issued with the demo key and a rid secret; P-1002 then revoked on the site.
    static func batch() throws -> Batch {
        let dir = try TestSupport.tempDir("cards-issue")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        let site = dir.appendingPathComponent("site")
        for args in [
            ["keygen", "--rid-secret", secret],
            ["site", "--out", site.path, key, "--issuer", issuer, "--crl"],
        ] {
            let run = try TestSupport.cli(args)
            #expect(run.status == 0, "\(args[0]): \(run.stderr)")
        }
        let root = VerifyFixtures.repoRoot.appendingPathComponent("templates")
        var outs: [URL] = []
        for template in ["covid19-vaccination", "lab-result"] {
            let out = dir.appendingPathComponent(template)
            let run = try TestSupport.cli([
                "issue", "--issuer", issuer, "--key", key, "--rid-secret", secret, "--template",
                root.appendingPathComponent("\(template).json").path, "--out", out.path,
                root.appendingPathComponent("\(template).sample.csv").path,
            ])
            #expect(run.status == 0, "\(run.stderr)")
            outs.append(out)
        }
        let revoke = try TestSupport.cli([
            "revoke", "--site", site.path, "--key", key, "--rid-secret", secret, "--id", "P-1002", "--report",
            outs[0].appendingPathComponent("report.ndjson").path,
        ])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        return Batch(dir: dir, site: site, vax: outs[0], lab: outs[1], key: key, secret: secret)
    }

    static func parameters(_ parts: [(String, String, String)]) -> String {
        let list = parts.map { name, kind, value in JSONValue.object(["name": .string(name), kind: .string(value)]) }
        return String(decoding: JSONWriter.minified(.object(["resourceType": "Parameters", "parameter": .array(list)])), as: UTF8.self)
    }

    static func credentials(_ answer: Answer) -> [String] {
        (answer.json?["parameter"]?.arrayValue ?? []).filter { $0["name"]?.stringValue == "verifiableCredential" }
            .compactMap { $0["valueString"]?.stringValue }
    }

    // MARK: tests

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: openssl), "the openssl program is not installed"),
        arguments: DatabaseKind.allCases)
    func issuedCardsAreServedToTheirPatientOnly(kind: DatabaseKind) throws {
        if kind == .postgresql { try #require(PostgresCluster.available, PostgresCluster.missing) }
        let batch = try Self.batch()
        let dir = batch.dir
        let db = try ServerTestSupport.database(kind, in: dir)
        let imported = try TestSupport.cli(["cards", "import", "--db", db, "--site", batch.site.path, batch.vax.path, batch.lab.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        // P-1002's card is revoked on the site: left out.
        #expect(imported.stdout.contains("1 revoked"), "\(imported.stdout)")
        let auth = try AuthServer(in: dir)
        let server = try ServerProcess(
            db: db,
            ["--auth-issuer", Self.authIssuer, "--auth-jwks", auth.jwks, "--audience", Self.audience,
             "--auth-authorize", Self.authIssuer + "/authorize", "--auth-token", Self.authIssuer + "/token",
             "--site", batch.site.path],
            in: dir)
        defer { server.stop() }
        let port = server.port
        let operation = "/fhir/Patient/P-1001/$health-cards-issue"
        let fhirJSON = ["Content-Type": "application/fhir+json"]
        func ask(_ parts: [(String, String, String)], patient: String = "P-1001", token: String? = nil) throws -> Answer {
            var headers = fhirJSON
            headers["Authorization"] = "Bearer " + (try token ?? auth.token(patient: patient, in: dir))
            return try Self.http(
                "POST", port: port, "/fhir/Patient/\(patient)/$health-cards-issue", body: Self.parameters(parts),
                headers: headers)
        }
        let covid = [("credentialType", "valueUri", "https://smarthealth.cards#covid19")]

        // Inferno's three checks.
        let configuration = try Self.http("GET", port: port, "/fhir/.well-known/smart-configuration")
        #expect(configuration.status == 200)
        #expect(configuration.json?["capabilities"]?.arrayValue?.contains(.string("health-cards")) == true)
        #expect(configuration.json?["token_endpoint"]?.stringValue == Self.authIssuer + "/token")
        let metadata = try Self.http("GET", port: port, "/fhir/metadata")
        #expect(metadata.status == 200 && metadata.json?["resourceType"] == "CapabilityStatement")
        let resources = metadata.json?["rest"]?[0]?["resource"]?.arrayValue ?? []
        #expect(
            resources.contains { resource in
                resource["type"] == "Patient"
                    && (resource["operation"]?.arrayValue ?? []).contains { $0["name"] == "health-cards-issue" }
            }, "\(metadata.json.map { JSONWriter.minifiedString($0) } ?? "")")
        let answer = try ask(covid)
        #expect((200..<300).contains(answer.status) && answer.headers["content-type"] == "application/fhir+json")
        let served = Self.credentials(answer)
        #expect(served.count == 1, "\(String(decoding: answer.body, as: UTF8.self))")

        // What is served is the batch's card, whole: our verify and the independent checker pass it.
        let original = try JSONParser.parse(try FileIO.read(batch.vax.appendingPathComponent("cards/P-1001.smart-health-card").path))
        #expect(served == (original["verifiableCredential"]?.arrayValue ?? []).compactMap(\.stringValue))
        let file = dir.appendingPathComponent("served.smart-health-card")
        try Data(JSONWriter.minified(.object(["verifiableCredential": .array(served.map { JSONValue.string($0) })]))).write(to: file)
        let verify = try TestSupport.cli(["verify", "--jwks", batch.site.path, file.path])
        #expect(verify.status == 0 && verify.stdout.contains(" 0 error(s)"), "\(verify.stdout)\(verify.stderr)")
        if TestSupport.checkerAvailable {
            let check = try TestSupport.check(["--jwks", batch.site.appendingPathComponent(".well-known/jwks.json").path, file.path])
            #expect(
                check.status == 0 && check.stdout.contains("1 credentials checked, 0 errors, 0 warnings"),
                "\(check.stdout)\(check.stderr)")
        }
        let content = try CardContent(jws: served[0])
        #expect(content.resourceTypes.contains("Immunization") && content.types.contains("https://smarthealth.cards#covid19"))

        // AND of credentialType, _since, value sets, unknown people, bad bodies and refused tokens are asked in
        // process on an injected clock (ServerInProcessIssueTests); here what needs the real program: the site's
        // revocation lists, RS256 tokens from openssl, the log file and the access record.
        // Revoked on the site: a known person, nothing served.
        let revoked = try ask(covid, patient: "P-1002")
        #expect(revoked.status == 200 && Self.credentials(revoked).isEmpty)
        // An RS256 token of the same server works too.
        #expect(Self.credentials(try ask(covid, token: try auth.token(patient: "P-1001", alg: "RS256", in: dir))).count == 1)
        // Tokens that must be refused, nothing served, the right status.
        let refused: [(String, String?, Int)] = [
            ("missing", nil, 401),
            ("other patient", try auth.token(patient: "P-1003", in: dir), 403),
        ]
        for (name, token, status) in refused {
            var headers = fhirJSON
            if let token { headers["Authorization"] = "Bearer " + token }
            let got = try Self.http(
                "POST", port: port, operation, body: Self.parameters([("credentialType", "valueUri", "Immunization")]),
                headers: headers)
            #expect(got.status == status, "\(name): \(got.status) \(String(decoding: got.body, as: UTF8.self))")
            #expect(got.json?["resourceType"] == "OperationOutcome" && !String(decoding: got.body, as: UTF8.self).contains("eyJ"), "\(name)")
            #expect(got.headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(name)")
        }

        // Revoked while the server runs: not served from then on, without a new import.
        let revoke = try TestSupport.cli([
            "revoke", "--site", batch.site.path, "--key", batch.key, "--rid-secret", batch.secret, "--id", "P-1001",
            "--report", batch.vax.appendingPathComponent("report.ndjson").path,
        ])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let afterRevoke = try ask(covid)
        #expect(afterRevoke.status == 200 && Self.credentials(afterRevoke).isEmpty)
        #expect(Self.credentials(try ask([("credentialType", "valueUri", "Observation")], patient: "L-2001")).count == 1)

        // The log: every operation recorded with the person's fingerprint, never a card or the id.
        #expect(server.stop() == 0)
        let log = server.logText
        #expect(!log.contains("eyJ") && !log.contains("P-1001"), "\(log)")
        let lines = try server.logLines().filter { $0["event"] == "health-cards-issue" }
        #expect(lines.count == 7)
        #expect(lines.contains { $0["patient"]?.stringValue == LogRedaction.fingerprint("P-1001") && int($0["served"]) == 1 })
        // The access record: the requests with a good token (not the 401s), the person as a fingerprint.
        let database = try Database(url: try DatabaseURL(db), role: .operatorCommand, create: false, now: Int64(Date().timeIntervalSince1970))
        defer { database.close() }
        let audit = try DatabaseLinkStore(database: database).audit(linkID: nil).filter { $0.kind == "health-cards-issue" }
        #expect(audit.count == lines.filter { int($0["status"]) != 401 }.count && audit.count == 6)
        #expect(!audit.contains { $0.status == 401 } && audit.contains { $0.status == 403 })
        #expect(audit.contains { $0.status == 200 && ($0.detail ?? "").contains(LogRedaction.fingerprint("P-1001")) })
        #expect(!audit.contains { ($0.detail ?? "").contains("P-1001") })
    }

    /// A newer run of a folder replaces its cards; an older one changes nothing; ids are normalized as the batch
    /// normalizes them.
    @Test func aNewerRunReplacesAndAnOlderOneIsLeftOut() throws {
        let dir = try TestSupport.tempDir("cards-runs")
        let database = try Database(
            url: .sqlite(path: dir.appendingPathComponent("cards.db").path), role: .operatorCommand, create: true, now: 1)
        defer { database.close() }
        let store = DatabaseCardStore(database: database)
        let card = try FileIO.read(ServerTestSupport.card)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out.appendingPathComponent("cards"), withIntermediateDirectories: true)
        try Data(card).write(to: out.appendingPathComponent("cards/a.smart-health-card"))
        func report(_ id: String, mtime: Int) throws {
            let line = #"{"source":"x.csv:2","id":"\#(id)","status":"issued","files":["cards/a.smart-health-card"]}"#
            let path = out.appendingPathComponent("report.ndjson").path
            try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: path))
            var times = [timeval(tv_sec: mtime, tv_usec: 0), timeval(tv_sec: mtime, tv_usec: 0)]
            #expect(utimes(path, &times) == 0)
        }
        try report(" P-1\u{200B} ", mtime: 2000)
        let first = try store.load(try CardImport.read(folder: out.path), now: 5) { _, _, _ in false }
        #expect(first == CardImportOutcome(loaded: true, people: 1, cards: 1))
        #expect(try store.cards(patient: "P-1")?.count == 1)
        try report("P-2", mtime: 3000)
        let newer = try store.load(try CardImport.read(folder: out.path), now: 6) { _, _, _ in false }
        #expect(newer == CardImportOutcome(loaded: true, people: 1, cards: 1, replaced: 1))
        #expect(try store.cards(patient: "P-1") == nil)
        #expect(try store.cards(patient: "P-2")?.count == 1)
        try report("P-3", mtime: 1000)
        let older = try store.load(try CardImport.read(folder: out.path), now: 7) { _, _, _ in false }
        #expect(!older.loaded)
        #expect(try store.cards(patient: "P-3") == nil)
        #expect(try store.cards(patient: "P-2")?.count == 1)
    }

    /// A card altered after signing (its family name changed) is refused by `cards import --site`: named with its
    /// file and SIG_INVALID on stderr, exit 1, not loaded; the folder's other cards are. Cards signed with a key
    /// the site does not publish are refused as KID_UNKNOWN. (Before, import loaded every card unchecked.)
    @Test
    func importRefusesCardsWhoseSignatureIsNotTheSites() throws {
        let batch = try Self.batch()
        let card = batch.vax.appendingPathComponent("cards/P-1003.smart-health-card")
        let file = try #require(try JSONParser.parse(Array(try Data(contentsOf: card))).objectValue)
        let jws = try #require(file["verifiableCredential"]?.arrayValue?.first?.stringValue)
        let parts = jws.split(separator: ".").map(String.init)
        let payload = String(decoding: try RawInflate.inflate(try #require(Base64URL.decode(parts[1]))), as: UTF8.self)
        #expect(payload.contains("\"family\":\""))
        let altered = payload.replacingOccurrences(of: "\"family\":\"", with: "\"family\":\"X")
        let forged = parts[0] + "." + Base64URL.encode(try RawDeflater().deflate(Array(altered.utf8))) + "." + parts[2]
        try Data(JSONWriter.minified(.object(["verifiableCredential": .array([.string(forged)])]))).write(to: card)

        let db = try ServerTestSupport.database(.sqlite, in: batch.dir)
        let imported = try TestSupport.cli(["cards", "import", "--db", db, "--site", batch.site.path, batch.vax.path])
        #expect(imported.status == 1, "\(imported.stderr)")
        #expect(imported.stderr.contains("cards/P-1003.smart-health-card: card 1 refused, not loaded: SIG_INVALID"), "\(imported.stderr)")
        // P-1001 and P-1004 loaded; P-1002's is revoked, P-1003's refused.
        #expect(imported.stdout.contains("2 card(s) of 4 person(s) loaded"), "\(imported.stdout)")
        let database = try Database(url: try DatabaseURL(db), role: .operatorCommand, create: false, now: 1)
        defer { database.close() }
        let store = DatabaseCardStore(database: database)
        #expect(try store.cards(patient: "P-1001")?.count == 1)
        #expect((try store.cards(patient: "P-1003") ?? []).isEmpty)

        // Another site of the same issuer, with another key: no card's kid is in its key set.
        let otherKey = batch.dir.appendingPathComponent("other.pem").path
        let other = batch.dir.appendingPathComponent("other-site").path
        for args in [["keygen", "--out", otherKey], ["site", "--out", other, otherKey, "--issuer", Self.issuer]] {
            let run = try TestSupport.cli(args)
            #expect(run.status == 0, "\(args[0]): \(run.stderr)")
        }
        let now = Clock.nowSeconds()
        var trust = TrustStore()
        try trust.add(issuer: Self.issuer, jwks: try VerifyFixtures.bytes(URL(fileURLWithPath: other + "/.well-known/jwks.json")), now: now)
        let run = try CardImport.read(folder: batch.vax.path, verifier: HealthCardVerifier(trustStore: trust), now: now)
        #expect(run.cards.isEmpty)
        #expect(run.refused.map(\.code) == [RuleCode](repeating: .kidUnknown, count: 4), "\(run.refused)")
    }

    /// Imports of the same folders at once (instances starting together with --cards) take turns: all succeed and
    /// the database holds each card once.
    @Test(.enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func importsAtOnceTakeTurns() throws {
        let batch = try Self.batch()
        let db = try ServerTestSupport.database(.postgresql, in: batch.dir)
        let processes = try (0..<3).map { i -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: TestSupport.healthcards)
            process.arguments = ["cards", "import", "--db", db, "--accept-unverified-cards", batch.vax.path, batch.lab.path]
            process.standardOutput = FileHandle.nullDevice
            let log = batch.dir.appendingPathComponent("import-\(i).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
            return process
        }
        for (i, process) in processes.enumerated() {
            process.waitUntilExit()
            let log = (try? String(contentsOf: batch.dir.appendingPathComponent("import-\(i).log"), encoding: .utf8)) ?? ""
            #expect(process.terminationStatus == 0, "\(log)")
        }
        let database = try Database(url: try DatabaseURL(db), role: .operatorCommand, create: false, now: 1)
        defer { database.close() }
        let store = DatabaseCardStore(database: database)
        // Four people vaccinated (one card each; P-1002's revocation is not applied without --site), two tested.
        let counts = try ["P-1001", "P-1002", "P-1003", "P-1004", "L-2001", "L-2002"].map { try store.cards(patient: $0)?.count }
        #expect(counts == [1, 1, 1, 1, 1, 1], "\(counts)")
    }

    /// Without authorization the FHIR routes are not there; the test mode warns at start and on every request;
    /// `--cards` without either is refused.
    @Test func theTestModeWarnsAndNothingIsOpenByDefault() throws {
        let dir = try TestSupport.tempDir("cards-open")
        let db = "sqlite:" + dir.appendingPathComponent("c.db").path
        let closed = try ServerProcess(db: db, base: "http://127.0.0.1/shl", in: dir, name: "closed")
        let none = try Self.http("GET", port: closed.port, "/fhir/metadata")
        #expect(none.status == 404)
        closed.stop()
        let refused = try TestSupport.cli([
            "serve", "--db", db, "--listen", "127.0.0.1:0", "--base-url", "http://127.0.0.1/shl", "--cards", dir.path,
        ])
        #expect(refused.status == 2 && refused.stderr.contains("--auth-issuer"), "\(refused.stderr)")
        // Inferno's SHC kit sends no token: the test mode answers its three checks (--cards at start this time).
        let batch = try Self.batch()
        let open = try ServerProcess(
            db: db, base: "http://127.0.0.1/shl", ["--no-authorization-for-testing", "--accept-unverified-cards", "--cards", batch.vax.path], in: dir,
            name: "open")
        #expect(try Self.http("GET", port: open.port, "/fhir/metadata").status == 200)
        #expect(try Self.http("GET", port: open.port, "/fhir/.well-known/smart-configuration").status == 200)
        let answer = try Self.http(
            "POST", port: open.port, "/fhir/Patient/P-1003/$health-cards-issue",
            body: Self.parameters([("credentialType", "valueUri", "https://smarthealth.cards#covid19")]),
            headers: ["Content-Type": "application/fhir+json"])
        #expect(answer.status == 200 && Self.credentials(answer).count == 1)
        open.stop()
        let warnings = try open.logLines().filter { $0["event"] == "authorization" && $0["level"] == "warning" }
        #expect(warnings.count == 4, "\(open.logText)")
    }

    /// RSA keys outside RFC 7518's sizes are refused; a signature of another key, or cut short, does not verify;
    /// a key set without a usable key is refused.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: openssl), "the openssl program is not installed"))
    func rsaKeysAndKeySets() throws {
        let dir = try TestSupport.tempDir("cards-rsa")
        func modulus(bits: Int) throws -> [UInt8] {
            let path = dir.appendingPathComponent("rsa-\(bits).pem").path
            _ = try TestSupport.run(Self.openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)", "-out", path])
            let text = try TestSupport.run(Self.openssl, ["rsa", "-in", path, "-noout", "-modulus"]).stdout
            return TestSupport.hex(text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: ""))
        }
        #expect(throws: HealthCardError.self) { try RSAPublicKey(n: try modulus(bits: 1024), e: [1, 0, 1]) }
        let n = try modulus(bits: 2048)
        #expect(throws: HealthCardError.self) { try RSAPublicKey(n: n, e: [2]) }
        #expect(throws: HealthCardError.self) { try RSAPublicKey(n: n, e: [1]) }  // e = 1: every signature would verify
        #expect(throws: HealthCardError.self) { try RSAPublicKey(n: n, e: [0, 1]) }
        let key = try RSAPublicKey(n: n, e: [1, 0, 1])
        #expect(key.bits == 2048)
        let auth = try AuthServer(in: dir)
        let token = try auth.token(patient: "P-1", alg: "RS256", in: dir)
        let parts = token.split(separator: ".").map(String.init)
        let signature = try #require(Base64URL.decode(parts[2]))
        let input = Array((parts[0] + "." + parts[1]).utf8)
        #expect(!key.verifyRS256(signature: signature, message: input))  // another key's signature
        let set = try FileIO.read(auth.jwks)
        let tokens = try AccessTokens(issuer: Self.authIssuer, audience: Self.audience, keySet: set, source: "set")
        guard case .granted(let grant) = tokens.check(authorization: "Bearer " + token, now: Int64(Date().timeIntervalSince1970)) else {
            Issue.record("a good RS256 token was refused")
            return
        }
        #expect(grant.patient == "P-1")
        guard case .refused(let refusal) = tokens.check(authorization: "Bearer " + parts[0] + "." + parts[1] + "." + Base64URL.encode(signature.dropLast()), now: Int64(Date().timeIntervalSince1970)) else {
            Issue.record("a token with a cut signature was granted")
            return
        }
        #expect(refusal.status == 401 && refusal.bearerError == "invalid_token")
        #expect(throws: HealthCardError.self) {
            try AccessTokens(issuer: "i", audience: "a", keySet: Array(#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#.utf8), source: "oct")
        }
    }

    /// FHIR dateTime spans (R4 "Primitive Types", read by the IG's date rules in Core: a date without a time
    /// in any zone from UTC+14 to UTC-12) and SMART scopes. `_since` is read by the same `FHIRDateTime` as the
    /// date rules: "2021-01-15" begins at 1610618400 (2021-01-14T10:00:00Z), not at 00:00Z.
    @Test func dateTimesAndScopes() throws {
        #expect(FHIRDateTime("2021")?.earliest == 1_609_459_200 - 50_400 && FHIRDateTime("2021")?.latest == 1_640_995_200 - 1 + 43_200)
        #expect(FHIRDateTime("2024-02")?.earliest == 1_706_745_600 - 50_400 && FHIRDateTime("2024-02")?.latest == 1_709_251_200 - 1 + 43_200)
        #expect(FHIRDateTime("2024-02-29")?.earliest == 1_709_164_800 - 50_400 && FHIRDateTime("2024-02-29")?.latest == 1_709_251_200 - 1 + 43_200)
        #expect(FHIRDateTime("2021-02-17T09:30:00-05:00")?.earliest == 1_613_572_200)
        let body = #"{"resourceType":"Parameters","parameter":[{"name":"credentialType","valueUri":"Immunization"},"#
            + #"{"name":"_since","valueDateTime":"2021-01-15"}]}"#
        let since = try #require(try HealthCardsIssueService.parse(Array(body.utf8)).since)
        #expect(since.earliest == 1_610_618_400)
        #expect(since == FHIRDateTime("2021-01-15"))
        for bad in ["2021-13", "2023-02-29", "2021-01-01T10:00:00", "21", "2021-1-01", "2021-01-01T25:00:00Z", ""] {
            #expect(FHIRDateTime(bad) == nil, "\(bad)")
        }
        let grant = AccessGrant(patient: "p", scopes: ["patient/Immunization.rs", "patient/Observation.write", "user/*.read"])
        #expect(grant.allowsReading("Immunization") && !grant.allowsReading("Observation") && !grant.allowsReading("Patient"))
        #expect(AccessGrant(patient: nil, scopes: ["patient/*.read"]).allowsReading("Observation"))
        #expect(!AccessGrant(patient: nil, scopes: ["patient/Immunization.rs?code=x"]).allowsReading("Immunization"))
        #expect(!AccessGrant(patient: nil, scopes: ["patient/Immunization.sr"]).allowsReading("Immunization"))
    }
}
