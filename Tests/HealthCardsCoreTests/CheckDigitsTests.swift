import Testing

import HealthCardsCore
import HealthCardsTestSupport

@Suite struct CheckDigitsTests {
    @Test func loincKnownAnswers() {
        #expect(LOINC.checkDigit(forBase: "12345") == 5)  // LOINC Users' Guide example
        #expect(LOINC.checkDigit(forBase: "94500") == 6)
        #expect(LOINC.checkDigit(forBase: "94558") == 4)
        #expect(LOINC.checkDigit(forBase: "2345") == 7)
        #expect(LOINC.isValidCode("94500-6"))
        #expect(LOINC.isValidCode("94558-4"))
        #expect(LOINC.isValidCode("2345-7"))
        #expect(!LOINC.isValidCode("94500-5"))
        #expect(!LOINC.isValidCode("94558-1"))
        #expect(LOINC.problem("94500-5") == "'94500-5' has LOINC check digit 5, but the mod 10 check digit of 94500 is 6")
    }

    @Test func loincSyntaxRejected() {
        for bad in ["", "94500", "94500-", "-6", "94500-66", "9450a-6", "94500_6", " 94500-6", "LP12345-6", "12345678-0", "94500-6-6"] {
            #expect(!LOINC.isValidCode(bad), "\(bad)")
        }
        #expect(LOINC.checkDigit(forBase: "") == nil)
        #expect(LOINC.checkDigit(forBase: "12a") == nil)
    }

    @Test func loincDeprecatedExceptionsAreAllowListed() {
        #expect(LOINC.checkDigitExceptions.count == 14)
        for code in LOINC.checkDigitExceptions {
            let parts = code.split(separator: "-")
            // Each really fails the algorithm; only the allow-list lets it through.
            #expect(LOINC.checkDigit(forBase: parts[0]) != Int(parts[1]), "\(code)")
            #expect(LOINC.isValidCode(code), "\(code)")
            #expect(!LOINC.isValidCode(code, allowingKnownExceptions: false), "\(code)")
        }
    }

    @Test func everyCOVIDLabLOINCIsValid() throws {
        let codes = try VerifyFixtures.codes(csv: "covid19-lab-loinc.csv")
        #expect(codes.count == 83)
        for code in codes { #expect(LOINC.isValidCode(code, allowingKnownExceptions: false), "\(code)") }
    }

    @Test func snomedKnownAnswers() {
        #expect(SNOMEDCT.verhoeffCheckDigit(for: "26037300") == 1)
        #expect(SNOMEDCT.verhoeffCheckDigit(for: "84053300") == 7)
        #expect(SNOMEDCT.verhoeffCheckDigit(for: "45537100012410") == 6)
        #expect(SNOMEDCT.isValidConceptID("260373001"))
        #expect(SNOMEDCT.isValidConceptID("840533007"))
        #expect(SNOMEDCT.isValidConceptID("455371000124106"))
        #expect(SNOMEDCT.validateIdentifier("455371000124106") == .success(.extensionConcept))
        #expect(SNOMEDCT.conceptIDProblem("260373002") == .checkDigit(expected: 1))
        #expect(SNOMEDCT.conceptIDProblem("260373055") == .reservedPartition("05"))
        #expect(!SNOMEDCT.isValidConceptID("260373002"))
        #expect(!SNOMEDCT.isValidConceptID("260373055"))
        let others = ["260415000", "787859002", "441742003", "362981000", "1208522006", "1208523001", "1208524007",
                      "1208525008", "1208526009", "293104008", "1119305005", "840534001", "28571000087109"]
        for id in others { #expect(SNOMEDCT.isValidConceptID(id), "\(id)") }
    }

    @Test func snomedStructureRejected() {
        #expect(SNOMEDCT.conceptIDProblem("") == .notDigits)
        #expect(SNOMEDCT.conceptIDProblem("26037300x") == .notDigits)
        #expect(SNOMEDCT.conceptIDProblem("-260373001") == .notDigits)
        #expect(SNOMEDCT.conceptIDProblem("0260373001") == .leadingZero)
        #expect(SNOMEDCT.conceptIDProblem("10000") == .length(5))
        #expect(SNOMEDCT.conceptIDProblem("1234567890123456789") == .length(19))
        // A long-format partition needs a 7-digit namespace: 10 digits cannot hold one.
        let short = "1234567" + "10"
        let tenDigits = short + String(SNOMEDCT.verhoeffCheckDigit(for: short)!)
        #expect(SNOMEDCT.conceptIDProblem(tenDigits) == .length(10))
    }

    @Test func snomedNonConceptPartitions() throws {
        // Build identifiers with a correct check digit for each partition and check how they classify.
        for partition in ["00", "01", "02", "10", "11", "12", "16", "03", "05", "13", "20", "99"] {
            let body = "1000124" + partition  // item 1, namespace 000124 style digits: 9 digits before check
            let id = "12" + body + String(SNOMEDCT.verhoeffCheckDigit(for: "12" + body)!)
            switch SNOMEDCT.Partition(rawValue: partition) {
            case .some(let p):
                #expect(SNOMEDCT.validateIdentifier(id) == .success(p), "\(id)")
                #expect(SNOMEDCT.isValidConceptID(id) == p.isConcept, "\(id)")
                if !p.isConcept { #expect(SNOMEDCT.conceptIDProblem(id) == .notAConcept(p)) }
            case .none:
                #expect(SNOMEDCT.conceptIDProblem(id) == .reservedPartition(partition), "\(id)")
            }
        }
        let error = #expect(throws: HealthCardError.self) {
            try SNOMEDCT.requireConceptID("260373055", at: "Observation.valueCodeableConcept.coding[0].code")
        }
        #expect(error?.kind == .validation)
        #expect(error?.location.path == "Observation.valueCodeableConcept.coding[0].code")
        try SNOMEDCT.requireConceptID("260373001")
    }

    @Test func verhoeffCatchesEverySingleDigitErrorAndAdjacentTransposition() {
        let id = Array("455371000124106")
        for i in id.indices {
            for digit in "0123456789" where digit != id[i] {
                var changed = id
                changed[i] = digit
                if i == 0 && digit == "0" { continue }  // leading zero is a different rejection
                #expect(SNOMEDCT.validateIdentifier(String(changed)) != .success(.extensionConcept))
            }
            if i + 1 < id.count && id[i] != id[i + 1] && !(i == 0 && id[1] == "0") {
                var swapped = id
                swapped.swapAt(i, i + 1)
                #expect(SNOMEDCT.validateIdentifier(String(swapped)) != .success(.extensionConcept), "swap at \(i)")
            }
        }
    }

    @Test func everyLabResultSNOMEDIsAConcept() throws {
        let codes = try VerifyFixtures.codes(csv: "lab-result-snomed.csv")
        #expect(codes.count == 16)
        for code in codes { #expect(SNOMEDCT.isValidConceptID(code), "\(code)") }
    }
}
