import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// The batch runner's parts: the already-issued comparison, the name register, the CSV index.
@Suite struct BatchUnitTests {
    @Test func payloadComparisonSkipsOnlyTheNotBeforeNumber() {
        let a = Array(#"{"iss":"https://a.example","nbf":1700000000,"vc":{"x":1}}"#.utf8)
        let b = Array(#"{"iss":"https://a.example","nbf":1800000001.5,"vc":{"x":1}}"#.utf8)
        let c = Array(#"{"iss":"https://a.example","nbf":1700000000,"vc":{"x":2}}"#.utf8)
        let d = Array(#"{"iss":"https://b.example","nbf":1700000000,"vc":{"x":1}}"#.utf8)
        #expect(CardIssuer.equalIgnoringNotBefore(a, b))
        #expect(!CardIssuer.equalIgnoringNotBefore(a, c))
        #expect(!CardIssuer.equalIgnoringNotBefore(a, d))
    }

    @Test func nameRegisterCatchesCollisionsWithoutHoldingOrdinaryIDs() {
        var single = NameRegister(all: false)
        #expect(single.register("P-00000001", id: "P-00000001", source: "a:2") == nil)
        #expect(single.register("P-00000001", id: "P-00000001", source: "a:3") == nil)  // not kept: cannot collide in one CSV
        let changed = OutputNames.safe("a b")
        #expect(changed != "a b")
        #expect(single.register(changed, id: "a b", source: "a:4") == nil)
        #expect(single.register(changed, id: changed, source: "a:5") == "a:4")
        var all = NameRegister(all: true)
        #expect(all.register("P-1", id: "P-1", source: "x.csv:2") == nil)
        #expect(all.register("P-1", id: "P-1", source: "y.csv:2") == "x.csv:2")
    }

    /// Rows of a patient far apart (more than the 32-row read-ahead) and close together, read back in
    /// windows of 2 patients: first-appearance order, rows in file order, orphan rows in place.
    @Test func csvIndexGroupsUnsortedRowsByPosition() throws {
        let dir = try TestSupport.tempDir()
        var lines = ["recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx"]
        lines.append("A,Ann,Test,1960-01-01,2021-01-01,207")
        lines.append("B,Bo,Test,1961-01-01,2021-01-02,207")
        for i in 0..<40 { lines.append("F\(i),F,Test,1962-01-01,2021-01-03,207") }
        lines.append(",No,Key,1963-01-01,2021-01-04,207")
        lines.append("A,Ann,Test,1960-01-01,2021-02-01,208")
        lines.append("B,Bo,Test,1961-01-01,2021-02-02,208")
        lines.append("A,Ann,Test,1960-01-01,2021-03-01,229")
        let path = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "in.csv", in: dir)
        let template = try Template(bytes: try VerifyFixtures.bytes(VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json")), source: "t")
        let input = try CSVTemplateInput(path: path, template: template)
        #expect(input.count == 43)
        #expect(input.rowCount == 46)
        let cursor = CSVTemplateInput.Cursor(input, window: 2)
        var records: [CSVTemplateInput.PatientRows] = []
        while let r = try cursor.next() { records.append(r) }
        #expect(records.count == 43)
        #expect(records[0].id == "A" && records[0].rows.map { $0["admin_date"] } == ["2021-01-01", "2021-02-01", "2021-03-01"])
        #expect(records[0].rows.map(\.source) == ["\(path):2", "\(path):45", "\(path):47"])
        #expect(records[1].id == "B" && records[1].rows.map { $0["cvx"] } == ["207", "208"])
        #expect(records[2].id == "F0" && records[41].id == "F39")
        #expect(records[42].id == nil && records[42].source == "\(path):44" && records[42].errors.count == 1)
    }
}
