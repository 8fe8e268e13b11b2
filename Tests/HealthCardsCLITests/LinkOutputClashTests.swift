import Foundation
import HealthCardsCore
import HealthCardsTestSupport
import Testing

/// `link create --out`/`--qr` never write over what the command reads or keeps. A new-user trial wrote the link's
/// text over the link database itself (every link and access record lost, exit 0) and over the card it was
/// given; now each is refused before the link is made, and nothing is changed.
@Suite struct LinkOutputClashTests {
    @Test func theLinkIsNeverWrittenOverTheDatabaseAnInputOrThePasscode() throws {
        let dir = try TestSupport.tempDir("link-clash")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let database = path("links.db")
        let db = "sqlite:" + database
        let card = path("card.smart-health-card")
        try FileManager.default.copyItem(atPath: ServerTestSupport.card, toPath: card)
        let passcode = path("passcode")
        try FileIO.writeAtomically(Array("pin-1234\n".utf8), to: passcode, access: .ownerOnly)
        try FileManager.default.createSymbolicLink(atPath: path("alias"), withDestinationPath: card)
        let base = ["link", "create", "--db", db, "--base-url", LinkCommandTests.base]
        // One link first, so the database holds something to lose.
        let first = try TestSupport.cli(base + ["--out", path("first.txt"), card])
        #expect(first.status == 0, "\(first.stderr)")
        let cardBytes = try FileIO.read(card)
        let databaseBytes = try FileIO.read(database)

        for (option, target, what) in [
            ("--out", database, "the link database given by --db"),
            ("--qr", database + "-wal", "the link database's -wal file"),
            // Another spelling of the same path.
            ("--out", dir.path + "/../" + dir.lastPathComponent + "/links.db", "the link database given by --db"),
            ("--out", card, "an input FILE"),
            ("--qr", card, "an input FILE"),
            // A symlink to the card: writing through it would replace the card.
            ("--out", path("alias"), "an input FILE"),
        ] {
            let run = try TestSupport.cli(base + [option, target, card])
            #expect(run.status == 2, "\(option) \(target): \(run.stderr)")
            #expect(run.stderr.contains("is \(what)") && run.stderr.contains("No link was made"), "\(run.stderr)")
        }
        let guarded = try TestSupport.cli(
            base + ["--passcode-file", passcode, "--kdf", "pbkdf2-sha256:i=1000", "--out", passcode, card])
        #expect(guarded.status == 2 && guarded.stderr.contains("is --passcode-file"), "\(guarded.stderr)")
        // A database this run would create is its own file too: refused before it is made.
        let fresh = path("new.db")
        let created = try TestSupport.cli([
            "link", "create", "--db", "sqlite:" + fresh, "--base-url", LinkCommandTests.base, "--out", fresh, card,
        ])
        #expect(created.status == 2 && created.stderr.contains("is the link database"), "\(created.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fresh))

        // Nothing was changed: the card, the database's one link.
        #expect(try FileIO.read(card) == cardBytes)
        #expect(try FileIO.read(database).count == databaseBytes.count)
        #expect(try LinkCommandTests.links(db).count == 1)
    }

    /// A FILE that is not a regular file says what was found there: nothing, a folder, or a device (the trial got
    /// "is not a file" for each).
    @Test func anInputThatIsNotAFileSaysWhatIsThere() throws {
        let dir = try TestSupport.tempDir("link-input")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let fifo = dir.appendingPathComponent("pipe").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let dangling = dir.appendingPathComponent("dangling.json").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: dir.path + "/gone.json")
        for (file, found) in [
            (dir.appendingPathComponent("missing.json").path, "there is nothing at FILE"),
            (dir.path, "is a folder"), ("/dev/null", "is a device, not a regular file"),
            (fifo, "is a FIFO (named pipe), not a regular file"),
            (dangling, "is a symbolic link to \(dir.path)/gone.json, which points at nothing"),
        ] {
            let run = try TestSupport.cli(["link", "create", "--db", db, "--base-url", LinkCommandTests.base, file])
            #expect(run.status == 2 && run.stderr.contains(found), "\(file): \(run.stderr)")
            #expect(run.stderr.contains("No link was made"), "\(run.stderr)")
        }
    }

    /// `--out` naming a FIFO nothing reads is refused before the link is made (it used to leave an active link
    /// whose key was written nowhere); with a reader, the reader gets the whole link text.
    @Test func anOutputFIFOWithoutAReaderIsRefusedFirst() throws {
        let dir = try TestSupport.tempDir("link-fifo")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let fifo = dir.appendingPathComponent("out.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let base = ["link", "create", "--db", db, "--base-url", LinkCommandTests.base]
        let alone = try TestSupport.cli(base + ["--out", fifo, ServerTestSupport.card])
        #expect(alone.status == 2, "\(alone.stderr)")
        #expect(alone.stderr.contains("nothing is reading it") && alone.stderr.contains("No link was made"), "\(alone.stderr)")
        #expect(try LinkCommandTests.links(db).isEmpty, "no link was left behind")
        // A reader on the FIFO: the text arrives whole and the link is made.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        let read = try TestSupport.cli(base + ["--out", fifo, ServerTestSupport.card])
        #expect(read.status == 0, "\(read.stderr)")
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = Foundation.read(reader, &buffer, buffer.count)
        let text = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        #expect(text.hasPrefix("shlink:/") && text.hasSuffix("\n"), "\(text)")
        #expect(try LinkCommandTests.links(db).count == 1)
    }

    /// An --out that fails after the link was made says how to close it with the --db actually given (it wrote
    /// `--db DB`), and that the QR image holds the key when --qr was written; `link update --link` naming a file that
    /// is not a link names the option and the file.
    @Test func aFailedOutputSaysHowToCloseTheLinkAsTyped() throws {
        let dir = try TestSupport.tempDir("link-full")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let qr = dir.appendingPathComponent("link.png").path
        let run = try TestSupport.cli([
            "link", "create", "--db", db, "--base-url", LinkCommandTests.base, "--qr", qr, "--out", "/dev/full",
            ServerTestSupport.card,
        ])
        #expect(run.status == 2, "\(run.stderr)")
        let id = try #require(LinkCommandTests.links(db).first?["id"]?.stringValue)
        #expect(run.stderr.contains("link deactivate --db \(db) --id \(id)"), "\(run.stderr)")
        #expect(run.stderr.contains("its key is only in the QR image \(qr)"), "\(run.stderr)")
        let bad = dir.appendingPathComponent("bad.link").path
        try FileIO.writeAtomically(Array("not a link\n".utf8), to: bad, access: .ownerOnly)
        let update = try TestSupport.cli([
            "link", "update", "--db", db, "--base-url", LinkCommandTests.base, "--link", bad, ServerTestSupport.card,
        ])
        #expect(update.status == 2 && update.stderr.contains("--link \(bad): the text is not a SMART Health Link"), "\(update.stderr)")
        #expect(update.stderr.contains("The link was not updated"))
    }

    /// Standard output that cannot be written is exit 2 with a message, never a lost report or link with exit 0: a
    /// link printed to a full disk says how to close it (its key is gone), and `verify`'s report says it is lost.
    @Test func aStandardOutputThatCannotBeWrittenIsAnError() throws {
        let dir = try TestSupport.tempDir("link-stdout-full")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        func full(_ arguments: [String]) throws -> TestSupport.Run {
            let quoted = ([TestSupport.healthcards] + arguments).map { "'\($0)'" }.joined(separator: " ")
            return try TestSupport.run("/bin/sh", ["-c", quoted + " > /dev/full"])
        }
        let link = try full(["link", "create", "--db", db, "--base-url", LinkCommandTests.base, ServerTestSupport.card])
        #expect(link.status == 2 && link.stderr.contains("its key is stored nowhere: close it with"), "\(link.stderr)")
        let verify = try full(["verify", ServerTestSupport.card])
        #expect(verify.status == 2 && verify.stderr.contains("cannot write to standard output"), "\(verify.stderr)")
    }

    /// A revoked card refused with --jwks: the reason ends in one full stop, not the finding's and then another
    /// (the trial read "…from the issuer.. No link was made").
    @Test func aRevokedCardsReasonEndsInOneFullStop() throws {
        let f = try RevokeTests.fixture()
        try f.revoke(["--id", "P-1001"])
        let card = try BatchTestSupport.cardFile(f.out, id: "P-1001").path
        let db = "sqlite:" + f.dir.appendingPathComponent("links.db").path
        let run = try TestSupport.cli([
            "link", "create", "--db", db, "--base-url", LinkCommandTests.base, "--jwks", f.site.path, card,
        ])
        #expect(run.status == 2 && run.stderr.contains("REVOKED"), "\(run.stderr)")
        #expect(!run.stderr.contains("..") && run.stderr.contains("No link was made"), "\(run.stderr)")
    }

    /// The second trial's ways past the first check: a symlink to a database not made yet (the write would make
    /// it), --out and --qr as one file in two spellings, a file in the site folder --jwks reads, and a database
    /// reached through a linked folder (refused, and no empty file left).
    @Test func symlinksSpellingsAndTheSiteFolder() throws {
        let dir = try TestSupport.tempDir("link-clash-2")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let card = path("card.smart-health-card")
        try FileManager.default.copyItem(atPath: ServerTestSupport.card, toPath: card)
        let base = ["link", "create", "--base-url", LinkCommandTests.base]

        // A symlink to the database this run would create.
        try FileManager.default.createSymbolicLink(atPath: path("out.txt"), withDestinationPath: "new.db")
        let linked = try TestSupport.cli(base + ["--db", "sqlite:" + path("new.db"), "--out", path("out.txt"), card])
        #expect(linked.status == 2 && linked.stderr.contains("is the link database"), "\(linked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path("new.db")))

        let db = "sqlite:" + path("links.db")
        let twice = try TestSupport.cli(
            base + ["--db", db, "--out", path("a.txt"), "--qr", dir.path + "/./a.txt", card])
        #expect(twice.status == 2 && twice.stderr.contains("--out and --qr name the same file"), "\(twice.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path("a.txt")))

        // A site folder: its key set, revocation lists and record are read and published.
        let site = path("site")
        try FileManager.default.createDirectory(atPath: site + "/.well-known/crl", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ServerTestSupport.specJWKS, toPath: site + "/.well-known/jwks.json")
        let keySet = try FileIO.read(site + "/.well-known/jwks.json")
        for (keys, out) in [
            (site, site + "/.well-known/jwks.json"), (site, site + "/.well-known/crl/kid.json"),
            (site + "/.well-known/jwks.json", site + "/healthcards-site.json"),
            (site + "/.well-known", site + "/link.txt"),
        ] {
            let run = try TestSupport.cli(base + ["--db", db, "--jwks", keys, "--out", out, card])
            #expect(run.status == 2 && run.stderr.contains("the keys' folder --jwks reads"), "\(keys) \(out): \(run.stderr)")
        }
        #expect(try FileIO.read(site + "/.well-known/jwks.json") == keySet)
        // A key set that is one file elsewhere keeps its neighbours writable.
        let beside = try TestSupport.cli(
            base + ["--db", db, "--jwks", ServerTestSupport.specJWKS, "--out", path("beside.txt"), card])
        #expect(beside.status == 0, "\(beside.stderr)")

        // A database through a linked folder: SQLite refuses it; say so, and leave no empty file.
        try FileManager.default.createDirectory(atPath: path("real"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path("linked"), withDestinationPath: path("real"))
        let through = try TestSupport.cli(base + ["--db", "sqlite:" + path("linked") + "/links.db", card])
        #expect(through.status != 0 && through.stderr.contains("through a symbolic link"), "\(through.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path("real")).isEmpty)
        #expect(try LinkCommandTests.links(db).count == 1)
    }
}

