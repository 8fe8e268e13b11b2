import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// The reported content cases (`Tests/Fixtures/cases/`, README there) run exactly as reported, through
/// the real `healthcards issue` and `healthcards verify`, with their right answers.
@Suite(.serialized) struct ContentCasesCLITests {
    /// The spec key set's key 3Kfdg… alone (its other key's example x5c leaf expired in 2022: an error on the set).
    static func specJWKS() throws -> String { try TestSupport.specKeySetOfKey0() }

    static func casePath(_ folder: String, _ file: String) -> String {
        VerifyFixtures.cases.appendingPathComponent("\(folder)/\(file)").path
    }

    @Test(arguments: [
        (
            "meta-security-bad", "bundle-meta-security-badkey.json", "meta-security-badkey.smart-health-card",
            "META_SECURITY"
        ),
        (
            "occurrence-string-only", "occurrence-string-only.json", "occurrence-string-only.smart-health-card",
            "IMMUNIZATION_OCCURRENCE"
        ),
        ("lab-loinc-answer-code", "lab-value-LA11883-8.json", "lab-value-LA11883-8.smart-health-card", ""),
    ])
    func reportedCase(folder: String, bundle: String, card: String, code: String) throws {
        let dir = try TestSupport.tempDir("case")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let issue = try TestSupport.cli([
            "issue", "--issuer", BatchTestSupport.issuer, "--key", key, "--out", out.path, "--no-qr",
            Self.casePath(folder, bundle),
        ])
        let line = try #require(try TestSupport.report(out).first)
        let verify = try TestSupport.cli(["verify", "--jwks", try Self.specJWKS(), "--json", Self.casePath(folder, card)])
        let report = try JSONParser.parse(verify.stdout)
        let credential = try #require(
            report["credentials"]?.arrayValue?.first { $0["source"]?.stringValue == "smart-health-card" })
        let codes = (credential["findings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
        if code.isEmpty {
            // Accepted: issued, and valid in verify, judged by the lab profile.
            #expect(issue.status == 0, "\(issue.stderr)")
            #expect(line["status"]?.stringValue == "issued" && line["profile"]?.stringValue == "lab")
            #expect(verify.status == 0, "\(verify.stdout)")
            #expect(codes.isEmpty, "\(codes)")
            #expect(credential["profile"]?.stringValue == "lab")
        } else {
            // Refused before signing, and an error in verify.
            #expect(issue.status == 1)
            #expect(line["status"]?.stringValue == "rejected" && line["profile"]?.stringValue == "vaccination")
            let errors = (line["errors"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
            #expect(!errors.isEmpty && errors.allSatisfy { $0 == code }, "\(errors)")
            let cards =
                (try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("cards").path)) ?? []
            #expect(cards.isEmpty, "nothing signed: \(cards)")
            #expect(verify.status == 1)
            #expect(!codes.isEmpty && codes.allSatisfy { $0 == code }, "\(codes)")
            #expect(credential["valid"] == .bool(false) && credential["profile"]?.stringValue == "vaccination")
        }
    }

    /// The readable summary names the profile that judged each card.
    @Test func theSummaryNamesTheProfile() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", try Self.specJWKS(),
            Self.casePath("lab-loinc-answer-code", "lab-value-LA11883-8.smart-health-card"),
        ])
        #expect(
            run.stdout.contains("  profile  lab result (SHC Vaccination & Testing IG laboratory Bundle)\n"),
            "\(run.stdout)")
        #expect(run.stdout.contains("→ LOINC LA11883-8 (Not detected)"), "\(run.stdout)")
    }
}
