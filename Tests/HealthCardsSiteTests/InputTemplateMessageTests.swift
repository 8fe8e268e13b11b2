import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsSite
import HealthCardsTestSupport

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
            BatchTestSupport.sample,
        ])
        #expect(run.status == 2)
        let prefix = "healthcards: \(template): bundle.entry[1].resource.occurrenceDateTime: "
        #expect(run.stderr.hasPrefix(prefix + expected), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// A date or time in the right form that names no day or time says which part is out of range. Before, hour 25
    /// was called "a spreadsheet date-and-time cell" (TEMPLATE_DATE_WITH_TIME), and year 0000 "not a date in the
    /// form YYYY-MM-DD" though it is in that form: FHIR R4's `date` regex has years 0001 to 9999 only
    /// (`([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)…`).
    @Test(arguments: [
        ("2021-02-17T25:00:00Z", Placeholder.ValueType.date, "has a time of day that does not exist (25:00:00Z: hour 25 is out of range (00 to 23))"),
        ("2021-02-17 10:61", .date, "minute 61 is out of range (00 to 59)"),
        ("3/15/2021 13:00 PM", .date, "hour 13 is out of range (1 to 12 with AM or PM)"),
        ("0000-01-01", .date, "'0000-01-01' has the form YYYY-MM-DD but is not a date: year 0000 does not exist"),
        ("2021-02-30", .date, "day 30 does not exist in 2021-02 (01 to 28)"),
        ("2021-13-01", .date, "month 13 does not exist (01 to 12)"),
        ("2021-02-17T25:00:00Z", .dateTime, "its time of day does not exist (25:00:00Z: hour 25 is out of range (00 to 23))"),
        ("0000-01-01", .dateTime, "its date is not one: year 0000 does not exist"),
    ])
    func impossibleDatesAndTimesSayWhatIsOutOfRange(value: String, type: Placeholder.ValueType, says: String) throws {
        let error = #expect(throws: HealthCardError.self) {
            try Template.typedValue(value, as: type)
        }
        #expect(error?.text.contains(says) == true, "\(error?.text ?? "accepted")")
        #expect(error?.code != .templateDateWithTime)
    }

    /// A real date with a time of day is still the spreadsheet case (TEMPLATE_DATE_WITH_TIME).
    @Test func aRealTimeOfDayIsStillASpreadsheetCell() throws {
        let error = #expect(throws: HealthCardError.self) { try Template.typedValue("2021-02-17T23:00:00Z", as: .date) }
        #expect(error?.code == .templateDateWithTime, "\(error?.text ?? "accepted")")
    }
}
