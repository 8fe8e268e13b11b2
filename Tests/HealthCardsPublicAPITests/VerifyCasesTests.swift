import HealthCardsCore
import HealthCardsVerify
import Testing

/// The cases of Tests/Fixtures/cases (README there) through the bytes API, each with the right answer: a
/// check never says OK about what it did not check.
@Suite struct VerifyCasesTests {
    static let now: Int64 = 1_700_000_100

    /// A key set given for the card's issuer with no usable key: the forged card is an error, never valid.
    @Test func keySetOnlyEncKeyLeavesTheForgedCardInvalid() throws {
        let dir = Fixtures.cases + "/keyset-only-enc-key"
        var trust = TrustStore()
        let keySet = try trust.add(
            issuer: Fixtures.issuer, jwks: try Fixtures.bytes(dir + "/jwks-only-enc-key.json"), now: Self.now)
        #expect(Set(keySet.findings.map(\.code)) == [.jwkNotSHCKey, .jwksNoKeys])
        let card = try Fixtures.bytes(dir + "/forged-claims-spec-kid.smart-health-card")
        let report = HealthCardVerifier(trustStore: trust).verify(cardFile: card, now: Self.now)
        #expect(!report.isValid && !report.isVerified)
        #expect(report.credentials[0].signature == .notChecked)
        let finding = try #require(report.findings.first { $0.code == .keySetInvalid })
        #expect(finding.severity == .error && finding.message.contains("holds no usable signing key"), "\(finding)")
    }

    /// Other key sets with no usable key (RSA only, coordinates of the wrong size, EC keys of another curve):
    /// the same error on the card, whatever made the key unusable.
    @Test(arguments: ["rsa", "short-x", "p384", "empty"])
    func everyKeySetWithoutAUsableKeyIsAnErrorOnTheCard(kind: String) throws {
        let spec = try #require(try JSONParser.parse(try Fixtures.specJWKS())["keys"]?[0]?.objectValue)
        var key = spec
        switch kind {
        case "rsa":
            key = ["kty": "RSA", "kid": .string(Fixtures.kid), "use": "sig", "n": "sXchDaQebSXKcvL", "e": "AQAB"]
        case "short-x": key["x"] = .string(String(spec["x"]!.stringValue!.dropLast(2)))
        case "p384": key["crv"] = "P-384"
        default: break
        }
        let jwks = JSONWriter.minified(.object(["keys": kind == "empty" ? .array([]) : .array([.object(key)])]))
        var trust = TrustStore()
        try trust.add(issuer: Fixtures.issuer, jwks: jwks, now: Self.now)
        #expect(trust.keySets[0].findings.contains { $0.code == .jwksNoKeys })
        let card = try Fixtures.bytes(Fixtures.spec + "/example-00-e-file.smart-health-card")
        let report = HealthCardVerifier(trustStore: trust).verify(cardFile: card, now: Self.now)
        #expect(!report.isValid, "\(kind): \(Fixtures.codes(report))")
        #expect(report.findings.contains { $0.code == .keySetInvalid && $0.isError }, "\(kind)")
        #expect(!report.findings.contains { $0.code == .sigNotChecked }, "\(kind)")
    }

    /// `crit` naming an extension the verifier does not implement makes the JWS invalid (RFC 7515 4.1.11).
    @Test func critNamingAnUnknownExtensionIsAnError() throws {
        let card = try Fixtures.bytes(Fixtures.cases + "/jws-crit-exp/jws-crit-exp.smart-health-card")
        let report = try VerifyBytesTests.specVerifier().verify(cardFile: card, now: Self.now)
        #expect(!report.isValid)
        // The signature is the spec key's: crit alone makes it invalid.
        #expect(report.credentials[0].signature == .verified)
        #expect(report.findings.filter(\.isError).map(\.code) == [.headerCrit], "\(Fixtures.codes(report))")
        #expect(!report.findings.contains { $0.code == .headerExtraMember })
    }

    /// Every form of `crit` is an error: this verifier implements no extension, and an empty or non-array
    /// `crit` is malformed.
    @Test(arguments: [#"["b64"]"#, #"["exp","iat"]"#, #"[]"#, #""exp""#, #"[1]"#, #"null"#])
    func everyCritIsAnError(crit: String) throws {
        let jws = try Fixtures.text(Fixtures.spec + "/example-00-d-jws.txt")
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        let header = #"{"zip":"DEF","alg":"ES256","kid":"\#(Fixtures.kid)","crit":\#(crit)}"#
        let forged = Base64URL.encode(Array(header.utf8)) + "." + parts[1] + "." + parts[2]
        let report = try VerifyBytesTests.specVerifier().verify(jws: forged, now: Self.now)
        let finding = try #require(report.findings.first { $0.code == .headerCrit }, "\(crit)")
        #expect(finding.isError && finding.location.path == "header.crit")
    }

    /// A CRL entry `rid.<milliseconds>`: a finding on the key set that says what was probably meant, and each
    /// card it revokes says which entry decided and what the time meant would say.
    @Test func crlTimestampInMillisecondsIsNamedOnTheKeySetAndTheCards() throws {
        let dir = Fixtures.cases + "/crl-rid-timestamp-ms"
        var trust = TrustStore()
        let keySet = try trust.add(
            issuer: Fixtures.issuer, jwks: try Fixtures.bytes(dir + "/site/.well-known/jwks.json"),
            crls: [Fixtures.kid: try Fixtures.bytes(dir + "/site/.well-known/crl/\(Fixtures.kid).json")],
            now: 1_700_000_000)
        let timestamp = try #require(keySet.findings.first { $0.code == .crlRIDTimestamp })
        #expect(timestamp.isError && timestamp.location.path == "rids[0]")
        #expect(
            timestamp.message.contains("Probably meant: 1687450765 (2023-06-22 16:19:25 UTC)"), "\(timestamp.message)")
        let verifier = HealthCardVerifier(trustStore: trust)
        for (file, when) in [("example-03-e-file", "before"), ("corrected-card-issued-after-cutoff", "after")] {
            let report = verifier.verify(
                cardFile: try Fixtures.bytes(dir + "/\(file).smart-health-card"), now: 1_700_000_000)
            let revoked = try #require(report.findings.first { $0.code == .revoked }, "\(file)")
            #expect(revoked.message.contains("\"vwAjHdarZuc.1687450765000\""), "\(revoked.message)")
            #expect(revoked.message.contains("this card was issued \(when) that"), "\(revoked.message)")
            #expect(report.findings.contains { $0.code == .keySetInvalid }, "\(file)")
        }
    }

    /// A timestamp in seconds but after now: the same finding, without the milliseconds reading; one before
    /// now is no finding.
    @Test func crlTimestampAfterNowIsAFindingAndOneBeforeIsNot() throws {
        let jwks = try Fixtures.specJWKS()
        func findings(_ rid: String, now: Int64) throws -> [Finding] {
            let crl = #"{"kid":"\#(Fixtures.kid)","method":"rid","ctr":1,"rids":["\#(rid)"]}"#
            var trust = TrustStore()
            return try trust.add(issuer: Fixtures.issuer, jwks: jwks, crls: [Fixtures.kid: Array(crl.utf8)], now: now)
                .findings
                .filter { $0.code == .crlRIDTimestamp }
        }
        let future = try findings("abc.1800000000", now: 1_700_000_000)
        #expect(
            future.count == 1 && future[0].message.contains("is after now")
                && !future[0].message.contains("milliseconds"))
        #expect(try findings("abc.1600000000", now: 1_700_000_000).isEmpty)
        #expect(try findings("abc", now: 1_700_000_000).isEmpty)
        // The same entry judged later is sound: the finding depends on the time given.
        #expect(try findings("abc.1800000000", now: 1_800_000_001).isEmpty)
    }
}

extension VerifyBytesTests {
    static func specVerifier() throws -> HealthCardVerifier { HealthCardVerifier(trustStore: try Fixtures.specTrust()) }
}
