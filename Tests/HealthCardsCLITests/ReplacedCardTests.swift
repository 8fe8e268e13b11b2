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

/// A re-run after a data correction replaces the card: the report and summary say so (the old card stays valid
/// unless revoked with `--before`), and each printed card or link beside it that still holds the old card is
/// named, with the command that refreshes it. Through the CLI.
@Suite struct ReplacedCardTests {
    @Test func aCorrectedRecordSaysItsCardWasReplacedAndNamesWhatStillHoldsTheOldOne() throws {
        let dir = try TestSupport.tempDir("replaced")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let sample = try VerifyFixtures.text(
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv"))
        let csv = try TestSupport.write(sample, to: "export.csv", in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", csv: csv, key: key, site: site, out: out,
            extra: ["--rid-secret", secret, "--pdf", "--no-qr"])
        let oldCard = try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")
        let oldPDF = try SiteTestSupport.bytes(out.path + "/pdf/P-1001.pdf")

        // One lot number of P-1001 corrected; the run has neither --pdf nor --shl.
        #expect(sample.contains("011J20A"))
        try TestSupport.write(sample.replacingOccurrences(of: "011J20A", with: "011J20B"), to: "export.csv", in: dir)
        let run = try SiteTestSupport.cli(
            [
                "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--site", site, "--rid-secret", secret,
                "--template", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path,
                "--out", out.path, "--nbf", "1700000100", "--no-qr", csv,
            ])
        #expect(
            run.stderr.contains(
                "1 card was replaced because its record changed: the old card stays valid unless revoked (the cards of the person "
                    + "issued before the new card's nbf"
            ), "\(run.stderr)")
        #expect(run.stderr.contains("2 printed cards or links still hold a replaced card"), "\(run.stderr)")
        let report = try TestSupport.report(out)
        let line = try #require(report.first { $0["id"] == "P-1001" })
        #expect(line["replaced"] == "recordChanged")
        #expect(report.filter { $0["replaced"] != nil }.count == 1)
        #expect(report.filter { $0["alreadyIssued"] == .bool(true) }.count == 3)
        let warnings = (line["warnings"]?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }
        #expect(
            warnings.contains {
                $0.hasPrefix(
                    "cards/P-1001.smart-health-card replaced the card of an earlier run (nbf 1700000000) because its record changed. The old card stays valid"
                )
                    && $0.contains("the cards of patient id 'P-1001' issued before 1700000100")
                    && $0.contains("`healthcards revoke --site SITE --key KEY --rid-secret FILE --report REPORT --id ID --before NBF`")
            }, "\(warnings)")
        #expect(
            warnings.contains { $0.hasPrefix("pdf/P-1001.pdf still shows the replaced card; print \(out.path)/cards/P-1001.smart-health-card again") },
            "\(warnings)")
        let linkWarning = try #require(
            warnings.first { $0.hasPrefix("shl/P-1001.txt is the SMART Health Link of the replaced card") })
        #expect(try SiteTestSupport.bytes(out.path + "/pdf/P-1001.pdf") == oldPDF)

        // The old card still verifies (it is not revoked), and the link's file still holds it.
        let newCard = try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")
        #expect(newCard != oldCard)
        let link = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001"))
        let linkKey = try #require(AES256Key.decode(base64url: link.key))
        func linked() throws -> [UInt8] {
            let file = try SHLTestSupport.siteFile(of: link.text, site: site)
            return try JWE(compact: try VerifyFixtures.text(URL(fileURLWithPath: file))).decrypt(key: linkKey).plaintext
        }
        #expect(try linked() == oldCard)

        // The warning names the card, base URL and site; the command line's hint the command, which re-encrypts
        // the new card under the same link.
        #expect(
            linkWarning.contains(
                "make the link of \(out.path)/cards/P-1001.smart-health-card again with base URL \(SHLTestSupport.base) into site \(site)"),
            "\(linkWarning)")
        #expect(linkWarning.contains("`healthcards shl --base-url BASE_URL --site SITE CARD`"), "\(linkWarning)")
        let arguments = ["shl", "--base-url", SHLTestSupport.base, "--site", site, out.path + "/cards/P-1001.smart-health-card"]
        try SiteTestSupport.cli(arguments)
        #expect(try linked() == newCard)
        #expect(try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001")).key == link.key)
    }
}
