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

/// Outputs that cannot be written are found before the first card, and messages a new user misread,
/// through the real `healthcards`.
@Suite(.serialized) struct BatchOutputCheckTests {
    typealias S = BatchTestSupport
    static let sample = BatchTestSupport.sample

    /// Whether this process may mount a tmpfs (root, and a kernel and container that allow it): tried once on a
    /// scratch folder, unmounted at once.
    static let canMountTmpfs: Bool = {
        guard getuid() == 0, let dir = try? TestSupport.tempDir("tmpfs-probe") else { return false }
        guard let run = try? TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.path]),
            run.status == 0
        else { return false }
        _ = try? TestSupport.run("/bin/umount", [dir.path])
        return true
    }()

    /// A full disk (a 64 KiB tmpfs holding the output folder) stops the run at a card, and leaves no room for the
    /// report either: the message names the report's path, says it was NOT written and why (ENOSPC), and no
    /// report or temporary of it is left (the message said nothing of the report, which was silently missing).
    @Test(.enabled(if: canMountTmpfs, "mounting a small tmpfs needs root where mounts are allowed"))
    func fullDiskSaysTheReportWasNotWritten() throws {
        let dir = try TestSupport.tempDir("report-full")
        let key = try TestSupport.demoKey(in: dir)
        let csv = try S.synthetic(patients: 300, in: dir)
        let disk = dir.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let mount = try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", disk.path])
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        defer { _ = try? TestSupport.run("/bin/umount", [disk.path]) }
        let out = disk.appendingPathComponent("out")
        let run = try TestSupport.cli(
            S.issueArguments(key: key, out: out, csv: csv, extra: ["--no-qr", "--jobs", "1", "--quiet"]))
        #expect(run.status == 2, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains("The run stopped after "), "\(run.stderr)")
        #expect(
            run.stderr.contains("the report \(out.path)/report.ndjson was NOT written: No space left on device (ENOSPC)"),
            "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/report.ndjson"))
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(!left.contains { $0.hasPrefix(".report.ndjson.tmp-") }, "\(left)")
    }

    /// `report.ndjson` (or `cards`, `qr`) in the way as a folder / a file: exit 2 with the path, and
    /// nothing written: no card, no image, no report, no temporary file.
    @Test(arguments: [
        ("report.ndjson", true, "it is a folder"), ("cards", false, "it exists and is not a folder"),
        ("qr", false, "it exists and is not a folder"),
    ])
    func blockedOutputStopsBeforeTheFirstCard(name: String, folder: Bool, reason: String) throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let blocked = out.appendingPathComponent(name)
        if folder {
            try FileManager.default.createDirectory(at: blocked, withIntermediateDirectories: true)
        } else {
            try TestSupport.write("in the way", to: name, in: out)
        }
        let run = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: Self.sample))
        #expect(run.status == 2)
        #expect(run.stderr.contains("\(blocked.path): \(reason)"), "\(run.stderr)")
        #expect(S.tree(out) == (folder ? [] : [name]))
        let made = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(made == (name == "qr" ? ["cards", "qr"] : [name]))  // the cards folder is made before qr is checked
        #expect(S.cardCount(out) == 0)
    }

    /// `--key` on a folder says it is a folder, not "cannot read … Is a directory".
    @Test func keyFolderIsNamedAsAFolder() throws {
        let dir = try TestSupport.tempDir()
        let keys = dir.appendingPathComponent("keydir")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(S.issueArguments(key: keys.path, out: out, csv: Self.sample))
        #expect(run.status == 2)
        #expect(run.stderr.contains("\(keys.path) is a folder, not a key file"), "\(run.stderr)")
        #expect(!run.stderr.contains("Is a directory"))
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// The summary of a stopped run gives the time it took before saying how to finish, so the time
    /// does not read as an estimate of the rest.
    @Test func stoppedRunSummaryDoesNotPromiseATime() {
        var summary = BatchSummary()
        (summary.issued, summary.rejected, summary.total, summary.seconds, summary.interruptedBy) = (
            40, 2, 1500, 1.04, 2
        )
        let line = summary.summaryLine(jobs: 2, kid: "KID", report: "out/report.ndjson")
        #expect(
            line
                == "issued 40, rejected 2, warnings 0 in 1.0 s (38.5 cards/s, 2 jobs); stopped by signal 2 after 42 of 1500 records. "
                + "The 1458 not done yet are issued by running the same command again (cards already made are kept and skipped); "
                + "kid KID; report: out/report.ndjson")
        summary.interruptedBy = 0
        (summary.issued, summary.alreadyIssued, summary.rejected, summary.total) = (1498, 1000, 2, 1500)
        #expect(
            summary.summaryLine(jobs: 1, kid: "KID", report: "r")
                == "issued 1498 (1000 already issued, skipped), rejected 2, "
                + "warnings 0 in 1.0 s (478.8 cards/s, 1 job); kid KID; report: r")
    }
}
