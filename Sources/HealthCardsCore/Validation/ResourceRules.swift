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
        guard let value = patient["birthDate"] else {
            f.warn(.patientBirthDateMissing, path + ".birthDate", "birthDate is missing; verifiers match the card to a photo ID by name and birth date")
            return nil
        }
        return checkBirthDate(value, path: path, findings: &f)
    }

    /// The form of a `Patient.birthDate` that is present, for every profile (a card's Bundle is FHIR R4
    /// JSON, whose `date` is a string `YYYY`, `YYYY-MM` or `YYYY-MM-DD`; JSON `null`, a number or any other
    /// value is none). Returns the string, valid or not, for the date rules; nil when it is not a string.
    static func checkBirthDate(
        _ value: JSONValue, path: String, findings f: inout BundleValidator.Findings
    ) -> String? {
        let expected = "a FHIR date (YYYY, YYYY-MM or YYYY-MM-DD, a real calendar date in the years 0001 to 9999)"
        guard let birthDate = value.stringValue else {
            f.error(
                .patientBirthDate, path + ".birthDate",
                "\(quoted(value)) is not \(expected): FHIR JSON writes a date as a string, e.g. \"1960-04-12\"")
            return nil
        }
        if !FHIRDate.isValidDate(birthDate) {
            f.error(.patientBirthDate, path + ".birthDate", "\(quoted(.string(birthDate))) is not \(expected)")
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
        checkOccurrence(resource, path: path, findings: &f)
        if let lot = resource["lotNumber"]?.stringValue {
            if lot.count > 20 { f.warn(.immunizationLotNumber, path + ".lotNumber", "lotNumber is \(lot.count) characters; the IG says it SHOULD be under 20") }
            if lot.lowercased().containsCharacters("lot") { f.warn(.immunizationLotNumber, path + ".lotNumber", "lotNumber \(quoted(.string(lot))) contains 'lot'; give the lot number alone") }
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

    /// Exactly one `occurrenceDateTime`, a FHIR dateTime (IG `profiles_vaccination.fsh`: occurrence[x]
    /// only dateTime, 1..1). `occurrenceString` ("Jan 2021") is refused, alone or beside it: no verifier
    /// can read a free-text date, and no date rule could check it.
    static func checkOccurrence(_ resource: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        let members = resource.objectValue?.keys.filter { $0.hasPrefix("occurrence") } ?? []
        for member in members where member != "occurrenceDateTime" {
            let also = members.contains("occurrenceDateTime") ? " beside occurrenceDateTime" : ""
            f.error(.immunizationOccurrence, "\(path).\(ControlCharacters.escaped(member))",
                "\(ControlCharacters.escaped(member)) (\(quoted(resource[member])))\(also) is not allowed: the SHC IG allows exactly one occurrenceDateTime, "
                + "the date of the dose as a FHIR dateTime (YYYY-MM-DD). Give the date there and remove \(ControlCharacters.escaped(member))")
        }
        guard let value = resource["occurrenceDateTime"] else {
            if members.isEmpty {
                f.error(.immunizationOccurrence, path + ".occurrenceDateTime", "occurrenceDateTime (the date of the dose) is required")
            }
            return
        }
        guard let text = value.stringValue, FHIRDate.isValidDateTime(text) else {
            f.error(.immunizationOccurrence, path + ".occurrenceDateTime", "\(quoted(value)) is not a FHIR dateTime (YYYY-MM-DD, a real calendar date in the years 0001 to 9999)")
            return
        }
        // IG `invariants.fsh` vc-date-invariant (#warning), which `profiles_vaccination.fsh` puts on occurrenceDateTime:
        // "All timestamps SHOULD be represented as Dates (YYYY-MM-DD only)", matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}$').
        if !isDayDate(text) {
            f.warn(
                .immunizationOccurrenceDate, path + ".occurrenceDateTime",
                "the date of the dose \(quoted(value)) is not YYYY-MM-DD: the SHC IG says all timestamps SHOULD be represented as "
                    + "dates, YYYY-MM-DD only (vc-date-invariant on occurrenceDateTime; a time of day is not relevant to a vaccination "
                    + "record, and a year or month alone is less than verifiers expect). Give the day the dose was given")
        }
    }

    /// `YYYY-MM-DD` exactly (the IG's `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`).
    static func isDayDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == 0x2D, bytes[7] == 0x2D else { return false }
        return bytes.enumerated().allSatisfy { $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }
    }

    /// Two doses of one vaccine on one day for one patient: the same dose recorded twice (a repeated
    /// export row, a template without an `eventKey`), which apps would count as two. Doses are the same
    /// when their dates name the same day (or instant) and they share a vaccine coding (system and code).
    /// - Parameter severity: an error when issuing (fix the data before signing), a warning in `verify`.
    static func checkDuplicates(_ entries: [JSONValue], severity: Finding.Severity, findings f: inout BundleValidator.Findings) {
        var first: [String: Int] = [:]
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"], resource["resourceType"]?.stringValue == "Immunization",
                let text = resource["occurrenceDateTime"]?.stringValue, let date = FHIRDateTime(text), date.precision >= .day
            else { continue }
            let day = String(text.prefix(10))  // the date as written, with or without a time
            var reported = false
            for coding in resource["vaccineCode"]?["coding"]?.arrayValue ?? [] {
                guard let system = coding["system"]?.stringValue, let code = coding["code"]?.stringValue else { continue }
                let key = "\(day)|\(system)|\(code)"
                if let earlier = first[key] {
                    if !reported {
                        f.add(.immunizationDuplicate, "Bundle.entry[\(i)].resource",
                            "this dose repeats Bundle.entry[\(earlier)]: the same vaccine (\(ControlCharacters.escaped(system))|\(ControlCharacters.escaped(code))) on the same day (\(quoted(.string(text)))). "
                            + "A card would show one dose as two; remove the repeated dose (a row repeated in the export: give the template an eventKey column, or remove the row)",
                            severity)
                        reported = true
                    }
                } else {
                    first[key] = i
                }
            }
        }
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
        checkEffective(resource, path: path, findings: &f)
        let values = resource.objectValue?.keys.filter { $0.hasPrefix("value") } ?? []
        if values.isEmpty && resource["dataAbsentReason"] == nil {
            f.error(.observationValue, path + ".value[x]", "value[x] (the result) is required")
        }
        if let value = resource["valueCodeableConcept"], (value["coding"]?.arrayValue ?? []).isEmpty {
            // Text alone could claim anything: a qualitative result is a coding (the IG: 1 coding).
            f.error(
                .observationValue, path + ".valueCodeableConcept",
                "a qualitative result has no coding (found \(quoted(value))): give a SNOMED CT finding (e.g. 260385009 "
                    + "Negative) or one of the LOINC answer codes the SHC IG lists")
        }
        for (i, coding) in (resource["valueCodeableConcept"]?["coding"]?.arrayValue ?? []).enumerated() {
            checkResultCoding(coding, path: "\(path).valueCodeableConcept.coding[\(i)]", findings: &f)
        }
        // Components (the IG's specimen-supervision status): each one's code is a test's code, its value a result.
        for (c, component) in (resource["component"]?.arrayValue ?? []).enumerated() {
            let at = "\(path).component[\(c)]"
            for (i, coding) in (component["code"]?["coding"]?.arrayValue ?? []).enumerated() {
                TerminologyRules.checkCoding(coding, path: "\(at).code.coding[\(i)]", findings: &f)
            }
            for (i, coding) in (component["valueCodeableConcept"]?["coding"]?.arrayValue ?? []).enumerated() {
                checkResultCoding(coding, path: "\(at).valueCodeableConcept.coding[\(i)]", findings: &f)
            }
        }
        if let text = resource["valueString"]?.stringValue, text.count >= 20 {
            f.warn(.observationValueString, path + ".valueString", "valueString SHOULD be under 20 characters; prefer a SNOMED CT coded result")
        }
        checkReferenceRange(resource, path: path, findings: &f)
    }

    /// A qualitative result's coding (`valueCodeableConcept`, digest section 9): a SNOMED CT finding, or a LOINC
    /// answer code of the IG's list. A coding without a system means nothing; a LOINC test code (not an answer
    /// code) names what was measured, not what was found; another system is not the IG's value set.
    static func checkResultCoding(_ coding: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        let expected = "a qualitative result is a SNOMED CT finding (\(Terminology.snomedCT), e.g. 260385009 Negative, "
            + "10828004 Positive) or one of the LOINC answer codes the SHC IG lists"
        guard let system = coding["system"]?.stringValue else {
            if let code = coding["code"] {
                f.error(.observationValue, path + ".system", "the result \(quoted(code)) has no system, so it means nothing: \(expected)")
            } else {
                TerminologyRules.checkCoding(coding, path: path, isResult: true, findings: &f)
            }
            return
        }
        // A valid LOINC term where a result belongs (an invalid one gets CODE_LOINC_INVALID from `checkCoding`).
        if system == Terminology.loinc, let code = coding["code"]?.stringValue, !LabResultLOINCAnswer.looksLikeAnswerCode(code),
            Terminology.problem(system: system, code: code) == nil
        {
            f.error(
                .observationValue, path + ".code",
                "\(Quote.text(code)) is a LOINC test code: it names what was measured, not what was found; \(expected)")
            return
        }
        if system != Terminology.snomedCT && system != Terminology.loinc {
            f.error(.observationValue, path + ".system", "the result is coded in \(Quote.text(system)); \(expected)")
            return
        }
        TerminologyRules.checkCoding(coding, path: path, isResult: true, findings: &f)
    }

    /// IG `profiles_lab.fsh` and `invariants.fsh` (both #warning): a quantitative result SHOULD include a reference
    /// range (`valueQuantity obeys vc-observation-quantity-should-have-range`: "Quantitative lab results SHOULD include
    /// reference range"; referenceRange's comment: "Issuers SHOULD provide a reference range for quantitative lab
    /// results to allow recipients to correctly interpret the results"), and a reference range SHOULD NOT be given for
    /// a result that is neither a quantity nor text (`referenceRange obeys vc-observation-range-only-quantity-or-string`:
    /// "SHOULD be included for quantitative lab results, MAY be included for free text (string) results, and SHOULD
    /// NOT be included otherwise").
    static func checkReferenceRange(_ resource: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        let hasRange = !(resource["referenceRange"]?.arrayValue ?? []).isEmpty
        if resource["valueQuantity"] != nil && !hasRange {
            f.warn(
                .observationReferenceRange, path + ".referenceRange",
                "a quantitative result (valueQuantity) SHOULD include referenceRange, so that a verifier can tell what the number "
                    + "means (SHC IG vc-observation-quantity-should-have-range); add the range the laboratory reports (low, high)")
        } else if hasRange && resource["valueQuantity"] == nil && resource["valueString"] == nil {
            f.warn(
                .observationReferenceRange, path + ".referenceRange",
                "referenceRange SHOULD NOT be included for a result that is neither a quantity nor text (SHC IG "
                    + "vc-observation-range-only-quantity-or-string); remove it")
        }
    }

    /// Exactly one `effective[x]`, a dateTime or a Period (IG `profiles_lab.fsh`), each date a FHIR
    /// dateTime, a Period with a start or an end and not ending before it starts.
    static func checkEffective(_ resource: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        let members = resource.objectValue?.keys.filter { $0.hasPrefix("effective") } ?? []
        if members.isEmpty {
            f.error(.observationEffective, path + ".effective[x]", "effective[x] (when the specimen was taken) is required")
        } else if members.count > 1 {
            f.error(.observationEffective, path + ".effective[x]", "a lab result has one effective[x], found \(members.map(ControlCharacters.escaped).joined(separator: ", "))")
        }
        let expected = "a FHIR dateTime (YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz, a real calendar date in the years 0001 to 9999)"
        for member in members where member != "effectiveDateTime" && member != "effectivePeriod" {
            f.error(.observationEffective, "\(path).\(ControlCharacters.escaped(member))", "the SHC IG's lab result profiles take effectiveDateTime or effectivePeriod, found \(ControlCharacters.escaped(member))")
        }
        if let when = resource["effectiveDateTime"], !(when.stringValue.map { FHIRDate.isValidDateTime($0) } ?? false) {
            f.error(.observationEffective, path + ".effectiveDateTime", "\(quoted(when)) is not \(expected)")
        }
        guard let period = resource["effectivePeriod"] else { return }
        var ends: [FHIRDateTime] = []
        for end in ["start", "end"] {
            guard let value = period[end] else { continue }
            if let date = value.stringValue.flatMap({ FHIRDateTime($0) }) { ends.append(date) } else {
                f.error(.observationEffective, "\(path).effectivePeriod.\(end)", "\(quoted(value)) is not \(expected)")
            }
        }
        if period.objectValue == nil || (period["start"] == nil && period["end"] == nil) {
            f.error(.observationEffective, path + ".effectivePeriod", "effectivePeriod needs a start or an end, found \(quoted(period))")
        } else if ends.count == 2, ends[1].isBefore(sameZoneAs: ends[0]) {
            f.error(.observationEffective, path + ".effectivePeriod.end", "the period ends (\(quoted(period["end"]))) before it starts (\(quoted(period["start"])))")
        }
    }
}

/// Code checks shared by the resource rules.
enum TerminologyRules {
    /// - Parameter isResult: the coding is a lab result (`Observation.valueCodeableConcept`), where LOINC
    ///   answer codes (`LA…-n`) of the IG's list are the codes, not LOINC terms.
    static func checkCoding(_ coding: JSONValue, path: String, isResult: Bool = false, findings f: inout BundleValidator.Findings) {
        guard let system = coding["system"]?.stringValue, let code = coding["code"]?.stringValue else {
            if coding["code"] == nil { f.error(.codingCode, path + ".code", "coding has no code") }
            return
        }
        if system == Terminology.loinc, LabResultLOINCAnswer.looksLikeAnswerCode(code) {
            if !isResult {
                f.error(.codeLOINCInvalid, path + ".code", "\(Quote.text(code)) is a LOINC answer code: it names a result, not a test. Give the test's LOINC code (e.g. 94500-6) here, and the answer in valueCodeableConcept")
            } else if !LabResultLOINCAnswer.contains(code) {
                f.error(.codeLOINCInvalid, path + ".code", "\(Quote.text(code)) is not one of the LOINC answer codes the SHC IG lists for qualitative lab results ("
                    + LabResultLOINCAnswer.entries.map { "\($0.code) \($0.display)" }.joined(separator: ", ") + "); use one of them or a SNOMED CT result code")
            }
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
