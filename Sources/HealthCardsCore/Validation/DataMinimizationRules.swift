/// Elements the SHC Vaccination & Testing IG forbids (the "allowable data" AD profiles: SHALL, errors) or
/// leaves out (the "data minimization" DM profiles: SHOULD, warnings) on Patient, Immunization and lab
/// Observation (digest section 9; IG `profiles_admin.fsh`, `profiles_vaccination.fsh`, `profiles_lab.fsh`).
/// `id`, `meta` and `text` are minimization rules (`MIN_*`); `Patient.photo` and
/// `Immunization.protocolApplied` have their own codes in `PatientRules` and `ImmunizationRules`.
enum DataMinimizationRules {
    /// Patient elements that are 0..0 in the DM Patient profiles (`shc-patient-general-dm`), besides
    /// `identifier` and `gender`, which have their own codes. Choice elements by their prefix.
    static let patientDM = [
        "implicitRules", "language", "contained", "extension", "modifierExtension", "active", "telecom", "deceased",
        "address", "maritalStatus", "multipleBirth", "communication", "generalPractitioner", "managingOrganization",
        "link",
    ]

    /// Immunization elements that are 0..0 in `vaccination-credential-immunization-dm`.
    static let immunizationDM = [
        "identifier", "implicitRules", "language", "contained", "extension", "modifierExtension", "statusReason",
        "encounter", "recorded", "primarySource", "reportOrigin", "location", "manufacturer", "expirationDate", "site",
        "route", "doseQuantity", "note", "reasonCode", "reasonReference", "subpotentReason", "education",
        "fundingSource", "reaction", "programEligibility",
    ]

    /// Lab Observation elements that are 0..0 in the DM lab result profiles. `category` was dropped from
    /// both lab profiles in IG PR #107; `referenceRange` (advised for quantities) and `component`
    /// (specimen supervision status) are left alone because the IG uses them.
    static let observationDM = [
        "category", "implicitRules", "language", "contained", "extension", "modifierExtension", "basedOn", "partOf",
        "focus", "issued", "dataAbsentReason", "interpretation", "note", "bodySite", "method", "specimen", "device",
        "hasMember", "derivedFrom",
    ]

    /// The elements FHIR R4 defines on each resource type a card's rules read (hl7.org/fhir/R4: Patient,
    /// Immunization, Observation), choice elements with their type suffixes. FHIR JSON has no other members but
    /// a primitive's `_element` twin; a member outside these is not FHIR, and nothing downstream would drop it.
    static let r4Elements: [String: Set<String>] = {
        let common = ["resourceType", "id", "meta", "implicitRules", "language", "text", "contained", "extension", "modifierExtension"]
        let patient = [
            "identifier", "active", "name", "telecom", "gender", "birthDate", "deceasedBoolean", "deceasedDateTime", "address",
            "maritalStatus", "multipleBirthBoolean", "multipleBirthInteger", "photo", "contact", "communication",
            "generalPractitioner", "managingOrganization", "link",
        ]
        let immunization = [
            "identifier", "status", "statusReason", "vaccineCode", "patient", "encounter", "occurrenceDateTime", "occurrenceString",
            "recorded", "primarySource", "reportOrigin", "location", "manufacturer", "lotNumber", "expirationDate", "site",
            "route", "doseQuantity", "performer", "note", "reasonCode", "reasonReference", "isSubpotent", "subpotentReason",
            "education", "programEligibility", "fundingSource", "reaction", "protocolApplied",
        ]
        let observation = [
            "identifier", "basedOn", "partOf", "status", "category", "code", "subject", "focus", "encounter",
            "effectiveDateTime", "effectivePeriod", "effectiveTiming", "effectiveInstant", "issued", "performer",
            "valueQuantity", "valueCodeableConcept", "valueString", "valueBoolean", "valueInteger", "valueRange", "valueRatio",
            "valueSampledData", "valueTime", "valueDateTime", "valuePeriod", "dataAbsentReason", "interpretation", "note",
            "bodySite", "method", "specimen", "device", "referenceRange", "hasMember", "derivedFrom", "component",
        ]
        return [
            "Patient": Set(common + patient), "Immunization": Set(common + immunization),
            "Observation": Set(common + observation),
        ]
    }()

    /// `FHIR_UNKNOWN_ELEMENT` for each top-level member of `resource` that FHIR R4 does not define on `type`
    /// (a primitive's `_name` twin counts as `name`): an error, since the card would carry it to every verifier.
    static func checkKnownElements(_ resource: JSONValue, type: String, path: String, findings f: inout BundleValidator.Findings) {
        guard let known = r4Elements[type], let members = resource.objectValue?.keys else { return }
        var named: Set<String>?  // the paths earlier rules named, made once (a hostile resource has many members)
        var unknown = 0
        for member in members {
            let element = member.hasPrefix("_") ? String(member.dropFirst()) : member
            if known.contains(element) && element != "resourceType" { continue }
            if element == "resourceType" && !member.hasPrefix("_") { continue }
            let at = "\(path).\(ControlCharacters.escaped(member))"
            // A member a rule of its own already named (`occurrencePeriod`: IMMUNIZATION_OCCURRENCE) keeps that finding.
            if named == nil { named = Set(f.all.compactMap(\.location.path)) }
            if named?.contains(at) == true { continue }
            unknown += 1
            if unknown > 20 { continue }  // counted, said once below: a hostile resource may have 100,000 members
            f.error(
                .fhirUnknownElement, at,
                "\(Quote.text(member)) is not an element of a FHIR R4 \(type) (hl7.org/fhir/R4/\(type.lowercased()).html); a card "
                    + "holds FHIR R4 resources, and whatever else a member holds would reach every verifier. Remove it (or map "
                    + "it to the FHIR element it stands for)")
        }
        if unknown > 20 {
            f.error(
                .fhirUnknownElement, path,
                "… and \(unknown - 20) more members that are not elements of a FHIR R4 \(type) (\(unknown) in all); remove them")
        }
    }

    static func checkPatient(_ patient: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        checkKnownElements(patient, type: "Patient", path: path, findings: &f)
        if patient["contact"] != nil {
            f.error(
                .patientContact, path + ".contact",
                "Patient.contact (next of kin, guardians) is 0..0 in the SHC IG Patient profiles; remove it")
        }
        for (i, address) in (patient["address"]?.arrayValue ?? []).enumerated() {
            for part in ["line", "text"] where address[part] != nil {
                f.error(
                    .patientAddressDetail, "\(path).address[\(i)].\(part)",
                    "Patient.address.\(part) (the street address) is 0..0 in the SHC IG Patient profiles, for the holder's privacy; remove it"
                )
            }
        }
        if patient["identifier"] != nil {
            f.warn(
                .patientIdentifier, path + ".identifier",
                "Patient.identifier is 0..0 in the SHC IG's US Patient profiles (shc-patient-us-ad, shc-patient-us-dm): it exposes "
                    + "identifiers to every verifier. Leave it out unless a non-US profile needs it")
        }
        if patient["gender"] != nil {
            f.warn(
                .patientGender, path + ".gender",
                "Patient.gender SHALL be omitted unless the law requires it (SHC IG Patient profiles; 0..0 in the US profiles): "
                    + "a card cannot be reissued when it no longer matches the holder's ID")
        }
        for (member, element) in present(patientDMSet, in: patient) {
            f.warn(
                .patientDataMinimization, "\(path).\(member)",
                "Patient.\(element) is 0..0 in the SHC IG's data minimization Patient profile (shc-patient-general-dm); verifiers do not need it. Leave it out"
            )
        }
        let names = patient["name"]?.arrayValue ?? []
        if names.count == 1, names[0]["use"] != nil {
            f.warn(
                .patientDataMinimization, path + ".name[0].use",
                "Patient.name.use is 0..0 in the data minimization Patient profile (shc-patient-general-dm) and SHALL NOT be set for a single name"
            )
        }
    }

    static func checkImmunization(_ resource: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        checkKnownElements(resource, type: "Immunization", path: path, findings: &f)
        for (member, element) in present(immunizationDMSet, in: resource) {
            f.warn(
                .immunizationDataMinimization, "\(path).\(member)",
                "Immunization.\(element) is 0..0 in the SHC IG's data minimization Immunization profile (vaccination-credential-immunization-dm); "
                    + "verifiers do not need it. Leave it out")
        }
        for (i, performer) in (resource["performer"]?.arrayValue ?? []).enumerated() {
            var extra: [String] = performer["function"] != nil ? ["function"] : []
            extra += ["reference", "type", "identifier"].filter { performer["actor"]?[$0] != nil }.map { "actor." + $0 }
            for element in extra {
                f.warn(
                    .immunizationDataMinimization, "\(path).performer[\(i)].\(element)",
                    "Immunization.performer.\(element) is 0..0 in the data minimization Immunization profile; only performer.actor.display is kept"
                )
            }
        }
    }

    static func checkObservation(_ resource: JSONValue, path: String, findings f: inout BundleValidator.Findings) {
        checkKnownElements(resource, type: "Observation", path: path, findings: &f)
        for (member, element) in present(observationDMSet, in: resource) {
            f.warn(
                .observationDataMinimization, "\(path).\(member)",
                "Observation.\(element) is 0..0 in the SHC IG's data minimization lab result profiles "
                    + "(covid19-laboratory-result-observation-dm, infectious-disease-laboratory-result-observation-dm); verifiers do not need it. Leave it out"
            )
        }
    }

    /// The same lists as sets, for one hash lookup per member of a resource.
    static let patientDMSet = Set(patientDM), immunizationDMSet = Set(immunizationDM), observationDMSet = Set(observationDM)

    /// The members of `resource` that are among `elements`, in the resource's order: an element ending
    /// in a choice prefix (`deceased`) matches `deceasedBoolean` and reports as `deceased[x]`.
    private static func present(_ elements: Set<String>, in resource: JSONValue) -> [(member: String, element: String)] {
        guard let object = resource.objectValue else { return [] }
        var found: [(member: String, element: String)] = []
        for member in object.keys {
            if elements.contains(member) {
                if !choices.contains(member) { found.append((member, member)) }
            } else if let choice = choices.first(where: { member.hasPrefix($0) && elements.contains($0) }) {
                found.append((member, choice + "[x]"))
            }
        }
        return found
    }

    /// The choice elements (`deceased[x]`, `multipleBirth[x]`) the profiles name by their prefix.
    private static let choices = ["deceased", "multipleBirth"]
}
