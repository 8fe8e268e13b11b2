/// Which rules judge a card's Bundle. Since SMART Health Cards 1.3.0 a card may carry any FHIR content
/// in any `Bundle.type` (an IPS patient summary `document`, an insurance card, …); vaccination and lab
/// cards are the ones the SHC Vaccination & Testing IG profiles, and cards are classified by their
/// content, not by `vc.type` (deprecated in 1.4.0). The IG's Bundle profiles have closed entry slices
/// (`profiles_bundle.fsh`): a vaccination Bundle holds Patients and Immunizations only, a lab Bundle
/// Patients and Observations only.
public enum BundleProfile: String, Sendable, CaseIterable {
    /// Patient and Immunization entries, at least one Immunization: IG vaccination Bundle
    /// (`shc-vaccination-bundle-ad`/`-dm`) with its Patient and Immunization profiles.
    case vaccination
    /// Patient and Observation entries, at least one Observation: IG lab Bundle
    /// (`shc-covid19-laboratory-bundle-ad`, `shc-infectious-disease-laboratory-bundle-ad`, and `-dm`).
    case lab
    /// Anything else: only the rules every SHC Bundle follows (minimization, `resource:N` references,
    /// FHIR string characters, `meta` holding only the identity-assurance label, a FHIR `Bundle.type`).
    case generic

    /// A person's name for the profile, for reports.
    public var title: String {
        switch self {
        case .vaccination: return "vaccination (SHC Vaccination & Testing IG vaccination Bundle)"
        case .lab: return "lab result (SHC Vaccination & Testing IG laboratory Bundle)"
        case .generic: return "generic SMART Health Card (no IG content profile)"
        }
    }

    /// The profile of a Bundle, and the resource types that kept a Bundle holding Immunizations or
    /// Observations out of the vaccination and lab profiles (empty when none did).
    static func classify(_ bundle: JSONValue) -> (profile: BundleProfile, others: [String]) {
        var types: [String] = []
        for entry in bundle["entry"]?.arrayValue ?? [] {
            guard let resource = entry["resource"], resource.objectValue != nil else { continue }
            let type = resource["resourceType"]?.stringValue ?? "(no resourceType)"
            if !types.contains(type) { types.append(type) }
        }
        let clinical = types.filter { $0 == "Immunization" || $0 == "Observation" }
        let others = types.filter { $0 != "Patient" && $0 != "Immunization" && $0 != "Observation" }
        guard !clinical.isEmpty else { return (.generic, []) }
        if others.isEmpty && clinical.count == 1 { return (clinical[0] == "Immunization" ? .vaccination : .lab, []) }
        // Immunizations and Observations together, or with other resources: neither closed profile applies.
        return (.generic, clinical.count == 2 ? others + ["Immunization and Observation together"] : others)
    }

    /// FHIR R4 `Bundle.type` codes (value set `bundle-type`).
    static let bundleTypes: Set<String> = [
        "document", "message", "transaction", "transaction-response", "batch", "batch-response", "history",
        "searchset", "collection",
    ]
}
