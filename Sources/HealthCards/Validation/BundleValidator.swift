/// Checks a minimized Bundle against the SMART Health Cards rules a verifier applies (digest
/// sections 3 and 9; SHC Vaccination & Testing IG 1.0.0), before it is signed.
public enum BundleValidator {
    /// Errors reject the record; warnings are reported and the card is still issued.
    public struct Findings: Sendable {
        public var errors: [HealthCardError] = []
        public var warnings: [HealthCardError] = []
        mutating func error(_ path: String, _ message: String) {
            errors.append(HealthCardError(.validation, message, at: path))
        }
        mutating func warn(_ path: String, _ message: String) {
            warnings.append(HealthCardError(.validation, message, at: path))
        }
    }

    /// Validates a minimized Bundle.
    /// - Parameter today: `YYYY-MM-DD` (UTC) to judge dates in the future against; nil skips that check.
    public static func validate(_ bundle: JSONValue, today: String? = Clock.todayUTC()) -> Findings {
        var f = Findings()
        if bundle["resourceType"]?.stringValue != "Bundle" { f.error("Bundle.resourceType", "must be \"Bundle\"") }
        if bundle["type"]?.stringValue != "collection" {
            f.error("Bundle.type", "must be \"collection\" (the SHC IG profiles fix it), found \(bundle["type"]?.stringValue.map { "'\($0)'" } ?? "none")")
        }
        let entries = bundle["entry"]?.arrayValue ?? []
        var patientIndices: [Int] = []
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)]"
            if entry["fullUrl"]?.stringValue != "resource:\(i)" { f.error(path + ".fullUrl", "must be 'resource:\(i)'") }
            guard let resource = entry["resource"], resource.objectValue != nil else {
                f.error(path + ".resource", "entry has no resource")
                continue
            }
            if resource["resourceType"]?.stringValue == "Patient" { patientIndices.append(i) }
            checkMinimal(resource, path: path + ".resource", count: entries.count, findings: &f)
        }
        if patientIndices.count != 1 {
            f.error("Bundle.entry", "a card holds exactly one Patient, found \(patientIndices.count)")
        }
        let patientRef = patientIndices.count == 1 ? "resource:\(patientIndices[0])" : nil
        var birthDate: String?
        var hasClinical = false
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"] else { continue }
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
                f.error(path + ".resourceType", "resource has no resourceType")
            default: break
            }
        }
        if !hasClinical {
            f.warn("Bundle.entry", "the Bundle has no Immunization or Observation; verifier apps may show an empty card")
        }
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)].resource"
            guard let resource = entry["resource"] else { continue }
            for (member, label) in [("occurrenceDateTime", "occurrenceDateTime"), ("effectiveDateTime", "effectiveDateTime")] {
                guard let value = resource[member]?.stringValue else { continue }
                let day = FHIRDate.datePart(value)
                if let today, day > today, FHIRDate.isValidDateTime(value) {
                    f.error("\(path).\(label)", "'\(value)' is in the future (today is \(today) UTC)")
                }
                if let birthDate, FHIRDate.isValidDate(birthDate), FHIRDate.isValidDateTime(value),
                    day.count == 10, birthDate.count == 10, day < birthDate
                {
                    f.error("\(path).\(label)", "'\(value)' is before the patient's birth date \(birthDate)")
                }
            }
        }
        return f
    }

    /// Minimization rules and references (digest section 3).
    static func checkMinimal(_ resource: JSONValue, path: String, count: Int, findings f: inout Findings) {
        for member in ["id", "text"] where resource[member] != nil {
            f.error("\(path).\(member)", "must be removed when minimizing")
        }
        if let meta = resource["meta"]?.objectValue, meta.keys != ["security"] {
            f.error("\(path).meta", "may hold only 'security'")
        }
        walk(resource, path: path, count: count, findings: &f)
    }

    private static func walk(_ node: JSONValue, path: String, count: Int, findings f: inout Findings) {
        switch node {
        case .object(let o):
            if o.isEmpty { f.error(path, "empty object") }
            if o["coding"] != nil && o["text"] != nil { f.error(path + ".text", "CodeableConcept.text must be removed") }
            if o["system"] != nil && o["code"] != nil && o["display"] != nil { f.error(path + ".display", "Coding.display must be removed") }
            if let reference = o["reference"]?.stringValue {
                if !reference.hasPrefix("resource:") || Int(reference.dropFirst(9)).map({ $0 < 0 || $0 >= count || String($0) != reference.dropFirst(9) }) != false {
                    f.error(path + ".reference", "reference '\(reference)' does not resolve to an entry as resource:N")
                }
            }
            for (k, v) in o { walk(v, path: "\(path).\(k)", count: count, findings: &f) }
        case .array(let a):
            if a.isEmpty { f.error(path, "empty array") }
            for (i, v) in a.enumerated() { walk(v, path: "\(path)[\(i)]", count: count, findings: &f) }
        case .string(let s):
            if s.isEmpty || s != s.trimmingCharacters(in: " \t\r\n") { f.error(path, "empty string or leading/trailing whitespace: '\(s)'") }
        default: break
        }
    }
}
