/// Code system URIs and code classification used by the pipeline.
public enum Terminology {
    public static let cvx = "http://hl7.org/fhir/sid/cvx"
    public static let loinc = "http://loinc.org"
    public static let snomedCT = "http://snomed.info/sct"
    public static let icd11 = "http://id.who.int/icd/release/11/mms"

    /// True when (system, code) is a COVID-19 vaccine (CVX) or a COVID-19 lab test (LOINC) in the SHC
    /// IG value sets; drives the deprecated `#covid19` type.
    public static func isCOVID19Code(system: String, code: String) -> Bool {
        switch system {
        case cvx: return COVID19Codes.cvx.contains(code)
        case loinc: return COVID19Codes.loinc.contains(code)
        default: return false
        }
    }
}

extension Terminology {
    /// Why a code is unacceptable in its system, or nil. Known systems are checked for syntax here;
    /// membership checks (CVX list, LOINC and SNOMED CT check digits) are added by `TerminologyChecks`.
    public static func problem(system: String, code: String) -> String? {
        if code.isEmpty || code != code.trimmingCharacters(in: " \t\r\n") {
            return "code '\(code)' is empty or has surrounding whitespace"
        }
        switch system {
        case cvx:
            guard code.allSatisfy(\.isNumber), (1...3).contains(code.count) else {
                return "'\(code)' is not a CVX code (1 to 3 digits, e.g. 207)"
            }
        case loinc:
            let parts = code.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy(\.isNumber), parts[1].count == 1, parts[1].allSatisfy(\.isNumber) else {
                return "'\(code)' is not a LOINC code (digits, '-', check digit; e.g. 94558-4)"
            }
        case snomedCT:
            guard code.allSatisfy(\.isNumber), (6...18).contains(code.count), !code.hasPrefix("0") else {
                return "'\(code)' is not a SNOMED CT identifier (6 to 18 digits, no leading zero)"
            }
        default: break
        }
        return nil
    }
}
