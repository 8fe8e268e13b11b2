import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures
import HealthCardsTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// FIFOs, devices, sockets and links out of a folder, where a command expects a regular file: each is
/// refused by name (or skipped by a walk) and no command waits on it. Through the real CLI, each run with
/// a deadline: before the fix these runs blocked in open(2) forever.
@Suite struct SpecialFileTests {
    /// Runs `healthcards ARGS`, killing it after `seconds`; `timedOut` says whether it had to be killed.
    static func cli(_ arguments: [String], seconds: Double = 20) throws -> (run: TestSupport.Run, timedOut: Bool) {
        let (process, outURL, errURL) = try TestSupport.start(
            arguments, log: "healthcards", in: try TestSupport.tempDir("special-out"))
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        let timedOut = process.isRunning
        if timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let run = TestSupport.Run(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
        return (run, timedOut)
    }

    static func fifo(_ name: String, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent(name).path
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    static let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
    static let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path

    /// `issue` with a FIFO as its input, key, revocation secret or template: refused at once (exit 2), naming
    /// what the path is, and nothing is written into --out.
    @Test func issueRefusesFIFOsByName() throws {
        let dir = try TestSupport.tempDir("special-issue")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        _ = try TestSupport.cli(["keygen", "--rid-secret", secret])
        let fifo = try Self.fifo("export.csv", in: dir)
        let out = dir.appendingPathComponent("out")
        func issue(
            key: String = key, secret: String = secret, template: String = Self.template, input: String = Self.sample
        )
            -> [String]
        {
            [
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--rid-secret", secret,
                "--template", template, "--out", out.path, "--quiet", input,
            ]
        }
        let cases: [(arguments: [String], message: String)] = [
            (issue(input: fifo), "input \(fifo) is a FIFO (named pipe), not a regular file"),
            (issue(key: fifo), "key file \(fifo) is a FIFO (named pipe), not a regular file"),
            (issue(secret: fifo), "revocation secret \(fifo) is a FIFO (named pipe), not a regular file"),
            (issue(template: fifo), "cannot read \(fifo): it is a FIFO (named pipe), not a regular file"),
        ]
        for (arguments, message) in cases {
            let (run, timedOut) = try Self.cli(arguments)
            #expect(!timedOut, "healthcards waited on the FIFO: \(arguments)")
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(
                !FileManager.default.fileExists(atPath: out.path), "--out was written: \(BatchTestSupport.tree(out))")
        }
    }

    /// A FIFO left where `issue` writes a card (or `shl` a link text): writing opened it and waited for a reader
    /// forever, and `issue`, waiting for that worker, then ignored SIGTERM. Now the write fails at once naming the
    /// FIFO (exit 2), and the other cards are whole.
    @Test func aFIFOAtAnOutputPathIsNotWaitedOn() throws {
        let dir = try TestSupport.tempDir("special-output")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out.appendingPathComponent("cards"), withIntermediateDirectories: true)
        let fifo = try Self.fifo("cards/P-1001.smart-health-card", in: out)
        let (run, timedOut) = try Self.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template", Self.template, "--out",
            out.path, "--quiet", "--jobs", "1", "--nbf", "1700000000", Self.sample,
        ])
        #expect(!timedOut, "issue waited on the FIFO")
        #expect(run.status == 2, "\(run.stderr)")
        #expect(
            run.stderr.contains("cannot write \(fifo): it is a FIFO (named pipe) and nothing is reading it"), "\(run.stderr)")
        #expect(FileKind.of(fifo) == .fifo)
    }

    /// A PKCS#11 module path that is a FIFO is refused by name before it is loaded (dlopen would wait on it).
    @Test func pkcs11ModuleFIFOIsRefused() throws {
        let dir = try TestSupport.tempDir("special-module")
        let module = try Self.fifo("module.so", in: dir)
        let (run, timedOut) = try Self.cli([
            "jwks", "pkcs11:token=t;object=o;type=public?module-path=\(module)", "--out", "-",
        ])
        #expect(!timedOut, "healthcards waited on the FIFO")
        #expect(run.status == 2)
        #expect(run.stderr.contains("PKCS#11 module \(module) (from module-path) is a FIFO (named pipe)"), "\(run.stderr)")
    }

    /// A device or a folder as the revocation secret is named as what it is, not given `chmod 600` advice.
    @Test func secretThatIsNoFileIsNamed() throws {
        let dir = try TestSupport.tempDir("special-secret")
        let key = try TestSupport.demoKey(in: dir)
        let folder = dir.appendingPathComponent("keys").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o755)
        for (path, what) in [("/dev/null", "is a character device"), (folder, "is a folder")] {
            let (run, timedOut) = try Self.cli([
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--rid-secret", path, "--template",
                Self.template, "--out", dir.appendingPathComponent("out").path, Self.sample,
            ])
            #expect(!timedOut)
            #expect(run.status == 2)
            #expect(run.stderr.contains("revocation secret \(path) \(what), not a regular file"), "\(run.stderr)")
            #expect(!run.stderr.contains("chmod"), "\(run.stderr)")
        }
    }

    /// A missing input and a dangling link are both named as what they are, with the same exit status (2),
    /// before anything is written.
    @Test func missingAndDanglingInputsAreNamed() throws {
        let dir = try TestSupport.tempDir("special-missing")
        let key = try TestSupport.demoKey(in: dir)
        let missing = dir.appendingPathComponent("missing.csv").path
        let dangling = dir.appendingPathComponent("dangling.csv").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "gone.csv")
        let folder = dir.appendingPathComponent("folder.csv").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let cases = [
            (missing, "input \(missing) does not exist"),
            (dangling, "input \(dangling) is a symbolic link to gone.csv, which does not exist"),
            (folder, "input \(folder) is a folder, not a regular file"),
        ]
        for (input, message) in cases {
            let out = dir.appendingPathComponent("out")
            let (run, _) = try Self.cli([
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template", Self.template, "--out",
                out.path, "--quiet", input,
            ])
            #expect(run.status == 2, "\(input): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }

    /// `verify DIR`: a FIFO, a link to `/dev` and a link to `/` in the folder are skipped (said once, in the
    /// text and in --json), the card beside them is checked, and the walk ends. A link to a folder inside the
    /// tree is walked under its own name only. A FIFO or a dangling link given as a PATH is named.
    @Test func verifyWalkSkipsSpecialFilesAndLinksOut() throws {
        let f = try OutputSafetyTests.keySetFixture()
        let dir = f.dir.appendingPathComponent("cards")
        let out = f.dir.appendingPathComponent("issued")
        try SiteTestSupport.issueSample(key: f.key, out: out)
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("inner"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: out.appendingPathComponent("cards/P-1001.smart-health-card").path,
            toPath: dir.appendingPathComponent("inner/P-1001.smart-health-card").path)
        let fifo = try Self.fifo("pipe.smart-health-card", in: dir)
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("dev").path, withDestinationPath: "/dev")
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("root").path, withDestinationPath: "/")
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("again").path, withDestinationPath: "inner")
        let jwks = f.dir.appendingPathComponent("jwks.json").path
        try SiteTestSupport.cli(["jwks", f.key, "--out", jwks])

        let (text, textTimedOut) = try Self.cli(["verify", "--jwks", jwks, "--now", "1800000000", dir.path])
        #expect(!textTimedOut, "verify did not end")
        #expect(text.status == 0, "\(text.stdout)\(text.stderr)")
        #expect(text.stdout.contains("verify: 1 credential(s) checked, 0 error(s)"), "\(text.stdout)")
        let skippedLines = text.stdout.split(separator: "\n").filter { $0.hasPrefix("verify: skipped") }
        #expect(skippedLines.count == 1, "\(text.stdout)")
        let line = String(skippedLines.first ?? "")
        #expect(line.contains("skipped 3 path(s)"), "\(line)")
        #expect(line.contains("\(dir.path)/dev (a symbolic link to the folder /dev, outside \(dir.path))"), "\(line)")
        #expect(line.contains("\(dir.path)/root (a symbolic link to the folder /, outside \(dir.path))"), "\(line)")
        #expect(line.contains("\(fifo) (a FIFO (named pipe))"), "\(line)")
        #expect(!line.contains("again"), "a link inside the tree is walked, not reported: \(line)")

        let (json, jsonTimedOut) = try Self.cli(["verify", "--json", "--jwks", jwks, "--now", "1800000000", dir.path])
        #expect(!jsonTimedOut)
        let summary = try JSONParser.parse(Array(json.stdout.utf8))["summary"]
        #expect(summary?["credentials"] == .integer(1))
        let skipped = summary?["skipped"]?.arrayValue ?? []
        #expect(skipped.compactMap { $0["path"]?.stringValue } == [dir.path + "/dev", fifo, dir.path + "/root"])

        // Given as PATHs: the FIFO is named (never opened), the dangling link is a usage error.
        let (given, givenTimedOut) = try Self.cli(["verify", fifo])
        #expect(!givenTimedOut)
        #expect(given.status == 1)
        #expect(given.stdout.contains("FILE_UNREADABLE"), "\(given.stdout)")
        #expect(given.stdout.contains("\(fifo) is a FIFO (named pipe), not a regular file"), "\(given.stdout)")
        let dangling = f.dir.appendingPathComponent("dangling").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "nowhere")
        let (missing, _) = try Self.cli(["verify", dangling])
        #expect(missing.status == 2)
        #expect(
            missing.stderr.contains("\(dangling) is a symbolic link to nowhere, which does not exist"),
            "\(missing.stderr)")
        // A --jwks that is a FIFO is refused by name.
        let (keySet, keySetTimedOut) = try Self.cli(["verify", "--jwks", fifo, dir.path])
        #expect(!keySetTimedOut)
        #expect(keySet.status == 2)
        #expect(keySet.stderr.contains("--jwks \(fifo) is a FIFO (named pipe), not a regular file"), "\(keySet.stderr)")
    }

    /// A file whose name is not UTF-8 (Latin-1 `caf\xE9`, as a Windows share writes it): Swift reads such a name
    /// with U+FFFD in it, a path no call can open. A folder walk said "FILE_UNREADABLE … it does not exist" (an
    /// error, exit 1, beside a valid card) and the name given as an argument "does not exist"; now the walk skips
    /// it, saying why, and an argument that is not UTF-8 is refused by name with what to do.
    @Test func namesThatAreNotUTF8AreNamed() throws {
        let f = try OutputSafetyTests.keySetFixture()
        let out = f.dir.appendingPathComponent("issued")
        try SiteTestSupport.issueSample(key: f.key, out: out)
        let dir = f.dir.appendingPathComponent("cards")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let card = try [UInt8](Data(contentsOf: out.appendingPathComponent("cards/P-1001.smart-health-card")))
        try Data(card).write(to: dir.appendingPathComponent("P-1001.smart-health-card"))
        let latin1 = Array(dir.path.utf8) + Array("/caf".utf8) + [0xE9] + Array(".smart-health-card".utf8) + [0]
        let fd = latin1.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o600) }
        #expect(fd >= 0)
        #expect(card.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == card.count)
        close(fd)
        let jwks = f.dir.appendingPathComponent("jwks.json").path
        try SiteTestSupport.cli(["jwks", f.key, "--out", jwks])

        let walk = try TestSupport.cli(["verify", "--jwks", jwks, "--now", "1800000000", dir.path])
        #expect(walk.status == 0, "\(walk.stdout)\(walk.stderr)")
        #expect(walk.stdout.contains("verify: 1 credential(s) checked, 0 error(s)"), "\(walk.stdout)")
        #expect(!walk.stdout.contains("FILE_UNREADABLE"), "\(walk.stdout)")
        #expect(
            walk.stdout.contains(
                "skipped 1 path(s) in the folders walked, not read: \(dir.path)/caf\u{FFFD}.smart-health-card (a name that is "
                    + "not UTF-8"), "\(walk.stdout)")

        let given = try TestSupport.run(
            "/bin/sh", ["-c", #"exec "$0" verify "$1/$(printf 'caf\351.smart-health-card')""#, TestSupport.healthcards, dir.path])
        #expect(given.status == 2, "\(given.stderr)")
        #expect(
            given.stderr.contains(
                "argument 2 ('\(dir.path)/caf\u{FFFD}.smart-health-card', \u{FFFD} standing for what cannot be read) is not "
                    + "UTF-8 text"), "\(given.stderr)")
        #expect(given.stderr.contains("convmv -f latin1 -t utf8"), "\(given.stderr)")
        #expect(!given.stderr.contains("does not exist"), "\(given.stderr)")
    }

    /// The library's reads take regular files only (a device here: a FIFO would block the test itself
    /// without the fix; the CLI tests above cover FIFOs with a deadline).
    @Test func readsRefuseDevices() throws {
        let dir = try TestSupport.tempDir("special-read")
        let fifo = try Self.fifo("p.csv", in: dir)
        #expect(FileKind.of(fifo) == .fifo)
        #expect(FileKind.of("/dev/null") == .characterDevice)
        #expect(FileKind.of(dir.path) == .folder)
        #expect(FileKind.of(dir.appendingPathComponent("none").path) == .missing)
        #expect(throws: HealthCardError(.io, "cannot read /dev/null: it is a character device, not a regular file")) {
            try FileIO.read("/dev/null")
        }
        #expect(throws: HealthCardError.self) { try CSVReader(path: "/dev/null") }
    }
}
