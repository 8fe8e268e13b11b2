import Foundation
import Testing

import HealthCardsCore
import HealthCardsSite
import HealthCardsTestSupport

/// Messages of the `healthcards` program a trial found misleading (s40).
@Suite struct CLIMessageTruthTests {
    /// `--rejected /dev/full`: the rejected-rows file cannot be written (ENOSPC), and the error called it "the
    /// report" (report.ndjson is another file). It names the option and the path.
    @Test func anUnwritableRejectedRowsFileIsNamedByItsOption() throws {
        let dir = try TestSupport.tempDir("message-truth-rejected")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let templates = SiteTestSupport.templates
        let run = try TestSupport.cli([
            "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template",
            templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf", "1700000000",
            "--quiet", "--rejected", "/dev/full", templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(run.status != 0, "\(run.stderr)")
        #expect(run.stderr.contains("the --rejected file /dev/full was NOT written: No space left on device (ENOSPC)"),
                "\(run.stderr)")
        #expect(!run.stderr.contains("the report /dev/full"), "\(run.stderr)")
        // The cards and report.ndjson are still written (they were lost: the failure stopped the run before the
        // report was put in place), and the message says so and what to do.
        let report = out.appendingPathComponent("report.ndjson").path
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4, "one line a patient of the sample")
        #expect(run.stderr.contains("The cards and the report were written: 4 card(s) issued and 0 record(s) rejected of 4, each listed in \(report)"), "\(run.stderr)")
        #expect(run.stderr.contains("run the same command again with the --rejected file at a path that can be written"), "\(run.stderr)")
    }
}
