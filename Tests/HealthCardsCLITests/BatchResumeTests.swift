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

/// Re-running, resuming and stopping `healthcards issue`, through the real CLI.
@Suite(.serialized) struct BatchResumeTests {
    typealias S = BatchTestSupport

    static let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path

    @Test func rerunSkipsIssuedRecordsAndForceReissues() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let first = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: Self.sample))
        #expect(first.status == 0, "\(first.stderr)")
        let cardFiles = S.tree(out).filter { $0.hasPrefix("cards/") || $0.hasPrefix("qr/") }
        let before = try cardFiles.map { try VerifyFixtures.bytes(out.appendingPathComponent($0)) }
        #expect(cardFiles.count == 8)

        // Same arguments but a later nbf: nothing is rewritten, every record is reported as already issued.
        var again = S.issueArguments(key: key, out: out, csv: Self.sample)
        again[again.firstIndex(of: "1700000000")!] = "1700009999"
        let second = try TestSupport.cli(again)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("issued 4 (4 already issued, skipped), rejected 0"), "\(second.stderr)")
        #expect(try TestSupport.report(out).map { $0["alreadyIssued"] } == Array(repeating: .bool(true), count: 4))
        #expect(try cardFiles.map { try VerifyFixtures.bytes(out.appendingPathComponent($0)) } == before)
        #expect(S.tree(out) == cardFiles + ["report.ndjson"])

        // --force signs again: new cards (ECDSA is randomized), same payloads.
        let forced = try TestSupport.cli(again + ["--force"])
        #expect(forced.status == 0)
        #expect(try TestSupport.report(out).allSatisfy { $0["alreadyIssued"] == .bool(false) && $0["status"] == "issued" })
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card")
        #expect(try VerifyFixtures.bytes(card) != before[cardFiles.firstIndex(of: "cards/P-1001.smart-health-card")!])
        #expect(try S.payload(card)["nbf"] == .number("1700009999"))
    }

    /// The sample issued, then P-1001's second dose given another lot number, P-1003's card torn (as after a
    /// power loss), P-1002's image removed (P-1004 untouched), and the same command run again.
    static func redoChangedTornAndMissing() throws
        -> (out: URL, first: TestSupport.Run, run: TestSupport.Run, qr1002: [UInt8])
    {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let csv = dir.appendingPathComponent("in.csv")
        try FileManager.default.copyItem(atPath: Self.sample, toPath: csv.path)
        let first = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: csv.path))
        let qr1002 = try VerifyFixtures.bytes(out.appendingPathComponent("qr/P-1002.png"))
        let text = try String(contentsOf: csv, encoding: .utf8).replacingOccurrences(of: "012L20A", with: "012L20B")
        try text.write(to: csv, atomically: true, encoding: .utf8)
        try Data().write(to: out.appendingPathComponent("cards/P-1003.smart-health-card"))
        try FileManager.default.removeItem(at: out.appendingPathComponent("qr/P-1002.png"))
        return (out, first, try TestSupport.cli(S.issueArguments(key: key, out: out, csv: csv.path)), qr1002)
    }

    @Test func changedTornAndMissingFilesAreRedone() throws {
        let (out, first, run, qr1002) = try Self.redoChangedTornAndMissing()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(run.status == 0, "\(run.stderr)")
        let already = Dictionary(uniqueKeysWithValues: try TestSupport.report(out).map { ($0["id"]!.stringValue!, $0["alreadyIssued"]!) })
        #expect(already == ["P-1001": false, "P-1002": true, "P-1003": false, "P-1004": true])
        #expect(try VerifyFixtures.bytes(out.appendingPathComponent("qr/P-1002.png")) == qr1002)
        let lots = try S.payload(out.appendingPathComponent("cards/P-1001.smart-health-card"))["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?
            .arrayValue?.compactMap { $0["resource"]?["lotNumber"]?.stringValue }
        #expect(lots == ["011J20A", "012L20B", "AB1234"])
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func redoneFilesPassIndependentChecker() throws {
        let (out, _, run, _) = try Self.redoChangedTornAndMissing()
        #expect(run.status == 0, "\(run.stderr)")
        let check = try TestSupport.check(["--quiet", out.path])
        #expect(check.stdout.contains("8 credentials checked, 0 errors"), "\(check.stdout)")
    }

    @Test func leftoversOfDeadRunsAreRemoved() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        // A process that has exited: its pid names a dead run's temporary files.
        let dead = Process()
        dead.executableURL = URL(fileURLWithPath: "/bin/true")
        try dead.run()
        dead.waitUntilExit()
        let pid = dead.processIdentifier
        let mine = getpid()
        try TestSupport.write("half a card", to: "cards/.P-1001.smart-health-card.tmp-\(pid)-12345", in: out)
        try TestSupport.write("half an image", to: "qr/.P-1002.png.tmp-\(pid)-99", in: out)
        try TestSupport.write("{}", to: ".report.ndjson.tmp-\(pid)-7", in: out)
        try TestSupport.write("a live writer's file", to: "cards/.X.smart-health-card.tmp-\(mine)-1", in: out)
        let run = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: Self.sample))
        #expect(run.status == 0, "\(run.stderr)")
        let hidden = S.tree(out).filter { $0.split(separator: "/").last!.hasPrefix(".") }
        #expect(hidden == ["cards/.X.smart-health-card.tmp-\(mine)-1"])
    }

    /// SIGINT and SIGTERM: the run ends with 130 / 143, the report lists exactly the cards on disk,
    /// no temporary file is left, and running again finishes the job.
    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func signalStopsCleanlyAndRerunFinishes(signal: Int32, status: Int32) throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let csv = try S.synthetic(patients: 1500, in: dir)
        let args = S.issueArguments(key: key, out: out, csv: csv, extra: ["--no-qr", "--jobs", "2"])
        let process = try S.start(args)
        let exit = S.stop(process, signal: signal, afterCards: 40, out: out)
        #expect(exit == status)
        let report = try TestSupport.report(out)
        #expect(report.count >= 40 && report.count < 1500)
        let listed = Set(report.flatMap { $0["files"]?.arrayValue?.compactMap(\.stringValue) ?? [] })
        #expect(Set(S.tree(out).filter { $0 != "report.ndjson" }) == listed)
        let rerun = try TestSupport.cli(args)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let final = try TestSupport.report(out)
        #expect(final.count == 1500)
        #expect(final.filter { $0["alreadyIssued"] == .bool(true) }.count == report.count)
    }

    @Test func unwritableOutputStopsWithStatus2() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        try TestSupport.write("not a folder", to: "cards", in: out)
        let run = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: Self.sample))
        #expect(run.status == 2)
        #expect(run.stderr.contains("\(out.path)/cards"), "\(run.stderr)")
        #expect(S.tree(out) == ["cards"])
    }

    /// A write that fails in the middle (here: images over the file size limit, as a full disk would
    /// fail them) stops the run; nothing half-written stays and the report lists what was done.
    @Test(.enabled(if: !TestSupport.threadSanitizer, "ThreadSanitizer's runtime stops with SIGBUS under a file size limit (ulimit -f)"))
    func writeFailureMidRunLeavesNothingHalfWritten() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let args = S.issueArguments(key: key, out: out, csv: Self.sample, extra: ["--qr-scale", "40", "--jobs", "1"])
        let quoted = ([TestSupport.healthcards] + args).map { "'\($0)'" }.joined(separator: " ")
        // 64 blocks: cards (about 1 KB) fit, 40 px/module images (over 100 KB) do not. SIGXFSZ is ignored so
        // write(2) fails with EFBIG instead of killing the process.
        let run = try TestSupport.run("/bin/bash", ["-c", "ulimit -f 64; trap '' XFSZ; exec \(quoted)"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("cannot write \(out.path)/qr/"), "\(run.stderr)")
        #expect(run.stderr.contains("run stopped after 0 of 4 records"), "\(run.stderr)")
        #expect(S.tree(out) == ["report.ndjson"])
        #expect(try TestSupport.report(out).isEmpty)
    }
}
