import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

@Suite struct TerminologyTablesTests {
    @Test func cvxKnownEntries() throws {
        #expect(CVX.entries.count == 288)
        #expect(CVX.lookup("03") == CVX.Entry("03", "MMR", .active, "2010-05-28"))
        #expect(CVX.lookup("3") == nil)  // CDC spells it with the leading zero
        let e207 = try #require(CVX.lookup("207"))
        #expect(e207.shortDescription == "COVID-19, mRNA, LNP-S, PF, 100 mcg/0.5mL dose or 50 mcg/0.25mL dose")
        #expect(e207.status == .inactive)
        #expect(e207.lastUpdated == "2023-10-24")
        let e229 = try #require(CVX.lookup("229"))
        #expect(e229.shortDescription == "COVID-19, mRNA, LNP-S, bivalent, PF, 50 mcg/0.5 mL or 25mcg/0.25 mL dose")
        #expect(e229.status == .inactive)
        #expect(CVX.lookup("02")?.shortDescription == "OPV, trivalent")  // was quoted in the CSV
        #expect(CVX.lookup("500")?.status == .nonUS)
        #expect(CVX.lookup("225")?.status == .neverActive)
        #expect(CVX.lookup("337") == nil)
        #expect(CVX.lookup("") == nil)
        #expect(CVX.lookup("abc") == nil)
    }

    @Test func cvxDatesAndStatusCounts() {
        #expect(CVX.listDate == "2025-12-09")
        #expect(CVX.newestLastUpdated == "2025-11-19")
        #expect(CVX.entries.map(\.lastUpdated).max() == "2025-11-19")
        let counts = Dictionary(grouping: CVX.entries, by: \.status).mapValues(\.count)
        #expect(counts == [.active: 113, .inactive: 118, .nonUS: 39, .neverActive: 18])
        #expect(Set(CVX.entries.map(\.code)).count == 288)
        #expect(CVX.entries.map { Int($0.code)! } == CVX.entries.map { Int($0.code)! }.sorted())
    }

    @Test func cvxTableMatchesSharedCSV() throws {
        // Every row of shared/data/cvx.csv, parsed here with RFC 4180 quoting, equals the generated table.
        let lines = try VerifyFixtures.text(VerifyFixtures.data.appendingPathComponent("cvx.csv")).split(separator: "\n").dropFirst()
        var rows: [CVX.Entry] = []
        for line in lines {
            var fields: [String] = [], field = "", quoted = false
            for ch in line {
                if ch == "\"" { quoted.toggle() } else if ch == "," && !quoted { fields.append(field); field = "" } else { field.append(ch) }
            }
            fields.append(field)
            try #require(fields.count == 4, "\(line)")
            rows.append(CVX.Entry(fields[0], fields[1], try #require(CVX.Status(rawValue: fields[2])), fields[3]))
        }
        #expect(rows == CVX.entries)
    }

    @Test func covid19VaccineCodes() throws {
        let expected = ["207", "208", "210", "211", "212", "213", "217", "218", "219", "221", "225", "226", "227", "228",
                        "229", "230", "300", "301", "302", "308", "309", "310", "311", "312", "313", "334"]
            + (500...521).map(String.init)
        #expect(CVX.covid19Codes == Set(expected))
        #expect(CVX.covid19Codes.count == 48)
        // The set is exactly the codes whose CDC description names COVID-19.
        let byDescription = Set(CVX.entries.filter { $0.shortDescription.contains("COVID-19") }.map(\.code))
        #expect(byDescription == CVX.covid19Codes)
        for code in ["207", "213", "229", "313", "334", "500", "521"] { #expect(CVX.isCOVID19Vaccine(code), "\(code)") }
        for code in ["03", "08", "88", "209", "214", "303", "801", "998", "999", "522", ""] {
            #expect(!CVX.isCOVID19Vaccine(code), "\(code)")
        }
    }

    @Test func labValueSets() throws {
        #expect(COVID19LabTestLOINC.entries.count == 83)
        #expect(COVID19LabTestLOINC.lookup("94500-6")?.display == "SARS-CoV-2 RNA Resp Ql NAA+probe")
        #expect(COVID19LabTestLOINC.lookup("94558-4")?.display == "SARS-CoV-2 Ag Resp Ql IA.rapid")
        #expect(!COVID19LabTestLOINC.contains("94661-6"))  // only in the dvci companion list, not in the IG
        #expect(!COVID19LabTestLOINC.contains("2345-7"))
        #expect(COVID19LabTestLOINC.entries.map(\.code) == (try VerifyFixtures.codes(csv: "covid19-lab-loinc.csv")))
        for entry in COVID19LabTestLOINC.entries { #expect(LOINC.isValidCode(entry.code), "\(entry.code)") }

        #expect(LabResultSNOMED.entries.count == 16)
        #expect(LabResultSNOMED.lookup("260373001")?.display == "Detected (qualifier value)")
        #expect(LabResultSNOMED.lookup("10828004")?.display == "Positive (qualifier value)")
        #expect(LabResultSNOMED.lookup("455371000124106") != nil)
        #expect(LabResultSNOMED.contains("840533007"))
        #expect(!LabResultSNOMED.contains("260373002"))
        #expect(LabResultSNOMED.entries.map(\.code) == (try VerifyFixtures.codes(csv: "lab-result-snomed.csv")))
        for entry in LabResultSNOMED.entries { #expect(SNOMEDCT.isValidConceptID(entry.code), "\(entry.code)") }
        #expect(COVID19LabTestLOINC.system == "http://loinc.org")
        #expect(LabResultSNOMED.system == "http://snomed.info/sct")
    }
}
