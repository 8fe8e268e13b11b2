import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// Printing runs that stop: a signal, an error after the first card, a full disk; and PDF outputs that are
/// not regular files (a device, a FIFO, a link to one), written in place, never replaced. Through the real CLI.
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintStopTests {
    typealias S = BatchTestSupport

    /// The hidden temporaries (`.<name>.tmp-…`) in a folder.
    static func temporaries(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            $0.hasPrefix(".") && $0.contains(".tmp-")
        }
    }

    /// The file type of a path itself (a link is not followed).
    static func type(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    /// Issues `patients` synthetic CSV patients without PDFs into `dir/out` (cards for `print`).
    static func issued(patients: Int, in dir: URL) throws -> URL {
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let csv = try S.synthetic(patients: patients, in: dir)
        let run = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: csv, extra: ["--no-qr", "--quiet"]))
        #expect(run.status == 0, "\(run.stderr)")
        return out
    }

    /// `issue --pdf-combined` stopped by SIGINT or SIGTERM ends as `issue` does without it: 130/143 (it
    /// crashed with SIGABRT, 134, in the combined PDF's deinit), the report lists the records done, no
    /// combined PDF and no temporary of it is left, the summary says the combined PDF was not written (it said
    /// nothing of it), and running the same command again writes it whole.
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func issueWithCombinedPDFStopsCleanly(signal: Int32, status: Int32) throws {
        let dir = try TestSupport.tempDir("pdf-stop")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let csv = try S.synthetic(patients: 150, in: dir)
        let combined = dir.appendingPathComponent("print/all.pdf")
        let args = S.issueArguments(
            key: key, out: out, csv: csv, extra: ["--no-qr", "--jobs", "2", "--pdf-combined", combined.path])
        let (process, _, err) = try TestSupport.start(args, log: "stopped", in: dir)
        let exit = S.stop(process, signal: signal, afterCards: 10, out: out)
        #expect(exit == status)
        let report = try TestSupport.report(out)
        #expect(report.count >= 10 && report.count < 150, "\(report.count)")
        #expect(!FileManager.default.fileExists(atPath: combined.path))
        #expect(Self.temporaries(in: combined.deletingLastPathComponent()).isEmpty)
        let said = try String(contentsOf: err, encoding: .utf8)
        #expect(said.contains("stopped by signal \(signal)"), "\(said)")
        #expect(said.contains("combined PDF: \(combined.path) was NOT written"), "\(said)")
        #expect(!said.contains("earlier run"), "\(said)")
        let rerun = try TestSupport.cli(args + ["--quiet"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try PDFTools.info(combined).pages == 150)
        guard signal == SIGTERM else { return }
        // Stopped again with the whole PDF of the earlier run there: it is left as it was, and the summary says it
        // is that run's, not this one's.
        let before = try VerifyFixtures.bytes(combined)
        try FileManager.default.removeItem(at: out.appendingPathComponent("cards"))
        let (again, _, againErr) = try TestSupport.start(args, log: "again", in: dir)
        #expect(S.stop(again, signal: SIGTERM, afterCards: 10, out: out) == 143)
        #expect(try VerifyFixtures.bytes(combined) == before)
        #expect(Self.temporaries(in: combined.deletingLastPathComponent()).isEmpty)
        let saidAgain = try String(contentsOf: againErr, encoding: .utf8)
        #expect(
            saidAgain.contains("was NOT written") && saidAgain.contains("is from an earlier run and lacks this run's cards"),
            "\(saidAgain)")
    }

    /// `print --pdf-combined` with an error after its first card (the second card's PDF path is a folder) says
    /// what failed and exits 2 (it crashed, hiding the error); no combined PDF or temporary is left.
    @Test func printErrorAfterTheFirstCardIsReported() throws {
        let dir = try TestSupport.tempDir("print-error")
        let out = try Self.issued(patients: 2, in: dir)
        let cards = try FileManager.default.contentsOfDirectory(atPath: out.path + "/cards").sorted()
        #expect(cards.count == 2)
        let pdfs = dir.appendingPathComponent("pdfs")
        let second = FileIO.stem(cards[1])
        try FileManager.default.createDirectory(
            at: pdfs.appendingPathComponent("\(second).pdf"), withIntermediateDirectories: true)
        let combined = dir.appendingPathComponent("all.pdf")
        let run = try TestSupport.cli([
            "print", "--out", pdfs.path, "--pdf-combined", combined.path, out.path + "/cards/" + cards[0],
            out.path + "/cards/" + cards[1],
        ])
        #expect(run.status == 2, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains("cannot write \(pdfs.path)/\(second).pdf"), "\(run.stderr)")
        #expect(!run.stderr.contains("unowned"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: combined.path))
        #expect(Self.temporaries(in: dir).isEmpty && Self.temporaries(in: pdfs).isEmpty)
    }

    /// `print` stopped by SIGTERM: 143, the PDFs printed are whole and no temporary is left, the combined PDF
    /// is not written; the temporaries a killed run left (in --out and beside --pdf-combined) are removed by
    /// the next run, and only those.
    @Test func printStopsCleanlyAndCleansUpAfterAKill() throws {
        let dir = try TestSupport.tempDir("print-stop")
        let out = try Self.issued(patients: 60, in: dir)
        let pdfs = dir.appendingPathComponent("pdfs")
        let combined = dir.appendingPathComponent("all.pdf")
        let args = ["print", "--out", pdfs.path, "--pdf-combined", combined.path, out.path]
        let process = try S.start(args)
        let deadline = Date().addingTimeInterval(120)
        func printed() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: pdfs.path)) ?? []).filter { $0.hasSuffix(".pdf") }
                .count
        }
        while process.isRunning && printed() < 3 && Date() < deadline { usleep(5000) }
        #expect(process.isRunning, "the run ended before it could be stopped")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 143)
        #expect(printed() >= 3 && printed() < 60)
        #expect(Self.temporaries(in: pdfs).isEmpty && Self.temporaries(in: dir).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: combined.path))
        #expect(try PDFTools.checkEveryPDF(under: pdfs) == printed())

        // What a killed run leaves: temporaries of a process that is gone.
        let dead = Process()
        dead.executableURL = URL(fileURLWithPath: "/bin/true")
        try dead.run()
        dead.waitUntilExit()
        let pid = dead.processIdentifier
        let stale = [pdfs.path + "/.X.pdf.tmp-\(pid)-1", dir.path + "/.all.pdf.tmp-\(pid)-2"]
        for path in stale { _ = FileManager.default.createFile(atPath: path, contents: Data("half a page".utf8)) }
        // Not ours: another file's temporary beside the combined PDF stays.
        let other = dir.path + "/.notes.txt.tmp-\(pid)-3"
        _ = FileManager.default.createFile(atPath: other, contents: Data("x".utf8))
        let rerun = try TestSupport.cli(args)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        for path in stale { #expect(!FileManager.default.fileExists(atPath: path), "\(path)") }
        #expect(FileManager.default.fileExists(atPath: other))
        #expect(try PDFTools.info(combined).pages == 60)
    }

    /// A full disk under `--pdf-combined` (a 1 MiB tmpfs holding the output folder and the combined PDF): the
    /// run stops with exit status 2 and a "stopped after N of M" line, the combined PDF's temporary is removed
    /// first, and so the report of the records done is written (there was none). Root only: the test mounts
    /// and unmounts its own tmpfs under its temporary folder.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func fullDiskStillWritesTheReport() throws {
        let dir = try TestSupport.tempDir("pdf-full")
        let key = try TestSupport.demoKey(in: dir)
        let csv = try S.synthetic(patients: 200, in: dir)
        let disk = dir.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let mount = try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", disk.path])
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        defer { _ = try? TestSupport.run("/bin/umount", [disk.path]) }
        let out = disk.appendingPathComponent("out")
        let combined = disk.appendingPathComponent("all.pdf")
        let run = try TestSupport.cli(
            S.issueArguments(
                key: key, out: out, csv: csv, extra: ["--no-qr", "--jobs", "1", "--quiet", "--pdf-combined", combined.path]
            ))
        #expect(run.status == 2, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains("No space left on device"), "\(run.stderr)")
        let stopped = try #require(run.stderr.range(of: #"stopped after (\d+) of 200 records"#, options: .regularExpression))
        let done = Int(run.stderr[stopped].split(separator: " ")[2]) ?? -1
        let report = try TestSupport.report(out)
        #expect(report.count == done && done > 0, "\(report.count) lines, \(done) done")
        #expect(!FileManager.default.fileExists(atPath: combined.path))
        #expect(Self.temporaries(in: disk).isEmpty && Self.temporaries(in: out).isEmpty)
    }

    /// Every PDF output of `issue` and `print` follows the one output-target rule: a character device (this
    /// test's own node, made like /dev/null, and a link to /dev/null) is written in place and stays a device or
    /// a link; a FIFO with a reader gets the whole PDF; a socket is refused. `--pdf-combined /dev/null` renamed
    /// a regular file over the device.
    @Test(.enabled(if: getuid() == 0, "making a character device node needs root"))
    func devicesAndFIFOsAreWrittenInPlace() throws {
        let dir = try TestSupport.tempDir("pdf-targets")
        let out = try Self.issued(patients: 2, in: dir)
        let cards = try FileManager.default.contentsOfDirectory(atPath: out.path + "/cards").sorted()
        let device = dir.appendingPathComponent("null").path
        #expect(mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0, "mknod: \(String(cString: strerror(errno)))")
        let link = dir.appendingPathComponent("to-null.pdf").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/null")
        let key = dir.appendingPathComponent("demo-key.pem").path
        let template = S.template
        let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path

        for target in [device, link] {
            let print = try TestSupport.cli(["print", "--pdf-combined", target, out.path])
            #expect(print.status == 0, "\(print.stderr)")
            let issue = try TestSupport.cli([
                "issue", "--issuer", S.issuer, "--key", key, "--template", template, "--out",
                dir.appendingPathComponent("issued-\(FileIO.basename(target))").path, "--quiet", "--pdf-combined", target,
                sample,
            ])
            #expect(issue.status == 0, "\(issue.stderr)")
        }
        #expect(Self.type(device) == S_IFCHR)
        #expect(Self.type(link) == S_IFLNK && Self.type("/dev/null") == S_IFCHR)

        // The per-card PDFs: `print --out DIR` and `issue --pdf` over a link to the device. A link at a card's own path
        // was made by someone else: that card is not printed (issued), nothing is written through the link.
        let pdfs = dir.appendingPathComponent("pdfs")
        try FileManager.default.createDirectory(at: pdfs, withIntermediateDirectories: true)
        let cardPDF = pdfs.appendingPathComponent(FileIO.stem(cards[0]) + ".pdf").path
        try FileManager.default.createSymbolicLink(atPath: cardPDF, withDestinationPath: device)
        let perCard = try TestSupport.cli(["print", "--out", pdfs.path, out.path])
        #expect(perCard.status == 1, "\(perCard.stderr)")
        #expect(perCard.stderr.contains("cannot write \(cardPDF): it is a symbolic link to \(device)"), "\(perCard.stderr)")
        #expect(Self.type(cardPDF) == S_IFLNK && Self.type(device) == S_IFCHR)
        #expect(FileIO.isRegularFile(pdfs.appendingPathComponent(FileIO.stem(cards[1]) + ".pdf").path))
        let issued = dir.appendingPathComponent("issued-pdf")
        try FileManager.default.createDirectory(at: issued.appendingPathComponent("pdf"), withIntermediateDirectories: true)
        let issuedPDF = issued.appendingPathComponent("pdf/P-1001.pdf").path
        try FileManager.default.createSymbolicLink(atPath: issuedPDF, withDestinationPath: device)
        let issue = try TestSupport.cli([
            "issue", "--issuer", S.issuer, "--key", key, "--template", template, "--out", issued.path, "--quiet", "--pdf",
            sample,
        ])
        #expect(issue.status == 1, "\(issue.stderr)")
        #expect(issue.stderr.contains("cannot write \(issuedPDF): it is a symbolic link"), "\(issue.stderr)")
        #expect(Self.type(issuedPDF) == S_IFLNK && Self.type(device) == S_IFCHR)

        // A FIFO with a reader: the whole PDF arrives through it.
        let fifo = dir.appendingPathComponent("printer.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let received = dir.appendingPathComponent("received.pdf")
        let reader = Process()
        // Bounded: a run that never opened the FIFO (it replaced it with a file) must not leave the test waiting.
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        reader.arguments = ["60", "/bin/cp", fifo, received.path]
        try reader.run()
        usleep(100_000)
        let viaFIFO = try TestSupport.cli(["print", "--pdf-combined", fifo, out.path])
        reader.waitUntilExit()
        #expect(viaFIFO.status == 0, "\(viaFIFO.stderr)")
        #expect(Self.type(fifo) == S_IFIFO)
        #expect(try PDFTools.info(received).pages == 2)

        // A socket is no PDF target.
        let socketPath = dir.appendingPathComponent("s.pdf").path
        // Bound by the helper, which expects the bind to succeed.
        let fd = TestSupport.socketFile(socketPath)
        defer { close(fd) }
        let refused = try TestSupport.cli(["print", "--pdf-combined", socketPath, out.path])
        #expect(refused.status == 2 && refused.stderr.contains("it is a socket"), "\(refused.stderr)")
        #expect(Self.type(socketPath) == S_IFSOCK)
    }
}
