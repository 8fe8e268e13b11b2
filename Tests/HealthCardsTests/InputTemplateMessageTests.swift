import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

/// A broken placeholder in a template stops `healthcards issue` with the template's path and where in
/// its Bundle the placeholder is.
@Suite(.serialized) struct InputTemplateMessageTests {
    @Test(arguments: [
        (
            "{{admin_date|datee}}",
            "placeholder {{admin_date|datee}} has unknown type 'datee'; expected one of string, code, date"
        ),
        ("{{admin_date|date}", "'{{admin_date|date}' opens a placeholder with {{ but never closes it with }}"),
        ("{{admin_dat}}", "{{admin_dat}} names a column that is not declared in \"columns\""),
    ])
    func brokenPlaceholderNamesTemplateAndPath(placeholder: String, expected: String) throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let original = String(
            decoding: try VerifyFixtures.bytes(URL(fileURLWithPath: BatchTestSupport.template)), as: UTF8.self)
        #expect(original.contains("\"occurrenceDateTime\": \"{{admin_date|date}}\""))
        let broken = original.replacingOccurrences(of: "{{admin_date|date}}", with: placeholder)
        let template = try TestSupport.write(broken, to: "broken.json", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", BatchTestSupport.issuer, "--key", key, "--template", template, "--out", out.path,
            BatchOutputCheckTests.sample,
        ])
        #expect(run.status == 2)
        let prefix = "healthcards: \(template): bundle.entry[1].resource.occurrenceDateTime: "
        #expect(run.stderr.hasPrefix(prefix + expected), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }
}
