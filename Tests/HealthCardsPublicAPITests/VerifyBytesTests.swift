import HealthCardsCore
import HealthCardsVerify
import Testing

/// The Verify layer as a verifier app calls it: bytes in memory, a trust store, immutable reports. Known
/// answers from the spec's own examples (their signatures verify with the spec's key set; example 03 is on
/// the spec's CRL) and from the cases under Tests/Fixtures/cases.
@Suite struct VerifyBytesTests {
    let verifier: HealthCardVerifier

    init() throws {
        verifier = HealthCardVerifier(trustStore: try Fixtures.specTrust())
    }

    @Test func theSpecKeySetHasNoErrorAndIsBoundToItsIssuer() throws {
        let trust = try Fixtures.specTrust()
        #expect(trust.issuers == [Fixtures.issuer])
        let keySet = try #require(trust.keySets.first)
        #expect(keySet.source == .keySet && keySet.isValid)
        #expect(keySet.keySetBinding?.issuer == Fixtures.issuer && keySet.keySetBinding?.binding == .given)
        // Its example leaf certificate expired in 2022: a warning at the key set (its other key is not affected; a
        // card the key signs gets the error), located at the published URL; nothing else is wrong with it.
        #expect(keySet.findings.map(\.code) == [.jwkX5CValidity])
        #expect(keySet.findings.first?.severity == .warning)
        #expect(keySet.findings.first?.location.file == Fixtures.issuer + "/.well-known/jwks.json")
        #expect(keySet.findings.first?.location.path == "keys[1].x5c[0]")
    }

    /// Example 01 is signed by the key whose example leaf expired a year before its nbf: signed, but not verified.
    @Test func specExample01IsSignedButItsKeysCertificateIsNotValidNow() throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-01-e-file.smart-health-card")
        let report = verifier.verify(cardFile: bytes, name: "example-01", now: Fixtures.now)
        #expect(!report.isVerified && report.credentials.first?.signature == .verified)
        #expect(Fixtures.codes(report).contains("JWK_X5C_VALIDITY"), "\(Fixtures.codes(report))")
    }

    @Test(arguments: [("00", Fixtures.kid)])
    func specExampleCardFilesVerify(example: String, kid: String) throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-\(example)-e-file.smart-health-card")
        let report = verifier.verify(cardFile: bytes, name: "example-\(example)", now: Fixtures.now)
        #expect(report.isVerified, "\(Fixtures.codes(report))")
        #expect(report.credentials.count == 1 && report.credentials[0].signature == .verified)
        #expect(report.credentials[0].index == 0 && report.credentials[0].files == ["example-\(example)"])
        #expect(report.credentials[0].payload?["iss"]?.stringValue == Fixtures.issuer)
        #expect(report.credentials[0].kid == kid)
        // The spec's examples carry a fractional nbf: a warning, never an error.
        #expect(report.errorCount == 0 && Fixtures.codes(report).contains("NBF_FRACTIONAL"))
    }

    /// Example 02 is signed by the spec's key, but its generic Bundle references resources it does not hold
    /// (`Organization/…`, `Practitioner/f202`): 55 `REFERENCE_UNRESOLVED` errors, listed up to the limit of
    /// one code per credential, then one "… and N more".
    @Test func specExample02VerifiesItsSignatureAndListsItsErrorsWithinTheLimit() throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-02-e-file.smart-health-card")
        let report = verifier.verify(cardFile: bytes, now: Fixtures.now)
        #expect(report.credentials[0].signature == .verified && !report.isValid)
        let unresolved = report.findings.filter { $0.code == .referenceUnresolved }
        #expect(unresolved.count == VerifyLimits().findingsPerCode + 1)
        #expect(unresolved.last?.message.hasPrefix("… and 35 more REFERENCE_UNRESOLVED findings") == true)
        #expect(report.credentials[0].omittedFindings == [.referenceUnresolved: 35])
        // Listed in full with a larger limit.
        var limits = VerifyLimits()
        limits.findingsPerCode = 100
        let full = HealthCardVerifier(trustStore: verifier.trustStore, limits: limits).verify(
            cardFile: bytes, now: Fixtures.now)
        #expect(full.findings.filter { $0.code == .referenceUnresolved }.count == 55)
        #expect(full.credentials[0].omittedFindings.isEmpty)
    }

    @Test func specExample03IsRevokedByTheSpecCRL() throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-03-e-file.smart-health-card")
        let report = verifier.verify(cardFile: bytes, now: Fixtures.now)
        #expect(!report.isValid && !report.isVerified)
        let revoked = try #require(report.findings.first { $0.code == .revoked })
        #expect(revoked.severity == .error && revoked.location.path == "vc.rid")
        #expect(revoked.message.contains("vwAjHdarZuc.1687450765"), "\(revoked.message)")
        // The signature itself verifies: the card is genuine and revoked.
        #expect(report.credentials[0].signature == .verified)
        // Without the CRL the same key set verifies it (until its exp, 2024-06-21).
        let noCRL = HealthCardVerifier(trustStore: try Fixtures.specTrust(crl: false))
        #expect(noCRL.verify(cardFile: bytes, now: Fixtures.now).isVerified)
        #expect(Fixtures.codes(noCRL.verify(cardFile: bytes, now: 1_720_000_000)).contains("EXP_EXPIRED"))
    }

    @Test func aBareCompactJWSVerifies() throws {
        let jws = try Fixtures.text(Fixtures.spec + "/example-00-d-jws.txt")
        let report = verifier.verify(jws: jws, now: Fixtures.now)
        #expect(report.isVerified, "\(report.findings)")
        #expect(report.credentials[0].source == .jws && report.credentials[0].files.isEmpty)
        #expect(report.credentials[0].jws == jws)
        // Nothing names the bytes, so no finding is located at a file.
        #expect(report.findings.allSatisfy { $0.location.file == nil })
    }

    @Test func oneChangedCharacterFailsTheSignature() throws {
        let jws = Array(try Fixtures.text(Fixtures.spec + "/example-00-d-jws.txt").utf8)
        // The signature's third character from the end, and a payload character.
        for index in [jws.count - 3, jws.firstIndex(of: UInt8(ascii: "."))! + 40] {
            var changed = jws
            changed[index] = changed[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let report = verifier.verify(jws: String(decoding: changed, as: UTF8.self), now: Fixtures.now)
            #expect(!report.isVerified && report.credentials[0].signature == .failed)
            #expect(Fixtures.codes(report).contains("SIG_INVALID"), "\(index): \(Fixtures.codes(report))")
        }
    }

    @Test func qrTextChunksInAnyOrderMakeOneVerifiedCard() throws {
        let chunks = try (0..<3).map {
            try Fixtures.text(Fixtures.spec + "/example-02-f-qr-code-numeric-value-\($0).txt")
        }
        let single = try Fixtures.text(Fixtures.spec + "/example-00-f-qr-code-numeric-value-0.txt")
        let report = verifier.verify(qrTexts: [chunks[2], single, chunks[0], chunks[1]], now: Fixtures.now)
        #expect(report.credentials.count == 2)
        let set = try #require(report.credentials.first { $0.files.count == 3 })
        #expect(set.files == ["qr 3", "qr 4", "qr 1"])  // chunk 1, 2, 3
        let whole = try Fixtures.text(Fixtures.spec + "/example-02-d-jws.txt")
        #expect(set.signature == .verified && set.source == .qrText && set.jws == whole)
        #expect(set.findings.map(\.code).contains(.qrChunked))  // deprecated: a warning
        #expect(report.credentials.first { $0.files == ["qr 2"] }?.isVerified == true)
        // The upper-case scheme is the same URI (RFC 3986 section 3.1): read, with a warning.
        let upper = verifier.verify(qrTexts: ["SHC:/" + single.dropFirst(5)], now: Fixtures.now)
        #expect(upper.isVerified && Fixtures.codes(upper).contains("QR_PREFIX_CASE"))
        // A missing chunk is an error on the set, and the set's findings name no single file.
        let missing = verifier.verify(qrTexts: [chunks[0], chunks[2]], names: ["a.txt", "c.txt"], now: Fixtures.now)
        let gap = try #require(missing.findings.first { $0.code == .qrChunkMissing })
        #expect(gap.location.file == nil && missing.credentials[0].files == ["a.txt", "c.txt"])
    }

    @Test func anEmptyTrustStoreChecksEverythingButNeverVerifies() throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-00-e-file.smart-health-card")
        let report = HealthCardVerifier(trustStore: TrustStore()).verify(cardFile: bytes, now: Fixtures.now)
        #expect(report.isValid && !report.isVerified)
        #expect(report.credentials[0].signature == .notChecked)
        #expect(Fixtures.codes(report).contains("SIG_NOT_CHECKED"))
    }

    @Test func keysVerifyOnlyCardsOfTheIssuerTheyWereAddedFor() throws {
        var other = TrustStore()
        try other.add(issuer: "https://issuer.example.org", jwks: try Fixtures.specJWKS(), now: Fixtures.now)
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-00-e-file.smart-health-card")
        let report = HealthCardVerifier(trustStore: other).verify(cardFile: bytes, now: Fixtures.now)
        // The card's iss is the spec's issuer; the key is in another issuer's set: never verified.
        #expect(
            !report.isVerified && Fixtures.codes(report).contains("KEY_NOT_FROM_ISSUER"), "\(Fixtures.codes(report))")
        // An issuer is an http(s) URL with a host.
        var trust = TrustStore()
        #expect(throws: HealthCardError.self) { try trust.add(issuer: "spec.smarthealth.cards", jwks: [], now: 0) }
        #expect(throws: HealthCardError.self) { try trust.add(issuer: "https://", jwks: [], now: 0) }
        #expect(trust.keySets.isEmpty)
    }

    @Test func theReportIsTheDocumentedJSON() throws {
        let bytes = try Fixtures.bytes(Fixtures.spec + "/example-00-e-file.smart-health-card")
        let json = verifier.verify(cardFile: bytes, name: "card.smart-health-card", now: Fixtures.now).json
        #expect(json["now"] == .integer(Fixtures.now))
        #expect(json["summary"]?["credentials"] == .integer(1) && json["summary"]?["errors"] == .integer(0))
        let card = try #require(json["credentials"]?[0])
        #expect(card["files"] == .array([.string("card.smart-health-card")]))
        #expect(card["signature"] == "verified" && card["valid"] == .bool(true) && card["profile"] == "vaccination")
        #expect(card["findings"]?[0]?["code"] == "NBF_FRACTIONAL")
    }
}
