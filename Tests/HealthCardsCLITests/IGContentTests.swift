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

/// Content the SHC Vaccination & Testing IG asks for (issue 22), through `issue` and `verify`:
/// - a COVID-19 vaccine coded in SNOMED CT or ICD-11 MMS gets the legacy `#covid19` type, as a CVX-coded one does;
/// - a dose date that is not YYYY-MM-DD gets the IG's vc-date-invariant warning ("All timestamps SHOULD be
///   represented as Dates (YYYY-MM-DD only)", `invariants.fsh`, on `Immunization.occurrenceDateTime`);
/// - a quantitative lab result without `referenceRange` gets vc-observation-quantity-should-have-range
///   ("Quantitative lab results SHOULD include reference range"), a range on a coded result
///   vc-observation-range-only-quantity-or-string; verify shows the ranges.
@Suite struct IGContentTests {
    static let patient =
        #"{"fullUrl":"resource:0","resource":{"resourceType":"Patient","name":[{"family":"Anyperson","given":["John"]}],"birthDate":"1951-01-20"}}"#

    static func immunization(system: String, code: String, date: String = "2021-01-01") -> String {
        #"{"resourceType":"Bundle","type":"collection","entry":[\#(patient),{"fullUrl":"resource:1","resource":{"resourceType":"Immunization","status":"completed","vaccineCode":{"coding":[{"system":"\#(system)","code":"\#(code)"}]},"patient":{"reference":"resource:0"},"occurrenceDateTime":"\#(date)","performer":[{"actor":{"display":"ABC General Hospital"}}],"lotNumber":"0000001"}}]}"#
    }

    static let quantity =
        #""valueQuantity":{"value":12.5,"unit":"U/mL","system":"http://unitsofmeasure.org","code":"U/mL"}"#
    static let range =
        #""referenceRange":[{"low":{"value":0.8,"unit":"U/mL","system":"http://unitsofmeasure.org","code":"U/mL"},"high":{"value":250,"unit":"U/mL","system":"http://unitsofmeasure.org","code":"U/mL"}}]"#
    static let coded = #""valueCodeableConcept":{"coding":[{"system":"http://snomed.info/sct","code":"260373001"}]}"#

    static func lab(_ members: String, code: String = "94505-5") -> String {
        #"{"resourceType":"Bundle","type":"collection","entry":[\#(patient),{"fullUrl":"resource:1","resource":{"resourceType":"Observation","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"\#(code)"}]},"subject":{"reference":"resource:0"},"effectiveDateTime":"2021-02-17","performer":[{"display":"ABC General Hospital"}],\#(members)}}]}"#
    }

    /// Issues one Bundle a line; returns the report and the output folder.
    static func issue(_ bundles: [String], in dir: URL) throws -> (report: [JSONValue], out: URL) {
        let input = try TestSupport.write(bundles.joined(separator: "\n") + "\n", to: "bundles.ndjson", in: dir)
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--out", out.path, "--no-qr", "--quiet",
            "--nbf", "1700000000", input,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        return (try TestSupport.report(out), out)
    }

    static func types(_ out: URL, _ id: String) throws -> [String] {
        try BatchTestSupport.payload(BatchTestSupport.cardFile(out, id: id))["vc"]?["type"]?
            .arrayValue?.compactMap(\.stringValue) ?? []
    }

    @Test func covid19VaccinesCodedInSNOMEDOrICD11GetTheLegacyType() throws {
        let dir = try TestSupport.tempDir("ig-types")
        let (_, out) = try Self.issue(
            [
                Self.immunization(system: Terminology.snomedCT, code: "28571000087109"),  // SPIKEVAX (IG example)
                Self.immunization(system: Terminology.icd11, code: "XM3DT5"),  // COVID-19 Vaccine Moderna (IG example)
                Self.immunization(system: Terminology.snomedCT, code: "1119305005"),  // SARS-CoV-2 antigen vaccine
                Self.immunization(system: Terminology.snomedCT, code: "871751006"),  // hepatitis A vaccine: not COVID-19
                Self.immunization(system: Terminology.cvx, code: "207"),
            ], in: dir)
        let covid = "https://smarthealth.cards#covid19"
        for id in ["bundles-1", "bundles-2", "bundles-3", "bundles-5"] {
            #expect(try Self.types(out, id).contains(covid), "\(id)")
        }
        #expect(
            try Self.types(out, "bundles-4") == [
                "https://smarthealth.cards#health-card", "https://smarthealth.cards#immunization",
            ])
        // Under --vc-types minimal, none.
        #expect(
            Payload.types(
                for: try JSONParser.parse(Array(Self.immunization(system: Terminology.icd11, code: "XM3DT5").utf8)),
                policy: .minimal, isCOVID19: Terminology.isCOVID19Code) == [.healthCard])
        #expect(!Terminology.isCOVID19Code(system: "http://id.who.int/icd11/mms", code: "XM3DT5"))
    }

    @Test func aDoseDateThatIsNotADayGetsTheIGsWarningInIssueAndVerify() throws {
        let dir = try TestSupport.tempDir("ig-dose-date")
        let (report, out) = try Self.issue(
            [
                Self.immunization(system: Terminology.cvx, code: "207", date: "2021-01-01T10:00:00Z"),
                Self.immunization(system: Terminology.cvx, code: "207", date: "2021-01"),
                Self.immunization(system: Terminology.cvx, code: "207"),
            ], in: dir)
        let codes = report.map { ($0["warnings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue } }
        #expect(codes == [["IMMUNIZATION_OCCURRENCE_DATE"], ["IMMUNIZATION_OCCURRENCE_DATE"], []], "\(report)")
        let message = report[0]["warnings"]?[0]?["message"]?.stringValue ?? ""
        #expect(message.contains("vc-date-invariant") && message.contains("YYYY-MM-DD only"), "\(message)")
        let keySet = try SiteTestSupport.cli([
            "jwks", dir.appendingPathComponent("demo-key.pem").path, "--issuer", SiteTestSupport.issuer, "--out",
            dir.appendingPathComponent("jwks.json").path,
        ])
        #expect(keySet.status == 0)
        let verify = try SiteTestSupport.cli([
            "verify", "--json", "--jwks", dir.appendingPathComponent("jwks.json").path, out.path,
        ])
        let findings = try JSONParser.parse(Array(verify.stdout.utf8))
        #expect(verify.stdout.components(separatedBy: "\"IMMUNIZATION_OCCURRENCE_DATE\"").count - 1 == 2, "\(findings)")
    }

    @Test func aQuantitativeLabResultWithoutAReferenceRangeIsWarnedAndRangesAreShown() throws {
        let dir = try TestSupport.tempDir("ig-range")
        let (report, out) = try Self.issue(
            [
                Self.lab(Self.quantity), Self.lab(Self.quantity + "," + Self.range),
                Self.lab(Self.coded + "," + Self.range, code: "94500-6"),
            ],
            in: dir)
        let codes = report.map { ($0["warnings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue } }
        #expect(codes == [["OBSERVATION_REFERENCE_RANGE"], [], ["OBSERVATION_REFERENCE_RANGE"]], "\(report)")
        #expect(
            report[0]["warnings"]?[0]?["message"]?.stringValue?.contains("vc-observation-quantity-should-have-range")
                == true)
        #expect(
            report[2]["warnings"]?[0]?["message"]?.stringValue?.contains("vc-observation-range-only-quantity-or-string")
                == true)
        try SiteTestSupport.cli([
            "jwks", dir.appendingPathComponent("demo-key.pem").path, "--issuer", SiteTestSupport.issuer, "--out",
            dir.appendingPathComponent("jwks.json").path,
        ])
        let verify = try SiteTestSupport.cli([
            "verify", "--jwks", dir.appendingPathComponent("jwks.json").path,
            BatchTestSupport.cardFile(out, id: "bundles-1").path,
            BatchTestSupport.cardFile(out, id: "bundles-2").path,
        ])
        #expect(
            verify.stdout.contains("warning OBSERVATION_REFERENCE_RANGE at Bundle.entry[1].resource.referenceRange"),
            "\(verify.stdout)")
        #expect(verify.stdout.contains("→ 12.5 U/mL  (reference range 0.8 U/mL to 250 U/mL)"), "\(verify.stdout)")
        #expect(verify.stdout.contains("2 credential(s) checked, 0 error(s), 1 warning(s)"), "\(verify.stdout)")
    }
}
