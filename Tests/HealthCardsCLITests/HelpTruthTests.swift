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
        #expect(columns.count == 14 && Set(columns).count == 1, "summaries start at columns \(columns):\n\(list)")
        #expect(help.contains("130/143 issue, print or fixtures was interrupted by SIGINT/SIGTERM"), "\(help)")
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

    /// The options of a `--help`: lines of its option table that start with `--name` (or `-x, --name`).
    static func options(_ help: String) -> Set<String> {
        Set(
            help.split(separator: "\n").compactMap { line -> String? in
                let trimmed = line.drop { $0 == " " }.replacingOccurrences(of: "-h, ", with: "")
                guard trimmed.hasPrefix("--") else { return nil }
                return String(trimmed.prefix { $0 != " " })
            })
    }

    /// `link --help` lists every option of each `link COMMAND --help` (its man page is the one for all of them).
    @Test func linkHelpListsEveryCommandsOptions() throws {
        let all = Self.options(try TestSupport.cli(["link", "--help"]).stdout)
        for command in ["create", "update", "deactivate", "list", "audit"] {
            let run = try TestSupport.cli(["link", command, "--help"])
            #expect(run.status == 0 && run.stdout.hasPrefix("Usage: healthcards link \(command) "))
            let own = Self.options(run.stdout)
            #expect(own.contains("--db") && own.contains("--help"), "\(command): \(own)")
            #expect(own.isSubset(of: all), "link \(command) --help lists \(own.subtracting(all)), link --help does not")
        }
    }

    /// `serve --help` and `cards --help` list every option the commands accept (issue 24's among them).
    @Test func serveAndCardsHelpListTheirOptions() throws {
        let serve = try TestSupport.cli(["serve", "--help"]).stdout
        for option in [
            "--cards OUT", "--site SITE", "--auth-issuer URL", "--auth-jwks FILE", "--audience URL", "--auth-authorize URL",
            "--auth-token URL", "--no-authorization-for-testing",
        ] {
            #expect(serve.contains("\n  " + option), "serve --help: \(option)")
        }
        let cards = try TestSupport.cli(["cards", "import", "--help"])
        #expect(cards.status == 0 && cards.stdout.hasPrefix("Usage: healthcards cards import --db DB (--site SITE | --accept-unverified-cards) OUT..."))
        for option in ["--db DB", "--site SITE", "--accept-unverified-cards", "-h, --help"] { #expect(cards.stdout.contains("\n  " + option), "\(option)") }
        let unknown = try TestSupport.cli(["cards", "import", "--db", "sqlite:/nonexistent/x.db", "--frobnicate", "x"])
        #expect(unknown.status == 2)
    }

    /// The defaults `serve --help` states are the ones a server started without options reports in its start line.
    @Test func serveHelpStatesTheDefaultsItRunsWith() throws {
        let help = try TestSupport.cli(["serve", "--help"]).stdout
        let dir = try TestSupport.tempDir("serve-defaults")
        let server = try ServerProcess(db: "sqlite:" + dir.appendingPathComponent("links.db").path, in: dir)
        let start = try #require(try server.logLines().first { $0["event"] == "start" })
        #expect(server.stop() == 0)
        let threads = try #require(int(start["threads"]))
        #expect(help.contains("(default \(threads): four per core, at least 16)"))
        // Each option's paragraph of the table (from "  --name" to the next option) states its default.
        let stated = [
            ("timeoutSeconds", "--timeout"), ("maxConnections", "--max-connections"),
            ("maxConnectionsPerClient", "--max-connections-per-client"), ("locationLifetimeSeconds", "--location-lifetime"),
            ("pollIntervalSeconds", "--poll-interval"), ("requestDeadlineSeconds", "--request-deadline"),
            ("requestBudgetPerMinute", "--request-budget"),
        ]
        for (field, option) in stated {
            let value = try #require(int(start[field]), "\(field)")
            let paragraph = try #require(
                help.components(separatedBy: "\n  \(option) ").dropFirst().first?.components(separatedBy: "\n  --").first,
                "\(option)")
            #expect(paragraph.contains("(default \(value)"), "\(option): the server runs with \(value); help: \(paragraph)")
        }
        #expect(start["singleUseLocations"] == .bool(false))
    }
}

