import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsTestSupport

/// Health data and private material never land in a published site, whichever command writes them, and a site is
/// never laid out over an `issue` output (`PublishedSiteGuard`). Through the CLI.
@Suite struct WebRootOutputTests {
    /// A site for a new key, and the vaccination sample issued into `out` (outside it).
    static func clinic() throws -> (dir: URL, key: String, site: String, out: URL) {
        let dir = try TestSupport.tempDir("webroot")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, "--issuer", SiteTestSupport.issuer, key.path])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key.path, out: out)
        return (dir, key.path, site, out)
    }

    /// Every output path of health data or private material inside the site is refused with status 2, naming the
    /// option and the site, and nothing is written there.
    @Test func everyHealthDataAndPrivateOutputInsideTheSiteIsRefused() throws {
        let c = try Self.clinic()
        let card = c.out.path + "/cards/P-1001.smart-health-card"
        // A card folder inside the site, for `shl` without --out (its links would go beside it).
        let inSite = c.site + "/drop"
        try FileManager.default.createDirectory(atPath: inSite + "/cards", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: card, toPath: inSite + "/cards/P-1001.smart-health-card")
        let before = BatchTestSupport.tree(URL(fileURLWithPath: c.site))
        let template = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path
        let sample = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path
        let cases: [(option: String, path: String, arguments: [String])] = [
            ("--out", c.site + "/printed", ["print", "--out", c.site + "/printed", card]),
            ("--pdf-combined", c.site + "/all.pdf", ["print", "--pdf-combined", c.site + "/all.pdf", card]),
            (
                "--pdf-combined", c.site + "/batch.pdf",
                [
                    "issue", "--issuer", SiteTestSupport.issuer, "--key", c.key, "--template", template, "--out",
                    c.dir.path + "/out2", "--pdf-combined", c.site + "/batch.pdf", sample,
                ]
            ),
            (
                "--out", c.site + "/fx",
                ["fixtures", "--issuer", SiteTestSupport.issuer, "--key", c.key, "--out", c.site + "/fx"]
            ),
            ("--out", c.site + "/keys/new.pem", ["keygen", "--out", c.site + "/keys/new.pem"]),
            (
                "--rid-secret", c.site + "/.well-known/rid.secret",
                ["keygen", "--rid-secret", c.site + "/.well-known/rid.secret"]
            ),
            (
                "--out", c.site + "/links",
                [
                    "shl", "--base-url", SiteTestSupport.issuer + "/shl", "--site", c.site, "--out", c.site + "/links",
                    card,
                ]
            ),
            (
                "the link folder of CARD", inSite,
                [
                    "shl", "--base-url", SiteTestSupport.issuer + "/shl", "--site", c.site,
                    inSite + "/cards/P-1001.smart-health-card",
                ]
            ),
        ]
        for (option, path, arguments) in cases {
            let run = try SiteTestSupport.cli(arguments, expect: 2)
            #expect(
                run.stderr.contains(option) && run.stderr.contains("\(path) is inside the published site"),
                "\(arguments[0]): \(run.stderr)")
            #expect(run.stderr.contains("nothing was written"), "\(arguments[0])")
        }
        #expect(BatchTestSupport.tree(URL(fileURLWithPath: c.site)) == before)
        #expect(!FileManager.default.fileExists(atPath: c.dir.path + "/out2"))
    }

    /// `site --out` refuses a folder that holds what `issue` writes, at any depth, and writes nothing there; a
    /// folder whose only `cards/` folder holds no card is laid out.
    @Test func siteRefusesAFolderHoldingAnIssueOutput() throws {
        let c = try Self.clinic()
        let key = c.key
        let markers: [(file: String, shown: String)] = [
            ("report.ndjson", "report.ndjson"), (OutputLock.fileName, OutputLock.fileName),
            ("cards/P-1.smart-health-card", "cards/P-1.smart-health-card"), ("pdf/P-1.pdf", "pdf/P-1.pdf"),
            ("shl/P-1.txt", "shl/P-1.txt"), ("nested/deeper/report.ndjson", "report.ndjson"),
        ]
        for (i, (file, shown)) in markers.enumerated() {
            let folder = c.dir.appendingPathComponent("web\(i)")
            try TestSupport.write("x", to: file, in: folder)
            let run = try SiteTestSupport.cli(
                ["site", "--out", folder.path, "--issuer", SiteTestSupport.issuer, key], expect: 2)
            #expect(run.stderr.contains("holds the output of an issue run ("), "\(file): \(run.stderr)")
            #expect(run.stderr.contains("/\(shown))"), "\(file): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder.path + "/.well-known"), "\(file)")
        }
        // The real thing: the issue output itself.
        let run = try SiteTestSupport.cli(["site", "--out", c.out.path, key], expect: 2)
        #expect(run.stderr.contains("\(c.out.path)/report.ndjson"), "\(run.stderr)")
        // Not an issue output: an empty cards/ folder and unrelated files.
        let plain = c.dir.appendingPathComponent("plain")
        try FileManager.default.createDirectory(
            at: plain.appendingPathComponent("cards"), withIntermediateDirectories: true)
        try TestSupport.write("<html></html>", to: "index.html", in: plain)
        try SiteTestSupport.cli(["site", "--out", plain.path, "--issuer", SiteTestSupport.issuer, key])
        #expect(FileManager.default.fileExists(atPath: plain.path + "/.well-known/jwks.json"))
    }
}
