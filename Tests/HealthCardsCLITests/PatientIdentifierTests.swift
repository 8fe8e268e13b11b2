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

/// Bundle input with `--rid-secret`: the rid comes from `Patient.identifier`, and the card does not carry it (the
/// IG's data-minimization and US Patient profiles leave it out; our validator warns `PATIENT_IDENTIFIER`, since it
/// shows the issuer's record numbers to every verifier). Through the CLI.
@Suite struct PatientIdentifierTests {
    @Test func theRidComesFromTheIdentifierThatTheCardNoLongerCarries() throws {
        let s = try RevocationIdentityTests.setup()
        let system = RevocationIdentityTests.system
        let input = try TestSupport.write(
            RevocationIdentityTests.bundle(family: "Alpha", birthDate: "1970-01-01", identifiers: [(system, "A-1")])
                + "\n", to: "export.ndjson", in: s.dir)
        let out = s.dir.appendingPathComponent("out")
        try RevocationIdentityTests.issue(s, out: out, inputs: [input])
        let line = try TestSupport.report(out)[0]
        let payload = try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "export-1"))
        let patient = try #require(payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?[0]?["resource"])
        #expect(patient["resourceType"] == "Patient")
        #expect(patient["identifier"] == nil)
        #expect(patient["name"]?[0]?["family"] == "Alpha")
        // The rid is what it was when the card carried the identifier: HMAC of system|value.
        let rid = try RID.derive(secret: try RIDSecretFile.read(s.secret), kid: DemoKey.kid, patientID: "\(system)|A-1")
        #expect(payload["vc"]?["rid"]?.stringValue == rid)
        #expect(line["rid"]?.stringValue == rid && line["ridFrom"]?.stringValue == "\(system)|A-1")
        // No PATIENT_IDENTIFIER warning, at issue or from verify.
        #expect(line["warnings"]?.arrayValue?.isEmpty == true, "\(line)")
        let verify = try SiteTestSupport.cli(["verify", "--jwks", s.site.path, out.path])
        #expect(
            !verify.stdout.contains("PATIENT_IDENTIFIER") && verify.stdout.contains(" 0 warning(s)"), "\(verify.stdout)"
        )
        // And revoking by the identifier revokes this card.
        let revoke = try SiteTestSupport.cli(
            [
                "revoke", "--site", s.site.path, "--key", s.key, "--rid-secret", s.secret, "--report",
                out.path + "/report.ndjson", "--id", "\(system)|A-1",
            ])
        #expect(revoke.stdout.hasPrefix("revoked \(rid) (patient \(system)|A-1)\n"), "\(revoke.stdout)")
    }

    /// Without a rid secret the identifier is dropped as well: it is minimization, not a side effect of revocation.
    @Test func theIdentifierIsDroppedWithoutARidSecretToo() throws {
        let dir = try TestSupport.tempDir("identifier")
        let key = try TestSupport.demoKey(in: dir)
        let input = try TestSupport.write(
            RevocationIdentityTests.bundle(
                family: "Beta", birthDate: "1980-02-02", identifiers: [(RevocationIdentityTests.system, "B-2")]),
            to: "one.json", in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.cli(
            ["issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--out", out.path, "--no-qr", "--quiet", input])
        let payload = try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "one-1"))
        #expect(payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?[0]?["resource"]?["identifier"] == nil)
        #expect(payload["vc"]?["rid"] == nil)
    }
}
