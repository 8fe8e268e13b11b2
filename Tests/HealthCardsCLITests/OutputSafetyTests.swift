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

#if canImport(Glibc)
    import Glibc
#endif

/// What the commands do with the paths an operator points them at, and who can read what they write.
/// Through the real CLI. Only links, FIFOs and folders made in temporary folders are written to (and
/// `/dev/null`): the system's `/dev/stdout` is never a target here.
@Suite struct OutputSafetyTests {
    static func lstatMode(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode : nil
    }

    static func inode(_ path: String) -> ino_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_ino : nil
    }

    static func kind(_ path: String) -> mode_t? { lstatMode(path).map { $0 & S_IFMT } }

    /// Runs `healthcards ARGS` through `/bin/sh` with `umask`.
    static func withUmask(_ umask: String, _ arguments: [String]) throws -> TestSupport.Run {
        try TestSupport.run(
            "/bin/sh", ["-c", "umask \(umask); exec \"$0\" \"$@\"", TestSupport.healthcards] + arguments)
    }

    struct KeySet {
        let dir: URL
        let key: String
        let kid: String
    }

    static func keySetFixture() throws -> KeySet {
        let dir = try TestSupport.tempDir("targets")
        let made = try SiteTestSupport.keygen("issuer.pem", in: dir)
        return KeySet(dir: dir, key: made.path, kid: made.kid)
    }

    /// The JWK Set bytes `jwks` writes for the fixture's key (to a plain new file).
    static func expectedBytes(_ f: KeySet) throws -> [UInt8] {
        let plain = f.dir.appendingPathComponent("plain.json").path
        try SiteTestSupport.cli(["jwks", f.key, "--out", plain])
        return try SiteTestSupport.bytes(plain)
    }

    @Test func regularFilesAreReplacedAtomicallyAndLinksFollowed() throws {
        let f = try Self.keySetFixture()
        let expected = try Self.expectedBytes(f)
        #expect(try JWKS(bytes: expected, source: "jwks").keys.map(\.kid) == [f.kid])

        // A regular file: replaced by rename (a new inode), world-readable (it is public).
        let file = try TestSupport.write("old", to: "file.json", in: f.dir)
        let before = Self.inode(file)
        try SiteTestSupport.cli(["jwks", f.key, "--out", file])
        #expect(try SiteTestSupport.bytes(file) == expected)
        #expect(Self.inode(file) != before)
        #expect(FileIO.mode(file) == 0o644)

        // A link to a regular file elsewhere: the target is replaced, the link stays a link.
        let target = try TestSupport.write("old", to: "elsewhere/target.json", in: f.dir)
        let link = f.dir.appendingPathComponent("link.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        try SiteTestSupport.cli(["jwks", f.key, "--out", link])
        #expect(Self.kind(link) == S_IFLNK)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try SiteTestSupport.bytes(target) == expected)
        #expect(
            try FileManager.default.subpathsOfDirectory(atPath: f.dir.path + "/elsewhere").sorted() == ["target.json"])

        // A dangling link (relative): its target is created, the link kept.
        let dangling = f.dir.appendingPathComponent("dangling.json").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "elsewhere/new.json")
        try SiteTestSupport.cli(["jwks", f.key, "--out", dangling])
        #expect(Self.kind(dangling) == S_IFLNK)
        #expect(try SiteTestSupport.bytes(f.dir.path + "/elsewhere/new.json") == expected)

        // A folder, or a link to one: refused, nothing written.
        let folder = f.dir.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let toFolder = f.dir.appendingPathComponent("to-folder").path
        try FileManager.default.createSymbolicLink(atPath: toFolder, withDestinationPath: folder.path)
        let refusedFolder = try SiteTestSupport.cli(["jwks", f.key, "--out", folder.path], expect: 2)
        #expect(refusedFolder.stderr.contains("it is a folder"))
        let refusedLink = try SiteTestSupport.cli(["jwks", f.key, "--out", toFolder], expect: 2)
        #expect(refusedLink.stderr.contains("it is a folder"), "\(refusedLink.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        #expect(Self.kind(toFolder) == S_IFLNK)
    }

    /// FIFOs and character devices are written directly (never renamed over); `-` and a link to this
    /// process's standard output write to standard output.
    @Test func fifosDevicesAndStandardOutputAreWrittenDirectly() throws {
        let f = try Self.keySetFixture()
        let expected = try Self.expectedBytes(f)

        for viaLink in [false, true] {
            let fifo = f.dir.appendingPathComponent("fifo-\(viaLink)").path
            #expect(mkfifo(fifo, 0o600) == 0)
            var out = fifo
            if viaLink {
                out = f.dir.appendingPathComponent("to-fifo").path
                try FileManager.default.createSymbolicLink(atPath: out, withDestinationPath: fifo)
            }
            let got = f.dir.appendingPathComponent("got-\(viaLink)").path
            let reader = Process()
            reader.executableURL = URL(fileURLWithPath: "/bin/sh")
            reader.arguments = ["-c", "cat \"$0\" > \"$1\"", fifo, got]
            try reader.run()
            try SiteTestSupport.cli(["jwks", f.key, "--out", out])
            reader.waitUntilExit()
            #expect(try SiteTestSupport.bytes(got) == expected)
            #expect(Self.kind(fifo) == S_IFIFO)
            if viaLink { #expect(Self.kind(out) == S_IFLNK) }
        }

        // A character device, directly and through a link: it stays the device it was.
        let nullMode = Self.lstatMode("/dev/null")
        let toNull = f.dir.appendingPathComponent("to-null").path
        try FileManager.default.createSymbolicLink(atPath: toNull, withDestinationPath: "/dev/null")
        for out in ["/dev/null", toNull] {
            try SiteTestSupport.cli(["jwks", f.key, "--out", out])
            #expect(Self.lstatMode("/dev/null") == nullMode)
            #expect(Self.kind("/dev/null") == S_IFCHR)
        }
        #expect(Self.kind(toNull) == S_IFLNK)

        // `-`: the key set on stdout, the kids on stderr.
        let dash = try SiteTestSupport.cli(["jwks", f.key, "--out", "-"])
        #expect(Array(dash.stdout.utf8) == expected)
        #expect(dash.stderr.contains(f.kid))

        // A link to /proc/self/fd/1 (what /dev/stdout is), made here: written to stdout, link kept.
        let stdoutLink = f.dir.appendingPathComponent("stdout").path
        try FileManager.default.createSymbolicLink(atPath: stdoutLink, withDestinationPath: "/proc/self/fd/1")
        let viaStdout = try SiteTestSupport.cli(["jwks", f.key, "--out", stdoutLink])
        #expect(viaStdout.stdout.hasPrefix(String(decoding: expected, as: UTF8.self)), "\(viaStdout.stdout)")
        #expect(Self.kind(stdoutLink) == S_IFLNK)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: stdoutLink) == "/proc/self/fd/1")
    }

    /// A private key or rid secret only ever goes to a new regular file: every existing kind of path is
    /// refused (a dangling link's target is not created), and so is standard output.
    @Test func privateKeysGoOnlyToNewRegularFiles() throws {
        let dir = try TestSupport.tempDir("private")
        let existing = try TestSupport.write("keep me", to: "existing.pem", in: dir)
        let dangling = dir.appendingPathComponent("dangling.pem").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: dir.path + "/target.pem")
        let toExisting = dir.appendingPathComponent("to-existing.pem").path
        try FileManager.default.createSymbolicLink(atPath: toExisting, withDestinationPath: existing)
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let cases: [(String, String)] = [
            (existing, "already exists and is a file"), (dangling, "already exists and is a symbolic link"),
            (toExisting, "already exists and is a symbolic link"), (fifo, "already exists and is a FIFO"),
            ("/dev/null", "already exists and is a device"), ("-", "never written to standard output"),
            (dir.path, "is a folder"),
        ]
        for (path, says) in cases {
            for option in ["--out", "--rid-secret"] {
                let run = try SiteTestSupport.cli(["keygen", option, path], expect: 2)
                #expect(run.stderr.contains(says), "\(option) \(path): \(run.stderr)")
                #expect(run.stdout.isEmpty)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/target.pem"))
        #expect(try SiteTestSupport.bytes(existing) == Array("keep me".utf8))
        #expect(Self.kind(fifo) == S_IFIFO)

        // A missing key folder is made 0700, the key 0600, whatever the umask.
        let key = dir.appendingPathComponent("keys/2026/issuer.pem").path
        let made = try Self.withUmask("000", ["keygen", "--out", key])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(FileIO.mode(key) == 0o600)
        #expect(FileIO.mode(dir.path + "/keys") == 0o700 && FileIO.mode(dir.path + "/keys/2026") == 0o700)
        let secret = dir.appendingPathComponent("secrets/rid.secret").path
        #expect(try Self.withUmask("000", ["keygen", "--rid-secret", secret]).status == 0)
        #expect(FileIO.mode(secret) == 0o600 && FileIO.mode(dir.path + "/secrets") == 0o700)
        #expect(try TestSupport.run("/bin/ls", ["-A", dir.path + "/keys/2026"]).stdout == "issuer.pem\n")
    }

    /// Cards, images, the report: 0600 in folders 0700 whatever the umask; --share opens a hand-off folder.
    @Test(
        arguments: [
            ("000", nil, 0o600, 0o700), ("077", "group", 0o640, 0o750), ("000", "world", 0o644, 0o755),
        ] as [(String, String?, Int, Int)])
    func healthDataIsPrivateUnlessShared(umask: String, share: String?, file: Int, folder: Int) throws {
        let dir = try TestSupport.tempDir("modes")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out/batch")
        let run = try Self.withUmask(
            umask,
            [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template",
                SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
                "--quiet", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
            ] + (share.map { ["--share", $0] } ?? []))
        #expect(run.status == 0, "\(run.stderr)")
        let files = BatchTestSupport.tree(out) + [OutputLock.fileName]
        #expect(
            files.contains("report.ndjson") && files.contains("cards/P-1001.smart-health-card")
                && files.contains("qr/P-1001.png"))
        for name in files { #expect(FileIO.mode(out.path + "/" + name).map(Int.init) == file, "\(name)") }
        for name in ["", "/cards", "/qr", "/.."] {
            #expect(FileIO.mode(out.path + name).map(Int.init) == folder, "out\(name)")
        }
    }

    @Test func unknownShareIsRefused() throws {
        let dir = try TestSupport.tempDir("modes")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try SiteTestSupport.issueSample(key: key, out: out, extra: ["--share", "everyone"], expect: 2)
        #expect(run.stderr.contains("--share 'everyone' is not known; expected group"))
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// `issue --out` in a web root (a folder with .well-known/jwks.json or the nginx rules `site`
    /// writes, or below one, or a link into one) is refused with nothing written.
    @Test func issueIntoAPublishedSiteIsRefused() throws {
        let dir = try TestSupport.tempDir("webroot")
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key, "--issuer", SiteTestSupport.issuer])
        let rulesOnly = dir.appendingPathComponent("www")
        try TestSupport.write("# rules", to: HostRules.nginxFileName, in: rulesOnly)
        let link = dir.appendingPathComponent("handoff")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: site.path + "/downloads")
        let cases: [(String, String, String)] = [
            (site.path, site.path, ".well-known/jwks.json"),
            (site.path + "/patients/today", site.path, ".well-known/jwks.json"),
            (rulesOnly.path + "/cards", rulesOnly.path, HostRules.nginxFileName),
            (link.path + "/x", site.path, ".well-known/jwks.json"),
        ]
        for (out, root, marker) in cases {
            let before = BatchTestSupport.tree(dir)
            let run = try SiteTestSupport.issueSample(key: key, out: URL(fileURLWithPath: out), expect: 2)
            #expect(
                run.stderr.contains("is inside the published site \(root) (it holds \(marker))"),
                "\(out): \(run.stderr)")
            #expect(run.stderr.contains("health data"))
            #expect(BatchTestSupport.tree(dir) == before, "\(out)")
        }
        // Beside the site (not in it) is fine.
        try SiteTestSupport.issueSample(key: key, out: dir.appendingPathComponent("private-out"))
    }

    /// A second `issue` into the same --out while the first runs is refused, naming the first's pid;
    /// once the first has ended, the folder is free again.
    @Test func secondConcurrentIssueIsRefusedNamingTheFirst() throws {
        let dir = try TestSupport.tempDir("lock")
        let key = try TestSupport.demoKey(in: dir)
        let csv = try BatchTestSupport.synthetic(patients: 3000, in: dir)
        let out = dir.appendingPathComponent("out")
        let arguments = BatchTestSupport.issueArguments(
            key: key, out: out, csv: csv, extra: ["--jobs", "1", "--quiet"])
        let first = try BatchTestSupport.start(arguments)
        let lockFile = out.appendingPathComponent(OutputLock.fileName).path
        let deadline = Date().addingTimeInterval(60)
        let pid = String(first.processIdentifier)
        while first.isRunning && Date() < deadline
            && (try? String(contentsOfFile: lockFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                != pid
        {
            usleep(10_000)
        }
        #expect(first.isRunning, "the first run ended before the second could start; make the input larger")
        let second = try TestSupport.cli(arguments)
        let stillRunning = first.isRunning
        kill(first.processIdentifier, SIGTERM)
        first.waitUntilExit()
        #expect(second.status == 2)
        if stillRunning {
            #expect(second.stderr.contains("another `healthcards issue` (pid \(pid):"), "\(second.stderr)")
            #expect(second.stderr.contains("is writing into \(out.path) right now"))
        }
        // The first run's end released the lock: a run now proceeds (and resumes what the first made).
        let third = try TestSupport.cli(
            BatchTestSupport.issueArguments(key: key, out: out, csv: csv, extra: ["--no-qr", "--quiet"]))
        #expect(third.status == 0, "\(third.stderr)")
    }
}

/// The output lock within one process: a run of this process that holds it refuses another at once; a lock
/// busy under this process's pid that no run here holds (a child between fork and exec holding a copy of
/// a descriptor already closed) is waited for, not called "another run" (a library user running two
/// batches in turn into one folder, while it starts processes, was refused the second).
@Suite struct OutputLockInProcessTests {
    @Test func aCopyOfAReleasedLockIsWaitedForAndARealHolderRefused() throws {
        let dir = try TestSupport.tempDir("lock")
        var first: OutputLock? = try OutputLock(folder: dir.path, mode: 0o600)
        #expect(throws: HealthCardError.self) { try OutputLock(folder: dir.path, mode: 0o600) }
        withExtendedLifetime(first) {}
        first = nil
        // The copy a child would hold: the lock file locked under this process's pid by a descriptor no
        // OutputLock owns, released a moment later (as the child's exec closes it).
        let path = dir.appendingPathComponent(OutputLock.fileName).path
        let copy = open(path, O_RDWR | O_CLOEXEC)
        #expect(copy >= 0 && flock(copy, LOCK_EX | LOCK_NB) == 0)
        let releaser = Thread {
            usleep(300_000)
            close(copy)
        }
        releaser.start()
        let second = try OutputLock(folder: dir.path, mode: 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "\(getpid())\n")
        withExtendedLifetime(second) {}
    }
}
