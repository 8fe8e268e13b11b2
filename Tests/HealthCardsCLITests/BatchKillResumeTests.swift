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

/// A batch killed (SIGKILL) at random moments and started again ends exactly as a clean run.
@Suite(.serialized) struct BatchKillResumeTests {
    typealias S = BatchTestSupport

    /// 2,000 synthetic patients (about 5,000 rows) with QR images and 2 jobs: a clean run, and a run
    /// killed 3 times at a random point, then finished. Made once (it takes a while) for the two tests below.
    struct KilledRun: Sendable {
        var dir: URL
        var clean: URL
        var resumed: URL
        var cleanRun: TestSupport.Run
        var killedAt: [Int]
        var finish: TestSupport.Run
    }

    static let killedRun = Result { () throws -> KilledRun in
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let csv = try S.synthetic(patients: 2000, in: dir)
        let clean = dir.appendingPathComponent("clean")
        let resumed = dir.appendingPathComponent("resumed")
        let cleanRun = try TestSupport.cli(S.issueArguments(key: key, out: clean, csv: csv, extra: ["--jobs", "2"]))
        let args = S.issueArguments(key: key, out: resumed, csv: csv, extra: ["--jobs", "2"])
        var killedAt: [Int] = []
        for _ in 0..<3 {
            let already = S.cardCount(resumed)
            let process = try S.start(args)
            let target = already + Int.random(in: 20...450)
            _ = S.stop(process, signal: SIGKILL, afterCards: target, out: resumed)
            killedAt.append(S.cardCount(resumed))
        }
        let finish = try TestSupport.cli(args)
        return KilledRun(
            dir: dir, clean: clean, resumed: resumed, cleanRun: cleanRun, killedAt: killedAt, finish: finish)
    }

    /// The killed and finished run compared with the clean run of the same input: the same files, the
    /// same report (apart from `alreadyIssued`), the same payloads (same --nbf; only the signatures
    /// differ), no temporary file left.
    @Test func killedThreeTimesThenFinishedEqualsCleanRun() throws {
        let run = try Self.killedRun.get()
        let (clean, resumed, finish, killedAt) = (run.clean, run.resumed, run.finish, run.killedAt)
        #expect(run.cleanRun.status == 0, "\(run.cleanRun.stderr)")
        #expect(killedAt.last! < 2000, "the kills came too late to test anything: \(killedAt)")
        #expect(finish.status == 0, "\(finish.stderr)")
        #expect(finish.stderr.contains("already issued, skipped"), "\(finish.stderr)")

        let files = S.tree(resumed)
        #expect(files == S.tree(clean))
        #expect(!files.contains { $0.split(separator: "/").last!.hasPrefix(".") })
        #expect(files.filter { $0.hasSuffix(".smart-health-card") }.count == 2000)
        #expect(try S.reportWithoutResumeFlag(resumed) == S.reportWithoutResumeFlag(clean))
        for file in files where file.hasSuffix(".smart-health-card") {
            #expect(try S.payload(resumed.appendingPathComponent(file)) == S.payload(clean.appendingPathComponent(file)), "\(file)")
        }
    }

    /// The independent checker on every card of the finished run and on 150 of its images (it reads
    /// images slowly).
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func killedThenFinishedRunPassesIndependentChecker() throws {
        let run = try Self.killedRun.get()
        #expect(run.finish.status == 0, "\(run.finish.stderr)")
        let resumed = run.resumed
        let files = S.tree(resumed)
        let sample = run.dir.appendingPathComponent("sample")
        try FileManager.default.createDirectory(at: sample, withIntermediateDirectories: true)
        for file in files.filter({ $0.hasSuffix(".png") }).shuffled().prefix(150) {
            try FileManager.default.copyItem(at: resumed.appendingPathComponent(file), to: sample.appendingPathComponent(file.replacingOccurrences(of: "/", with: "_")))
        }
        let check = try TestSupport.check(["--quiet", resumed.appendingPathComponent("cards").path, sample.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains("2150 credentials checked, 0 errors"), "\(check.stdout)")
    }

    /// --jobs 1 and --jobs 3 give the same report, in input order, and the same payloads.
    @Test func jobsGiveTheResultsOfOneJob() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let csv = try S.synthetic(patients: 400, in: dir)
        // Spoil two patients (lines 6 and 10 are the first doses of P-5 and P-9): a date of birth in
        // another format, and a row with a missing field.
        var lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var fields = lines[5].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        fields[6] = "06/15/1980"
        lines[5] = fields.joined(separator: ",")
        lines[9] = lines[9].replacingOccurrences(of: ",Springfield,IL,", with: ",Springfield,")
        try lines.joined(separator: "\n").write(toFile: csv, atomically: true, encoding: .utf8)
        var reports: [[String]] = []
        var outs: [URL] = []
        for jobs in [1, 3] {
            let out = dir.appendingPathComponent("out-\(jobs)")
            let run = try TestSupport.cli(S.issueArguments(key: key, out: out, csv: csv, extra: ["--jobs", String(jobs), "--no-qr"]))
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stderr.contains("issued 398, rejected 2,"), "\(run.stderr)")
            reports.append(try S.reportWithoutResumeFlag(out))
            outs.append(out)
        }
        #expect(reports[0] == reports[1])
        let report = try TestSupport.report(outs[1])
        #expect(report.map { $0["id"]?.stringValue } == (1...400).map { String(format: "P-%08d", $0) })
        let rejected = report.filter { $0["status"] == "rejected" }
        #expect(rejected.count == 2)
        #expect(rejected.allSatisfy { ($0["errors"]?.arrayValue?.count ?? 0) >= 1 && $0["files"] == .array([]) })
        for line in report where line["status"] == "issued" {
            let file = line["files"]![0]!.stringValue!
            #expect(try S.payload(outs[0].appendingPathComponent(file)) == S.payload(outs[1].appendingPathComponent(file)))
        }
    }
}
