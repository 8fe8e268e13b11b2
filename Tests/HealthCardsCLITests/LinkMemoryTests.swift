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

/// What an output folder remembers about its SMART Health Links: a withdrawn link stays withdrawn (no new link by
/// the next run unless the operator names the person), and a link text is never overwritten because a run was
/// given another copy of the site. Through the CLI.
@Suite struct LinkMemoryTests {
    struct Clinic {
        let dir: URL
        let site: String
        let key: String
        let out: URL
        func text(_ id: String) throws -> String { try SHLTestSupport.linkText(out, id: id) }
        func siteFiles(_ site: String? = nil) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: (site ?? self.site) + "/shl")) ?? [])
                .filter { SHLDestination.isFileName($0) }.sorted()
        }
        func line(_ id: String) throws -> JSONValue {
            try #require(try TestSupport.report(out).first { $0["id"]?.stringValue == id })
        }
        func warnings(_ id: String) throws -> [String] {
            (try line(id)["warnings"]?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }
        }
    }

    static func clinic() throws -> Clinic {
        let dir = try TestSupport.tempDir("linkmemory")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--no-qr"])
        return Clinic(dir: dir, site: site, key: key, out: out)
    }

    @Test func aWithdrawnLinkStaysWithdrawnUntilTheOperatorNamesThePerson() throws {
        let c = try Self.clinic()
        let before = try c.text("P-1002")
        let withdraw = try SiteTestSupport.cli(["revoke", "--site", c.site, "--link", c.out.path + "/shl/P-1002.txt"])
        #expect(
            withdraw.stdout.contains("recorded the withdrawal in \(c.out.path)/shl/P-1002.withdrawn"),
            "\(withdraw.stdout)")
        let files = c.siteFiles()
        #expect(files.count == 3)

        // The next run (the tester's case: it made the person a new link) makes none, and the report says why.
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: c.key, site: c.site, out: c.out, extra: ["--no-qr"])
        #expect(try c.text("P-1002") == before)
        #expect(c.siteFiles() == files)
        #expect(try c.line("P-1002")["files"] == ["cards/P-1002.smart-health-card"])
        let withdrawnWarnings = try c.warnings("P-1002")
        #expect(
            withdrawnWarnings.contains {
                $0.hasPrefix("no SMART Health Link: the link of this card (shl/P-1002.txt) was withdrawn on ")
                    && $0.contains("--shl-renew ID")
            }, "\(withdrawnWarnings)")
        // `healthcards shl` keeps it withdrawn as well (status 1: no link made).
        let shl = try SiteTestSupport.cli(
            [
                "shl", "--base-url", SHLTestSupport.base, "--site", c.site,
                c.out.path + "/cards/P-1002.smart-health-card",
            ],
            expect: 1)
        #expect(shl.stderr.contains("was withdrawn"), "\(shl.stderr)")
        #expect(c.siteFiles() == files)

        // Named, the person gets a new link (new key and file); the old one stays dead, and the marker is gone.
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: c.key, site: c.site, out: c.out,
            extra: ["--no-qr", "--shl-renew", "P-1002"])
        let renewed = try c.text("P-1002")
        #expect(renewed != before)
        #expect(try SHLinkText.parse(renewed).key != (try SHLinkText.parse(before).key))
        #expect(c.siteFiles().count == 4)
        #expect(!FileManager.default.fileExists(atPath: c.out.path + "/shl/P-1002.withdrawn"))
        #expect(try c.warnings("P-1002").contains { $0.contains("(renewed); the old link stays dead") })
        let verify = try SiteTestSupport.cli([
            "verify", "--jwks", c.site, "--shl-site", c.site, c.out.path + "/shl/P-1002.txt",
        ])
        #expect(verify.stdout.contains(" 0 error(s)"), "\(verify.stdout)")
    }

    /// The tester's case: `shl --site` with another folder laid out for the same issuer overwrote the link text (the
    /// key of a live file lost) and said the old link "stays dead", though its file was live in the real site.
    @Test func anotherCopyOfTheSiteNeverCostsALiveLinkItsKey() throws {
        let c = try Self.clinic()
        let copy = c.dir.appendingPathComponent("copy").path
        try SiteTestSupport.cli(["site", "--out", copy, "--issuer", SHLTestSupport.issuer, c.key])
        let before = try c.text("P-1003")
        let card = c.out.path + "/cards/P-1003.smart-health-card"
        let shlArguments = ["shl", "--base-url", SHLTestSupport.base, "--site", copy, card]

        // The output folder records where its links live: another existing site folder is refused up front.
        let refused = try SiteTestSupport.cli(shlArguments, expect: 2)
        #expect(refused.stderr.contains("were made into the site folder \(c.site)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Give the site folder \(c.site)"), "\(refused.stderr)")
        let issueRefused = try SiteTestSupport.cli(
            [
                "issue", "--issuer", SHLTestSupport.issuer, "--key", c.key, "--site", copy, "--shl",
                SHLTestSupport.base,
                "--template", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path,
                "--out", c.out.path, "--no-qr", "--quiet",
                SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
            ], expect: 2)
        #expect(issueRefused.stderr.contains("were made into the site folder \(c.site)"), "\(issueRefused.stderr)")
        let withdraw = try SiteTestSupport.cli(
            ["revoke", "--site", copy, "--link", c.out.path + "/shl/P-1003.txt"], expect: 2)
        #expect(withdraw.stderr.contains("nothing was deleted"), "\(withdraw.stderr)")
        #expect(try c.text("P-1003") == before)
        #expect(c.siteFiles(copy).isEmpty)
        #expect(c.siteFiles().count == 4)

        // Links made before the folder was recorded: the file is not in the copy, so no new link and the text stays,
        // with a message that is true either way (withdrawn, or another copy of the site).
        try FileManager.default.removeItem(atPath: c.out.path + "/shl/" + SHLSiteRecord.fileName)
        let kept = try SiteTestSupport.cli(shlArguments, expect: 1)
        #expect(
            kept.stderr.contains(
                "is not in \(copy)/shl (withdrawn, or the link was made into another copy of the site); the link text was kept"
            ), "\(kept.stderr)")
        #expect(try c.text("P-1003") == before)
        #expect(c.siteFiles(copy).isEmpty)
        // The real site still opens it.
        let verify = try SiteTestSupport.cli([
            "verify", "--jwks", c.site, "--shl-site", c.site, c.out.path + "/shl/P-1003.txt",
        ])
        #expect(verify.stdout.contains(" 0 error(s)"), "\(verify.stdout)")
    }
}
