/// Code system URIs, code classification and code checks used by the pipeline and `verify`.
public enum Terminology {
    public static let cvx = "http://hl7.org/fhir/sid/cvx"
    public static let loinc = "http://loinc.org"
    public static let snomedCT = "http://snomed.info/sct"
    public static let icd11 = "http://id.who.int/icd/release/11/mms"

    /// True when (system, code) is a COVID-19 vaccine (CVX; SNOMED CT and ICD-11 MMS, `COVID19VaccineCodes`) or a
    /// COVID-19 lab test (LOINC, IG value set `lab-qualitative-test-covid`); drives the deprecated `#covid19` type.
    public static func isCOVID19Code(system: String, code: String) -> Bool {
        switch system {
        case cvx: return CVX.isCOVID19Vaccine(code)
        case snomedCT: return COVID19VaccineCodes.snomedCT.contains(code)
        case icd11: return COVID19VaccineCodes.icd11.contains(code)
        case loinc: return COVID19LabTestLOINC.contains(code)
        default: return false
        }
    }

    /// Why a code is unacceptable in its system, or nil:
    /// - CVX: must be in the CDC CVX list shipped with the toolkit (`CVX.listDate`);
    /// - LOINC: `NNNNN-C` with a correct mod 10 check digit;
    /// - SNOMED CT: a concept identifier (digits, Verhoeff check digit, partition 00 or 10).
    /// Other systems only need a non-empty, trimmed code.
    public static func problem(system: String, code: String) -> String? {
        if code.isEmpty || code != code.trimmingCharacters(in: " \t\r\n") {
            return "code \(Quote.text(code)) is empty or has surrounding whitespace"
        }
        switch system {
        case cvx:
            if CVX.lookup(code) == nil {
                return "\(Quote.text(code)) is not a CVX code in the CDC list of \(CVX.listDate); check the code "
                    + "(e.g. 207 Moderna, 208 Pfizer) or refresh the list (scripts/gen-cvx.py)"
            }
        case loinc:
            if let problem = LOINC.problem(code) { return "\(Quote.text(code)) is not a valid LOINC code: \(problem)" }
        case snomedCT:
            if let problem = SNOMEDCT.conceptIDProblem(code) {
                // A LOINC answer code given as SNOMED CT (a lab template's SNOMED CT column): say which system it is.
                let hint =
                    LabResultLOINCAnswer.looksLikeAnswerCode(code)
                    ? "; it is shaped like a LOINC answer code, whose system is \(LabResultLOINCAnswer.system) (in a "
                        + "template, give it in a coding whose system is LOINC)" : ""
                return "\(Quote.text(code)) is not a SNOMED CT concept: \(problem)\(hint)"
            }
        default: break
        }
        return nil
    }
}
