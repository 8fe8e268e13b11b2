/// Checks a minimized Bundle against the SMART Health Cards rules a verifier applies (digest
/// sections 3 and 9; SHC Vaccination & Testing IG 1.0.0). `healthcards issue` runs it before signing
/// and `healthcards verify` runs the very same rules on every card it reads, so the issuer never signs
/// what the verifier rejects. Each problem carries a stable `RuleCode` and a FHIR path.
public enum BundleValidator {
    /// What the rules found. Errors reject the record; warnings are reported and the card is still issued.
    public struct Findings: Sendable {
        /// Every finding, in the order found, with its code, severity and FHIR path (`location.path`).
        public var all: [Finding] = []

        mutating func error(_ code: RuleCode, _ path: String, _ message: String) {
            all.append(Finding(code, message, at: .init(path: path), severity: .error))
        }
        mutating func warn(_ code: RuleCode, _ path: String, _ message: String) {
            all.append(Finding(code, message, at: .init(path: path), severity: .warning))
        }

        /// Errors as the issuing pipeline reports them: message `RULE_CODE: sentence`, location the FHIR path.
        public var errors: [HealthCardError] { all.filter(\.isError).map(Self.asError) }
        /// Warnings in the same form as `errors`.
        public var warnings: [HealthCardError] { all.filter { !$0.isError }.map(Self.asError) }

        static func asError(_ f: Finding) -> HealthCardError {
            HealthCardError(.validation, "\(f.code.rawValue): \(f.message)", at: f.location.path)
        }
    }

    /// Validates a minimized Bundle.
    /// - Parameter today: `YYYY-MM-DD` (UTC) to judge dates in the future against; nil skips that check.
    public static func validate(_ bundle: JSONValue, today: String? = Clock.todayUTC()) -> Findings {
        var f = Findings()
        if bundle["resourceType"]?.stringValue != "Bundle" {
            f.error(.bundleResourceType, "Bundle.resourceType", "must be \"Bundle\", found \(quoted(bundle["resourceType"]))")
        }
        if bundle["type"]?.stringValue != "collection" {
            f.error(.bundleType, "Bundle.type", "must be \"collection\" (the SHC IG profiles fix it), found \(quoted(bundle["type"]))")
        }
        let entries = bundle["entry"]?.arrayValue ?? []
        var patientIndices: [Int] = []
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)]"
            if entry["fullUrl"]?.stringValue != "resource:\(i)" {
                f.error(.bundleFullURL, path + ".fullUrl", "must be 'resource:\(i)' (entry index), found \(quoted(entry["fullUrl"]))")
            }
            guard let resource = entry["resource"], resource.objectValue != nil else {
                f.error(.bundleEntryNoResource, path + ".resource", "entry has no resource object")
                continue
            }
            if resource["resourceType"]?.stringValue == "Patient" { patientIndices.append(i) }
            checkMinimal(resource, path: path + ".resource", count: entries.count, findings: &f)
        }
        if patientIndices.count != 1 {
            f.error(.bundlePatientCount, "Bundle.entry", "a card holds exactly one Patient, found \(patientIndices.count)")
        }
        let patientRef = patientIndices.count == 1 ? "resource:\(patientIndices[0])" : nil
        var birthDate: String?
        var hasClinical = false
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"], resource.objectValue != nil else { continue }
            let path = "Bundle.entry[\(i)].resource"
            switch resource["resourceType"]?.stringValue {
            case "Patient":
                birthDate = PatientRules.check(resource, path: path, findings: &f)
            case "Immunization":
                hasClinical = true
                ImmunizationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
            case "Observation":
                hasClinical = true
                ObservationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
            case nil:
                f.error(.resourceTypeMissing, path + ".resourceType", "resource has no resourceType")
            default: break
            }
        }
        if !hasClinical {
            f.warn(.bundleNoClinicalEntry, "Bundle.entry", "the Bundle has no Immunization or Observation; verifier apps may show an empty card")
        }
        checkDates(entries, birthDate: birthDate, today: today, findings: &f)
        return f
    }

    /// Clinical dates: not in the future, not before the birth date.
    static func checkDates(_ entries: [JSONValue], birthDate: String?, today: String?, findings f: inout Findings) {
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)].resource"
            guard let resource = entry["resource"] else { continue }
            for member in ["occurrenceDateTime", "effectiveDateTime"] {
                guard let value = resource[member]?.stringValue, FHIRDate.isValidDateTime(value) else { continue }
                let day = FHIRDate.datePart(value)
                if let today, day > today {
                    f.error(.dateInFuture, "\(path).\(member)", "'\(value)' is in the future (today is \(today) UTC)")
                }
                if let birthDate, FHIRDate.isValidDate(birthDate), day.count == 10, birthDate.count == 10, day < birthDate {
                    f.error(.dateBeforeBirth, "\(path).\(member)", "'\(value)' is before the patient's birth date \(birthDate)")
                }
            }
        }
    }

    /// Minimization rules and references (digest section 3).
    static func checkMinimal(_ resource: JSONValue, path: String, count: Int, findings f: inout Findings) {
        if resource["id"] != nil { f.error(.minResourceID, "\(path).id", "Resource.id must be removed when minimizing") }
        if resource["text"] != nil { f.error(.minText, "\(path).text", "the narrative (DomainResource.text) must be removed when minimizing") }
        if let meta = resource["meta"]?.objectValue, meta.keys != ["security"] {
            f.error(.minMeta, "\(path).meta", "Resource.meta may hold only 'security' (the IAL label), found \(meta.keys.joined(separator: ", "))")
        }
        walk(resource, path: path, count: count, findings: &f)
    }

    private static func walk(_ node: JSONValue, path: String, count: Int, findings f: inout Findings) {
        switch node {
        case .object(let o):
            if o.isEmpty { f.error(.minEmptyElement, path, "empty object; remove it") }
            if o["coding"] != nil && o["text"] != nil {
                f.error(.minCodeableConceptText, path + ".text", "CodeableConcept.text must be removed when minimizing")
            }
            if o["system"] != nil && o["code"] != nil && o["display"] != nil {
                f.error(.minCodingDisplay, path + ".display", "Coding.display must be removed when minimizing")
            }
            if let reference = o["reference"]?.stringValue, !resolves(reference, count: count) {
                f.error(.referenceUnresolved, path + ".reference",
                        "reference '\(reference)' does not resolve to an entry of this Bundle as resource:N (N from 0 to \(count - 1))")
            }
            for (k, v) in o { walk(v, path: "\(path).\(k)", count: count, findings: &f) }
        case .array(let a):
            if a.isEmpty { f.error(.minEmptyElement, path, "empty array; remove it") }
            for (i, v) in a.enumerated() { walk(v, path: "\(path)[\(i)]", count: count, findings: &f) }
        case .string(let s):
            if s.isEmpty || s != s.trimmingCharacters(in: " \t\r\n") {
                f.error(.minStringWhitespace, path, "empty string or leading/trailing whitespace: '\(s)'")
            }
        default: break
        }
    }

    /// True for `resource:N` with N a canonical decimal index below `count`.
    static func resolves(_ reference: String, count: Int) -> Bool {
        guard reference.hasPrefix("resource:") else { return false }
        let digits = reference.dropFirst("resource:".count)
        guard let n = Int(digits), String(n) == digits else { return false }
        return n >= 0 && n < count
    }
}
