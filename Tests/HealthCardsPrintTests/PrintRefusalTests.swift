import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// What `healthcards print` says on stderr, which often ends up in a cron log: that signatures go
/// unchecked without `--jwks` (once), and, for a card it refuses, the file and the finding codes, never
/// the person's name, birth date or doses. Through the real CLI.
@Suite struct PrintRefusalTests {
    /// A card of Ada Testperson (born 1960-01-01) with its signature altered, and one whose name part holds a
    /// control character (`STRING_CONTROL_CHARACTER`, whose message quotes the name part), both signed by the
    /// forge's key; its key set.
    static func cards() throws -> (forge: VerifyForge, altered: String, badName: String, keySet: String) {
        let forge = try VerifyForge()
        let good = try forge.jws(claims: VerifyForge.claims())
        let parts = good.split(separator: ".").map(String.init)
        var signature = Array(parts[2])
        signature[10] = signature[10] == "A" ? "B" : "A"
        let altered = try forge.card("\(parts[0]).\(parts[1]).\(String(signature))", "altered.smart-health-card")
        var bundle = VerifyForge.bundle().objectValue!
        VerifyForge.changing(&bundle, "Patient") {
            $0["name"] = [.object(["family": "Testperson\u{7}", "given": ["Ada"]])]
        }
        let badName = try forge.card(
            try forge.jws(claims: VerifyForge.claims(bundle: .object(bundle))), "bad-name.smart-health-card")
        return (forge, altered, badName, try forge.writeKeySet())
    }

    /// Without --jwks a card whose signature was altered prints like any other: the run says once that
    /// signatures are not checked.
    @Test(.enabled(if: PDFTools.available, PDFTools.missing))
    func withoutKeysItWarnsOnce() throws {
        let (forge, altered, _, _) = try Self.cards()
        let other = try forge.card(try forge.jws(claims: VerifyForge.claims()), "other.smart-health-card")
        let run = try TestSupport.cli(["print", "--out", forge.dir.appendingPathComponent("pdf").path, altered, other])
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.stderr.components(separatedBy: "warning: no --jwks: the cards' signatures are not checked")
        #expect(warnings.count == 2, "expected the warning once:\n\(run.stderr)")
        #expect(run.stderr.contains("print: 2 card(s) printed"), "\(run.stderr)")
        // With the key set, no such warning, and the altered card is refused.
        let keyed = try TestSupport.cli([
            "print", "--jwks", try forge.writeKeySet(), "--out", forge.dir.appendingPathComponent("pdf2").path, altered,
        ])
        #expect(keyed.status == 1)
        #expect(!keyed.stderr.contains("no --jwks"), "\(keyed.stderr)")
    }

    /// A refused card: stderr names the file and each error's code and place; no name, birth date or dose.
    @Test func refusalsKeepHealthDataOutOfStderr() throws {
        let (forge, altered, badName, keySet) = try Self.cards()
        let run = try TestSupport.cli([
            "print", "--jwks", keySet, "--out", forge.dir.appendingPathComponent("pdf").path, altered, badName,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("not printed: \(altered)"), "\(run.stderr)")
        #expect(run.stderr.contains("error SIG_INVALID at signature: the signature does not verify"), "\(run.stderr)")
        #expect(run.stderr.contains("not printed: \(badName)"), "\(run.stderr)")
        #expect(
            run.stderr.contains("error STRING_CONTROL_CHARACTER at Bundle.entry[0].resource.name[0].family"),
            "\(run.stderr)")
        for data in ["Testperson", "Ada", "1960-01-01", "2021-01-15", "2021-01-20", "CVX 207", "ABC General Hospital"] {
            #expect(!run.stderr.contains(data), "'\(data)' in stderr:\n\(run.stderr)")
        }
        // verify itself still shows everything, on stdout, when asked.
        let verify = try TestSupport.cli(["verify", "--jwks", keySet, badName])
        #expect(verify.stdout.contains("Testperson"))
    }
}
