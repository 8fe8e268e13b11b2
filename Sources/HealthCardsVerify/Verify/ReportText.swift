import HealthCardsCore

/// The readable summary `healthcards verify` prints without `--json`.
extension CredentialReport {
    /// Lines: what was read, issuer, kid, nbf/exp as dates, patient, one line per immunization or lab
    /// result (CVX short description from the shipped CVX list), then each finding. Control characters
    /// (C0, DEL, C1) from the card or file are escaped (`\u{1B}`), so a card cannot drive the terminal.
    /// - Parameter now: the time the card was judged at, in seconds since 1970 (which of a patient's names is
    ///   current).
    /// - Parameter say: a finding's message as the program shows it (the library's `message` unless told).
    package func summaryLines(say: (Finding) -> String = \.message, now: Int64) -> [String] {
        rawSummaryLines(say: say, today: Clock.todayUTC(now)).map(ControlCharacters.escaped)
    }

    private func rawSummaryLines(say: (Finding) -> String, today: String) -> [String] {
        var lines: [String] = []
        let index = self.index.map { " [credential \($0)]" } ?? ""
        let verdict: String
        if !isValid {
            verdict = "INVALID (\(errorCount) error(s), \(warningCount) warning(s))"
        } else if isCredential && signature != .verified {
            // Never "OK" for a card whose signature no key of its issuer checked: anyone can sign such a card.
            verdict = "NOT VERIFIED: signature not checked, no other error (\(warningCount) warning(s))"
        } else if isLinkContentChecked == false {
            // Nor for a link whose file was never opened: only its payload was read.
            verdict = "NOT VERIFIED: the link is well-formed, but its file was not opened, so what it holds was not checked "
                + "(\(warningCount) warning(s))"
        } else {
            verdict = warningCount > 0 ? "OK with \(warningCount) warning(s)" : "OK"
        }
        lines.append("\(source.rawValue) \(file)\(index): \(verdict)")
        if let payload, source != .shlink {
            lines.append("  issuer   \(payload["iss"]?.stringValue ?? "?")" + (issuerName.map { " (\($0), in the VCI directory)" } ?? ""))
            let sig: String
            switch signature {
            case .verified: sig = "signature verified"
            case .notChecked: sig = "signature not checked"
            case .failed: sig = "signature NOT valid"
            }
            lines.append("  kid      \(kid ?? "?") (\(sig))")
            func date(_ value: JSONValue?) -> String {
                guard let date = NumericDate(value) else { return value.map { quoted($0) } ?? "none" }
                return Clock.describe(date.whole)
            }
            lines.append("  nbf      \(date(payload["nbf"]))" + (payload["exp"] != nil ? "; exp \(date(payload["exp"]))" : ""))
            if let profile { lines.append("  profile  \(profile.title)") }
            let entries = payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue ?? []
            for entry in entries.prefix(summaryEntries) {
                if let line = Self.describe(entry["resource"], today: today) { lines.append("  " + line) }
            }
            let total = entries.count + entriesNotKept
            if total > summaryEntries {
                lines.append("  … and \(total - summaryEntries) more entries (not listed here; the findings cover them all)")
            }
        }
        if let (issuer, binding) = keySetBinding {
            switch binding {
            case .unbound: lines.append("  issuer   not bound to an issuer")
            case .given: lines.append("  issuer   \(issuer ?? "?") (bound to it when the key set was given)")
            case .siteRecord(let record): lines.append("  issuer   \(issuer ?? "?") (recorded in \(record))")
            case .directory: lines.append("  issuer   \(issuer ?? "?") (listed in the VCI directory)")
            }
        }
        for note in notes { lines.append("  note     \(note)") }
        for (version, level) in qrSymbols.map({ ($0.version, $0.errorCorrection) }) {
            lines.append("  QR       version \(version.map(String.init) ?? "?"), ECC \(level?.rawValue ?? "?")")
        }
        for finding in findings {
            var at = finding.location
            if at.file == file { at.file = nil }
            if at.credential == self.index { at.credential = nil }
            let location = at.description
            lines.append("  \(finding.severity.rawValue) \(finding.code.rawValue)\(location.isEmpty ? "" : " at " + location): \(say(finding))")
        }
        return lines
    }

    /// One line for a Patient, Immunization or Observation; nil for other resources.
    static func describe(_ resource: JSONValue?, today: String) -> String? {
        guard let resource else { return nil }
        switch resource["resourceType"]?.stringValue {
        case "Patient":
            let text = HumanName.display(patient: resource, today: today) ?? "?"
            return "patient  \(text), born \(resource["birthDate"]?.stringValue ?? "?")"
        case "Immunization":
            let date = resource["occurrenceDateTime"]?.stringValue ?? resource["occurrenceString"]?.stringValue ?? "?"
            return "dose     \(date)  " + codings(resource["vaccineCode"])
        case "Observation":
            let date = resource["effectiveDateTime"]?.stringValue ?? resource["effectivePeriod"]?["start"]?.stringValue ?? "?"
            var result = "?"
            if let concept = resource["valueCodeableConcept"] {
                result = codings(concept)
            } else if let quantity = resource["valueQuantity"] {
                result = "\(quantity["value"]?.numberLexeme ?? "?") \(quantity["unit"]?.stringValue ?? quantity["code"]?.stringValue ?? "")"
            } else if let text = resource["valueString"]?.stringValue {
                result = "'\(text)'"
            }
            return "lab      \(date)  \(codings(resource["code"])) → \(result)" + referenceRanges(resource["referenceRange"])
        default:
            return nil
        }
    }

    /// `  (reference range 0.0–1.0 U/mL)` for an Observation's `referenceRange` (its `text`, or `low`–`high` with
    /// their units; several joined with `; `), or empty when it has none.
    static func referenceRanges(_ ranges: JSONValue?) -> String {
        let parts = (ranges?.arrayValue ?? []).compactMap { range -> String? in
            if let text = range["text"]?.stringValue { return ControlCharacters.escaped(text) }
            func quantity(_ q: JSONValue?) -> String? {
                guard let q, let value = q["value"]?.numberLexeme else { return nil }
                let unit = q["unit"]?.stringValue ?? q["code"]?.stringValue
                return value + (unit.map { " " + ControlCharacters.escaped($0) } ?? "")
            }
            switch (quantity(range["low"]), quantity(range["high"])) {
            case (let low?, let high?): return "\(low) to \(high)"
            case (let low?, nil): return "at least \(low)"
            case (nil, let high?): return "at most \(high)"
            default: return nil
            }
        }
        return parts.isEmpty ? "" : "  (reference range " + parts.joined(separator: "; ") + ")"
    }

    static func codings(_ concept: JSONValue?) -> String {
        let list = concept?["coding"]?.arrayValue ?? []
        let parts = list.map { coding -> String in
            let code = coding["code"]?.stringValue ?? "?"
            switch coding["system"]?.stringValue {
            case Terminology.cvx: return "CVX \(code)" + (CVX.lookup(code).map { " (\($0.shortDescription))" } ?? " (not in the CVX list)")
            case Terminology.loinc: return "LOINC \(code)" + ((COVID19LabTestLOINC.lookup(code) ?? LabResultLOINCAnswer.lookup(code)).map { " (\($0.display))" } ?? "")
            case Terminology.snomedCT: return "SNOMED CT \(code)" + (LabResultSNOMED.lookup(code).map { " (\($0.display))" } ?? "")
            case Terminology.icd11: return "ICD-11 \(code)"
            default: return "\(coding["system"]?.stringValue ?? "?")|\(code)"
            }
        }
        return parts.isEmpty ? "no coding" : parts.joined(separator: ", ")
    }
}

extension Finding {
    /// True for a finding on the FHIR Bundle (its path starts with `Bundle`), whose message may quote the
    /// card's content: a name part, a date.
    public var isAboutCardContent: Bool { location.path.map { $0.hasPrefix("Bundle") } ?? false }

    /// `error CODE at LOCATION: message`, without the message when it is about the card's content
    /// (`isAboutCardContent`), control characters escaped: for a line that may end up in a log.
    public var descriptionWithoutHealthData: String { descriptionWithoutHealthData(say: \.message) }

    /// `descriptionWithoutHealthData` with the message said by `say` (a program's own wording of it).
    public func descriptionWithoutHealthData(say: (Finding) -> String) -> String {
        let at = location.description
        let said = isAboutCardContent ? "" : ": \(say(self))"
        return ControlCharacters.escaped("\(severity.rawValue) \(code.rawValue)\(at.isEmpty ? "" : " at " + at)" + said)
    }
}

extension CredentialReport {
    /// The errors as `CODE at LOCATION: message`, for a refusal that may end up in a log (`print` refusing a
    /// card): never the person's data. The summary lines (name, birth date, doses) are left out, and so is
    /// the message of a finding on the FHIR Bundle (`Finding.isAboutCardContent`); its code and path say what
    /// it is, `healthcards verify` the rest.
    public var errorLinesWithoutHealthData: [String] { errorLinesWithoutHealthData(say: \.message) }

    /// `errorLinesWithoutHealthData` with the messages said by `say` (a program's own wording of them).
    public func errorLinesWithoutHealthData(say: (Finding) -> String) -> [String] {
        findings.filter(\.isError).map { finding in
            var relative = finding
            if relative.location.file == file { relative.location.file = nil }
            if relative.location.credential == index { relative.location.credential = nil }
            return relative.descriptionWithoutHealthData(say: say)
        }
    }
}
