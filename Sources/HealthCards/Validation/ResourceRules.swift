/// Patient rules (SHC IG `profiles_admin.fsh`; digest section 9).
enum PatientRules {
    /// Checks a Patient; returns its birthDate when present.
    static func check(_ patient: JSONValue, path: String, findings f: inout BundleValidator.Findings) -> String? {
        let names = patient["name"]?.arrayValue ?? []
        if names.isEmpty { f.error(.patientName, path + ".name", "Patient.name is required (at least one name)") }
        for (i, name) in names.enumerated() {
            let structured = name["family"] != nil || name["given"] != nil
            let text = name["text"] != nil
            if structured && text {
                f.error(.patientNameForm, "\(path).name[\(i)]", "a name has family/given or text, not both")
            } else if !structured && !text {
                f.error(.patientNameForm, "\(path).name[\(i)]", "a name needs family/given or text; it is empty")
            }
        }
        if patient["photo"] != nil { f.error(.patientPhoto, path + ".photo", "Patient.photo is not allowed in a health card") }
        guard let birthDate = patient["birthDate"]?.stringValue else {
            f.warn(.patientBirthDateMissing, path + ".birthDate", "birthDate is missing; verifiers match the card to a photo ID by name and birth date")
            return nil
        }
        if !FHIRDate.isValidDate(birthDate) {
            f.error(.patientBirthDate, path + ".birthDate", "\(quoted(.string(birthDate))) is not a FHIR date (YYYY, YYYY-MM or YYYY-MM-DD, a real calendar date in the years 0001 to 9999)")
        }
        return birthDate
    }
}

/// Immunization rules (SHC IG `profiles_vaccination.fsh`; digest section 9).
enum ImmunizationRules {
    static let vaccineSystems: Set<String> = [Terminology.cvx, Terminology.snomedCT, Terminology.icd11]

    static func check(_ resource: JSONValue, path: String, patientRef: String?, findings f: inout BundleValidator.Findings) {
        if resource["status"]?.stringValue != "completed" {
            f.error(.immunizationStatus, path + ".status", "Immunization.status must be 'completed', found \(quoted(resource["status"]))")
        }
        let codings = resource["vaccineCode"]?["coding"]?.arrayValue ?? []
        if !codings.contains(where: { vaccineSystems.contains($0["system"]?.stringValue ?? "") && $0["code"]?.stringValue != nil }) {
            f.error(.immunizationVaccineCode, path + ".vaccineCode", "vaccineCode needs a coding from CVX (\(Terminology.cvx)), SNOMED CT or ICD-11 MMS")
        }
        for (i, coding) in codings.enumerated() {
            TerminologyRules.checkCoding(coding, path: "\(path).vaccineCode.coding[\(i)]", findings: &f)
        }
        if let patientRef, resource["patient"]?["reference"]?.stringValue != patientRef {
            f.error(.immunizationPatient, path + ".patient.reference", "must reference the Patient entry (\(patientRef)), found \(quoted(resource["patient"]?["reference"]))")
        }
        if let occurrence = resource["occurrenceDateTime"]?.stringValue {
            if !FHIRDate.isValidDateTime(occurrence) {
                f.error(.immunizationOccurrence, path + ".occurrenceDateTime", "\(quoted(.string(occurrence))) is not a FHIR dateTime (YYYY-MM-DD, or YYYY-MM-DDThh:mm:ss with a zone Z or ±hh:mm from -14:00 to +14:00; a real calendar date in the years 0001 to 9999)")
            }
        } else if resource["occurrenceString"] == nil {
            f.error(.immunizationOccurrence, path + ".occurrenceDateTime", "occurrenceDateTime (the date of the dose) is required")
        }
        if let lot = resource["lotNumber"]?.stringValue {
            if lot.count > 20 { f.warn(.immunizationLotNumber, path + ".lotNumber", "lotNumber is \(lot.count) characters; the IG says it SHOULD be under 20") }
            if lot.lowercased().contains("lot") { f.warn(.immunizationLotNumber, path + ".lotNumber", "lotNumber \(quoted(.string(lot))) contains 'lot'; give the lot number alone") }
        }
        for (i, performer) in (resource["performer"]?.arrayValue ?? []).enumerated() {
            guard let display = performer["actor"]?["display"]?.stringValue else {
                f.warn(.immunizationPerformer, "\(path).performer[\(i)].actor.display", "performer.actor.display is expected (the place or organization)")
                continue
            }
            if display.count > 30 {
                f.warn(.immunizationPerformer, "\(path).performer[\(i)].actor.display", "\(quoted(.string(display))) is \(display.count) characters; the IG says it SHOULD be under 30")
            }
        }
        if let subpotent = resource["isSubpotent"], subpotent != .bool(true) {
            f.error(.immunizationSubpotent, path + ".isSubpotent", "isSubpotent, when present, must be true")
        }
        if resource["protocolApplied"] != nil { f.warn(.immunizationProtocolApplied, path + ".protocolApplied", "protocolApplied is 0..0 in the SHC IG") }
    }
}

/// Lab Observation rules (SHC IG `profiles_lab.fsh`; digest section 9).
enum ObservationRules {
    static func check(_ resource: JSONValue, path: String, patientRef: String?, findings f: inout BundleValidator.Findings) {
        let status = resource["status"]?.stringValue ?? ""
        if !["final", "amended", "corrected"].contains(status) {
            f.error(.observationStatus, path + ".status", "a lab result's status is final, amended or corrected, found \(quoted(resource["status"]))")
        }
        let codings = resource["code"]?["coding"]?.arrayValue ?? []
        if !codings.contains(where: { $0["system"]?.stringValue == Terminology.loinc && $0["code"]?.stringValue != nil }) {
            f.error(.observationCode, path + ".code", "a lab result's code needs a LOINC coding (\(Terminology.loinc))")
        }
        for (i, coding) in codings.enumerated() {
            TerminologyRules.checkCoding(coding, path: "\(path).code.coding[\(i)]", findings: &f)
        }
        if let patientRef, resource["subject"]?["reference"]?.stringValue != patientRef {
            f.error(.observationSubject, path + ".subject.reference", "must reference the Patient entry (\(patientRef)), found \(quoted(resource["subject"]?["reference"]))")
        }
        let effective = resource.objectValue?.keys.filter { $0.hasPrefix("effective") } ?? []
        if effective.isEmpty { f.error(.observationEffective, path + ".effective[x]", "effective[x] (when the specimen was taken) is required") }
        if let when = resource["effectiveDateTime"]?.stringValue, !FHIRDate.isValidDateTime(when) {
            f.error(.observationEffective, path + ".effectiveDateTime", "\(quoted(.string(when))) is not a FHIR dateTime (YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz, a real calendar date in the years 0001 to 9999)")
        }
        let values = resource.objectValue?.keys.filter { $0.hasPrefix("value") } ?? []
        if values.isEmpty && resource["dataAbsentReason"] == nil {
            f.error(.observationValue, path + ".value[x]", "value[x] (the result) is required")
        }
        for (i, coding) in (resource["valueCodeableConcept"]?["coding"]?.arrayValue ?? []).enumerated() {
            TerminologyRules.checkCoding(coding, path: "\(path).valueCodeableConcept.coding[\(i)]", findings: &f)
        }
        if let text = resource["valueString"]?.stringValue, text.count >= 20 {
            f.warn(.observationValueString, path + ".valueString", "valueString SHOULD be under 20 characters; prefer a SNOMED CT coded result")
        }
    }
}

/// Code checks shared by the resource rules.
enum TerminologyRules {
    static func checkCoding(_ coding: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        guard let system = coding["system"]?.stringValue, let code = coding["code"]?.stringValue else {
            if coding["code"] == nil { f.error(.codingCode, path + ".code", "coding has no code") }
            return
        }
        if let problem = Terminology.problem(system: system, code: code) {
            let rule: RuleCode
            if code.isEmpty || code != code.trimmingCharacters(in: " \t\r\n") {
                rule = .codingCode
            } else {
                switch system {
                case Terminology.cvx: rule = .codeCVXUnknown
                case Terminology.loinc: rule = .codeLOINCInvalid
                case Terminology.snomedCT: rule = .codeSNOMEDInvalid
                default: rule = .codingCode
                }
            }
            f.error(rule, path + ".code", problem)
        } else if system == Terminology.cvx, let entry = CVX.lookup(code) {
            switch code {
            case "998":
                f.error(.codeCVXNoVaccine, path + ".code", "CVX 998 means 'no vaccine administered'; a record of a dose not given does not belong on a vaccination card. Drop the row")
            case "999":
                f.warn(.codeCVXUnspecified, path + ".code", "CVX 999 means '\(entry.shortDescription)': verifiers cannot tell which vaccine was given; use the product's CVX code if it is known")
            default: break
            }
        }
    }
}

/// A JSON value for a message: strings in single quotes, anything else as minified JSON, with control
/// characters escaped (`\u{1B}`) so a message never carries them.
func quoted(_ value: JSONValue?) -> String {
    guard let value else { return "nothing" }
    if let s = value.stringValue { return "'\(ControlCharacters.escaped(s))'" }
    return ControlCharacters.escaped(JSONWriter.minifiedString(value))
}
