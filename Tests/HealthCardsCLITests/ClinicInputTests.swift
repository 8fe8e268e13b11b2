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

/// What the clinic reads (issue 22): invisible characters from spreadsheets and EHR exports, the table of rejected
/// rows, and messages about dates with a time, stray quotes, binary files given as CSV and misspelled columns.
/// Through the real `healthcards`.
@Suite struct ClinicInputTests {
    static let template = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path
    static let header =
        "recip_id,recip_first_name,recip_middle_name,recip_last_name,recip_dob,admin_date,cvx,lot_number,admin_name,vax_event_id"

    static func issue(_ csv: String, in dir: URL, template: String = template, extra: [String] = []) throws
        -> TestSupport.Run
    {
        let copied = dir.appendingPathComponent("demo-key.pem").path
        let key = FileManager.default.fileExists(atPath: copied) ? copied : try TestSupport.demoKey(in: dir)
        return try TestSupport.cli(
            [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template", template, "--no-qr",
                "--out", dir.appendingPathComponent("out").path,
            ] + extra + [csv])
    }

    static func reportLines(_ dir: URL) throws -> [JSONValue] {
        try TestSupport.report(dir.appendingPathComponent("out"))
    }

    /// The case `Tests/Fixtures/cases/csv-nbsp-splits-patient/`, run as reported: `P-9` and `P-9` + U+00A0 were two
    /// people, each card missing a dose, with one rid. Now one patient, both doses, one rid; and `revoke --id` with
    /// the id as the export wrote it finds that card.
    @Test func theNoBreakSpaceCaseIsOnePatientWithBothDoses() throws {
        let dir = try TestSupport.tempDir("nbsp-case")
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let csv = VerifyFixtures.cases.appendingPathComponent("csv-nbsp-splits-patient/nbsp-splits-patient.csv").path
        let run = try Self.issue(csv, in: dir, extra: ["--rid-secret", secret])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("issued 1, rejected 0"), "\(run.stderr)")
        let report = try Self.reportLines(dir)
        #expect(report.count == 1 && report[0]["id"] == "P-9" && report[0]["ridFrom"] == "P-9")
        let card = try BatchTestSupport.payload(dir.appendingPathComponent("out/cards/P-9.smart-health-card"))
        let doses = (card["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue ?? []).filter {
            $0["resource"]?["resourceType"] == "Immunization"
        }
        #expect(
            doses.compactMap { $0["resource"]?["occurrenceDateTime"]?.stringValue } == ["2021-03-01", "2021-03-29"])
        let rid = try RID.derive(secret: try RIDSecretFile.read(secret), kid: DemoKey.kid, patientID: "P-9")
        #expect(card["vc"]?["rid"]?.stringValue == rid && report[0]["rid"]?.stringValue == rid)

        let site = dir.appendingPathComponent("site").path
        let key = dir.appendingPathComponent("demo-key.pem").path
        try SiteTestSupport.cli(["site", "--out", site, "--issuer", SiteTestSupport.issuer, "--crl", key])
        let revoked = try SiteTestSupport.cli([
            "revoke", "--site", site, "--key", key, "--rid-secret", secret, "--report",
            dir.appendingPathComponent("out/report.ndjson").path, "--id", "P-9\u{A0}",
        ])
        #expect(revoked.stdout.hasPrefix("revoked \(rid) (patient P-9)"), "\(revoked.stdout)")
    }

    /// One form of an id: what looks the same is the same id (spaces that look like a space, invisible characters,
    /// canonically equivalent spellings); what differs visibly stays different.
    @Test func anIdHasOneNormalizedForm() {
        let same = ["P-9", " P-9 ", "P-9\u{A0}", "\u{FEFF}P-9", "P-\u{200B}9", "P-9\u{2060}\t"]
        #expect(Set(same.map(PatientIdentity.normalize)) == ["P-9"])
        #expect(PatientIdentity.normalize("Jos\u{E9}") == PatientIdentity.normalize("Jose\u{301}"))
        #expect(Array(PatientIdentity.normalize("Jose\u{301}").utf8) == Array("Jos\u{E9}".utf8))
        #expect(PatientIdentity.normalize("A\u{A0}1") == "A 1" && PatientIdentity.normalize("A\u{3000}1") == "A 1")
        #expect(PatientIdentity.normalize("a 1") != PatientIdentity.normalize("a1"))
        #expect(PatientIdentity.normalize("p-9") != PatientIdentity.normalize("P-9"))
        #expect(PatientIdentity.normalize("\u{A0}\u{200B}").isEmpty)
    }

    /// Around a value, invisible characters are trimmed (a date with a trailing no-break space was refused with a
    /// message in which the cause was invisible); inside a name or lot they are refused, shown escaped; a Persian
    /// name's zero-width non-joiner is part of its spelling and kept.
    @Test func invisibleCharactersAreTrimmedAroundValuesAndRefusedInsideThem() throws {
        let dir = try TestSupport.tempDir("invisible")
        let csv = try TestSupport.write(
            Self.header + "\n"
                + "P-1,Ann\u{200B},,Example\u{FEFF},1970-01-02,2021-03-01\u{A0},207,L1\u{A0},Clinic,E1\n"
                + "P-2,Bo,,Ex\u{A0}ample,1970-01-02,2021-03-01,207,L\u{200B}2,Clinic,E2\n"
                + "P-3,\u{645}\u{62D}\u{645}\u{62F}\u{200C}\u{631}\u{636}\u{627},,Example,1970-01-02,2021-03-01,207,L3,Clinic,E3\n"
                + "P-4,Eve,,Test\u{202E}person,1970-01-02,2021-03-01,207,L4,Clinic,E4\n",
            to: "invisible.csv", in: dir)
        let run = try Self.issue(csv, in: dir)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try Self.reportLines(dir)
        let first = try BatchTestSupport.payload(dir.appendingPathComponent("out/cards/P-1.smart-health-card"))
        let bundle = try #require(first["vc"]?["credentialSubject"]?["fhirBundle"])
        let patient = try #require(bundle["entry"]?.arrayValue?.first { $0["resource"]?["resourceType"] == "Patient" })
        #expect(patient["resource"]?["name"]?[0]?["given"]?[0] == "Ann")
        #expect(patient["resource"]?["name"]?[0]?["family"] == "Example")
        let dose = try #require(
            bundle["entry"]?.arrayValue?.first { $0["resource"]?["resourceType"] == "Immunization" })
        #expect(dose["resource"]?["occurrenceDateTime"] == "2021-03-01" && dose["resource"]?["lotNumber"] == "L1")

        let second = try #require(report.first { $0["id"] == "P-2" })
        #expect(second["status"] == "rejected")
        let errors = second["errors"]?.arrayValue ?? []
        #expect(errors.map { $0["code"]?.stringValue } == ["INPUT_INVISIBLE_CHARACTER", "INPUT_INVISIBLE_CHARACTER"])
        #expect(
            errors.map { $0["at"]?.stringValue } == ["\(csv):3 column recip_last_name", "\(csv):3 column lot_number"])
        let messages = errors.compactMap { $0["message"]?.stringValue }
        #expect(
            messages[0].contains("'Ex\\u{A0}ample' holds U+00A0 (a no-break space), which looks like a space"),
            "\(messages)")
        #expect(
            messages[1].contains("'L\\u{200B}2' holds U+200B (a zero-width space), which no one sees"), "\(messages)")
        #expect(!messages.joined().contains("\u{A0}") && !messages.joined().contains("\u{200B}"))

        // U+202E says what it is and what it does (it was only "a text direction control, which no one sees").
        let fourth = try #require(report.first { $0["id"] == "P-4" })
        #expect(fourth["status"] == "rejected" && fourth["errors"]?[0]?["code"] == "INPUT_INVISIBLE_CHARACTER")
        let override = fourth["errors"]?[0]?["message"]?.stringValue ?? ""
        #expect(
            override.contains(
                "'Test\\u{202E}person' holds U+202E (RIGHT-TO-LEFT OVERRIDE, a text direction control), which no one sees, "
                    + "and which reverses how the text after it is shown"), "\(override)")

        let third = try BatchTestSupport.payload(dir.appendingPathComponent("out/cards/P-3.smart-health-card"))
        let persian = third["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?[0]?["resource"]?["name"]?[0]?[
            "given"]?[0]
        #expect(persian?.stringValue == "\u{645}\u{62D}\u{645}\u{62F}\u{200C}\u{631}\u{636}\u{627}")
    }

    /// Rejected rows were listed only in report.ndjson: `issue` prints a short table (file, line, column, code,
    /// reason) after its summary, with no value of the record, and `--rejected FILE.csv` writes every row.
    @Test func rejectedRowsArePrintedAsATableWithoutPatientData() throws {
        let dir = try TestSupport.tempDir("rejected-table")
        let csv = try TestSupport.write(
            Self.header + "\n"
                + "P-1,Zelda,,Quirinius,1970-01-02,2021-13-45,207,L1,Clinic,E1\n"
                + "P-2,Ann,,Example,1970-01-02,2021-03-01,207,L2,Clinic,E2\n"
                + "P-3,Yusuf,,Quagmire,,2021-03-01,207,L3,Clinic,E3\n",
            to: "rows.csv", in: dir)
        let table = dir.appendingPathComponent("rejected.csv").path
        let run = try Self.issue(csv, in: dir, extra: ["--rejected", table])
        #expect(run.status == 1, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.contains("rejected rows: 2 reasons in 2 records") })
        #expect(lines[start].contains("all of them in \(table)"), "\(lines[start])")
        let header = lines[start + 1].split(separator: " ", omittingEmptySubsequences: true)
        #expect(header == ["FILE", "LINE", "COLUMN", "CODE", "REASON"])
        let rows = lines[(start + 2)...].prefix(2).map {
            $0.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: true).map(String.init)
        }
        // A long path is cut to its last characters, so the table stays readable.
        let shown = csv.count > 40 ? "…" + String(csv.suffix(39)) : csv
        #expect(
            rows.map { Array($0.prefix(4)) } == [
                [shown, "2", "admin_date", "TEMPLATE_VALUE"], [shown, "4", "recip_dob", "TEMPLATE_REQUIRED_EMPTY"],
            ], "\(rows)")
        for name in ["Zelda", "Quirinius", "Yusuf", "Quagmire", "2021-13-45"] {
            #expect(!run.stderr.contains(name), "the table shows \(name)")
        }
        let written = try String(decoding: SiteTestSupport.bytes(table), as: UTF8.self)
        #expect(written.split(separator: "\n").first == "file,line,column,code,reason")
        #expect(written.contains("\(csv),2,admin_date,TEMPLATE_VALUE,"), "\(written)")
        #expect(written.split(separator: "\n").count == 3 && !written.contains("Zelda"))
    }

    /// `3/15/2021 0:00` is how a spreadsheet exports a date-and-time cell: the message says it has a time of day,
    /// the date it holds, and how to export the date alone.
    @Test func aDateWithATimeOfDaySaysSo() throws {
        let dir = try TestSupport.tempDir("date-time")
        var template = try JSONParser.parse(try SiteTestSupport.bytes(Self.template)).objectValue ?? [:]
        template["dateFormat"] = "MM/DD/YYYY"
        let usTemplate = try TestSupport.write(
            String(decoding: JSONWriter.pretty(.object(template)), as: UTF8.self), to: "us.json", in: dir)
        let csv = try TestSupport.write(
            Self.header + "\nP-1,Ann,,Example,1970-01-02,3/15/2021 0:00,207,L1,Clinic,E1\n"
                + "P-2,Ann,,Example,1970-01-02,2021-03-15 00:00:00,207,L1,Clinic,E2\n", to: "times.csv", in: dir)
        let run = try Self.issue(csv, in: dir, template: usTemplate)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try Self.reportLines(dir)
        for (id, time) in [("P-1", "0:00"), ("P-2", "00:00:00")] {
            let error = try #require(report.first { $0["id"]?.stringValue == id }?["errors"]?[0])
            #expect(error["code"] == "TEMPLATE_DATE_WITH_TIME", "\(error)")
            let message = error["message"]?.stringValue ?? ""
            #expect(
                message.contains("is a date with a time of day (\(time))") && message.contains("(here 2021-03-15)"),
                "\(message)")
            #expect(message.contains("format the column as a date without the time"), "\(message)")
        }
    }

    /// A stray quote opens a field that runs on over lines: the message names the line where that field began,
    /// not only where it broke.
    @Test func aStrayQuoteNamesTheLineWhereItsFieldBegan() throws {
        let dir = try TestSupport.tempDir("stray-quote")
        let csv = try TestSupport.write(
            Self.header + "\nP-1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n"
                + "P-2,\"Bo,,Example,1970-01-02,2021-03-01,207,L2,Clinic,E2\n"
                + "P-3,Cy,,Example,1970-01-02,2021-03-01,207,L3,Clinic,E3\n"
                + "P-4,\"Di\"x,,Example,1970-01-02,2021-03-01,207,L4,Clinic,E4\n", to: "quote.csv", in: dir)
        let run = try Self.issue(csv, in: dir)
        #expect(run.stderr.contains("\(csv):5: unexpected character after a closing quote"), "\(run.stderr)")
        #expect(run.stderr.contains("the quoted field began on line 3 (\(csv):3)"), "\(run.stderr)")
    }

    /// A PNG, a workbook or any binary file given as the CSV was called a Latin-1 export; it is named for what it is.
    @Test func aBinaryFileGivenAsCSVIsCalledWhatItIs() throws {
        let dir = try TestSupport.tempDir("binary-csv")
        let png = try QRImage().png(try QRCode(jws: "a.b.c"))
        let cases: [(String, [UInt8], String)] = [
            ("image.csv", png, "is a PNG image, not a CSV export"),
            (
                "book.csv", [0x50, 0x4B, 0x03, 0x04, 0x14, 0x00] + [UInt8](repeating: 0, count: 40),
                "is a ZIP archive (an Excel .xlsx workbook is one)"
            ),
            (
                "data.csv",
                Array("recip_id,x\n".utf8) + [0x00, 0x01, 0x02, 0xFF, 0x00, 0x10] + [UInt8](repeating: 0x03, count: 30),
                "is a binary file, not text"
            ),
        ]
        for (name, bytes, says) in cases {
            let path = dir.appendingPathComponent(name).path
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let run = try Self.issue(path, in: dir)
            #expect(run.stderr.contains("\(path) \(says)"), "\(name): \(run.stderr)")
            #expect(!run.stderr.contains("Latin-1"), "\(name): \(run.stderr)")
        }
    }

    /// A misspelled column, in the template or in the export's header, gets "did you mean".
    @Test func aMisspelledColumnGetsDidYouMean() throws {
        let dir = try TestSupport.tempDir("did-you-mean")
        let text = try String(decoding: SiteTestSupport.bytes(Self.template), as: UTF8.self)
        let misspelled = try TestSupport.write(
            text.replacingOccurrences(of: "{{recip_last_name}}", with: "{{recip_lastname}}"), to: "t.json", in: dir)
        let csv = try TestSupport.write(
            Self.header.replacingOccurrences(of: "recip_first_name", with: "recip_frist_name")
                + "\nP-1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n", to: "h.csv", in: dir)
        let bad = try Self.issue(csv, in: dir, template: misspelled)
        #expect(
            bad.stderr.contains(
                "{{recip_lastname}} names a column that is not declared in \"columns\" (did you mean {{recip_last_name}}?)"
            ), "\(bad.stderr)")
        let header = try Self.issue(csv, in: dir)
        #expect(header.stderr.contains("did you mean 'recip_frist_name' for 'recip_first_name'?"), "\(header.stderr)")
    }

    /// Man pages are UTF-8 whatever the caller's locale (under LC_ALL=C four showed `shlink:/???`), and name where the
    /// templates and documentation are installed.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/help2man"),
            "help2man is not installed (`make install` installs it)"))
    func manPagesAreUTF8WhateverTheLocale() throws {
        let dir = try TestSupport.tempDir("man")
        let run = try TestSupport.run(
            "/bin/bash",
            [
                VerifyFixtures.repoRoot.appendingPathComponent("scripts/make-man.sh").path, TestSupport.healthcards,
                dir.path,
            ],
            environment: ["LC_ALL": "C", "LANG": "C", "HEALTHCARDS_PREFIX": "/opt/hc"])
        #expect(run.status == 0, "\(run.stderr)")
        let pages = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".1") }
        #expect(pages.count >= 10)
        for page in pages {
            let text = try String(decoding: SiteTestSupport.bytes(dir.path + "/" + page), as: UTF8.self)
            #expect(!text.contains("???"), "\(page)")
            #expect(text.contains("/opt/hc/share/healthcards/templates"), "\(page)")
        }
        let shl = try String(decoding: SiteTestSupport.bytes(dir.path + "/healthcards-shl.1"), as: UTF8.self)
        #expect(shl.contains("shlink:/\u{2026}"))
    }
}
