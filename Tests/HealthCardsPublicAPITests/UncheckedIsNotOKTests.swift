import HealthCardsVerify  // re-exports HealthCardsCore
import Testing

/// A judge that says OK about what it did not check is worse than one that says no (the new-user trial of
/// 2026-12-06 found two such verdicts). Public API only.
@Suite struct UncheckedIsNotOKTests {
    /// A key whose JWK publishes `crlVersion` has a revocation list; a key set given without it cannot say whether
    /// a card of that key is revoked (`shc_check --apply-crl` calls it `crl-missing`). The signature is still
    /// checked, and the card says its revocation was not checked (CRL_MISSING, a warning on the card, at vc.rid)
    /// rather than a silent OK. With the list (ctr equal to crlVersion, nothing revoked) nothing is said.
    @Test func aCardWhoseKeysListWasNotGivenSaysItsRevocationWasNotChecked() throws {
        let key = try P256PrivateKey(pem: try Fixtures.bytes(Fixtures.demoKey), source: "demo key")
        let issuer = try CardIssuer(
            signer: try ES256Signer(key: key),
            settings: {
                var settings = IssueSettings(issuer: ConveniencesTests.issuerURL, notBefore: ConveniencesTests.now - 1_000)
                settings.ridSecret = try RIDSecret(text: "c3ludGhldGljLXRlc3Qtc2VjcmV0LTAx")
                return settings
            }(),
            clock: FixedWallClock(ConveniencesTests.now))
        let card = try issuer.issue(bundleBytes: Array(ConveniencesTests.bundle.utf8), patientID: "P-1")
        var jwk = JWK(key: key.publicKey)
        jwk.crlVersion = 1
        let keySet = JWKS(keys: [jwk]).fileBytes

        var without = TrustStore()
        try without.add(issuer: ConveniencesTests.issuerURL, jwks: keySet, now: ConveniencesTests.now)
        let unchecked = HealthCardVerifier(trustStore: without).verify(cardFile: card.fileBytes, now: ConveniencesTests.now)
        let missing = unchecked.findings.filter { $0.code == .crlMissing }
        #expect(missing.count == 1 && missing.first?.severity == .warning && missing.first?.location.path == "vc.rid",
                "\(unchecked.findings)")
        #expect(unchecked.credentials.first?.signature == .verified)

        var with = TrustStore()
        let crl = #"{"kid":"\#(jwk.kid)","method":"rid","ctr":1,"rids":[]}"#
        try with.add(
            issuer: ConveniencesTests.issuerURL, jwks: keySet, crls: [jwk.kid: Array(crl.utf8)], now: ConveniencesTests.now)
        let checked = HealthCardVerifier(trustStore: with).verify(cardFile: card.fileBytes, now: ConveniencesTests.now)
        #expect(checked.isVerified && checked.findings.isEmpty, "\(checked.findings)")
    }

    /// `Bundle.entry` absent, not an array, or empty is an error in every profile (BUNDLE_ENTRY_MISSING), when
    /// issuing and when judging someone else's card: it was read as an empty list and the generic profile passed it.
    @Test(arguments: [#"{"resourceType":"Bundle","type":"collection"}"#,
                      #"{"resourceType":"Bundle","type":"collection","entry":[]}"#,
                      #"{"resourceType":"Bundle","type":"collection","entry":{}}"#,
                      #"{"resourceType":"Bundle","type":"collection","entry":null}"#])
    func aBundleWithNoEntriesIsNeverValid(bundle: String) throws {
        let json = try JSONParser.parse(Array(bundle.utf8))
        for purpose in [BundleValidator.Purpose.issuing, .verifying] {
            let findings = BundleValidator.validate(json, now: ConveniencesTests.now, purpose: purpose)
            let missing = findings.all.filter { $0.code == .bundleEntryMissing }
            #expect(missing.count == 1 && missing[0].isError && missing[0].location.path == "Bundle.entry", "\(findings.all)")
        }
    }
}
