import HealthCardsCore

/// The readable summary `healthcards verify` prints without `--json`.
extension CredentialReport {
    /// Lines: what was read, issuer, kid, nbf/exp as dates, patient, one line per immunization or lab
    /// result (CVX short description from the shipped CVX list), then each finding. Control characters
    /// (C0, DEL, C1) from the card or file are escaped (`\u{1B}`), so a card cannot drive the terminal.
    public var summaryLines: [String] { summaryLines(style: .words) }

    /// `summaryLines` with the messages' settings and commands said in `style`.
    public func summaryLines(style: MessageStyle) -> [String] {
        rawSummaryLines(style: style).map(ControlCharacters.escaped)
    }

    private func rawSummaryLines(style: MessageStyle) -> [String] {
        var lines: [String] = []
        let index = self.index.map { " [credential \($0)]" } ?? ""
        let verdict = isValid ? (warningCount > 0 ? "OK with \(warningCount) warning(s)" : "OK") : "INVALID (\(errorCount) error(s), \(warningCount) warning(s))"
        lines.append("\(source.rawValue) \(file)\(index): \(verdict)")
        if let payload, source != .shlink {
            lines.append("  issuer   \(payload["iss"]?.stringValue ?? "?")")
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
            for entry in payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue ?? [] {
                if let line = Self.describe(entry["resource"]) { lines.append("  " + line) }
            }
        }
        if let (issuer, binding) = keySetBinding {
            switch binding {
            case .unbound: lines.append("  issuer   not bound to an issuer")
            case .argument: lines.append("  issuer   \(issuer ?? "?") (bound by \(style.render("\(Setting.jwks)")) URL=PATH)")
            case .siteRecord(let record): lines.append("  issuer   \(issuer ?? "?") (recorded in \(record))")
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
            lines.append("  \(finding.severity.rawValue) \(finding.code.rawValue)\(location.isEmpty ? "" : " at " + location): \(finding.rendered(style))")
        }
        return lines
    }

    /// One line for a Patient, Immunization or Observation; nil for other resources.
    static func describe(_ resource: JSONValue?) -> String? {
        guard let resource else { return nil }
        switch resource["resourceType"]?.stringValue {
        case "Patient":
            let text = HumanName.display(patient: resource, today: Clock.todayUTC()) ?? "?"
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
            return "lab      \(date)  \(codings(resource["code"])) → \(result)"
        default:
            return nil
        }
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
    public var descriptionWithoutHealthData: String { descriptionWithoutHealthData(style: .words) }

    /// `descriptionWithoutHealthData` with the message's settings and commands said in `style`.
    public func descriptionWithoutHealthData(style: MessageStyle) -> String {
        let at = location.description
        let said = isAboutCardContent ? "" : ": \(style.render(text))"
        return ControlCharacters.escaped("\(severity.rawValue) \(code.rawValue)\(at.isEmpty ? "" : " at " + at)" + said)
    }
}

extension CredentialReport {
    /// The errors as `CODE at LOCATION: message`, for a refusal that may end up in a log (`print` refusing a
    /// card): never the person's data. The summary lines (name, birth date, doses) are left out, and so is
    /// the message of a finding on the FHIR Bundle (`Finding.isAboutCardContent`); its code and path say what
    /// it is, `healthcards verify` the rest.
    public var errorLinesWithoutHealthData: [String] { errorLinesWithoutHealthData(style: .words) }

    /// `errorLinesWithoutHealthData` with the messages' settings and commands said in `style`.
    public func errorLinesWithoutHealthData(style: MessageStyle) -> [String] {
        findings.filter(\.isError).map { finding in
            var relative = finding
            if relative.location.file == file { relative.location.file = nil }
            if relative.location.credential == index { relative.location.credential = nil }
            return relative.descriptionWithoutHealthData(style: style)
        }
    }
}
