import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// `verify` and `x5c`: OpenSSL verifies the chain (`X509_STORE`, `X509_verify_cert`); the leaf's key is the
/// JWK; its subjectAltName URI is the card's `iss` (case `x5c-san-other-issuer/`); a leaf outside its
/// validity at `--now` is an error on the card it verifies (a warning on the key set), at the card's `nbf` only a
/// warning. A key set given alone reports what it can without a card.
@Suite struct X5CVerifyTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("x5c-san-other-issuer")
    static let caseSet = caseDir.appendingPathComponent("jwks-x5c-san-other-issuer.json").path
    static let caseCard = caseDir.appendingPathComponent("card-iss-issuer.example.org.smart-health-card").path

    func findings(_ run: TestSupport.Run) throws -> [(file: String, code: String, severity: String)] {
        let json = try JSONParser.parse(run.stdout)
        return TestSupport.allReports(json).flatMap { credential in
            (credential["findings"]?.arrayValue ?? []).map {
                (
                    credential["file"]?.stringValue ?? "", $0["code"]?.stringValue ?? "",
                    $0["severity"]?.stringValue ?? ""
                )
            }
        }
    }

    @Test func caseLeafNamesAnotherIssuer() throws {
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", Self.caseSet, "--now", "1800000000", Self.caseCard,
        ])
        #expect(run.status == 1, "\(run.stdout)")
        let card = try #require(try JSONParser.parse(run.stdout)["credentials"]?.arrayValue?.last)
        #expect(card["valid"] == .bool(false) && card["signature"]?.stringValue == "verified")
        let found = card["findings"]?.arrayValue?.map {
            "\($0["severity"]?.stringValue ?? "") \($0["code"]?.stringValue ?? "")"
        }
        // The leaf names https://other.example.org; and it was issued minutes after the card's nbf.
        #expect(found == ["error JWK_X5C_SAN", "warning JWK_X5C_VALIDITY"], "\(found ?? [])")
        let san = try #require(card["findings"]?[0]?["message"]?.stringValue)
        #expect(san.contains("subjectAltName URI https://other.example.org, not https://issuer.example.org"), "\(san)")
        let validity = try #require(card["findings"]?[1]?["message"]?.stringValue)
        #expect(validity.contains("does not include the card's nbf (2026-11-30 14:09:13 UTC)"), "\(validity)")

        // The key set alone, unbound: its chain verifies and it names an issuer; which one is checked per card.
        let alone = try TestSupport.cli(["verify", "--now", "1800000000", Self.caseSet])
        #expect(alone.status == 0, "\(alone.stdout)")
        #expect(
            alone.stdout.contains("chain of 2 certificate(s) verified by OpenSSL up to its self-signed root /CN=Test CA"),
            "\(alone.stdout)")
        #expect(alone.stdout.contains("whether the leaf names it is checked against each card's iss"))
        // Bound to the issuer it should name: the key set itself is wrong, and the card it vouches for invalid.
        let bound = try TestSupport.cli([
            "verify", "--json", "--jwks", "https://issuer.example.org=\(Self.caseSet)", "--now", "1800000000",
            Self.caseCard,
        ])
        let codes = try findings(bound).map { "\(FileIO.basename($0.file)) \($0.code)" }
        #expect(codes.contains("jwks-x5c-san-other-issuer.json JWK_X5C_SAN"), "\(codes)")
        #expect(codes.contains("card-iss-issuer.example.org.smart-health-card KEY_SET_INVALID"), "\(codes)")
        #expect(!codes.contains("card-iss-issuer.example.org.smart-health-card JWK_X5C_SAN"), "\(codes)")
        // At a time before the leaf's validity, the key set warns about now (a card it verifies would be an error).
        let early = try TestSupport.cli(["verify", "--json", "--now", "1790000000", Self.caseSet])
        #expect(try findings(early).map { "\($0.severity) \($0.code)" } == ["warning JWK_X5C_VALIDITY"])
        #expect(early.status == 0)
    }

    /// The spec's example 01 is signed by the key whose example leaf (2021-06-01 to 2022-06-01) expired a year
    /// before the card's nbf (2023-06-22): at a --now after its nbf the leaf is not valid now, an error on the card
    /// (a warning on the key set); at a --now within the leaf's validity the card is not yet valid
    /// (NBF_NOT_YET_VALID). No --now makes it valid. The chain itself (P-256 leaf, P-384 CA, P-521 root) verifies.
    @Test func specExample01IsValidAtNoNow() throws {
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", TestSupport.spec("issuer/.well-known/jwks.json").path, "--now", "1700000000",
            TestSupport.spec("example-01-d-jws.txt").path,
        ])
        #expect(run.status == 1, "\(run.stdout)")
        let all = try findings(run)
        #expect(all.filter { $0.code == "JWK_X5C_VALIDITY" }.map(\.severity) == ["warning", "error"], "\(all)")
        let early = try TestSupport.cli([
            "verify", "--json", "--jwks", TestSupport.spec("issuer/.well-known/jwks.json").path, "--now", "1640000000",
            TestSupport.spec("example-01-d-jws.txt").path,
        ])
        #expect(early.status == 1, "\(early.stdout)")
        let atLeaf = try findings(early)
        #expect(atLeaf.contains { $0.code == "NBF_NOT_YET_VALID" && $0.severity == "error" }, "\(atLeaf)")
        #expect(!atLeaf.contains { $0.code == "JWK_X5C_VALIDITY" && $0.severity == "error" }, "\(atLeaf)")
        // Within the leaf's validity the key set is clean.
        let json = try VerifyFixtures.bytes(TestSupport.spec("issuer/.well-known/jwks.json"))
        #expect(
            KeySetCheck.check(
                bytes: json, file: "jwks.json", issuer: "https://spec.smarthealth.cards/examples/issuer",
                now: 1_640_000_000
            ).findings.isEmpty)
        let keys = KeySetCheck.check(bytes: json, file: "jwks.json", now: 1_640_000_000).keys
        #expect(
            keys.compactMap { $0.x5c?.validity.first }.first == .init(notBefore: 1_622_562_609, notAfter: 1_654_098_609)
        )
    }

    /// X509Chain itself: OpenSSL's verdicts on the spec chain, reordered and with a signature altered.
    @Test func chainVerdicts() throws {
        let json = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("issuer/.well-known/jwks.json")))
        let list = json["keys"]?[1]?["x5c"]?.arrayValue ?? []
        let x5c = list.compactMap { $0.stringValue }
        try #require(x5c.count == 3)
        let der = x5c.compactMap(Base64URL.decodeStandard)
        let chain = try X509Chain(der: der, source: "spec")
        #expect(
            chain.subjects == [
                "/CN=SMART Health Card Example Issuer", "/CN=SMART Health Card Example CA",
                "/CN=SMART Health Card Example Root CA",
            ])
        #expect(chain.leafHasSubjectAltName && chain.leafSubjectAltNameDNSNames.isEmpty)
        func kind(_ certificates: [[UInt8]]) -> X509Chain.Failure.Kind? {
            do { _ = try X509Chain(checkingDER: certificates, source: "t") } catch let failure {
                return failure.kind
            }
            return nil
        }
        #expect(kind([der[1], der[0], der[2]]) == .order)
        #expect(kind([der[0], der[2]]) == .order)
        var altered = der[0]
        altered[altered.count - 1] ^= 0x01  // the last byte of the leaf's ECDSA signature
        #expect(kind([altered, der[1], der[2]]) == .chain)
        #expect(kind([Array(der[0].prefix(40))]) == .undecodable(index: 0))
        // A chain that stops short of its root (the CA as anchor) is refused: nothing checked who signed the CA.
        #expect(kind([der[0], der[1]]) == .chain)
    }

    /// Chains made with openssl for a forged key: each kind of fault gets its code, on the key set given
    /// alone and on the card it vouches for.
    @Test func generatedChainFaults() throws {
        let forge = try VerifyForge()
        let dir = forge.dir
        let keyPath = try forge.write(try forge.key.pkcs8PEM(), "key.pem")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let now = Clock.nowSeconds() + 3600
        let card = try forge.card(try forge.jws(claims: VerifyForge.claims(nbf: String(now - 1800))))
        let issuer = VerifyForge.issuer
        let leafAKID = "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
        let cases:
            [(name: String, san: String?, caExt: [String], leafExtra: String, cardCodes: [String], setCodes: [String])] =
                [
                    ("good", "URI:\(issuer)", [], leafAKID, [], []),
                    ("dns", "DNS:issuer.example.org", [], leafAKID, ["KEY_SET_INVALID"], ["JWK_X5C_SAN"]),
                    ("nosan", nil, [], leafAKID, ["KEY_SET_INVALID"], ["JWK_X5C_SAN"]),
                    ("other", "URI:https://other.example.org", [], leafAKID, ["JWK_X5C_SAN"], []),
                    (
                        "notca", "URI:\(issuer)", ["basicConstraints=critical,CA:FALSE"], leafAKID, ["KEY_SET_INVALID"],
                        ["JWK_X5C_CHAIN"]
                    ),
                    ("swapped-ca", "URI:\(issuer)", [], "", ["KEY_SET_INVALID"], ["JWK_X5C_CHAIN"]),
                ]
        for item in cases {
            let pem = try Self.makeChain(
                key: keyPath, in: dir, name: item.name, san: item.san, caExtensions: item.caExt,
                leafExtra: item.leafExtra, swapCA: item.name == "swapped-ca")
            var entry = JWK(key: forge.key)
            entry.x5c = try Self.x5c(pem)
            let keySet = try forge.writeKeySet([entry.json], site: item.name)
            let setCodes = KeySetCheck.check(bytes: try SiteTestSupport.bytes(keySet), file: keySet, now: now).findings
                .map(\.code.rawValue)
            #expect(setCodes == item.setCodes, "\(item.name): \(setCodes)")
            let report = try #require(try forge.verify([card], keySets: [keySet], now: now).last)
            #expect(report.signature == .verified, "\(item.name)")
            #expect(report.findings.map(\.code.rawValue) == item.cardCodes, "\(item.name): \(report.findings)")
        }
        // A year and more later the good leaf has expired: a warning on the key set, an error on the card.
        let later = now + 400 * 86_400
        let good = dir.appendingPathComponent("good/.well-known/jwks.json").path
        let reports = try forge.verify([card], keySets: [good], now: later)
        #expect(
            reports.flatMap(\.findings).map(\.code) == [.jwkX5CValidity, .jwkX5CValidity],
            "\(reports.flatMap(\.findings))")
        #expect(reports.first?.isValid == true && reports.last?.isValid == false)
        #expect(reports.last?.findings.last?.message.contains("does not include now (") == true)
    }

    /// The x5c strings of a PEM chain, read as `healthcards jwks --x5c` does, without checking the chain
    /// (the faulty ones must reach verify).
    static func x5c(_ pem: String) throws -> [String] {
        let text = try String(contentsOfFile: pem, encoding: .utf8)
        return text.components(separatedBy: "-----END CERTIFICATE-----").compactMap { block in
            guard let start = block.range(of: "-----BEGIN CERTIFICATE-----") else { return nil }
            return block[start.upperBound...].components(separatedBy: .whitespacesAndNewlines).joined()
        }
    }

    /// leaf (for `key`, signed by a P-256 CA) + CA, as PEM; `swapCA` replaces the CA by another with the
    /// same name but another key, so the leaf's signature does not verify.
    static func makeChain(
        key: String, in dir: URL, name: String, san: String?, caExtensions: [String], leafExtra: String, swapCA: Bool
    )
        throws -> String
    {
        func ca(_ file: String) throws {
            let ext =
                caExtensions.isEmpty
                ? ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"] : caExtensions
            try SiteTestSupport.openssl(
                [
                    "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    "\(file).key",
                    "-out", "\(file).crt", "-days", "3650", "-subj", "/CN=Forged Test CA",
                ] + ext.flatMap { ["-addext", $0] }, in: dir)
        }
        try ca("\(name)-ca")
        try SiteTestSupport.openssl(
            ["req", "-new", "-key", key, "-subj", "/CN=Forged Leaf", "-out", "\(name).csr"], in: dir)
        try TestSupport.write(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                + (san.map { "subjectAltName=\($0)\n" } ?? "") + leafExtra,
            to: "\(name).ext", in: dir)
        try SiteTestSupport.openssl(
            [
                "x509", "-req", "-in", "\(name).csr", "-CA", "\(name)-ca.crt", "-CAkey", "\(name)-ca.key",
                "-CAcreateserial", "-days", "365",
                "-sha256", "-extfile", "\(name).ext", "-out", "\(name)-leaf.crt",
            ], in: dir)
        if swapCA { try ca("\(name)-ca") }  // same name, new key
        let leaf = try String(contentsOf: dir.appendingPathComponent("\(name)-leaf.crt"), encoding: .utf8)
        let caText = try String(contentsOf: dir.appendingPathComponent("\(name)-ca.crt"), encoding: .utf8)
        return try TestSupport.write(leaf + caText, to: "\(name).pem", in: dir)
    }
}
