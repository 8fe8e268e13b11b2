import Foundation
import Testing

import HealthCardsCore
import HealthCardsFixtures
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// Issue 33, point 3: `shl --update` keeps what a link holds. A long-term Bundle link made with `issue --pdf
/// --shl-long-term --content bundle` holds the printed card as a DocumentReference; updating it over the unchanged
/// card leaves the file byte for byte (the PDF still in), and says so; over a changed card the old page is left
/// out, with a warning that says what changed. Through the real CLI, decrypted in process.
@Suite struct SHLUpdateKeepsContentTests {
    @Test func anUpdateOfAnUnchangedCardKeepsThePrintedCardAndTheFileBytes() throws {
        let dir = try TestSupport.tempDir("shl-update-keeps")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out,
            extra: ["--shl-long-term", "--content", "bundle", "--pdf", "--no-qr"])
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let linkKey = try #require(AES256Key.decode(base64url: try SHLinkText.parse(text).key))
        let siteFile = try SHLTestSupport.siteFile(of: text, site: site)
        let before = try SiteTestSupport.bytes(siteFile)
        let pdf = try SiteTestSupport.bytes(out.path + "/pdf/P-1001.pdf")
        func printed() throws -> [UInt8]? {
            let file = try SiteTestSupport.bytes(siteFile)
            return SharedBundle.printedCard(in: try JWE(compact: String(decoding: file, as: UTF8.self)).decrypt(key: linkKey).plaintext)
        }
        #expect(try printed() == pdf)

        let card = out.path + "/cards/P-1001.smart-health-card"
        let run = try SiteTestSupport.cli([
            "shl", "--long-term", "--content", "bundle", "--update", "--base-url", SHLTestSupport.base, "--site", site, card,
        ])
        #expect(run.stdout.contains("(unchanged)"), "\(run.stdout)")
        #expect(try SiteTestSupport.bytes(siteFile) == before, "unchanged content leaves the file as it is")
        #expect(try printed() == pdf, "the DocumentReference with the same PDF bytes")

        // The card reissued (another nbf) without --shl: the update encrypts the new card, leaving out the page that
        // shows the old one, and says so.
        let templates = SiteTestSupport.templates
        try SiteTestSupport.cli([
            "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--template",
            templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf", "1700007200",
            "--force", "--quiet", "--no-qr", templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        let changed = try SiteTestSupport.cli([
            "shl", "--long-term", "--content", "bundle", "--update", "--base-url", SHLTestSupport.base, "--site", site, card,
        ])
        #expect(changed.stdout.contains("(content changed"), "\(changed.stdout)")
        #expect(changed.stderr.contains("held the printed card"), "\(changed.stderr)")
        #expect(try printed() == nil)
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == text, "the same link")
    }
}
