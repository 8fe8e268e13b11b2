import Foundation
import Testing

import HealthCardsCore
import HealthCardsFixtures
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsPrint
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify
import HealthCardsTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Every output path of every command goes through the one output-target rule (`OutputTarget`): a device, a FIFO
/// or a link is written in place (a link's target replaced, the link kept) or refused, never replaced by a file
/// (issue 22: `--pdf-combined /dev/null` replaced this machine's `/dev/null`). One test per command that writes a
/// file; `keygen` and `jwks` are `OutputSafetyTests`, `print` and the PDFs of `issue` `PrintStopTests`. Only
/// links and FIFOs made in temporary folders are written to, and `/dev/null` through a link.
@Suite struct OutputTargetCommandTests {
    static let templates = SiteTestSupport.templates

    /// A link to `/dev/null` at `path`: after the command, it is still that link, and `/dev/null` a device.
    static func deviceLink(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: FileIO.parent(of: path), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/null")
    }

    static func expectDeviceLinkKept(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(OutputSafetyTests.kind(path) == S_IFLNK, "\(path) is no longer a link", sourceLocation: sourceLocation)
        #expect(FileIO.linkTarget(path) == "/dev/null", sourceLocation: sourceLocation)
        #expect(
            OutputSafetyTests.kind("/dev/null") == S_IFCHR, "/dev/null was replaced", sourceLocation: sourceLocation)
    }

    /// A reader of a FIFO, there before the command under test opens it: a command opens an output FIFO without
    /// waiting (`OutputTarget.openStream`) and refuses one nothing reads, so the test holds a write end of its own
    /// from the moment the reader is in (which also keeps the reader from seeing the end before the command
    /// writes), and lets go of it in `waitUntilExit`.
    final class FIFOReader {
        let process: Process
        private var probe: Int32

        init(path: String, got: String) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "timeout 120 cat \"$0\" > \"$1\"", path, got]
            try process.run()
            probe = -1
            for _ in 0..<1000 where probe < 0 {
                probe = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                if probe < 0 { usleep(10_000) }
            }
            #expect(probe >= 0, "the reader of \(path) did not start")
        }

        func waitUntilExit() {
            if probe >= 0 { close(probe) }
            probe = -1
            process.waitUntilExit()
        }
    }

    /// A FIFO at `path` with a reader copying what it gets to `got`.
    static func fifoWithReader(_ path: String, got: String) throws -> FIFOReader {
        try FileManager.default.createDirectory(atPath: FileIO.parent(of: path), withIntermediateDirectories: true)
        #expect(mkfifo(path, 0o600) == 0)
        return try FIFOReader(path: path, got: got)
    }

    func issueArguments(key: String, out: URL, extra: [String] = []) -> [String] {
        [
            "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template",
            Self.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf",
            "1700000000",
            "--quiet",
        ] + extra + [Self.templates.appendingPathComponent("covid19-vaccination.sample.csv").path]
    }

    /// `issue`: report.ndjson was renamed over whatever was at its path (a link to /dev/null became a file). Now a
    /// FIFO gets the report written in place, a link to /dev/null stays one, a link to a file elsewhere has that
    /// file replaced. (A link at a card's path is refused: `aLinkAtARecordsPathIsRefused`.)
    @Test func issueWritesItsReportAndCardsInPlace() throws {
        let dir = try TestSupport.tempDir("targets-issue")
        let key = try TestSupport.demoKey(in: dir)

        let viaFIFO = dir.appendingPathComponent("fifo")
        let got = dir.appendingPathComponent("got.ndjson").path
        let reader = try Self.fifoWithReader(viaFIFO.path + "/report.ndjson", got: got)
        try SiteTestSupport.cli(issueArguments(key: key, out: viaFIFO))
        reader.waitUntilExit()
        #expect(OutputSafetyTests.kind(viaFIFO.path + "/report.ndjson") == S_IFIFO)
        let lines = String(decoding: try SiteTestSupport.bytes(got), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 4 && lines.allSatisfy { $0.contains(#""status":"issued""#) }, "\(lines)")

        let viaDevice = dir.appendingPathComponent("device")
        try Self.deviceLink(viaDevice.path + "/report.ndjson")
        try SiteTestSupport.cli(issueArguments(key: key, out: viaDevice))
        Self.expectDeviceLinkKept(viaDevice.path + "/report.ndjson")
        #expect(FileManager.default.fileExists(atPath: viaDevice.path + "/cards/P-1002.smart-health-card"))

        let viaLink = dir.appendingPathComponent("link")
        let elsewhere = try TestSupport.write("old", to: "kept/report.ndjson", in: dir)
        try FileManager.default.createDirectory(at: viaLink, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: viaLink.path + "/report.ndjson", withDestinationPath: elsewhere)
        try SiteTestSupport.cli(issueArguments(key: key, out: viaLink))
        #expect(OutputSafetyTests.kind(viaLink.path + "/report.ndjson") == S_IFLNK)
        #expect(try TestSupport.report(viaLink).count == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/kept") == ["report.ndjson"])
    }

    /// A symbolic link at a record's own path in `--out` (its card, QR image or PDF) was made by someone else: `issue`
    /// wrote through it, replacing a 0644 file elsewhere with the card and making it 0600, exit 0. Now that record is
    /// rejected (`OUTPUT_SYMLINK`, the path named on stderr), nothing of it is written, the file the link points to
    /// keeps its bytes and mode, a dangling link's target is not made, and the other records are issued.
    @Test func aLinkAtARecordsPathIsRefused() throws {
        let dir = try TestSupport.tempDir("targets-record-links")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let victim = try TestSupport.write("other data\n", to: "elsewhere/victim.txt", in: dir)
        #expect(chmod(victim, 0o644) == 0)
        let made = dir.appendingPathComponent("elsewhere/made.png").path
        for folder in ["cards", "qr", "pdf"] {
            try FileManager.default.createDirectory(atPath: out.path + "/" + folder, withIntermediateDirectories: true)
        }
        let card = out.path + "/cards/P-1001.smart-health-card"
        try FileManager.default.createSymbolicLink(atPath: card, withDestinationPath: victim)
        try Self.deviceLink(out.path + "/pdf/P-1002.pdf")
        try FileManager.default.createSymbolicLink(atPath: out.path + "/qr/P-1003.png", withDestinationPath: made)

        let run = try SiteTestSupport.cli(
            issueArguments(key: key, out: out, extra: ["--pdf"]).filter { $0 != "--quiet" }, expect: 1)
        #expect(run.stderr.contains("cannot write \(card): it is a symbolic link to \(victim)"), "\(run.stderr)")
        #expect(run.stderr.contains("OUTPUT_SYMLINK"), "\(run.stderr)")
        #expect(try SiteTestSupport.bytes(victim) == Array("other data\n".utf8))
        #expect(FileIO.mode(victim) == 0o644)
        #expect(FileIO.linkTarget(card) == victim)
        Self.expectDeviceLinkKept(out.path + "/pdf/P-1002.pdf")
        #expect(!FileManager.default.fileExists(atPath: made))
        let lines = try TestSupport.report(out)
        let status = lines.map { ($0["id"]?.stringValue ?? "", $0["status"]?.stringValue ?? "") }
        #expect(status.map(\.1) == ["rejected", "rejected", "rejected", "issued"], "\(status)")
        for line in lines.prefix(3) {
            #expect(line["errors"]?[0]?["code"]?.stringValue == "OUTPUT_SYMLINK")
            #expect(line["warnings"]?.arrayValue?.isEmpty == true, "\(line)")
        }
        // Nothing of a refused record was written: no card, image or PDF beside the link.
        let written = try ["cards", "qr", "pdf"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: out.path + "/" + folder).map { folder + "/" + $0 }
        }.sorted()
        #expect(
            written == [
                "cards/P-1001.smart-health-card", "cards/P-1004.smart-health-card", "pdf/P-1002.pdf", "pdf/P-1004.pdf",
                "qr/P-1003.png", "qr/P-1004.png",
            ], "\(written)")
    }

    /// `--rejected` naming a FIFO: nothing reading it is found when the run starts, before any card is signed (it
    /// was found at the end, after every card had been written, and the run then failed); with a reader, the
    /// rejected rows arrive through it and it stays a FIFO.
    @Test func aRejectedRowsFIFOIsCheckedWhenTheRunStarts() throws {
        let dir = try TestSupport.tempDir("targets-rejected")
        let key = try TestSupport.demoKey(in: dir)
        let fifo = dir.appendingPathComponent("rejected.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let out = dir.appendingPathComponent("out")
        let refused = try TestSupport.cli(issueArguments(key: key, out: out, extra: ["--rejected", fifo]))
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot write \(fifo): it is a FIFO (named pipe) and nothing is reading it"), "\(refused.stderr)")
        let cards = (try? FileManager.default.contentsOfDirectory(atPath: out.path + "/cards")) ?? []
        #expect(cards.isEmpty, "\(cards)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/report.ndjson"))
        #expect(OutputSafetyTests.kind(fifo) == S_IFIFO)

        let got = dir.appendingPathComponent("got.csv").path
        let reader = try FIFOReader(path: fifo, got: got)
        let run = try TestSupport.cli(issueArguments(key: key, out: out, extra: ["--rejected", fifo]))
        reader.waitUntilExit()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try SiteTestSupport.bytes(got) == Array("file,line,column,code,reason\n".utf8))
        #expect(OutputSafetyTests.kind(fifo) == S_IFIFO)
    }

    /// `site`: its rule files at paths that are a device link or a FIFO are written in place.
    @Test func siteWritesItsFilesInPlace() throws {
        let dir = try TestSupport.tempDir("targets-site")
        let key = try SiteTestSupport.keygen("k.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try Self.deviceLink(site + "/_headers")
        let got = dir.appendingPathComponent("got.conf").path
        let reader = try Self.fifoWithReader(site + "/healthcards-nginx.conf", got: got)
        try SiteTestSupport.cli(["site", "--out", site, key.path])
        reader.waitUntilExit()
        Self.expectDeviceLinkKept(site + "/_headers")
        #expect(OutputSafetyTests.kind(site + "/healthcards-nginx.conf") == S_IFIFO)
        #expect(
            String(decoding: try SiteTestSupport.bytes(got), as: UTF8.self).contains("application/smart-health-card"))
        #expect(
            try JWKS(bytes: try SiteTestSupport.bytes(site + "/.well-known/jwks.json"), source: "jwks").keys.map(\.kid)
                == [key.kid])
    }

    /// `revoke`: a CRL whose path is a link to a file elsewhere (a site assembled from links) has that file
    /// replaced, the link kept.
    @Test func revokeReplacesALinkedListsTarget() throws {
        let dir = try TestSupport.tempDir("targets-revoke")
        let key = try SiteTestSupport.keygen("k.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, "--crl", key.path])
        let crl = site + "/.well-known/crl/\(key.kid).json"
        let stored = dir.appendingPathComponent("lists/\(key.kid).json").path
        try FileManager.default.createDirectory(atPath: FileIO.parent(of: stored), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: crl, toPath: stored)
        try FileManager.default.createSymbolicLink(atPath: crl, withDestinationPath: stored)
        try SiteTestSupport.cli(["revoke", "--site", site, "--key", key.path, "--rid", "AAAAAAAAAAA", "--force"])
        #expect(OutputSafetyTests.kind(crl) == S_IFLNK)
        #expect(
            try CRL(bytes: try SiteTestSupport.bytes(stored), source: "crl").entries == [CRL.Entry(rid: "AAAAAAAAAAA")])
    }

    /// `shl`: a link text whose path is a symbolic link (here to a device) was made by someone else: that card gets no
    /// link (said, exit 1), nothing is written through it, the link kept; the other card gets its link.
    @Test func shlWritesItsLinkTextInPlace() throws {
        let dir = try TestSupport.tempDir("targets-shl")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key, out: out)
        try Self.deviceLink(out.path + "/shl/P-1001.txt")
        let run = try SiteTestSupport.cli(
            [
                "shl", "--base-url", SHLTestSupport.base, "--site", site, "--no-qr",
                out.path + "/cards/P-1001.smart-health-card",
                out.path + "/cards/P-1002.smart-health-card",
            ], expect: 1)
        #expect(run.stdout.contains("P-1002.txt"), "\(run.stdout)")
        #expect(
            run.stderr.contains("no link made: cannot write \(out.path)/shl/P-1001.txt: it is a symbolic link to /dev/null"),
            "\(run.stderr)")
        Self.expectDeviceLinkKept(out.path + "/shl/P-1001.txt")
        #expect(FileIO.isRegularFile(out.path + "/shl/P-1002.txt"))
    }

    /// `fixtures`: `--out` a link to an earlier catalogue replaced the link by a folder; now the catalogue it points
    /// to is replaced and the link kept. A device as `--out` is refused by what it is.
    @Test func fixturesReplacesTheCatalogueALinkPointsTo() throws {
        let dir = try TestSupport.tempDir("targets-fixtures")
        let key = try TestSupport.demoKey(in: dir)
        let real = dir.appendingPathComponent("real")
        let arguments = [
            "fixtures", "--issuer", SiteTestSupport.issuer, "--key", key, "--now", "1750000000",
        ]
        try SiteTestSupport.cli(arguments + ["--out", real.path])
        let link = dir.appendingPathComponent("catalogue").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real.path)
        try SiteTestSupport.cli(arguments + ["--out", link, "--seed", "2"])
        #expect(OutputSafetyTests.kind(link) == S_IFLNK)
        #expect(try FixtureManifest(bytes: try VerifyFixtures.bytes(real.appendingPathComponent("manifest.json"))).seed == 2)
        let device = try SiteTestSupport.cli(arguments + ["--out", "/dev/null"], expect: 2)
        #expect(device.stderr.contains("/dev/null is a character device"), "\(device.stderr)")
        #expect(OutputSafetyTests.kind("/dev/null") == S_IFCHR)
    }

    /// A listening-less Unix socket bound at `path` (`TestSupport.socketFile`); close the descriptor when done.
    static func socketFile(_ path: String) -> Int32 { TestSupport.socketFile(path) }

    /// `report merge --out`: a FIFO gets the merged report in place, a link to /dev/null stays one, a link to a
    /// file elsewhere has that file replaced (the link kept); a socket and a folder are refused (exit 2), as
    /// they are.
    @Test func reportMergeWritesItsReportInPlace() throws {
        let dir = try TestSupport.tempDir("targets-merge")
        let key = try TestSupport.demoKey(in: dir)
        let shards = try (0..<2).map { k -> String in
            let out = dir.appendingPathComponent("shard\(k)")
            try SiteTestSupport.cli(issueArguments(key: key, out: out, extra: ["--no-qr", "--shard", "\(k)/2"]))
            return out.path
        }
        @discardableResult
        func merge(_ out: String, expect status: Int32 = 0) throws -> TestSupport.Run {
            try SiteTestSupport.cli(["report", "merge", "--out", out] + shards, expect: status)
        }
        let fifo = dir.appendingPathComponent("merged/fifo.ndjson").path
        let got = dir.appendingPathComponent("got.ndjson").path
        let reader = try Self.fifoWithReader(fifo, got: got)
        try merge(fifo)
        reader.waitUntilExit()
        #expect(OutputSafetyTests.kind(fifo) == S_IFIFO)
        let lines = String(decoding: try SiteTestSupport.bytes(got), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 4 && lines.allSatisfy { $0.contains(#""status":"issued""#) }, "\(lines)")

        let device = dir.appendingPathComponent("merged/null.ndjson").path
        try Self.deviceLink(device)
        try merge(device)
        Self.expectDeviceLinkKept(device)

        let elsewhere = try TestSupport.write("old", to: "kept/report.ndjson", in: dir)
        let link = dir.appendingPathComponent("merged/link.ndjson").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: elsewhere)
        try merge(link)
        #expect(OutputSafetyTests.kind(link) == S_IFLNK && FileIO.linkTarget(link) == elsewhere)
        #expect(String(decoding: try SiteTestSupport.bytes(elsewhere), as: UTF8.self).split(separator: "\n").count == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/kept") == ["report.ndjson"])

        let socketPath = dir.appendingPathComponent("merged/s").path
        let fd = Self.socketFile(socketPath)
        defer { close(fd) }
        #expect(try merge(socketPath, expect: 2).stderr.contains("it is a socket"))
        #expect(OutputSafetyTests.kind(socketPath) == S_IFSOCK)
        let folder = dir.appendingPathComponent("merged/folder").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(try merge(folder, expect: 2).stderr.contains("it is a folder"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    /// `link create --out`: a FIFO gets the link's text in place, a link to /dev/null stays one, a link to a file
    /// elsewhere has that file replaced; a socket or a folder (as --out or --qr) is refused before the link is
    /// made: the refusals leave no active link in the database whose text (and key) went nowhere (they did).
    @Test func linkCreateWritesItsTextInPlaceOrMakesNoLink() throws {
        let dir = try TestSupport.tempDir("targets-link")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let base = "http://127.0.0.1:1/shl"
        @discardableResult
        func create(_ options: [String], expect status: Int32 = 0) throws -> TestSupport.Run {
            try ServerTestSupport.link("create", db: db, base: base, options + [ServerTestSupport.card], expect: status)
        }
        let fifo = dir.appendingPathComponent("texts/fifo.txt").path
        let got = dir.appendingPathComponent("got.txt").path
        let reader = try Self.fifoWithReader(fifo, got: got)
        try create(["--out", fifo])
        reader.waitUntilExit()
        #expect(OutputSafetyTests.kind(fifo) == S_IFIFO)
        let text = String(decoding: try SiteTestSupport.bytes(got), as: UTF8.self)
        #expect(text.hasPrefix("shlink:/") && (try? SHLinkText.parse(text.trimmingCharacters(in: .newlines))) != nil, "\(text)")

        let device = dir.appendingPathComponent("texts/null.txt").path
        try Self.deviceLink(device)
        try create(["--out", device])
        Self.expectDeviceLinkKept(device)

        let elsewhere = try TestSupport.write("old", to: "kept/link.txt", in: dir)
        let link = dir.appendingPathComponent("texts/link.txt").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: elsewhere)
        try create(["--out", link])
        #expect(OutputSafetyTests.kind(link) == S_IFLNK && FileIO.linkTarget(link) == elsewhere)
        #expect(String(decoding: try SiteTestSupport.bytes(elsewhere), as: UTF8.self).hasPrefix("shlink:/"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/kept") == ["link.txt"])

        let socketPath = dir.appendingPathComponent("texts/s").path
        let fd = Self.socketFile(socketPath)
        defer { close(fd) }
        let folder = dir.appendingPathComponent("texts/folder").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for options in [["--out", socketPath], ["--out", folder], ["--qr", folder, "--out", dir.path + "/texts/x.txt"]] {
            let refused = try create(options, expect: 2)
            #expect(refused.stderr.contains("No link was made"), "\(options): \(refused.stderr)")
        }
        #expect(OutputSafetyTests.kind(socketPath) == S_IFSOCK)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/texts/x.txt"))
        // Three links were made: one per text written.
        let listed = try ServerTestSupport.link("list", db: db, base: "", []).stdout.split(separator: "\n")
        #expect(listed.filter { $0.contains("active") }.count == 3, "\(listed)")
    }
}
