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

/// Where `vc.rid` comes from (`PatientIdentity`): the person, not the file line. Through the real CLI.
@Suite struct RevocationIdentityTests {
    static let system = "https://hospital.example.org/mrn"

    /// One vaccination Bundle for a person, as an NDJSON line.
    static func bundle(family: String, birthDate: String, identifiers: [(system: String?, value: String)]) -> String {
        let ids = identifiers.map { id in
            "{" + (id.system.map { #""system":"\#($0)","# } ?? "") + #""value":"\#(id.value)"}"#
        }
        let identifier = ids.isEmpty ? "" : #""identifier":[\#(ids.joined(separator: ","))],"#
        return
            #"{"resourceType":"Bundle","type":"collection","entry":[{"fullUrl":"resource:0","resource":{"resourceType":"Patient",\#(identifier)"name":[{"family":"\#(family)","given":["Test"]}],"birthDate":"\#(birthDate)"}},{"fullUrl":"resource:1","resource":{"resourceType":"Immunization","status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"207"}]},"patient":{"reference":"resource:0"},"occurrenceDateTime":"2021-01-01","performer":[{"actor":{"display":"ABC General Hospital"}}],"lotNumber":"0000001"}}]}"#
    }

    struct Setup {
        let dir: URL
        let key: String
        let secret: String
        let site: URL
    }

    static func setup() throws -> Setup {
        let dir = try TestSupport.tempDir("rid")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key, "--issuer", SiteTestSupport.issuer, "--crl"])
        return Setup(dir: dir, key: key, secret: secret, site: site)
    }

    @discardableResult
    static func issue(_ s: Setup, out: URL, inputs: [String], extra: [String] = [], expect: Int32 = 0)
        throws -> TestSupport.Run
    {
        try SiteTestSupport.cli(
            [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", s.key, "--out", out.path, "--rid-secret",
                s.secret,
                "--nbf", "1700000000", "--no-qr",
            ] + extra + inputs, expect: expect)
    }

    /// The bug: `day1/export.ndjson` line 1 and `day2/export.ndjson` line 1 had the same rid (from
    /// `export-1`), so revoking one person revoked the other. Now each rid is its Patient's identifier's.
    @Test func sameFileLineInTwoExportsGivesTwoPeopleTwoRids() throws {
        _ = try Self.revokeOneOfTwoExports()
    }

    /// The independent checker, applying the CRL, rejects Alpha's card as revoked and accepts Beta's.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func revokedCardOfOneExportIsRejectedByIndependentChecker() throws {
        let (site, out1, out2, rid1) = try Self.revokeOneOfTwoExports()
        let alpha = try TestSupport.check(["--apply-crl", "--jwks", site.path, out1.path])
        #expect(alpha.status != 0 && alpha.stdout.contains(rid1), "\(alpha.stdout)")
        let beta = try TestSupport.check(["--apply-crl", "--jwks", site.path, out2.path])
        #expect(beta.status == 0, "\(beta.stdout)")
    }

    /// Alpha (day1) and Beta (day2), both record `export-1`, issued with a rid secret; Alpha revoked by
    /// the identifier the rid is derived from. Checks every step on the way.
    static func revokeOneOfTwoExports() throws -> (site: URL, out1: URL, out2: URL, rid1: String) {
        let s = try Self.setup()
        let day1 = try TestSupport.write(
            Self.bundle(family: "Alpha", birthDate: "1970-01-01", identifiers: [(Self.system, "A-1")]) + "\n",
            to: "day1/export.ndjson", in: s.dir)
        let day2 = try TestSupport.write(
            Self.bundle(family: "Beta", birthDate: "1980-02-02", identifiers: [(Self.system, "B-2")]) + "\n",
            to: "day2/export.ndjson", in: s.dir)
        let out1 = s.dir.appendingPathComponent("out1")
        let out2 = s.dir.appendingPathComponent("out2")
        try Self.issue(s, out: out1, inputs: [day1])
        try Self.issue(s, out: out2, inputs: [day2])
        let line1 = try TestSupport.report(out1)[0]
        let line2 = try TestSupport.report(out2)[0]
        #expect(line1["id"] == "export-1" && line2["id"] == "export-1")
        let secret = try RIDSecretFile.read(s.secret)
        let rid1 = try RID.derive(secret: secret, kid: DemoKey.kid, patientID: "\(Self.system)|A-1")
        let rid2 = try RID.derive(secret: secret, kid: DemoKey.kid, patientID: "\(Self.system)|B-2")
        #expect(rid1 != rid2)
        #expect(line1["rid"]?.stringValue == rid1 && line1["ridFrom"]?.stringValue == "\(Self.system)|A-1")
        #expect(line2["rid"]?.stringValue == rid2 && line1["kid"]?.stringValue == DemoKey.kid)
        #expect(
            try TestSupport.payload(of: try SiteTestSupport.jws(in: out1, id: "export-1"))["vc"]?["rid"]?.stringValue
                == rid1)
        #expect(
            try TestSupport.payload(of: try SiteTestSupport.jws(in: out2, id: "export-1"))["vc"]?["rid"]?.stringValue
                == rid2)

        // Revoking Alpha revokes Alpha's card only. The record id is not the id; the message says which is.
        let common = [
            "revoke", "--site", s.site.path, "--key", s.key, "--rid-secret", s.secret,
            "--report", out1.path + "/report.ndjson", "--report", out2.path + "/report.ndjson",
        ]
        let byRecord = try SiteTestSupport.cli(common + ["--id", "export-1"], expect: 2)
        #expect(byRecord.stderr.contains("give the id '\(Self.system)|A-1'"), "\(byRecord.stderr)")
        let revoked = try SiteTestSupport.cli(common + ["--id", "\(Self.system)|A-1"])
        #expect(revoked.stdout.hasPrefix("revoked \(rid1) (patient \(Self.system)|A-1)\n"))
        let crlPath = s.site.path + "/.well-known/crl/\(DemoKey.kid).json"
        let crl = try CRL(bytes: try SiteTestSupport.bytes(crlPath), source: crlPath)
        #expect(crl.revokes(rid: rid1, nbf: 1_700_000_000))
        #expect(!crl.revokes(rid: rid2, nbf: 1_700_000_000))
        return (s.site, out1, out2, rid1)
    }

    /// No stable identifier: no rid, and the report line says why; --patient-id-system picks one of several.
    @Test func bundleWithoutAStableIdentifierGetsNoRidAndTheReportSaysWhy() throws {
        let s = try Self.setup()
        let lines = [
            Self.bundle(family: "None", birthDate: "1970-01-01", identifiers: []),
            Self.bundle(family: "NoSystem", birthDate: "1970-01-02", identifiers: [(nil, "123")]),
            Self.bundle(
                family: "Two", birthDate: "1970-01-03", identifiers: [(Self.system, "T-3"), ("urn:other", "9")]),
        ]
        let input = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "in.ndjson", in: s.dir)
        let out = s.dir.appendingPathComponent("out")
        try Self.issue(s, out: out, inputs: [input])
        let report = try TestSupport.report(out)
        #expect(report.allSatisfy { $0["status"] == "issued" && $0["rid"] == nil })
        func warning(_ line: JSONValue) -> String {
            (line["warnings"]?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }.first {
                $0.hasPrefix("no vc.rid")
            } ?? ""
        }
        #expect(warning(report[0]).contains("the Patient has no identifier"))
        #expect(warning(report[1]).contains("identifier has no system"))
        #expect(warning(report[2]).contains("2 identifiers (\(Self.system), urn:other)"))
        #expect(warning(report[2]).contains("--patient-id-system"))
        #expect(try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "in-1"))["vc"]?["rid"] == nil)

        let named = s.dir.appendingPathComponent("named")
        try Self.issue(s, out: named, inputs: [input], extra: ["--patient-id-system", Self.system])
        let third = try TestSupport.report(named)[2]
        #expect(third["ridFrom"]?.stringValue == "\(Self.system)|T-3")
        #expect(try TestSupport.report(named)[0]["rid"] == nil)
    }

    /// Two people with one identifier in one run: both cards would share a rid; the second is flagged,
    /// and the summary says so. One person's two cards (same identifier, same person) are not.
    @Test func twoPeopleWithOneIdentifierAreReported() throws {
        let s = try Self.setup()
        let lines = [
            Self.bundle(family: "Gamma", birthDate: "1990-03-03", identifiers: [(Self.system, "G-1")]),
            Self.bundle(family: "Gamma", birthDate: "1990-03-03", identifiers: [(Self.system, "G-1")]),
            Self.bundle(family: "Delta", birthDate: "1991-04-04", identifiers: [(Self.system, "G-1")]),
        ]
        let input = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "in.ndjson", in: s.dir)
        let out = s.dir.appendingPathComponent("out")
        let run = try Self.issue(s, out: out, inputs: [input])
        let report = try TestSupport.report(out)
        let rids = report.compactMap { $0["rid"]?.stringValue }
        #expect(rids.count == 3 && Set(rids).count == 1)
        func messages(_ line: JSONValue) -> [String] {
            (line["warnings"]?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }
        }
        #expect(!messages(report[1]).contains { $0.contains("Two people share one identifier") })
        #expect(
            messages(report[2]).contains {
                $0.contains("differs from the one at report line 1") && $0.contains("Two people share one identifier")
            })
        #expect(run.stderr.contains("1 record shares its vc.rid with another person's"), "\(run.stderr)")
    }

    /// A run without a rid secret says once that its cards cannot be revoked one by one.
    @Test func issueWithoutRidSecretSaysSoOnce() throws {
        let dir = try TestSupport.tempDir("rid")
        let key = try TestSupport.demoKey(in: dir)
        let run = try SiteTestSupport.issueSample(key: key, out: dir.appendingPathComponent("out"))
        let warning = "no --rid-secret: the cards get no vc.rid, so none can be revoked by itself"
        #expect(run.stderr.components(separatedBy: warning).count == 2, "\(run.stderr)")
        #expect(
            try TestSupport.report(dir.appendingPathComponent("out")).allSatisfy {
                $0["rid"] == nil && $0["kid"] == .string(DemoKey.kid)
            })
    }
}
