import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsTestSupport

/// CSV input through the real `healthcards issue`: RFC 4180 quoting, BOM, line ends, non-UTF-8 files,
/// bad rows (a bad row rejects its whole patient; every other patient is still issued) and duplicate events.
@Suite(.serialized) struct InputCSVTests {
    static let issuer = "https://issuer.example.org"
    static let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
    static let header = "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,admin_name,vax_event_id"

    /// Runs `issue` on CSV bytes written to a new folder; returns the run, the output folder and the input path.
    static func issue(_ bytes: [UInt8], name: String = "in.csv") throws -> (
        run: TestSupport.Run, out: URL, input: String
    ) {
        let dir = try TestSupport.tempDir("input")
        let key = try TestSupport.demoKey(in: dir)
        let input = dir.appendingPathComponent(name)
        try Data(bytes).write(to: input)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", issuer, "--key", key, "--template", template, "--out", out.path, "--nbf", "1700000000",
            "--no-qr", input.path,
        ])
        return (run, out, input.path)
    }

    /// The fhirBundle of `cards/<id>.smart-health-card`.
    static func bundle(_ out: URL, _ id: String) throws -> JSONValue {
        let card = try JSONParser.parse(
            try VerifyFixtures.bytes(out.appendingPathComponent("cards/\(id).smart-health-card")))
        let jws = try #require(card["verifiableCredential"]?[0]?.stringValue)
        return try #require(try TestSupport.payload(of: jws)["vc"]?["credentialSubject"]?["fhirBundle"])
    }

    static func cardExists(_ out: URL, _ id: String) -> Bool {
        FileManager.default.fileExists(atPath: out.appendingPathComponent("cards/\(id).smart-health-card").path)
    }

    static func line(_ report: [JSONValue], id: String) throws -> JSONValue {
        try #require(report.first { $0["id"]?.stringValue == id }, "no report line for \(id)")
    }

    static func errors(_ line: JSONValue) -> [(at: String, message: String)] {
        (line["errors"]?.arrayValue ?? []).map { ($0["at"]?.stringValue ?? "", $0["message"]?.stringValue ?? "") }
    }

    @Test(arguments: [("\r\n", true, true), ("\r\n", false, false), ("\n", true, false), ("\n", false, true)])
    func rfc4180QuotingBOMLineEndsAndTrimming(lineEnd: String, bom: Bool, finalNewline: Bool) throws {
        let rows = [
            Self.header,
            // Quoted fields: a comma, doubled quotes, a line break inside quotes; values padded with spaces.
            #"P-1,"  Ada  ","O""Brien, Jr.",1960-04-12,2021-01-15,207,"ABC Clinic, North"# + lineEnd + #"Wing",EV-1"#,
            "P-1, Ada ,\"O\"\"Brien, Jr.\",1960-04-12 , 2021-02-12,207,\"Main \"\"Q\"\" Pharmacy\",EV-2",
            "P-2,Chloé,Exampledóttir,1988-07-30,2021-04-20,212,,EV-3",
        ]
        var text = rows.joined(separator: lineEnd)
        if finalNewline { text += lineEnd }
        let bytes = (bom ? [0xEF, 0xBB, 0xBF] : []) + Array(text.utf8)
        let (run, out, _) = try Self.issue(bytes)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 2)
        #expect(report.allSatisfy { $0["status"]?.stringValue == "issued" })
        let ada = try Self.bundle(out, "P-1")
        let name = ada["entry"]?[0]?["resource"]?["name"]
        #expect(name == .array([.object(["family": .string("O\"Brien, Jr."), "given": ["Ada"]])]))
        let doses = try #require(ada["entry"]?.arrayValue?.dropFirst())
        #expect(
            doses.compactMap { $0["resource"]?["occurrenceDateTime"]?.stringValue } == ["2021-01-15", "2021-02-12"])
        // A line break inside quotes is kept as written (CRLF or LF), only the outer spaces are trimmed.
        #expect(
            doses.compactMap { $0["resource"]?["performer"]?[0]?["actor"]?["display"]?.stringValue }
                == ["ABC Clinic, North" + lineEnd + "Wing", "Main \"Q\" Pharmacy"])
        #expect(ada["entry"]?[0]?["resource"]?["birthDate"]?.stringValue == "1960-04-12")
        let chloe = try Self.bundle(out, "P-2")
        #expect(
            chloe["entry"]?[0]?["resource"]?["name"]
                == .array([.object(["family": "Exampledóttir", "given": ["Chloé"]])]))
        // The last record is read whole whether or not the file ends with a line break.
        #expect(chloe["entry"]?[1]?["resource"]?["vaccineCode"]?["coding"]?[0]?["code"]?.stringValue == "212")
    }

    @Test func latin1FileStopsWithFileLineAndByteOffset() throws {
        let good = Self.header + "\nP-1,Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1\n"
        let prefix = Array((good + "P-2,Chlo").utf8)
        // "Chloé" saved as Latin-1: é is the single byte 0xE9.
        let bytes = prefix + [0xE9] + Array(",Example,1988-07-30,2021-04-20,212,,EV-2\n".utf8)
        let (run, out, input) = try Self.issue(bytes)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 1)
        #expect(report[0]["status"]?.stringValue == "rejected")
        let message = try #require(report[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(message.contains("\(input):3"), "\(message)")
        #expect(message.contains("byte offset \(prefix.count) (0xE9)"), "\(message)")
        #expect(message.contains("not UTF-8"))
        #expect(message.contains("iconv -f WINDOWS-1252 -t UTF-8"))
        // Nothing from the file is issued, not even the well-formed patient before the bad byte.
        #expect(!Self.cardExists(out, "P-1") && !Self.cardExists(out, "P-2"))
        #expect(run.stderr.contains("rejected 1"))
        // The person at the terminal is told too, not only the report.
        #expect(run.stderr.contains("nothing issued from \(input): \(input):3: byte offset \(prefix.count) (0xE9) is not UTF-8"), "\(run.stderr)")
    }

    @Test func latin1InsideAQuotedFieldNamesTheByte() throws {
        // The bad byte sits after a doubled quote and a line break inside the quoted field.
        let prefix = Array((Self.header + "\nP-1,\"Re\"\"n\nX").utf8)
        let bytes = prefix + [0xE9] + Array("e\",Testperson,1960-04-12,2021-01-15,207,,EV-1\n".utf8)
        let (run, out, input) = try Self.issue(bytes)
        #expect(run.status == 1)
        let message = try #require(try TestSupport.report(out)[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(message.contains("\(input):3: byte offset \(prefix.count) (0xE9)"), "\(message)")
    }

    /// Each bad patient has one good row and one bad row: the whole patient is rejected with the row,
    /// column and reason, and the good patients are issued.
    @Test func badRowsRejectTheirWholePatientOnly() throws {
        let csv =
            [
                Self.header,
                "GOOD-1,Ada,Testperson,1960-04-12,2021-01-15,207,,E1",  // line 2
                "FEW,Bo,Short,1970-01-01,2021-01-15,207,,E2",  // 3
                "FEW,Bo,Short,1970-01-01,2021-02-15,207",  // 4: too few fields
                "MANY,Cy,Long,1970-01-01,2021-01-15,207,,E3",  // 5
                "MANY,Cy,Long,1970-01-01,2021-02-15,207,,E4,extra",  // 6: too many fields
                "FEB30,Di,Leap,1970-01-01,2021-01-15,207,,E5",  // 7
                "FEB30,Di,Leap,1970-01-01,2021-02-30,207,,E6",  // 8: impossible date
                "US,Ed,Format,1970-01-01,2021-01-15,207,,E7",  // 9
                "US,Ed,Format,1970-01-01,06/15/2021,207,,E8",  // 10: another date format
                "DOB,Fay,Future,2022-03-01,2022-03-15,207,,E9",  // 11
                "DOB,Fay,Future,2022-03-01,2021-06-15,207,,E10",  // 12: born after the event
                "NONAME,Gus,Blank,1970-01-01,2021-01-15,207,,E11",  // 13
                "NONAME,  ,Blank,1970-01-01,2021-02-15,207,,E12",  // 14: empty (blank) name
                "NOCODE,Hal,Code,1970-01-01,2021-01-15,207,,E13",  // 15
                "NOCODE,Hal,Code,1970-01-01,2021-02-15,,,E14",  // 16: empty code
                "BADCODE,Ivy,Code,1970-01-01,2021-01-15,207,,E15",  // 17
                "BADCODE,Ivy,Code,1970-01-01,2021-02-15,2O7,,E16",  // 18: malformed code (letter O)
                "GOOD-2,Jo,Testperson,1970-01-01,2021-01-15,208,,E17",  // 19
            ].joined(separator: "\n") + "\n"
        let (run, out, input) = try Self.issue(Array(csv.utf8))
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 10)
        #expect(run.stderr.contains("issued 2, rejected 8"), "\(run.stderr)")
        for id in ["GOOD-1", "GOOD-2"] {
            #expect(try Self.line(report, id: id)["status"]?.stringValue == "issued")
            #expect(Self.cardExists(out, id))
        }
        #expect(try Self.bundle(out, "GOOD-2")["entry"]?.arrayValue?.count == 2)
        let expectations: [(id: String, at: String, says: [String])] = [
            ("FEW", "\(input):4", ["row has 6 fields, the header has 8"]),
            ("MANY", "\(input):6", ["row has 9 fields, the header has 8"]),
            ("FEB30", "\(input):8 column admin_date", ["'2021-02-30'", "YYYY-MM-DD", "does not exist"]),
            ("US", "\(input):10 column admin_date", ["'06/15/2021'", "YYYY-MM-DD", "2021-06-15"]),
            ("DOB", "\(input):12 column admin_date", ["before the patient's birth date 2022-03-01"]),
            ("NONAME", "\(input):14 column recip_first_name", ["required column 'recip_first_name' is empty"]),
            ("NOCODE", "\(input):16 column cvx", ["required column 'cvx' is empty"]),
            ("BADCODE", "\(input):18 column cvx", ["2O7"]),
        ]
        for expected in expectations {
            let line = try Self.line(report, id: expected.id)
            #expect(line["status"]?.stringValue == "rejected", "\(expected.id)")
            let errors = Self.errors(line)
            let match = errors.first { $0.at == expected.at }
            #expect(match != nil, "\(expected.id): \(errors)")
            for text in expected.says { #expect(match?.message.contains(text) == true, "\(expected.id): \(errors)") }
            // No card with a missing dose: the patient's good row is not issued alone.
            #expect(!Self.cardExists(out, expected.id), "\(expected.id)")
        }
    }

    /// In the CVRS column order the patient id is the third column, so a row that lost a field before it
    /// reads another value as the patient id. That row still belongs to P-1: P-1 must not be issued with
    /// the dose missing. Known gap in `CSVTemplateInput` (batch runner): it files the short row under the
    /// shifted value ("Ada") and issues P-1 from its other row.
    @Test func shortRowIsNotFiledUnderAShiftedPatientId() throws {
        let csv =
            [
                "vax_event_id,ext_type,recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx",
                "EV-1,1,P-1,Ada,Testperson,1960-04-12,2021-01-15,207",
                "1,P-1,Ada,Testperson,1960-04-12,2021-02-12,207",  // vax_event_id lost
                "EV-3,1,P-2,Bob,Sampleton,1975-11-03,2021-03-02,208",
            ].joined(separator: "\n") + "\n"
        let (run, out, input) = try Self.issue(Array(csv.utf8))
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        #expect(try Self.line(report, id: "P-2")["status"]?.stringValue == "issued")
        let p1 = try Self.line(report, id: "P-1")
        #expect(p1["status"]?.stringValue == "rejected")
        #expect(
            Self.errors(p1).contains {
                $0.at == "\(input):3" && $0.message.contains("row has 7 fields, the header has 8")
            })
        #expect(!Self.cardExists(out, "P-1"))
        // The short row is filed under P-1 (its id appears in the row), not as a record of its own.
        #expect(report.count == 2)
    }

    @Test func duplicateEventIsReportedOnceAndCountedOnce() throws {
        let csv = [
            Self.header,
            "P-1,Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1",
            "P-1,Ada,Testperson,1960-04-12,2021-02-12,207,,EV-2",
            "P-1,Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1",
            "P-1,Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1",
        ].joined(separator: "\r\n")
        let (run, out, input) = try Self.issue(Array(csv.utf8))
        #expect(run.status == 0, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 1)
        let warnings = try #require(report[0]["warnings"]?.arrayValue)
        let duplicates = warnings.filter { $0["message"]?.stringValue?.contains("duplicate event") == true }
        #expect(duplicates.count == 1)
        #expect(duplicates.first?["at"]?.stringValue == "\(input):2 column vax_event_id")
        #expect(duplicates.first?["message"]?.stringValue?.contains("\(input):4, \(input):5") == true)
        let doses = try Self.bundle(out, "P-1")["entry"]?.arrayValue?.dropFirst() ?? []
        #expect(
            doses.compactMap { $0["resource"]?["occurrenceDateTime"]?.stringValue } == ["2021-01-15", "2021-02-12"])
    }

    @Test func sameEventIdWithDifferentDataRejectsThePatient() throws {
        let csv =
            [
                Self.header,
                "P-1,Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1",
                "P-1,Ada,Testperson,1960-04-12,2021-02-12,207,,EV-1",
                "P-2,Bob,Sampleton,1975-11-03,2021-03-02,208,,EV-9",
            ].joined(separator: "\n") + "\n"
        let (run, out, input) = try Self.issue(Array(csv.utf8))
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        let ada = try Self.line(report, id: "P-1")
        #expect(ada["status"]?.stringValue == "rejected")
        let error = try #require(Self.errors(ada).first)
        #expect(error.at == "\(input):2 column vax_event_id")
        // A conflict of two rows, said so and naming both lines (it was TEMPLATE_VALUE, "a value does not fit").
        #expect(error.message.contains("conflicting rows: event 'EV-1' is at \(input):2 and again at \(input):3, with different admin_date"), "\(error.message)")
        #expect(ada["errors"]?[0]?["code"]?.stringValue == "EVENT_CONFLICT")
        #expect(run.stderr.contains("EVENT_CONFLICT") && run.stderr.contains("two rows have the same event id and different data"), "\(run.stderr)")
        #expect(try Self.line(report, id: "P-2")["status"]?.stringValue == "issued")
    }

    @Test func brokenQuotingStopsTheFileWithTheLine() throws {
        let csv = Self.header + "\nP-1,Ada,Test\"person,1960-04-12,2021-01-15,207,,EV-1\n"
        let (run, out, input) = try Self.issue(Array(csv.utf8))
        #expect(run.status == 1)
        let message = try #require(try TestSupport.report(out)[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(message.hasPrefix("\(input):2: a '\"' inside an unquoted field"), "\(message)")
        let unterminated = Self.header + "\nP-1,\"Ada,Testperson,1960-04-12,2021-01-15,207,,EV-1\n"
        let second = try Self.issue(Array(unterminated.utf8))
        let message2 = try #require(try TestSupport.report(second.out)[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(
            message2.hasPrefix("\(second.input):2: a quoted field opened on this line is never closed"), "\(message2)")
    }

    /// A warning the validator finds in a card issued from CSV is reported at the row and column that caused it,
    /// with the FHIR path in the message, as errors are (it was at the Bundle path only).
    @Test func bundleWarningsAreAtTheirRowAndColumn() throws {
        let rows = [
            Self.header, "P1,Ada,Test,1960-04-12,2021-01-15,207,Clinic,E1", "P1,Ada,Test,1960-04-12,2021-02-12,999,Clinic,E2",
        ]
        let (run, out, input) = try Self.issue(Array((rows.joined(separator: "\n") + "\n").utf8))
        #expect(run.status == 0, "\(run.stderr)")
        let line = try TestSupport.report(out)[0]
        #expect(line["status"] == "issued")
        let warnings = (line["warnings"]?.arrayValue ?? []).map {
            ($0["at"]?.stringValue ?? "", $0["message"]?.stringValue ?? "", $0["code"]?.stringValue ?? "")
        }
        let cvx = try #require(warnings.first { $0.2 == "CODE_CVX_UNSPECIFIED" }, "\(warnings)")
        #expect(cvx.0 == "\(input):3 column cvx", "\(cvx)")
        #expect(cvx.1.hasSuffix("(Bundle.entry[2].resource.vaccineCode.coding[0].code)"), "\(cvx)")
    }
}
