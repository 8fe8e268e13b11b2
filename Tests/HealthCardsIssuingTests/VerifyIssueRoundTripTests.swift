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

/// `issue` and `verify` agree: what `issue` writes verifies cleanly, and Bundles that break a rule are
/// refused by `issue` with the rule's code and FHIR path while the good records of the batch are issued.
@Suite(.serialized) struct VerifyIssueRoundTripTests {
    static let issuer = "https://issuer.example.org"

    @Test(arguments: ["covid19-vaccination", "lab-result"])
    func issuedSamplesVerifyWithZeroErrorsAndWarnings(template: String) throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        let out = dir.appendingPathComponent("out")
        #expect(try TestSupport.cli(["jwks", key, "--out", site.appendingPathComponent(".well-known/jwks.json").path, "--issuer", "https://issuer.example.org"]).status == 0)
        let root = VerifyFixtures.repoRoot.appendingPathComponent("templates")
        let issue = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", root.appendingPathComponent("\(template).json").path,
            "--out", out.path, root.appendingPathComponent("\(template).sample.csv").path,
        ])
        #expect(issue.status == 0, "\(issue.stderr)")
        let run = try TestSupport.cli(["verify", "--jwks", site.path, "--json", out.path])
        #expect(run.status == 0, "\(run.stdout)")
        let report = try JSONParser.parse(run.stdout)
        let cards = try VerifyFixtures.files(in: out.appendingPathComponent("cards"), suffix: ".smart-health-card")
        #expect(report["summary"]?["credentials"] == .integer(Int64(cards.count * 2)))
        #expect(report["summary"]?["errors"] == .integer(0))
        #expect(report["summary"]?["warnings"] == .integer(0), "\(run.stdout)")
    }

    /// One bad Bundle per rule of issue 3 section 1, in one NDJSON batch with a good one.
    nonisolated(unsafe) static let badBundles: [(rule: String, path: String, change: (inout JSONObject) -> Void)] = [
        ("BUNDLE_TYPE", "Bundle.type", { $0["type"] = "document" }),
        ("BUNDLE_PATIENT_COUNT", "Bundle.entry", { b in b["entry"] = .array(b["entry"]!.arrayValue!.filter { $0["resource"]?["resourceType"]?.stringValue != "Patient" }) }),
        ("PATIENT_NAME", "resource.name", { b in patient(&b) { $0["name"] = nil } }),
        ("PATIENT_NAME_FORM", "resource.name[0]", { b in patient(&b) { $0["name"] = [.object(["family": "X", "given": ["Y"], "text": "Y X"])] } }),
        ("PATIENT_BIRTHDATE", "resource.birthDate", { b in patient(&b) { $0["birthDate"] = "1960-02-30" } }),
        ("IMMUNIZATION_STATUS", "resource.status", { b in immunization(&b) { $0["status"] = "not-done" } }),
        ("IMMUNIZATION_VACCINE_CODE", "resource.vaccineCode", { b in immunization(&b) { $0["vaccineCode"] = .object(["coding": [.object(["system": "http://example.org/local", "code": "X"])]]) } }),
        ("CODE_CVX_UNKNOWN", "vaccineCode.coding[0].code", { b in immunization(&b) { $0["vaccineCode"] = .object(["coding": [.object(["system": .string(Terminology.cvx), "code": "999999"])]]) } }),
        ("IMMUNIZATION_PATIENT", "resource.patient.reference", { b in immunization(&b) { $0["patient"] = .object(["reference": "resource:1"]) } }),
        ("IMMUNIZATION_OCCURRENCE", "resource.occurrenceDateTime", { b in immunization(&b) { $0["occurrenceDateTime"] = "2021-13-01" } }),
        ("DATE_IN_FUTURE", "resource.occurrenceDateTime", { b in immunization(&b) { $0["occurrenceDateTime"] = "2999-01-01" } }),
        ("DATE_BEFORE_BIRTH", "resource.occurrenceDateTime", { b in immunization(&b) { $0["occurrenceDateTime"] = "1950-01-01" } }),
    ]

    static func patient(_ b: inout JSONObject, _ change: (inout JSONObject) -> Void) { resource(&b, "Patient", change) }
    static func immunization(_ b: inout JSONObject, _ change: (inout JSONObject) -> Void) { resource(&b, "Immunization", change) }
    static func resource(_ b: inout JSONObject, _ type: String, _ change: (inout JSONObject) -> Void) {
        VerifyForge.changing(&b, type, change)
    }

    @Test func issueRejectsEachBadBundleNamingRuleAndPathAndIssuesTheGoodOnes() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        var lines: [String] = [JSONWriter.minifiedString(VerifyForge.bundle())]
        for (_, _, change) in Self.badBundles {
            var b = VerifyForge.bundle().objectValue!
            change(&b)
            lines.append(JSONWriter.minifiedString(.object(b)))
        }
        lines.append(JSONWriter.minifiedString(VerifyForge.bundle(doses: 1)))
        let input = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "batch.ndjson", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, "--no-qr", input])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == lines.count)
        #expect(report.first?["status"]?.stringValue == "issued")
        #expect(report.last?["status"]?.stringValue == "issued")
        for (i, (rule, path, _)) in Self.badBundles.enumerated() {
            let line = report[i + 1]
            #expect(line["status"]?.stringValue == "rejected", "\(rule)")
            let errors = line["errors"]?.arrayValue ?? []
            let match = errors.first { $0["code"]?.stringValue == rule }
            #expect(match != nil, "\(rule): \(errors)")
            #expect(match?["at"]?.stringValue?.hasSuffix(path) == true, "\(rule): \(String(describing: match))")
        }
        // The issued cards verify cleanly.
        let site = dir.appendingPathComponent("site/.well-known/jwks.json")
        #expect(try TestSupport.cli(["jwks", key, "--out", site.path, "--issuer", "https://issuer.example.org"]).status == 0)
        let verify = try TestSupport.cli(["verify", "--jwks", site.path, out.appendingPathComponent("cards").path])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.stdout.hasSuffix("2 credential(s) checked, 0 error(s), 0 warning(s)\n"), "\(verify.stdout)")
    }

    /// Every rejection rule `issue` applies is one `verify` reports on a signed card with the same code.
    @Test func verifyReportsTheSameCodesAsTheIssueTimeValidator() throws {
        let forge = try VerifyForge()
        for (rule, _, change) in Self.badBundles {
            var b = VerifyForge.bundle().objectValue!
            change(&b)
            let issueCodes = Set(BundleValidator.validate(.object(b), now: Clock.nowSeconds()).all.filter(\.isError).map(\.code.rawValue))
            #expect(issueCodes.contains(rule), "\(rule): \(issueCodes)")
            let path = try forge.card(try forge.jws(claims: VerifyForge.claims(bundle: .object(b))), "\(rule).smart-health-card")
            let verifyCodes = try forge.codes([path], now: Clock.nowSeconds())
            #expect(issueCodes.isSubset(of: verifyCodes), "\(rule): issue \(issueCodes) verify \(verifyCodes)")
        }
    }
}
