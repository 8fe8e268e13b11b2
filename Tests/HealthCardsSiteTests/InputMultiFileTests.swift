import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsSite
import HealthCardsTestSupport

/// Input problems a new user met, through the real `healthcards issue`: a patient split over two CSV
/// files, a header that repeats a column, files with a header (or nothing) but no records.
@Suite(.serialized) struct InputMultiFileTests {
    static let header = InputCSVTests.header

    /// Writes `files` (name → CSV lines after the header) into a new folder and runs `issue` on them in order.
    static func issue(_ files: [(name: String, text: String)]) throws -> (
        run: TestSupport.Run, out: URL, paths: [String]
    ) {
        let dir = try TestSupport.tempDir("multi")
        let key = try TestSupport.demoKey(in: dir)
        let paths = try files.map { try TestSupport.write($0.text, to: $0.name, in: dir) }
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(
            [
                "issue", "--issuer", InputCSVTests.issuer, "--key", key, "--template", InputCSVTests.template, "--out",
                out.path,
                "--nbf", "1700000000", "--no-qr",
            ] + paths)
        return (run, out, paths)
    }

    static func csv(_ rows: [String]) -> String { ([header] + rows).joined(separator: "\n") + "\n" }

    /// P1's first dose is in f1.csv and its second in f2.csv: no card for P1 from either file (each would
    /// miss a dose), both report lines name both places; the other patients of both files are issued.
    @Test func patientSplitOverTwoFilesIsRejectedInBoth() throws {
        let (run, out, paths) = try Self.issue([
            (
                "f1.csv",
                Self.csv([
                    "P1,Ada,Test,1960-04-12,2021-01-15,207,Clinic,E1",
                    "P2,Bob,Test,1970-01-02,2021-01-16,207,Clinic,E3",
                ])
            ),
            (
                "f2.csv",
                Self.csv([
                    "P3,Cy,Test,1980-03-04,2021-01-17,207,Clinic,E4",
                    " P1 ,Ada,Test,1960-04-12,2021-02-12,207,Clinic,E2",
                ])
            ),
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(
            report.map { $0["source"]?.stringValue ?? "" } == [
                "\(paths[0]):2", "\(paths[0]):3", "\(paths[1]):2", "\(paths[1]):3",
            ])
        #expect(report.map { $0["status"]?.stringValue ?? "" } == ["rejected", "issued", "issued", "rejected"])
        let expected =
            "patient id 'P1' appears in \(paths[0]):2 and \(paths[1]):3; rows of one patient must be in one input file"
        for line in [report[0], report[3]] {
            #expect(line["id"]?.stringValue == "P1")
            let errors = InputCSVTests.errors(line)
            #expect(errors.count == 1)
            #expect(errors.first?.message.hasPrefix(expected) == true, "\(errors)")
            #expect(errors.first?.message.contains("merge the exports") == true)
            #expect(errors.first?.at == line["source"]?.stringValue)
        }
        #expect(!InputCSVTests.cardExists(out, "P1"))
        #expect(InputCSVTests.cardExists(out, "P2") && InputCSVTests.cardExists(out, "P3"))
    }

    /// f1.csv holds P1's first dose, then a quote that never closes (the file is refused); f2.csv holds P1's
    /// second dose. P1 gets no card from f2.csv alone (it would lack the first dose; it was issued without a
    /// word), while P3, whom f1.csv did not name before it broke, is issued.
    @Test func patientOfARefusedFileGetsNoCardFromAnotherFile() throws {
        let (run, out, paths) = try Self.issue([
            (
                "f1.csv",
                Self.csv([
                    "P1,Ada,Test,1960-04-12,2021-01-15,207,Clinic,E1",
                    "P2,\"Bob,Test,1970-01-02,2021-01-16,207,Clinic,E3",
                ])
            ),
            (
                "f2.csv",
                Self.csv([
                    "P3,Cy,Test,1980-03-04,2021-01-17,207,Clinic,E4",
                    "P1,Ada,Test,1960-04-12,2021-02-12,207,Clinic,E2",
                ])
            ),
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.map { $0["source"]?.stringValue ?? "" } == [paths[0], "\(paths[1]):2", "\(paths[1]):3"])
        #expect(report.map { $0["status"]?.stringValue ?? "" } == ["rejected", "issued", "rejected"])
        #expect(report[2]["id"]?.stringValue == "P1")
        let errors = InputCSVTests.errors(report[2])
        #expect(
            errors.contains {
                $0.message.contains("patient id 'P1' also has rows in \(paths[0]), which was refused")
                    && $0.message.contains("fix \(paths[0]) and run again")
            }, "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/cards/P1.smart-health-card"))
        #expect(FileManager.default.fileExists(atPath: out.path + "/cards/P3.smart-health-card"))
    }

    /// Three files: every place is named, in input order; ids that merely differ (P1 and P10) are not confused.
    @Test func patientInThreeFilesNamesEveryPlace() throws {
        let row = "Ada,Test,1960-04-12,2021-01-15,207,Clinic"
        let (run, out, paths) = try Self.issue([
            ("a.csv", Self.csv(["P1,\(row),E1"])),
            ("b.csv", Self.csv(["P10,\(row),E9", "P1,\(row),E2"])),
            ("c.csv", Self.csv(["P1,\(row),E3"])),
        ])
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        #expect(report.count == 4)
        let rejected = report.filter { $0["status"]?.stringValue == "rejected" }
        #expect(rejected.map { $0["id"]?.stringValue } == ["P1", "P1", "P1"])
        let message = InputCSVTests.errors(rejected[1]).first?.message ?? ""
        #expect(
            message.hasPrefix("patient id 'P1' appears in \(paths[0]):2, \(paths[1]):3 and \(paths[2]):2;"),
            "\(message)")
        #expect(try InputCSVTests.line(report, id: "P10")["status"]?.stringValue == "issued")
    }

    /// Different patients in several files (the usual case) are all issued, unsafe ids included.
    @Test func distinctPatientsInSeveralFilesAreAllIssued() throws {
        let row = "Ada,Test,1960-04-12,2021-01-15,207,Clinic"
        let (run, out, _) = try Self.issue([
            ("f1.csv", Self.csv(["P1,\(row),E1", "a/b,\(row),E2"])),
            ("f2.csv", Self.csv(["P2,\(row),E3", "a b,\(row),E4"])),
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 4 && report.allSatisfy { $0["status"]?.stringValue == "issued" })
        #expect(try InputCSVTests.line(report, id: "a/b")["files"] == ["cards/a_b-c14cddc0.smart-health-card"])
    }

    /// Equal 64-bit hashes with different ids (simulated: both patients' hashes given as candidates) are a
    /// collision, not a shared patient: the ids read back differ, so nobody is rejected. f1's short row
    /// naming S moves S's record ahead of its first row; S's place is still its first well-formed row.
    @Test func hashCollisionAcrossFilesIsNotASharedPatient() throws {
        let dir = try TestSupport.tempDir("multi")
        let template = try Template(
            bytes: try VerifyFixtures.bytes(URL(fileURLWithPath: InputCSVTests.template)), source: "t")
        let row = "Ada,Test,1960-04-12,2021-01-15,207,Clinic"
        let f1 = try CSVTemplateInput(
            path: try TestSupport.write(
                Self.csv(["A,\(row),E1", "S,short row", "S,\(row),E2"]), to: "f1.csv", in: dir), template: template)
        let f2 = try CSVTemplateInput(
            path: try TestSupport.write(Self.csv(["B,\(row),E3", "S,\(row),E4"]), to: "f2.csv", in: dir),
            template: template)
        #expect(CrossFilePatients.sharedHashes([f1, f2]) == [CSVTemplateInput.hash("S")])
        let candidates: Set<UInt64> = [
            CSVTemplateInput.hash("A"), CSVTemplateInput.hash("B"), CSVTemplateInput.hash("S"),
        ]
        let shared = try CrossFilePatients([f1, f2], candidates: candidates)
        #expect(shared.places == ["S": ["\(f1.path):4", "\(f2.path):3"]])
        #expect(shared.error(for: "A", at: "x") == nil)
    }

    /// A column the template reads that appears twice in the header refuses the file (column and both
    /// positions named); repeats of columns it does not read, and blank header cells, are ignored.
    @Test func repeatedHeaderColumnRefusesTheFileOnlyWhenUsed() throws {
        let row = "P1,Ada,Test,1960-04-12,2021-01-15,207,Clinic,E1"
        let (run, out, paths) = try Self.issue([("dup.csv", "\(Self.header),recip_id\n\(row),P9\n")])
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        #expect(report.count == 1)
        #expect(report.first?["source"]?.stringValue == paths[0] && report.first?["id"] == .null)
        let message = InputCSVTests.errors(report[0]).first?.message ?? ""
        #expect(
            message.hasPrefix("\(paths[0]): the header has column 'recip_id' twice, at positions 1 and 9;"),
            "\(message)")
        #expect(BatchTestSupport.cardCount(out) == 0)

        let unused = try Self.issue([("extra.csv", "\(Self.header),notes,notes,,\n\(row),a,b,,\n")])
        #expect(unused.run.status == 0, "\(unused.run.stderr)")
        #expect(try TestSupport.report(unused.out).map { $0["status"]?.stringValue } == ["issued"])
    }

    /// A CSV with a header but no data rows (blank lines included) is a rejected file, like an empty one:
    /// exit 1, one report line naming the file. So is an .ndjson with no Bundle line. An empty file (0 bytes, a
    /// byte order mark or blank lines only) is INPUT_EMPTY, not CSV_HEADER, whose reason in the rejected rows
    /// ("the header lacks a column the template needs") told the user to look at a header there is not.
    @Test(arguments: [
        ("header.csv", "\(InputCSVTests.header)\n", "has a header but no data rows", "CSV_HEADER"),
        ("blank.csv", "\(InputCSVTests.header)\r\n\r\n\n", "has a header but no data rows", "CSV_HEADER"),
        ("empty.csv", "", "is empty; expected a header line", "INPUT_EMPTY"),
        ("bom.csv", "\u{FEFF}", "is empty; expected a header line", "INPUT_EMPTY"),
        ("empty.ndjson", "\n  \n", "has no Bundle lines", "INPUT_EMPTY"),
        ("empty.json", "", "is empty; expected one FHIR Bundle", "INPUT_EMPTY"),
    ])
    func fileWithoutRecordsIsARejectedFile(name: String, text: String, expected: String, code: String) throws {
        let (run, out, paths) = try Self.issue([
            ("ok.csv", Self.csv(["P1,Ada,Test,1960-04-12,2021-01-15,207,Clinic,E1"])), (name, text),
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 2)
        #expect(report[0]["status"]?.stringValue == "issued")
        #expect(report[1]["source"]?.stringValue == paths[1] && report[1]["status"]?.stringValue == "rejected")
        #expect(
            InputCSVTests.errors(report[1]).first?.message.contains("\(paths[1]) \(expected)") == true, "\(report[1])")
        #expect(report[1]["errors"]?[0]?["code"]?.stringValue == code, "\(report[1])")
        #expect(run.stderr.contains("issued 1, rejected 1"), "\(run.stderr)")
        if code == "INPUT_EMPTY" {
            #expect(run.stderr.contains("the file is empty") && !run.stderr.contains("the header lacks"), "\(run.stderr)")
        } else {
            // The rejected rows' table names the no-rows case too (a trial read only "the header lacks a column").
            #expect(run.stderr.contains("or has no rows below it"), "\(run.stderr)")
        }
    }
}
