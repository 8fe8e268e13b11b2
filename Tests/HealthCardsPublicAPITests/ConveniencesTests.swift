import HealthCardsVerify  // re-exports HealthCardsCore: one import, as a verifier app writes it
import Testing

/// What a client would otherwise write by hand (issue 31, part 5), through the public API only: issuing from
/// Bundle bytes, a card's `shc:/` QR texts, one verify call on bytes of any kind, an in-memory link file source.
@Suite struct ConveniencesTests {
    static let issuerURL = "https://issuer.example.org"
    static let now: Int64 = 1_700_000_000
    static let bundle = #"""
        {"resourceType":"Bundle","type":"collection","entry":[
         {"fullUrl":"https://ehr.example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1",
          "name":[{"family":"Testperson","given":["Ada"]}],"birthDate":"1960-04-12"}},
         {"fullUrl":"https://ehr.example.org/fhir/Immunization/i1","resource":{"resourceType":"Immunization","id":"i1",
          "status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"207"}]},
          "patient":{"reference":"Patient/p1"},"occurrenceDateTime":"2021-01-15",
          "performer":[{"actor":{"display":"ABC General Hospital"}}],"lotNumber":"0000001"}}]}
        """#

    /// A card issued from the Bundle's bytes with the public demo key, and a verifier that trusts its key set.
    static func issued() throws -> (card: IssuedCard, verifier: HealthCardVerifier) {
        let key = try P256PrivateKey(pem: try Fixtures.bytes(Fixtures.demoKey), source: "demo key")
        let issuer = try CardIssuer(
            signer: try ES256Signer(key: key), settings: IssueSettings(issuer: issuerURL, notBefore: now - 1_000),
            clock: FixedWallClock(now))
        let card = try issuer.issue(bundleBytes: Array(bundle.utf8), patientID: "P-1")
        var trust = TrustStore()
        try trust.add(issuer: issuerURL, jwks: JWKS(keys: [JWK(key: key.publicKey)]).fileBytes, now: now)
        return (card, HealthCardVerifier(trustStore: trust))
    }

    /// The QR text is `shc:/` and two digits per JWS character, and reads back to the JWS (digest section 6).
    @Test func qrTextsOfAnIssuedCard() throws {
        let (card, verifier) = try Self.issued()
        let texts = card.qrTexts
        let jws = card.jws.compact
        try #require(texts.count == 1)
        #expect(texts[0].hasPrefix("shc:/") && texts[0].utf8.count == 5 + 2 * jws.utf8.count)
        // Two digits per character, ord(c) - 45: '-' is 00, '.' is 01, 'z' is 77.
        let digits = Array(texts[0].utf8.dropFirst(5))
        var characters: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            let value = (Int(digits[i]) - 48) * 10 + (Int(digits[i + 1]) - 48)
            characters.append(UInt8(value + 45))
        }
        let decoded = String(decoding: characters, as: UTF8.self)
        #expect(decoded == jws)
        #expect(verifier.verify(qrTexts: texts, now: Self.now).isVerified)
    }

    /// A Bundle's bytes that are not JSON are INPUT_NOT_BUNDLE, with the parser's line and column.
    @Test func bundleBytesThatAreNotJSON() throws {
        let key = try P256PrivateKey(pem: try Fixtures.bytes(Fixtures.demoKey), source: "demo key")
        let issuer = try CardIssuer(
            signer: try ES256Signer(key: key), settings: IssueSettings(issuer: Self.issuerURL, notBefore: Self.now),
            clock: FixedWallClock(Self.now))
        do {
            _ = try issuer.issue(bundleBytes: Array(#"{"resourceType":"Bundle","#.utf8))
            Issue.record("bytes that are not JSON were issued")
        } catch {
            #expect(error.reportedCode == .inputNotBundle && error.message.contains("line 1"), "\(error)")
        }
    }

    /// One call on bytes recognises each kind and verifies it: a card file, a JWS with a final newline, QR texts
    /// one per line, and a `U` link (bare and behind a viewer) whose file the caller holds in memory.
    @Test func oneVerifyCallOnBytesOfAnyKind() throws {
        let (card, verifier) = try Self.issued()
        let file = verifier.verify(bytes: card.fileBytes, now: Self.now)
        #expect(file.kind == .cardFile && file.report.isVerified)
        let jws = verifier.verify(bytes: Array((card.jws.compact + "\n").utf8), now: Self.now)
        #expect(jws.kind == .jws && jws.report.isVerified)
        let qr = verifier.verify(bytes: Array((card.qrTexts.joined(separator: "\r\n") + "\r\n").utf8), now: Self.now)
        #expect(qr.kind == .qrTexts && qr.report.isVerified)

        let key = try AES256Key.random()
        let url = "https://links.example.org/shl/" + String(repeating: "A", count: 21) + "b" + String(repeating: "Q", count: 21)
        let jwe = try JWE.encrypt(card.fileBytes, key: key, deflate: true)
        let files = InMemorySHLFiles([url: Array(jwe.compact.utf8)])
        for viewer in [nil, "https://viewer.example.org/#"] {
            let link = SHLink(url: url, key: key.base64url, flag: "U", viewer: viewer).text
            let got = verifier.verify(bytes: Array(link.utf8), files: files, now: Self.now)
            #expect(got.kind == .link, "\(link.prefix(40))")
            // The link's report, then the card in its file, verified with the issuer's key.
            #expect(got.report.credentials.contains { $0.isVerified }, "\(got.report.credentials.map(\.findings))")
        }
        // A URL the source does not hold is not resolved: the link's file is not checked, never called verified.
        let other = SHLink(url: url + "x", key: key.base64url, flag: "U").text
        let unresolved = verifier.verify(bytes: Array(other.utf8), files: files, now: Self.now)
        #expect(!unresolved.report.credentials.contains { $0.isVerified })
    }
}
