import HealthCardsCore
import HealthCardsVerify
import Testing

/// Limits are a value per verifier (`VerifyLimits`, defaults `InputBudget`'s): what a check reads, spends and
/// lists at most. A hostile card cannot make a report explode.
@Suite struct VerifyLimitsTests {
    /// A card whose Bundle holds `count` Immunizations, each wrong in seven ways (status, CVX code, patient
    /// reference, occurrence, id, meta, text): 7 × `count` findings. Unsigned (a zero signature).
    static func hostileCard(immunizations count: Int) throws -> [UInt8] {
        var entries: [String] = [
            #"{"fullUrl":"resource:0","resource":{"resourceType":"Patient","name":[{"family":"X"}],"birthDate":"1960-01-01"}}"#
        ]
        for i in 1...count {
            entries.append(
                #"{"fullUrl":"resource:\#(i)","resource":{"resourceType":"Immunization","status":"x","vaccineCode":{"coding":[{"#
                    + #""system":"http://hl7.org/fhir/sid/cvx","code":"999999"}]},"patient":{"reference":"resource:\#(i + count)"},"#
                    + #""occurrenceDateTime":"20x1","id":"a","meta":{"b":1},"text":{"div":"x"}}}"#)
        }
        let payload =
            #"{"iss":"\#(Fixtures.issuer)","nbf":1700000000,"vc":{"type":["https://smarthealth.cards#health-card"],"#
            + #""credentialSubject":{"fhirVersion":"4.0.1","fhirBundle":{"resourceType":"Bundle","type":"collection","entry":["#
            + entries.joined(separator: ",") + "]}}}}"
        let header = #"{"zip":"DEF","alg":"ES256","kid":"\#(Fixtures.kid)"}"#
        let deflated = try RawDeflater(level: 9).deflate(Array(payload.utf8))
        let jws =
            Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(deflated) + "."
            + Base64URL.encode([UInt8](repeating: 0, count: 64))
        return Array(#"{"verifiableCredential":["\#(jws)"]}"#.utf8)
    }

    @Test func aHostileCardListsAtMostTheLimitOfEachCode() throws {
        let count = 2000
        let card = try Self.hostileCard(immunizations: count)
        let verifier = try VerifyBytesTests.specVerifier()
        let report = verifier.verify(cardFile: card, now: Fixtures.now)
        let credential = try #require(report.credentials.first)
        let perCode = VerifyLimits().findingsPerCode
        let seven: [RuleCode] = [
            .immunizationStatus, .codeCVXUnknown, .immunizationPatient, .immunizationOccurrence, .minResourceID,
            .minMeta,
            .minText,
        ]
        for code in seven {
            let listed = credential.findings.filter { $0.code == code }
            #expect(listed.count == perCode + 1, "\(code): \(listed.count)")
            // The last one listed says how many more there were; the report counts them.
            #expect(
                listed.last?.message.hasPrefix("… and \(count - perCode) more \(code.rawValue) findings") == true,
                "\(code)")
            #expect(credential.omittedFindings[code] == count - perCode, "\(code)")
        }
        // Without the limit there would be over 14,000 findings; listed: at most 21 of each code.
        let byCode = Dictionary(grouping: credential.findings, by: \.code)
        #expect(byCode.values.allSatisfy { $0.count <= perCode + 1 })
        #expect(credential.findings.count <= byCode.count * (perCode + 1) && byCode.count < 12, "\(byCode.keys)")
        // The verdict is unchanged: the card is invalid, its signature (zeros) fails.
        #expect(!report.isValid && credential.signature == .failed)
        // And the document stays small: the findings are a few tens of kB whatever the card's size.
        let findingsJSON = JSONWriter.minified(.array(credential.findings.map(\.json)))
        #expect(findingsJSON.count < 64 * 1024, "\(findingsJSON.count) bytes of findings")
    }

    @Test func pastTheRunsLimitEachCredentialListsItsFirstErrorAndSaysHowManyWereLeftOut() throws {
        var limits = VerifyLimits()
        limits.findingsPerRun = 30
        let verifier = HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: limits)
        // Example 02's card lists 24 findings (21 REFERENCE_UNRESOLVED within the per-code limit, and 3 others);
        // three copies in one file are one check: the second and third go past the run's 30.
        let jws = try Fixtures.text(Fixtures.spec + "/example-02-d-jws.txt")
        let file = Array(#"{"verifiableCredential":["\#(jws)","\#(jws)","\#(jws)"]}"#.utf8)
        let report = verifier.verify(cardFile: file, now: Fixtures.now)
        #expect(report.credentials.count == 3)
        #expect(report.credentials[0].findings.count == 24)
        for capped in report.credentials.dropFirst() {
            #expect(
                capped.findings.map(\.code) == [.referenceUnresolved, .findingsCapped], "\(capped.findings.map(\.code))"
            )
            #expect(!capped.isValid && capped.findings[1].severity == .warning)
            #expect(capped.findings[1].message.hasPrefix("23 more finding(s) of this credential were not listed"))
        }
    }

    @Test func fileAndCredentialLimitsAreTheVerifiersOwn() throws {
        let card = try Fixtures.bytes(Fixtures.spec + "/example-00-e-file.smart-health-card")
        var small = VerifyLimits()
        small.input.cardFileBytes = 100
        let refused = HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: small).verify(
            cardFile: card, now: Fixtures.now)
        #expect(Fixtures.codes(refused) == ["FILE_TOO_LARGE"] && !refused.isValid)
        #expect(refused.findings[0].message.contains("at most 100 bytes"))
        // The defaults are InputBudget's.
        #expect(
            VerifyLimits().input == InputLimits() && VerifyLimits().input.cardFileBytes == InputBudget.cardFileBytes
        )
        var one = VerifyLimits()
        one.input.credentialsPerFile = 1
        let jws = try Fixtures.text(Fixtures.spec + "/example-00-d-jws.txt")
        let two = Array(#"{"verifiableCredential":["\#(jws)","\#(jws)"]}"#.utf8)
        let first = HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: one).verify(
            cardFile: two, now: Fixtures.now)
        #expect(first.credentials.count == 1 && Fixtures.codes(first).contains("FILE_TOO_LARGE"))
        // A key set over the verifier's size is not parsed, and gives no key.
        var trust = TrustStore()
        let keySet = try trust.add(
            issuer: Fixtures.issuer, jwks: try Fixtures.specJWKS(), now: Fixtures.now, limits: small)
        #expect(keySet.findings.map(\.code) == [.fileTooLarge, .jwksNoKeys])
    }

    @Test func aSpentSignatureBudgetIsNeverAVerdictOnTheSignature() throws {
        var none = VerifyLimits()
        none.signatureVerificationsPerCredential = 0
        let jws = try Fixtures.text(Fixtures.spec + "/example-00-d-jws.txt")
        let report = HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: none).verify(
            jws: jws, now: Fixtures.now)
        // Not verified, and not "does not verify" either: not checked, an error.
        #expect(!report.isValid && report.credentials[0].signature == .notChecked)
        let finding = try #require(report.findings.first { $0.code == .sigNotChecked })
        #expect(finding.isError && !Fixtures.codes(report).contains("SIG_INVALID"))
        // One verification is what a card signed by the key its kid names costs.
        var one = VerifyLimits()
        one.signatureVerificationsPerCredential = 1
        #expect(
            HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: one).verify(jws: jws, now: Fixtures.now)
                .isVerified)
        // Chunk sets are still told apart by their form when the grouping budget is spent.
        var grouping = VerifyLimits()
        grouping.signatureVerificationsPerGrouping = 0
        let chunks = try (0..<3).map {
            try Fixtures.text(Fixtures.spec + "/example-02-f-qr-code-numeric-value-\($0).txt")
        }
        let set = HealthCardVerifier(trustStore: try Fixtures.specTrust(), limits: grouping).verify(
            qrTexts: chunks.reversed(), now: Fixtures.now)
        #expect(set.credentials.count == 1 && set.credentials[0].signature == .verified)
    }
}
