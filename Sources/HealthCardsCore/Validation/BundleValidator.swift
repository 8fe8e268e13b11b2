/// The one rule set for a card's FHIR Bundle (digest sections 3 and 9; SHC Vaccination & Testing IG
/// 1.0.0). `healthcards issue` runs it before signing and `healthcards verify` on every card it reads,
/// both through `CheckedBundle`, so the issuer never signs what the verifier rejects. Each problem
/// carries a stable `RuleCode` and a FHIR path.
///
/// Every Bundle gets the generic SHC rules (minimization, `resource:N`, FHIR string characters, `meta`
/// holding only the identity-assurance label, characters a name may hold); vaccination and lab Bundles
/// (`BundleProfile`) also get their IG profile's rules and the date rules.
public enum BundleValidator {
    /// Why the rules run: a few findings are errors when issuing (the data is wrong and can be fixed
    /// before signing) and warnings when verifying someone else's card (verifiers do not reject it).
    public enum Purpose: Sendable {
        case issuing, verifying
    }

    /// What the rules found. Errors reject the record; warnings are reported and the card is still issued.
    public struct Findings: Sendable {
        /// The profile that judged the Bundle.
        public var profile: BundleProfile = .generic
        /// Why the rules run: a few findings are errors when issuing and warnings when verifying.
        public var purpose: Purpose = .issuing
        /// Every finding, in the order found, with its code, severity and FHIR path (`location.path`).
        public var all: [Finding] = []
        /// Each `PATIENT_NAME_INVISIBLE` by its FHIR path: the character it names and its place in `all`, so the
        /// string rule (`STRING_INVISIBLE_CHARACTER`) does not say the same character at the same place again.
        var nameInvisible: [String: (scalar: Unicode.Scalar, index: Int)] = [:]

        mutating func error(_ code: RuleCode, _ path: String, _ message: String) {
            all.append(Finding(code, message, at: .init(path: path), severity: .error))
        }
        mutating func warn(_ code: RuleCode, _ path: String, _ message: String) {
            all.append(Finding(code, message, at: .init(path: path), severity: .warning))
        }
        mutating func add(_ code: RuleCode, _ path: String, _ message: String, _ severity: Finding.Severity) {
            all.append(Finding(code, message, at: .init(path: path), severity: severity))
        }

        /// Errors as the issuing pipeline reports them: the finding's code, message and FHIR path kept.
        public var errors: [HealthCardError] { all.filter(\.isError).map(Self.asError) }
        /// Warnings in the same form as `errors`.
        public var warnings: [HealthCardError] { all.filter { !$0.isError }.map(Self.asError) }

        package static func asError(_ f: Finding) -> HealthCardError { HealthCardError(f) }
    }

    /// Validates a Bundle as it stands (the issuer gives it minimized; a verifier as found in a card).
    /// - Parameters:
    ///   - now: the time to judge dates in the future against, in seconds since 1970 (the issuing or
    ///     verifying time; `verify --now`); nil skips that check. See `DateRules`.
    ///   - purpose: issuing (the default) or verifying; decides the severity of `IMMUNIZATION_DUPLICATE` and
    ///     `MIN_CODING_DISPLAY` (errors when issuing; warnings in someone else's card).
    public static func validate(_ bundle: JSONValue, now: Int64?, purpose: Purpose = .issuing)
        -> Findings
    {
        // Any Int64 is accepted: beyond ±2^40 s (±34,000 years, far outside FHIR's years 0001 to 9999) the
        // answers are the same, and the date rules' sums (now + skew, instant − now) cannot overflow.
        let now = now.map { max(-(1 << 40), min(1 << 40, $0)) }
        var f = Findings()
        f.purpose = purpose
        let (profile, others) = BundleProfile.classify(bundle)
        f.profile = profile
        if bundle["resourceType"]?.stringValue != "Bundle" {
            f.error(
                .bundleResourceType, "Bundle.resourceType",
                "must be \"Bundle\", found \(quoted(bundle["resourceType"]))")
        }
        checkType(bundle["type"], profile: profile, findings: &f)
        if let meta = bundle["meta"] { MinimizationRules.checkMeta(meta, path: "Bundle.meta", findings: &f) }
        // Control characters outside the entry resources (those are checked by the resource walk).
        for (k, v) in bundle.objectValue ?? [:] where k != "entry" {
            MinimizationRules.checkCharacters(member: k, value: v, path: "Bundle", findings: &f)
        }
        let entries = bundle["entry"]?.arrayValue ?? []
        if entries.isEmpty {
            // A card with nothing in it is not a card of any profile (the generic one included): never valid.
            f.error(
                .bundleEntryMissing, "Bundle.entry",
                bundle["entry"] == nil
                    ? "the Bundle has no entry member; expected an array of entries (a Patient and what the card is about)"
                    : bundle["entry"]?.arrayValue == nil
                        ? "must be an array of entries, found \(quoted(bundle["entry"]))"
                        : "is empty; expected a Patient and what the card is about")
        }
        var patientIndices: [Int] = []
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)]"
            for (k, v) in entry.objectValue ?? [:] where k != "resource" {
                MinimizationRules.checkCharacters(member: k, value: v, path: path, findings: &f)
            }
            if entry["fullUrl"]?.stringValue != "resource:\(i)" {
                f.error(
                    .bundleFullURL, path + ".fullUrl",
                    "must be 'resource:\(i)' (entry index), found \(quoted(entry["fullUrl"]))")
            }
            guard let resource = entry["resource"], resource.objectValue != nil else {
                f.error(.bundleEntryNoResource, path + ".resource", "entry has no resource object")
                continue
            }
            switch resource["resourceType"]?.stringValue {
            case "Patient":
                patientIndices.append(i)
                NameRules.check(resource, path: path + ".resource", findings: &f)
            case nil:
                f.error(.resourceTypeMissing, path + ".resource.resourceType", "resource has no resourceType")
            default: break
            }
            MinimizationRules.checkMinimal(resource, path: path + ".resource", count: entries.count, findings: &f)
        }
        guard profile != .generic else {
            // Any content: a birth date, when given, is still a FHIR date (the IG profiles check it below).
            for i in patientIndices {
                guard let value = entries[i]["resource"]?["birthDate"] else { continue }
                _ = PatientRules.checkBirthDate(value, path: "Bundle.entry[\(i)].resource", findings: &f)
            }
            checkGenericContent(entries, others: others, findings: &f)
            return f
        }
        if patientIndices.count != 1 {
            f.error(
                .bundlePatientCount, "Bundle.entry", "a card holds exactly one Patient, found \(patientIndices.count)")
        }
        let patientRef = patientIndices.count == 1 ? "resource:\(patientIndices[0])" : nil
        var birthDate: (value: String, path: String)?
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
                ImmunizationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
                DataMinimizationRules.checkImmunization(resource, path: path, findings: &f)
            case "Observation":
                ObservationRules.check(resource, path: path, patientRef: patientRef, findings: &f)
                DataMinimizationRules.checkObservation(resource, path: path, findings: &f)
            default: break
            }
        }
        DateRules.check(entries, birthDate: birthDate, now: now, findings: &f)
        ImmunizationRules.checkDuplicates(entries, severity: purpose == .issuing ? .error : .warning, findings: &f)
        EntryOrder.checkOrder(entries, findings: &f)
        return f
    }

    /// `Bundle.type`: `collection` for the IG profiles (they fix it); any FHIR Bundle type otherwise.
    static func checkType(_ type: JSONValue?, profile: BundleProfile, findings f: inout Findings) {
        switch profile {
        case .vaccination, .lab:
            if type?.stringValue != "collection" {
                f.error(
                    .bundleType, "Bundle.type",
                    "must be \"collection\" for a \(profile.rawValue) card (the SHC IG's \(profile.rawValue) Bundle profiles fix it), found \(quoted(type))"
                )
            }
        case .generic:
            if !(type?.stringValue.map(BundleProfile.bundleTypes.contains) ?? false) {
                f.error(
                    .bundleType, "Bundle.type",
                    "must be a FHIR Bundle type (\(BundleProfile.bundleTypes.sorted().joined(separator: ", "))); "
                        + "\"collection\" unless something more specific applies, found \(quoted(type))")
            }
        }
    }

    /// What the generic profile says about the content: a Bundle holding Immunizations or Observations
    /// that neither IG profile takes is judged by the generic rules alone (a warning says why); a Bundle
    /// holding nothing but Patients shows an empty card.
    static func checkGenericContent(_ entries: [JSONValue], others: [String], findings f: inout Findings) {
        if !others.isEmpty {
            f.warn(
                .bundleMixedContent, "Bundle.entry",
                "the Bundle holds Immunization or Observation entries with \(others.joined(separator: ", ")), "
                    + "so neither the IG's vaccination Bundle (a Patient and Immunizations) nor its lab Bundle (a Patient and lab Observations) "
                    + "applies: it was judged by the generic SMART Health Card rules only, and verifier apps that show vaccination or lab cards may not show it. "
                    + "Make one card per kind of content")
        }
        let types = entries.compactMap { $0["resource"]?["resourceType"]?.stringValue }
        if types.allSatisfy({ $0 == "Patient" }) {
            f.warn(
                .bundleNoClinicalEntry, "Bundle.entry",
                "the Bundle has no entry besides a Patient; verifier apps will show an empty card")
        }
    }

    /// True for `resource:N` with N a canonical decimal index below `count`.
    static func resolves(_ reference: String, count: Int) -> Bool {
        guard reference.hasPrefix("resource:") else { return false }
        let digits = reference.dropFirst("resource:".count)
        guard digits.utf8.count <= 18, let n = Int(digits), String(n) == digits else { return false }
        return n >= 0 && n < count
    }
}

/// A JSON value for a message: strings in single quotes, anything else as minified JSON, with control
/// characters escaped (`\u{1B}`) so a message never carries them, cut as `Quote.text` cuts.
package func quoted(_ value: JSONValue?) -> String {
    guard let value else { return "nothing" }
    if let s = value.stringValue { return Quote.text(s) }
    let json = JSONWriter.minifiedString(value)
    guard json.utf8.count > Quote.maxCharacters else { return ControlCharacters.escaped(json) }
    // Quoted only when cut, so the ellipsis and size are not read as part of the JSON.
    return Quote.text(json)
}
