import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

/// What `--help` and the README say, held against what the program does.
@Suite struct HelpTruthTests {
    /// `healthcards --help`: every command's summary starts in one column, and the exit statuses include
    /// 130/143 (an interrupted `issue`).
    @Test func mainHelpIsAlignedAndListsEveryExitStatus() throws {
        let help = try TestSupport.cli(["--help"]).stdout
        let list = help.components(separatedBy: "Commands:\n")[1].components(separatedBy: "\n\n")[0]
        let columns = list.split(separator: "\n").map { line -> Int in
            let afterName = line.drop { $0 == " " }.drop { $0 != " " }
            return line.count - afterName.drop { $0 == " " }.count
        }
        #expect(columns.count == 10 && Set(columns).count == 1, "summaries start at columns \(columns):\n\(list)")
        #expect(help.contains("130/143 issue or print was interrupted by SIGINT/SIGTERM"), "\(help)")
    }

    /// `site --help` says the files are world-readable (0644, folders 0755); they are, the issuer record too.
    @Test func siteFilesAreAsWorldReadableAsTheHelpSays() throws {
        let help = try TestSupport.cli(["site", "--help"]).stdout
        #expect(help.contains("Files are world-readable (0644, folders 0755)"))
        let dir = try TestSupport.tempDir("site-modes")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir).path
        let site = dir.appendingPathComponent("site")
        let run = try OutputSafetyTests.withUmask(
            "077", ["site", "--out", site.path, "--issuer", SiteTestSupport.issuer, "--crl", key])
        #expect(run.status == 0, "\(run.stderr)")
        let enumerator = try #require(FileManager.default.enumerator(atPath: site.path))
        var files = 0
        while let name = enumerator.nextObject() as? String {
            let path = site.path + "/" + name
            let mode = try #require(FileIO.mode(path))
            if FileIO.isDirectory(path) {
                #expect(mode == 0o755, "\(name): \(String(mode, radix: 8))")
            } else {
                files += 1
                #expect(mode == 0o644, "\(name): \(String(mode, radix: 8))")
            }
        }
        #expect(FileManager.default.fileExists(atPath: site.path + "/" + SiteRecord.fileName))
        #expect(files >= 6)
    }

    /// `--rid-secret` is optional for `issue` (a warning without it) and shown so: bracketed and recommended,
    /// in the README's synopsis and in `issue --help`.
    @Test func ridSecretIsShownAsRecommended() throws {
        let readme = try VerifyFixtures.text(VerifyFixtures.repoRoot.appendingPathComponent("README.md"))
        let synopsis = try #require(readme.split(separator: "\n").first { $0.hasPrefix("healthcards issue ") })
        #expect(synopsis.contains("[--rid-secret FILE]"), "\(synopsis)")
        #expect(readme.contains("--rid-secret is recommended"))
        #expect(!readme.contains("a second run into the same `--out` is\nrefused,"))
        let help = try TestSupport.cli(["issue", "--help"]).stdout
        #expect(help.contains("Usage: healthcards issue --issuer URL --key KEYFILE [--rid-secret FILE]"))
        #expect(help.contains("--rid-secret is recommended"))
    }
}
