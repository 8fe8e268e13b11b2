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
