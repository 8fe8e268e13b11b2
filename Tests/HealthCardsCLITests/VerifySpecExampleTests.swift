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

/// The spec's and the HL7 IG's example cards through `verify`, and the CLI's exit codes and outputs.
@Suite(.serialized) struct VerifySpecExampleTests {
    /// Before example 03's exp (2024-06-21) and after every nbf.
    static let now = "1700000000"
    static let site = TestSupport.spec("issuer").path

    /// A copy of the spec key set without its revocation list.
    func siteWithoutCRL() throws -> String {
        let dir = try TestSupport.tempDir("site")
        try TestSupport.write(String(contentsOf: TestSupport.spec("issuer/.well-known/jwks.json"), encoding: .utf8), to: ".well-known/jwks.json", in: dir)
        return dir.path
    }

    @Test(arguments: ["00", "01", "03"])
    func specExampleVerifiesInEveryForm(number: String) throws {
        let files = [
            "example-\(number)-d-jws.txt", "example-\(number)-e-file.smart-health-card",
            "example-\(number)-f-qr-code-numeric-value-0.txt", "derived/qr-png/example-\(number)-g-qr-code-0.png",
        ].map { TestSupport.spec($0).path }
        let run = try TestSupport.cli(["verify", "--jwks", try siteWithoutCRL(), "--now", Self.now, "--json"] + files)
        // The spec key set's example x5c leaf (key EBKOr…) expired in 2022, before every example's nbf (2023-06-22):
        // a warning on the key set, an error on example 01, which that key signs (docs/verify.md).
        #expect(run.status == (number == "01" ? 1 : 0), "\(run.stdout)")
        let report = try JSONParser.parse(run.stdout)
        let keySet = try #require(report["keySets"]?.arrayValue?.first, "\(run.stdout)")
        #expect(keySet["findings"]?.arrayValue?.compactMap { $0["code"]?.stringValue } == ["JWK_X5C_VALIDITY"])
        let credentials = report["credentials"]!.arrayValue!.filter { $0["source"]?.stringValue != "key-set" }
        #expect(credentials.count == 4)
        for credential in credentials {
            #expect(credential["signature"]?.stringValue == "verified")
            // The spec generator writes fractional nbf. Example 01 is signed by the key whose example x5c leaf
            // expired in 2022 (an error now: it is valid at no --now, see X5CVerifyTests); 00 and 03 by the key that
            // publishes crlVersion 1, whose list this copy of the key set leaves out, so each says its revocation was
            // not checked (a warning, not a silent OK), and they are valid.
            #expect(credential["errors"] == .integer(number == "01" ? 1 : 0))
            let codes = credential["findings"]!.arrayValue!.compactMap { $0["code"]?.stringValue }
            #expect(codes == ["NBF_FRACTIONAL"] + (number == "01" ? ["JWK_X5C_VALIDITY"] : ["CRL_MISSING"]), "\(codes)")
            #expect(credential["payload"]?["iss"]?.stringValue == "https://spec.smarthealth.cards/examples/issuer")
        }
        let png = credentials.first { $0["source"]?.stringValue == "qr-image" }
        #expect(png?["qr"]?[0]?["version"] == .integer(18))
        #expect(png?["qr"]?[0]?["errorCorrection"]?.stringValue == "L")
    }

    /// Example 03 is the spec's revoked card: with the CRL beside the key set it is an error.
    @Test func example03IsRevokedByTheSpecCRL() throws {
        let run = try TestSupport.cli(["verify", "--jwks", Self.site, "--now", Self.now, TestSupport.spec("example-03-e-file.smart-health-card").path])
        #expect(run.status == 1)
        #expect(run.stdout.contains("error REVOKED at vc.rid"), "\(run.stdout)")
        let zero = try TestSupport.cli(["verify", "--json", "--jwks", Self.site, "--now", Self.now, TestSupport.spec("example-00-e-file.smart-health-card").path])
        // Example 00 is not revoked: valid; the key set's expired example x5c leaf (of the other key) is a warning.
        let zeroJSON = try JSONParser.parse(zero.stdout)
        #expect(zeroJSON["credentials"]?.arrayValue?.first { $0["source"]?.stringValue == "smart-health-card" }?["valid"] == .bool(true),
                "\(zero.stdout)")
        #expect(zero.status == 0 && zero.stdout.contains("JWK_X5C_VALIDITY") && !zero.stdout.contains("REVOKED"))
        // After exp it is expired as well.
        let late = try TestSupport.cli(["verify", "--jwks", try siteWithoutCRL(), "--now", "1750000000", TestSupport.spec("example-03-d-jws.txt").path])
        #expect(late.status == 1)
        #expect(late.stdout.contains("EXP_EXPIRED"))
    }

    /// Example 02: three chunks (text or PNG) reassemble; its two unresolved references are reported.
    @Test func example02ChunksReassembleAndReferencesAreReported() throws {
        let texts = (0..<3).map { TestSupport.spec("example-02-f-qr-code-numeric-value-\($0).txt").path }
        let pngs = (0..<3).map { TestSupport.spec("derived/qr-png/example-02-g-qr-code-\($0).png").path }
        let verifier = try FileVerifier(keySets: [try siteWithoutCRL()], now: Int64(Self.now)!)
        let reports = try verifier.verify(texts.reversed() + pngs)
        #expect(reports.count == 2)
        let jws = try VerifyFixtures.text(TestSupport.spec("example-02-d-jws.txt"))
        for report in reports {
            #expect(report.jws == jws)
            #expect(report.signature == .verified)
            let unresolved = Set(report.findings.filter { $0.code == .referenceUnresolved }.compactMap { f in
                f.message.split(separator: "'").dropFirst().first.map(String.init)
            })
            #expect(unresolved == ["Organization/1832473e-2fe0-452d-abe9-3cdb9879522f", "Practitioner/f202"])
            #expect(report.findings.contains { $0.code == .qrChunked })
        }
        #expect(reports.map(\.qrSymbols.count) == [0, 3])
        #expect(reports[1].qrSymbols.allSatisfy { $0.version == 21 && $0.errorCorrection == .L })
    }

    /// The HL7 IG scenarios (another generator, deprecated vc.type extras) verify with no finding.
    @Test func igScenariosVerifyCleanly() throws {
        let verifier = try FileVerifier(keySets: [try siteWithoutCRL()], now: Int64(Self.now)!)
        let reports = try verifier.verify([TestSupport.spec("ig-vaccination-examples").path])
        #expect(reports.count == 12)
        for report in reports {
            #expect(report.findings.isEmpty, "\(report.file): \(report.findings)")
            #expect(report.signature == .verified)
        }
    }

    @Test func cliUsageAndTextSummary() throws {
        #expect(try TestSupport.cli(["verify"]).status == 2)
        #expect(try TestSupport.cli(["verify", "--now", "soon", "x"]).status == 2)
        #expect(try TestSupport.cli(["verify", "/nonexistent/card"]).status == 2)
        #expect(try TestSupport.cli(["verify", "--jwks", "/nonexistent", TestSupport.spec("example-00-d-jws.txt").path]).status == 2)
        let help = try TestSupport.cli(["verify", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--jwks"))
        // Without a key set: everything but the signature, and a warning says so; the card is NOT VERIFIED,
        // never "OK", and the exit status is 1 (anyone could have signed it).
        let run = try TestSupport.cli(["verify", "--now", Self.now, TestSupport.spec("example-00-e-file.smart-health-card").path])
        #expect(run.status == 1)
        #expect(run.stdout.contains("warning SIG_NOT_CHECKED"))
        #expect(run.stdout.contains("example-00-e-file.smart-health-card [credential 0]: NOT VERIFIED: signature not checked, no other error ("))
        #expect(!run.stdout.contains(": OK"))
        #expect(run.stdout.contains("1 credential(s) checked, 0 error(s), ") && run.stdout.contains(" warning(s), 1 NOT VERIFIED (a signature not checked"))
        let json = try JSONParser.parse(Array(try TestSupport.cli(
            ["verify", "--json", "--now", Self.now, TestSupport.spec("example-00-e-file.smart-health-card").path]).stdout.utf8))
        #expect(json["credentials"]?[0]?["valid"] == .bool(true) && json["credentials"]?[0]?["verified"] == .bool(false))
        #expect(json["summary"]?["notVerified"] == .integer(1))
        // With the issuer's key set the same card is OK and verified, exit 0 (the key set's example x5c leaf, of the
        // other key, expired in 2022: a warning).
        let keyed = try TestSupport.cli(["verify", "--json", "--jwks", TestSupport.spec("issuer").path, "--now", Self.now,
                                         TestSupport.spec("example-00-e-file.smart-health-card").path])
        let keyedJSON = try JSONParser.parse(Array(keyed.stdout.utf8))
        let keyedCard = keyedJSON["credentials"]?.arrayValue?.first { $0["source"]?.stringValue == "smart-health-card" }
        #expect(keyedCard?["verified"] == .bool(true) && keyedJSON["summary"]?["notVerified"] == .integer(0), "\(keyed.stdout)")
        #expect(keyed.status == 0 && keyed.stdout.contains("JWK_X5C_VALIDITY"), "\(keyed.stdout)")
        #expect(run.stdout.contains("patient  John B. Anyperson, born 1951-01-20"))
        #expect(run.stdout.contains("dose     2021-01-01  CVX 207 (COVID-19, mRNA, LNP-S, PF, 100 mcg/0.5mL dose or 50 mcg/0.25mL dose)"))
        #expect(run.stdout.contains("nbf      2023-06-22 16:19:24 UTC"))
        let lab = try TestSupport.cli(["verify", "--now", Self.now, TestSupport.spec("ig-vaccination-examples/Scenario3Bundle-jws.txt").path])
        #expect(lab.stdout.contains("lab      ") && lab.stdout.contains("LOINC 94558-4"), "\(lab.stdout)")
    }
}
