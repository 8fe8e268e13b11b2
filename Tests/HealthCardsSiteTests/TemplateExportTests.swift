import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsTestSupport

/// Exports as clinics really write them, through the real `healthcards issue`: stated date formats
/// (ambiguous dates refused, never guessed), template members checked by name, UTF-16 files named as
/// such, Excel's trailing empty rows, `;` and tab separated exports, headers that differ only in case or
/// delimiter, rows repeated without an event key, and doses in date order.
@Suite(.serialized) struct TemplateExportTests {
    /// recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,admin_name,vax_event_id
    static let header = InputCSVTests.header

    /// The shipped vaccination template with its JSON text changed by `edit`.
    static func template(_ edit: (String) -> String = { $0 }) throws -> String {
        edit(String(decoding: try VerifyFixtures.bytes(URL(fileURLWithPath: BatchTestSupport.template)), as: UTF8.self))
    }

    /// Runs `issue` on `bytes` with a template text; returns the run, the output folder and the input path.
    static func issue(_ bytes: [UInt8], template: String, name: String = "in.csv") throws -> (
        run: TestSupport.Run, out: URL, input: String
    ) {
        let dir = try TestSupport.tempDir("export")
        let key = try TestSupport.demoKey(in: dir)
        let templatePath = try TestSupport.write(template, to: "template.json", in: dir)
        let input = dir.appendingPathComponent(name)
        try Data(bytes).write(to: input)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", BatchTestSupport.issuer, "--key", key, "--template", templatePath, "--out", out.path,
            "--nbf", "1700000000", "--no-qr", input.path,
        ])
        return (run, out, input.path)
    }

    static func csv(_ rows: [String], separator: String = ",") -> [UInt8] {
        Array(([header] + rows).joined(separator: "\n").replacingOccurrences(of: ",", with: separator).utf8 + [0x0A])
    }

    static func withMember(_ member: String) throws -> String {
        try template {
            $0.replacingOccurrences(
                of: "\"eventKey\": \"vax_event_id\",", with: "\"eventKey\": \"vax_event_id\", \(member),")
        }
    }

    // MARK: dates

    @Test func withoutADateFormatSlashDatesAreRefusedAndNeverGuessed() throws {
        let (run, out, input) = try Self.issue(
            Self.csv([
                "A,Ada,Test,1960-04-12,07/06/2021,207,,E1",  // 2: ambiguous
                "B,Bo,Test,1960-04-12,15/06/2021,207,,E2",  // 3: only day-first is a date
                "C,Cy,Test,1960-04-12,06/15/2021,207,,E3",  // 4: only month-first is a date
                "D,Di,Test,1960-04-12,31/02/2021,207,,E4",  // 5: neither
                "E,Ed,Test,1960-04-12,2021-06-15,207,,E5",
            ]), template: try Self.template())
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        #expect(report.map { $0["status"]?.stringValue } == ["rejected", "rejected", "rejected", "rejected", "issued"])
        func message(_ id: String) throws -> String {
            try #require(try InputCSVTests.line(report, id: id)["errors"]?[0]?["message"]?.stringValue)
        }
        #expect(
            try message("A").contains(
                "'07/06/2021' is ambiguous: it is 2021-07-06 as MM/DD/YYYY and 2021-06-07 as DD/MM/YYYY, and a date is never guessed"
            ))
        #expect(try message("A").contains("\"dateFormat\": \"MM/DD/YYYY\" or \"DD/MM/YYYY\""))
        // The hint is a real date: 15 June, not month 15.
        let b = try message("B")
        #expect(b.contains("this looks like DD/MM/YYYY: write it as 2021-06-15"), "\(b)")
        #expect(try message("C").contains("this looks like MM/DD/YYYY: write it as 2021-06-15"))
        #expect(try message("D").contains("neither MM/DD/YYYY nor DD/MM/YYYY reads it as a real date"))
        #expect(
            try InputCSVTests.line(report, id: "A")["errors"]?[0]?["at"]?.stringValue == "\(input):2 column admin_date")
    }

    @Test(arguments: [
        ("MM/DD/YYYY", "07/06/2021", "4/12/1960", "2021-07-06", "1960-04-12"),
        ("DD/MM/YYYY", "07/06/2021", "12/4/1960", "2021-06-07", "1960-04-12"),
        ("DD.MM.YYYY", "15.06.2021", "12.04.1960", "2021-06-15", "1960-04-12"),
        ("YYYY/MM/DD", "2021/06/15", "1960-04-12", "2021-06-15", "1960-04-12"),
    ])
    func aStatedDateFormatIsRead(format: String, admin: String, dob: String, expectedAdmin: String, expectedDOB: String)
        throws
    {
        let (run, out, _) = try Self.issue(
            Self.csv(["A,Ada,Test,\(dob),\(admin),207,,E1"]),
            template: try Self.withMember("\"dateFormat\": \"\(format)\""))
        #expect(run.status == 0, "\(run.stderr)")
        let bundle = try InputCSVTests.bundle(out, "A")
        #expect(bundle["entry"]?[0]?["resource"]?["birthDate"]?.stringValue == expectedDOB)
        #expect(bundle["entry"]?[1]?["resource"]?["occurrenceDateTime"]?.stringValue == expectedAdmin)
    }

    @Test func aValueThatDoesNotFitTheStatedFormatSaysHowItReads() throws {
        let (run, out, _) = try Self.issue(
            Self.csv(["A,Ada,Test,1960-04-12,15/06/2021,207,,E1"]),
            template: try Self.withMember("\"dateFormat\": \"MM/DD/YYYY\""))
        #expect(run.status == 1)
        let message = try #require(try TestSupport.report(out)[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(
            message.contains(
                "'15/06/2021' is not a date in the form MM/DD/YYYY (the template's dateFormat) or YYYY-MM-DD"),
            "\(message)")
        #expect(message.contains("it reads as DD/MM/YYYY 2021-06-15"), "\(message)")
    }

    // MARK: template members

    @Test(arguments: [
        ("\"dateformat\": \"MM/DD/YYYY\"", "\"dateformat\"", "(did you mean \"dateFormat\"?)"),
        ("\"repeats\": []", "\"repeats\"", "(did you mean \"repeat\"?)"),
        ("\"delimiter\": \"::\"", "'::' is not a delimiter templates know", ""),
        ("\"dateFormat\": \"MM/DD/YY\"", "is not a date format", ""),
    ])
    func anUnknownMemberOrValueIsRefusedWithTheKnownOnes(member: String, says: String, suggestion: String) throws {
        let (run, out, _) = try Self.issue(
            Self.csv(["A,Ada,Test,1960-04-12,2021-06-15,207,,E1"]), template: try Self.withMember(member))
        #expect(run.status == 2)
        #expect(run.stderr.contains(says), "\(run.stderr)")
        if !suggestion.isEmpty {
            #expect(run.stderr.contains(suggestion))
            #expect(
                run.stderr.contains(
                    "the members are \"name\", \"description\", \"patientKey\", \"eventKey\", \"dateFormat\", \"delimiter\", \"columns\", \"repeat\", \"bundle\""
                ))
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func anUnknownColumnMemberIsRefused() throws {
        let text = try Self.template {
            $0.replacingOccurrences(
                of: "\"recip_id\": {\"required\": true,", with: "\"recip_id\": {\"requried\": true,")
        }
        let (run, _, _) = try Self.issue(Self.csv([]), template: text)
        #expect(run.status == 2)
        #expect(run.stderr.contains("column 'recip_id' has the member \"requried\""), "\(run.stderr)")
        #expect(run.stderr.contains("(did you mean \"required\"?); the members are \"required\", \"description\""))
    }

    @Test func leavingOutRepeatIsAMessageAboutTheTemplate() throws {
        let text = try Self.template {
            $0.replacingOccurrences(of: "\"repeat\": [\"urn:template:immunization\"],", with: "")
        }
        let (run, _, _) = try Self.issue(
            Self.csv(["A,Ada,Test,1960-04-12,2021-06-15,207,,E1", "A,Ada,Test,1960-04-12,2021-07-15,207,,E2"]),
            template: text)
        #expect(run.status == 2)
        #expect(
            run.stderr.contains(
                "template.json: \"repeat\" is missing: list the fullUrls of the entries written once per input row"),
            "\(run.stderr)")
        #expect(!run.stderr.contains("correct the export"))
    }

    // MARK: encodings, rows, delimiters, headers

    @Test(arguments: [
        ("UTF-16LE", [0xFF, 0xFE] as [UInt8], "UTF-16 little-endian, with a byte order mark", "iconv -f UTF-16 "),
        ("UTF-16BE", [0xFE, 0xFF], "UTF-16 big-endian, with a byte order mark", "iconv -f UTF-16 "),
        ("UTF-16LE", [], "UTF-16 little-endian, without a byte order mark", "iconv -f UTF-16LE "),
        ("UTF-16BE", [], "UTF-16 big-endian, without a byte order mark", "iconv -f UTF-16BE "),
    ])
    func utf16IsRecognizedAndNoNULReachesStderr(encoding: String, bom: [UInt8], says: String, iconv: String) throws {
        let text = String(decoding: Self.csv(["A,Ada,Test,1960-04-12,2021-06-15,207,,E1"]), as: UTF8.self)
        let units = Array(text.utf16)
        let bytes =
            bom
            + units.flatMap { u -> [UInt8] in
                let (hi, lo) = (UInt8(u >> 8), UInt8(u & 0xFF))
                return encoding == "UTF-16LE" ? [lo, hi] : [hi, lo]
            }
        let (run, out, input) = try Self.issue(bytes, template: try Self.template())
        #expect(run.status == 1)
        #expect(run.stderr.contains("nothing issued from \(input): \(input) is \(says), not UTF-8"), "\(run.stderr)")
        #expect(run.stderr.contains(iconv))
        #expect(!run.stderr.contains("Windows-1252") && !run.stderr.unicodeScalars.contains("\u{0}"))
        let report = try TestSupport.report(out)
        #expect(report.count == 1 && report[0]["status"]?.stringValue == "rejected")
        // The same for a Bundle file.
        let bundle = Array(JSONWriter.minifiedString(VerifyForge.bundle()).utf16).flatMap {
            [UInt8($0 & 0xFF), UInt8($0 >> 8)]
        }
        let json = try Self.issue([0xFF, 0xFE] + bundle, template: try Self.template(), name: "b.json")
        #expect(
            json.run.stderr.contains("is UTF-16 little-endian, with a byte order mark, not UTF-8"), "\(json.run.stderr)"
        )
    }

    @Test func trailingEmptyRowsAreSkipped() throws {
        let rows = [
            "A,Ada,Test,1960-04-12,2021-06-15,207,,E1", ",,,,,,,", " , ,,,,,,", "\"\",,,,,,,",
            "B,Bo,Test,1961-04-12,2021-06-16,207,,E2", ",,,,,,,", ",,,,,,,,,,",
        ]
        let (run, out, input) = try Self.issue(Self.csv(rows), template: try Self.template())
        #expect(run.status == 0, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.map { $0["source"]?.stringValue } == ["\(input):2", "\(input):6"])
        #expect(run.stderr.contains("issued 2, rejected 0"))
    }

    @Test(arguments: [(";", ";"), ("\t", "\\t"), ("|", "|")])
    func otherDelimitersThroughTheTemplate(delimiter: String, json: String) throws {
        let fields = [
            "A", "Ada", "\"Test, Jr.\"", "1960-04-12", "2021-06-15", "207", "\"Clinic\(delimiter) North\"", "E1",
        ]
        let text =
            Self.header.replacingOccurrences(of: ",", with: delimiter) + "\r\n" + fields.joined(separator: delimiter)
            + "\r\n"
        let (run, out, _) = try Self.issue(
            Array(text.utf8), template: try Self.withMember("\"delimiter\": \"\(json)\""))
        #expect(run.status == 0, "\(run.stderr)")
        let bundle = try InputCSVTests.bundle(out, "A")
        #expect(bundle["entry"]?[0]?["resource"]?["name"]?[0]?["family"]?.stringValue == "Test, Jr.")
        #expect(
            bundle["entry"]?[1]?["resource"]?["performer"]?[0]?["actor"]?["display"]?.stringValue
                == "Clinic\(delimiter) North")
    }

    @Test func aHeaderInAnotherDelimiterOrCaseGetsAHint() throws {
        let semicolons = try Self.issue(
            Self.csv(["A,Ada,Test,1960-04-12,2021-06-15,207,,E1"], separator: ";"), template: try Self.template())
        #expect(
            semicolons.run.stderr.contains(
                "Hint: the header looks ';'-separated, and template 'covid19-vaccination' reads ','-separated files: set \"delimiter\": \";\" in the template"
            ),
            "\(semicolons.run.stderr)")
        let tabs = try Self.issue(
            Self.csv(["A,Ada,Test,1960-04-12,2021-06-15,207,,E1"], separator: "\t"), template: try Self.template())
        #expect(
            tabs.run.stderr.contains("the header looks tab-separated")
                && tabs.run.stderr.contains("\"delimiter\": \"\\t\""), "\(tabs.run.stderr)")
        let quoted = try Self.issue(
            Array("\"recip_id\";\"recip_first_name\"\n\"A\";\"Ada\"\n".utf8), template: try Self.template())
        #expect(
            quoted.run.stderr.contains("The file may be ';'-separated: if so, set \"delimiter\" in the template"),
            "\(quoted.run.stderr)")
        let upper = Array(
            "RECIP_ID,Recip_First_Name,recip_last_name,recip_dob,admin_date,cvx\nA,Ada,Test,1960-04-12,2021-06-15,207\n"
                .utf8)
        let cased = try Self.issue(upper, template: try Self.template())
        #expect(
            cased.run.stderr.contains(
                "the header has 'RECIP_ID', which differs from 'recip_id' only in case; column names are matched exactly"
            ), "\(cased.run.stderr)")
        #expect(cased.run.stderr.contains("'Recip_First_Name', which differs from 'recip_first_name' only in case"))
    }

    @Test func anExportWithoutAHeaderLineIsRefusedWithoutRepeatingTheRowItStartsWith() throws {
        // The rows alone, as an export with "include column names" unticked writes them.
        let rows = "A,Ada,Zyxwvut,1960-04-12,2021-06-15,207,,E1\nB,Bo,Zyxwvut,1961-04-12,2021-06-15,207,,E2\n"
        let (run, out, input) = try Self.issue(Array(rows.utf8), template: try Self.template())
        #expect(run.status == 1)
        #expect(
            run.stderr.contains(
                "\(input): the first line has none of the columns of template 'covid19-vaccination' (required: recip_id,"
            ),
            "\(run.stderr)")
        #expect(run.stderr.contains("it has 8 field(s), not shown here"))
        // Neither stderr nor the report repeats the person's name or birth date.
        #expect(!run.stderr.contains("Zyxwvut") && !run.stderr.contains("1960-04-12"), "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 1 && report[0]["status"]?.stringValue == "rejected")
        #expect(report[0]["errors"]?[0]?["message"]?.stringValue?.contains("Zyxwvut") == false)
    }

    // MARK: repeated rows and dose order

    @Test func withoutAnEventKeyARepeatedRowIsCountedOnceAndADifferentRowOfTheSameDoseIsRefused() throws {
        let noEventKey = try Self.template { $0.replacingOccurrences(of: "\"eventKey\": \"vax_event_id\",", with: "") }
        let (run, out, input) = try Self.issue(
            Self.csv([
                "A,Ada,Test,1960-04-12,2021-06-15,207,,E1",
                "A,Ada,Test,1960-04-12,2021-06-15,207,,E1",  // 3: the same row again
                "B,Bo,Test,1961-04-12,2021-06-15,207,Clinic,E2",
                "B,Bo,Test,1961-04-12,2021-06-15,207,Pharmacy,E3",  // 5: the same dose, another place
            ]), template: noEventKey)
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        let a = try InputCSVTests.line(report, id: "A")
        #expect(a["status"]?.stringValue == "issued")
        #expect(
            a["warnings"]?[0]?["message"]?.stringValue?.hasPrefix(
                "the same row is repeated at \(input):3; counted once. The template has no \"eventKey\"") == true,
            "\(a)")
        #expect(try InputCSVTests.bundle(out, "A")["entry"]?.arrayValue?.count == 2, "one dose, not two")
        let b = try InputCSVTests.line(report, id: "B")
        #expect(b["status"]?.stringValue == "rejected")
        let error = try #require(b["errors"]?[0])
        #expect(error["code"]?.stringValue == "IMMUNIZATION_DUPLICATE", "\(error)")
        #expect(error["message"]?.stringValue?.hasPrefix("this dose repeats Bundle.entry[1]") == true, "\(error)")
        #expect(error["at"]?.stringValue?.hasPrefix("\(input):5") == true, "\(error)")
    }

    /// An export sorted by something else than the date (here: by lot, then a dose added late): the card
    /// lists the doses by date, and same-day doses in the export's order.
    @Test func dosesAreWrittenInDateOrder() throws {
        let (run, out, _) = try Self.issue(
            Self.csv([
                "A,Ada,Test,1960-04-12,2021-09-01,208,,E4",
                "A,Ada,Test,1960-04-12,2021-01-15,207,,E1",
                "A,Ada,Test,1960-04-12,2021-09-01,141,,E5",
                "A,Ada,Test,1960-04-12,2021-02-12,207,,E2",
            ]), template: try Self.template())
        #expect(run.status == 0, "\(run.stderr)")
        let doses = try InputCSVTests.bundle(out, "A")["entry"]?.arrayValue?.dropFirst() ?? []
        #expect(
            doses.map {
                "\($0["resource"]?["occurrenceDateTime"]?.stringValue ?? "") \($0["resource"]?["vaccineCode"]?["coding"]?[0]?["code"]?.stringValue ?? "")"
            }
                == ["2021-01-15 207", "2021-02-12 207", "2021-09-01 208", "2021-09-01 141"])
        #expect(try TestSupport.report(out)[0]["profile"]?.stringValue == "vaccination")
    }

    /// A row error found after sorting is still reported at the row and column that caused it.
    @Test func aRowErrorIsLocatedAtItsRowAfterSorting() throws {
        let (run, out, input) = try Self.issue(
            Self.csv([
                "A,Ada,Test,1960-04-12,2021-09-01,207,,E1",
                "A,Ada,Test,1960-04-12,1959-02-12,207,,E2",  // 3: before birth, first on the card
            ]), template: try Self.template())
        #expect(run.status == 1)
        let error = try #require(try TestSupport.report(out)[0]["errors"]?[0])
        #expect(error["at"]?.stringValue == "\(input):3 column admin_date", "\(error)")
        #expect(
            error["message"]?.stringValue?.contains("(Bundle.entry[1].resource.occurrenceDateTime)") == true, "\(error)"
        )
    }
}
