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

/// What `make install` ships beside the binary: `--version`, and the bash completion
/// (`completions/healthcards.bash`) checked against every command's `--help`.
@Suite struct InstallTests {
    static let completion = VerifyFixtures.repoRoot.appendingPathComponent("completions/healthcards.bash").path

    /// `--version` and `-V`: the toolkit version first (what help2man and `make deb` read), the SMART Health
    /// Cards framework version, then each C library's version as the library reports it at run time (libjpeg-turbo
    /// and zxing-cpp, which have no run-time call: as built with), which on Debian equals the version of its -dev
    /// package (`pkg-config --modversion`).
    @Test func versionNamesTheSpecAndTheRuntimeLibraries() throws {
        let long = try TestSupport.cli(["--version"])
        let short = try TestSupport.cli(["-V"])
        #expect(long.status == 0 && short.status == 0)
        #expect(long.stdout == short.stdout)
        let lines = long.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "healthcards \(Versions.toolkit)")
        #expect(lines.dropFirst().first == "SMART Health Cards framework 1.4.0")
        let modules = [
            ("OpenSSL", "libcrypto"), ("zlib", "zlib"), ("libqrencode", "libqrencode"), ("libpng", "libpng"),
            ("zbar", "zbar"), ("Cairo", "cairo"), ("Pango", "pango"), ("librsvg", "librsvg-2.0"),
            ("libmicrohttpd", "libmicrohttpd"), ("SQLite", "sqlite3"), ("libpq", "libpq"),
            // No run-time version call: the version built with, marked so.
            ("libjpeg-turbo", "libjpeg"), ("zxing-cpp", "zxing"),
        ]
        let builtWith: Set<String> = ["libjpeg-turbo", "zxing-cpp"]
        #expect(Array(lines.dropFirst(2)).map { String($0.prefix { $0 != " " }) } == modules.map(\.0))
        for ((library, module), line) in zip(modules, lines.dropFirst(2)) {
            let installed = try TestSupport.run("/usr/bin/pkg-config", ["--modversion", module])
            #expect(installed.status == 0, "\(installed.stderr)")
            let version = installed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(
                !version.isEmpty && line == "\(library) \(version)" + (builtWith.contains(library) ? " (built with)" : ""),
                "\(line) against pkg-config \(module) \(version)")
        }
    }

    /// The commands of `healthcards --help` (the `Commands:` list).
    static func commands() throws -> [String] {
        let help = try TestSupport.cli(["--help"]).stdout
        let list = help.components(separatedBy: "Commands:\n")[1].components(separatedBy: "\n\n")[0]
        return list.split(separator: "\n").map { String($0.drop { $0 == " " }.prefix { $0 != " " }) }
    }

    /// The options a command's `--help` lists in its option table: lines that start (after indentation) with
    /// `--name` or `-x, --name`.
    static func options(of command: String) throws -> [String] {
        let run = try TestSupport.cli([command, "--help"])
        #expect(run.status == 0)
        let pattern = try Regex("^ {2,}(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)")
        return run.stdout.split(separator: "\n").compactMap { line in
            (try? pattern.prefixMatch(in: line))?.output[1].substring.map(String.init)
        }
    }

    /// Runs the completion function for the words typed so far (the last one is being completed), with
    /// bash-completion loaded when `withBashCompletion` (as an installed system has it) or the file alone,
    /// and the built `healthcards` first on PATH (the completion asks it for its --help).
    static func complete(_ words: [String], withBashCompletion: Bool, cwd: URL? = nil) throws -> [String] {
        let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let script = """
            \(withBashCompletion ? "source /usr/share/bash-completion/bash_completion" : "")
            source '\(completion)'
            PATH='\(TestSupport.binDir.path)':"$PATH"
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            _healthcards healthcards "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let run = try TestSupport.run("/bin/bash", ["-c", script], cwd: cwd)
        #expect(run.status == 0, "\(run.stderr)")
        return run.stdout.split(separator: "\n").map(String.init).sorted()
    }

    static let modes: [Bool] =
        FileManager.default.fileExists(atPath: "/usr/share/bash-completion/bash_completion") ? [false, true] : [false]

    /// `healthcards link` has commands of its own: they complete as the second word, and each one's options
    /// after it, exactly as its own --help lists them.
    @Test(arguments: modes)
    func completionOffersLinkCommandsAndTheirOptions(withBashCompletion: Bool) throws {
        let subcommands = ["audit", "create", "deactivate", "list", "update"]
        #expect(try Self.complete(["healthcards", "link", ""], withBashCompletion: withBashCompletion) == subcommands)
        #expect(try Self.complete(["healthcards", "link", "de"], withBashCompletion: withBashCompletion) == ["deactivate"])
        for sub in subcommands {
            let run = try TestSupport.cli(["link", sub, "--help"])
            let pattern = try Regex("^ {2,}(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)")
            let listed = run.stdout.split(separator: "\n").compactMap { line in
                (try? pattern.prefixMatch(in: line))?.output[1].substring.map(String.init)
            }.sorted()
            let offered = try Self.complete(["healthcards", "link", sub, "--"], withBashCompletion: withBashCompletion)
            #expect(offered == listed, "link \(sub): --help lists \(listed), completion offers \(offered)")
        }
    }

    @Test(arguments: modes)
    func completionOffersEveryOptionEachHelpLists(withBashCompletion: Bool) throws {
        let commands = try Self.commands()
        #expect(commands.count >= 6 && commands.contains("issue"), "\(commands)")
        #expect(
            try Self.complete(["healthcards", ""], withBashCompletion: withBashCompletion)
                == (commands + ["--help", "--version"]).sorted())
        for command in commands {
            let listed = try Self.options(of: command)
            #expect(listed.contains("--help") && listed.count >= 2, "\(command): \(listed)")
            let offered = try Self.complete(["healthcards", command, "--"], withBashCompletion: withBashCompletion)
            #expect(
                Set(listed).subtracting(offered).isEmpty,
                "\(command): --help lists \(listed), completion offers \(offered)")
            #expect(
                Set(offered).subtracting(listed).isEmpty,
                "\(command): completion offers \(offered), --help lists \(listed)")
        }
    }

    @Test(arguments: modes)
    func completionOffersValuesFilesAndFolders(withBashCompletion: Bool) throws {
        let dir = try TestSupport.tempDir("completion")
        try TestSupport.write("", to: "issuer.pem", in: dir)
        try TestSupport.write("", to: "people.csv", in: dir)
        try TestSupport.write("", to: "notes.txt", in: dir)
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("out"), withIntermediateDirectories: true)
        func complete(_ words: [String]) throws -> [String] {
            try Self.complete(words, withBashCompletion: withBashCompletion, cwd: dir)
        }
        #expect(try complete(["healthcards", "issue", "--vc-types", ""]) == ["legacy", "minimal"])
        #expect(try complete(["healthcards", "issue", "--share", ""]) == ["group", "world"])
        #expect(try complete(["healthcards", "issue", "--key", "i"]) == ["issuer.pem"])
        #expect(try complete(["healthcards", "issue", "--out", ""]) == ["out"])
        #expect(try complete(["healthcards", "site", "--out", ""]) == ["out"])
        #expect(try complete(["healthcards", "issue", "--issuer", ""]) == [])
        #expect(try complete(["healthcards", "issue", "--jobs", ""]) == [])
        #expect(try complete(["healthcards", "issue", "--quiet", "p"]) == ["people.csv"])
        #expect(try complete(["healthcards", "issue", "--template", ""]) == ["issuer.pem", "notes.txt", "out", "people.csv"])
        #expect(try complete(["healthcards", "issue", ""]) == ["issuer.pem", "notes.txt", "out", "people.csv"])
        #expect(try complete(["healthcards", "verify", "n"]) == ["notes.txt"])
        #expect(try complete(["healthcards", "is"]) == ["issue"])
        // A command's subcommands, from its own `Commands:` list; then its options and files as usual.
        #expect(try complete(["healthcards", "report", ""]) == ["merge"])
        #expect(try complete(["healthcards", "report", "merge", "--out", "p"]) == ["people.csv"])
        #expect(try complete(["healthcards", "report", "merge", "o"]) == ["out"])
    }
}
