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
    /// - Parameter now: the time to judge dates in the future against, in seconds since 1970 (the
    ///   issuing or verifying time; `verify --now`); nil skips that check. A dateTime with a time is in the
    ///   future when it is more than `DateRules.clockSkewSeconds` after `now`; a date without a time when
    ///   it is after today's date in the furthest time zone (UTC+14).
    public static func validate(_ bundle: JSONValue, now: Int64? = Clock.nowSeconds()) -> Findings {
        // Any Int64 is accepted: beyond ±2^40 s (±34,000 years, far outside FHIR's years 0001 to 9999) the
        // answers are the same, and the date rules' sums (now + skew, instant − now) cannot overflow.
        let now = now.map { max(-(1 << 40), min(1 << 40, $0)) }
        var f = Findings()
        if bundle["resourceType"]?.stringValue != "Bundle" {
            f.error(.bundleResourceType, "Bundle.resourceType", "must be \"Bundle\", found \(quoted(bundle["resourceType"]))")
        }
        if bundle["type"]?.stringValue != "collection" {
            f.error(.bundleType, "Bundle.type", "must be \"collection\" (the SHC IG profiles fix it), found \(quoted(bundle["type"]))")
        }
        // Control characters outside the entry resources (those are checked by the resource walk).
        for (k, v) in bundle.objectValue ?? [:] where k != "entry" {
            checkCharacters(member: k, value: v, path: "Bundle", findings: &f)
        }
        let entries = bundle["entry"]?.arrayValue ?? []
        var patientIndices: [Int] = []
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)]"
            for (k, v) in entry.objectValue ?? [:] where k != "resource" {
                checkCharacters(member: k, value: v, path: path, findings: &f)
            }
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
        var birthDate: (value: String, path: String)?
        var hasClinical = false
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"], resource.objectValue != nil else { continue }
            let path = "Bundle.entry[\(i)].resource"
            switch resource["resourceType"]?.stringValue {
            case "Patient":
                if let value = PatientRules.check(resource, path: path, findings: &f) {
                    birthDate = (value, path + ".birthDate")
                }
                DataMinimizationRules.checkPatient(resource, path: path, findings: &f)
            case "Immunization":
                hasClinical = true
                ImmunizationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
                DataMinimizationRules.checkImmunization(resource, path: path, findings: &f)
            case "Observation":
                hasClinical = true
                ObservationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
                DataMinimizationRules.checkObservation(resource, path: path, findings: &f)
            case nil:
                f.error(.resourceTypeMissing, path + ".resourceType", "resource has no resourceType")
            default: break
            }
        }
        if !hasClinical {
            f.warn(.bundleNoClinicalEntry, "Bundle.entry", "the Bundle has no Immunization or Observation; verifier apps may show an empty card")
        }
        DateRules.check(entries, birthDate: birthDate, now: now, findings: &f)
        return f
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
                        "reference \(quoted(.string(reference))) does not resolve to an entry of this Bundle as resource:N (N from 0 to \(count - 1))")
            }
            for (k, v) in o {
                checkMemberName(k, path: path, findings: &f)
                walk(v, path: "\(path).\(ControlCharacters.escaped(k))", count: count, findings: &f)
            }
        case .array(let a):
            if a.isEmpty { f.error(.minEmptyElement, path, "empty array; remove it") }
            for (i, v) in a.enumerated() { walk(v, path: "\(path)[\(i)]", count: count, findings: &f) }
        case .string(let s):
            if s.isEmpty || s != s.trimmingCharacters(in: " \t\r\n") {
                f.error(.minStringWhitespace, path, "empty string or leading/trailing whitespace: \(quoted(node))")
            }
            checkString(s, path: path, findings: &f)
        default: break
        }
    }

    /// Control characters only, for the parts of the Bundle outside the entry resources.
    private static func checkCharacters(member: String, value: JSONValue, path: String, findings f: inout Findings) {
        checkMemberName(member, path: path, findings: &f)
        checkCharacters(value, path: "\(path).\(ControlCharacters.escaped(member))", findings: &f)
    }

    private static func checkCharacters(_ value: JSONValue, path: String, findings f: inout Findings) {
        switch value {
        case .object(let o):
            for (k, v) in o { checkCharacters(member: k, value: v, path: path, findings: &f) }
        case .array(let a):
            for (i, v) in a.enumerated() { checkCharacters(v, path: "\(path)[\(i)]", findings: &f) }
        case .string(let s): checkString(s, path: path, findings: &f)
        default: break
        }
    }

    /// FHIR `string`: no character below U+0020 except tab, CR and LF (FHIR R4 datatypes, `[ \r\n\t\S]+`).
    private static func checkString(_ s: String, path: String, findings f: inout Findings) {
        guard let (scalar, offset) = ControlCharacters.firstForbidden(in: s) else { return }
        f.error(.stringControlCharacter, path, "the string holds the control character \(ControlCharacters.codePoint(scalar)) at character \(offset + 1) "
            + "(\(quoted(.string(s)))); FHIR strings may not hold characters below U+0020 other than tab, CR and LF. Remove it from the source data")
    }

    private static func checkMemberName(_ name: String, path: String, findings f: inout Findings) {
        guard let (scalar, offset) = ControlCharacters.firstForbidden(in: name) else { return }
        f.error(.stringControlCharacter, "\(path).\(ControlCharacters.escaped(name))", "the JSON member name holds the control character "
            + "\(ControlCharacters.codePoint(scalar)) at character \(offset + 1); FHIR element names never do. Remove it")
    }

    /// True for `resource:N` with N a canonical decimal index below `count`.
    static func resolves(_ reference: String, count: Int) -> Bool {
        guard reference.hasPrefix("resource:") else { return false }
        let digits = reference.dropFirst("resource:".count)
        guard let n = Int(digits), String(n) == digits else { return false }
        return n >= 0 && n < count
    }
}
