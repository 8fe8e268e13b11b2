/// One code of a SMART Health Cards lab value set, with the display the IG gives it.
public struct LabCode: Sendable, Equatable {
    public let code: String
    public let display: String

    public init(_ code: String, _ display: String) {
        self.code = code
        self.display = display
    }
}

/// LOINC codes allowed in `Observation.code` of the SHC COVID-19 lab result profiles: value set
/// `lab-qualitative-test-covid` (SHC Vaccination & Testing IG, version 2023.1), bound **required**.
/// `entries` is generated into `LabTestLOINCCodes.swift` by `scripts/gen-lab-codes.py`.
public enum COVID19LabTestLOINC {
    /// FHIR system URI of the codes.
    public static let system = "http://loinc.org"
    private static let byCode: [String: LabCode] = Dictionary(uniqueKeysWithValues: entries.map { ($0.code, $0) })

    /// The entry for a LOINC code (`"94500-6"`), or nil when the value set does not contain it.
    public static func lookup(_ code: String) -> LabCode? { byCode[code] }
    /// Whether the value set contains `code`.
    public static func contains(_ code: String) -> Bool { byCode[code] != nil }
}

/// SNOMED CT concepts allowed in `Observation.valueCodeableConcept` of the SHC COVID-19 lab result profiles:
/// value set `lab-qualitative-result` (SHC Vaccination & Testing IG, version 2023.1), bound **required**.
/// `entries` is generated into `LabResultSNOMEDCodes.swift` by `scripts/gen-lab-codes.py`.
public enum LabResultSNOMED {
    /// FHIR system URI of the codes.
    public static let system = "http://snomed.info/sct"
    private static let byCode: [String: LabCode] = Dictionary(uniqueKeysWithValues: entries.map { ($0.code, $0) })

    /// The entry for an SCTID (`"260373001"`), or nil when the value set does not contain it.
    public static func lookup(_ code: String) -> LabCode? { byCode[code] }
    /// Whether the value set contains `code`.
    public static func contains(_ code: String) -> Bool { byCode[code] != nil }
}

/// LOINC answer codes (`LA…-n`) allowed as qualitative lab results in `Observation.valueCodeableConcept`:
/// value set `qualitative-lab-results-loinc` of the SHC Vaccination & Testing IG, which its lab result
/// value set (`qualitative-lab-result-findings`) includes beside the SNOMED CT codes. Answer codes do not
/// follow the LOINC term check-digit rule, so they are checked against this list only.
/// `entries` is generated into `LabResultLOINCAnswerCodes.swift` by `scripts/gen-lab-codes.py`.
public enum LabResultLOINCAnswer {
    /// FHIR system URI of the codes.
    public static let system = "http://loinc.org"
    private static let byCode: [String: LabCode] = Dictionary(uniqueKeysWithValues: entries.map { ($0.code, $0) })

    /// The entry for an answer code (`"LA11883-8"`), or nil when the value set does not contain it.
    public static func lookup(_ code: String) -> LabCode? { byCode[code] }
    /// Whether the value set contains `code`.
    public static func contains(_ code: String) -> Bool { byCode[code] != nil }
    /// True for text shaped like a LOINC answer code: `LA`, digits, `-`, one digit.
    public static func looksLikeAnswerCode(_ code: String) -> Bool {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("LA"), parts[0].utf8.count > 2, parts[1].utf8.count == 1 else { return false }
        return parts[0].utf8.dropFirst(2).allSatisfy { (0x30...0x39).contains($0) } && parts[1].utf8.allSatisfy { (0x30...0x39).contains($0) }
    }
}
