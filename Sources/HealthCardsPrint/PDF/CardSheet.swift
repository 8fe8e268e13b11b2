import HealthCardsCore
import HealthCardsQR

/// What a printed card says, read from a card's payload: the person, the doses or lab results in date
/// order, and the issuer. Independent of paper and drawing (`CardPrinter` draws it).
public struct CardSheet: Sendable, Equatable {
    /// What the card holds, for its title.
    public enum Kind: Sendable, Equatable {
        case covid19Vaccination, vaccination, labResult, other
    }

    /// One Immunization.
    public struct Dose: Sendable, Equatable {
        /// `occurrenceDateTime` as given (any FHIR precision).
        public var date: String
        /// The vaccine's name from the CVX table; nil when the code is not CVX or not in the table.
        public var vaccine: String?
        /// The code with its system, e.g. `CVX 207`, `SNOMED CT 28571000087109`.
        public var code: String
        public var lot: String?
        /// `performer[0].actor.display`: who gave the dose.
        public var performer: String?
    }

    /// One lab Observation.
    public struct LabResult: Sendable, Equatable {
        /// `effectiveDateTime` (or `effectivePeriod.start`) as given.
        public var date: String
        /// The test's LOINC short name from the IG's COVID-19 list; nil when not in it.
        public var test: String?
        /// The test's code with its system, e.g. `LOINC 94558-4`.
        public var code: String
        /// The result: a SNOMED CT display (`Not detected`), a quantity with its unit, or a string.
        public var value: String
        public var performer: String?
    }

    /// The person's name as they recognize it (`HumanName.display`); nil when the card has none.
    public var name: String?
    /// The person's name in another script than `name` (Latin letters beside Arabic, Chinese, Cyrillic, …),
    /// when the card gives it (`otherScriptName`); printed with `name`.
    public var otherName: String?
    /// `Patient.birthDate` as given (any FHIR precision).
    public var birthDate: String?
    public var kind: Kind
    /// Immunizations, oldest first (then in the card's order).
    public var doses: [Dose]
    /// Lab results, oldest first (then in the card's order).
    public var labResults: [LabResult]
    /// `iss`.
    public var issuer: String
    /// `nbf` in seconds since 1970, when it is a number.
    public var issuedAt: Int64?

    /// Reads a card's payload (`{"iss", "nbf", "vc": {"credentialSubject": {"fhirBundle"}}}`). Anything
    /// missing is left empty rather than refused: `CardPrinter` prints what is there.
    /// - Parameter today: `YYYY-MM-DD`, for the `period` of names.
    public init(payload: JSONValue, today: String) {
        self.init(
            issuer: payload["iss"]?.stringValue ?? "", notBefore: payload["nbf"],
            fhirBundle: payload["vc"]?["credentialSubject"]?["fhirBundle"], today: today)
    }

    /// Reads the parts of a payload: `iss`, `nbf` (a JSON number) and `fhirBundle`.
    public init(issuer: String, notBefore: JSONValue?, fhirBundle: JSONValue?, today: String) {
        self.issuer = issuer
        issuedAt = notBefore?.doubleValue.flatMap { $0 >= 0 && $0 < 1e11 ? Int64($0) : nil }
        let resources = (fhirBundle?["entry"]?.arrayValue ?? []).compactMap { $0["resource"] }
        let patient = resources.first { $0["resourceType"]?.stringValue == "Patient" }
        name = HumanName.display(patient: patient, today: today)
        otherName = Self.otherScriptName(patient?["name"], shown: name, today: today)
        birthDate = patient?["birthDate"]?.stringValue
        var doses: [(Int, Dose)] = []
        var labs: [(Int, LabResult)] = []
        var covid = true
        for (index, resource) in resources.enumerated() {
            switch resource["resourceType"]?.stringValue {
            case "Immunization":
                let (vaccine, code, isCOVID) = Self.vaccine(resource["vaccineCode"])
                covid = covid && isCOVID
                doses.append(
                    (
                        index,
                        Dose(
                            date: resource["occurrenceDateTime"]?.stringValue ?? resource["occurrenceString"]?
                                .stringValue ?? "",
                            vaccine: vaccine, code: code, lot: resource["lotNumber"]?.stringValue,
                            performer: resource["performer"]?[0]?["actor"]?["display"]?.stringValue)
                    ))
            case "Observation":
                let (test, code) = Self.test(resource["code"])
                labs.append(
                    (
                        index,
                        LabResult(
                            date: resource["effectiveDateTime"]?.stringValue ?? resource["effectivePeriod"]?["start"]?
                                .stringValue ?? "",
                            test: test, code: code, value: Self.value(of: resource),
                            performer: resource["performer"]?[0]?["display"]?.stringValue)
                    ))
            default: break
            }
        }
        self.doses = doses.sorted { ($0.1.date, $0.0) < ($1.1.date, $1.0) }.map(\.1)
        self.labResults = labs.sorted { ($0.1.date, $0.0) < ($1.1.date, $1.0) }.map(\.1)
        if !doses.isEmpty {
            kind = covid ? .covid19Vaccination : .vaccination
        } else {
            kind = labs.isEmpty ? .other : .labResult
        }
    }

    /// The vaccine name, the code as shown, and whether it is a COVID-19 vaccine, from the first coding
    /// of a known system (CVX first).
    static func vaccine(_ concept: JSONValue?) -> (String?, String, Bool) {
        let codings = concept?["coding"]?.arrayValue ?? []
        let ordered =
            codings.filter { $0["system"]?.stringValue == Terminology.cvx }
            + codings.filter { $0["system"]?.stringValue != Terminology.cvx }
        guard let coding = ordered.first, let code = coding["code"]?.stringValue else { return (nil, "", false) }
        switch coding["system"]?.stringValue {
        case Terminology.cvx: return (CVX.lookup(code)?.shortDescription, "CVX \(code)", CVX.isCOVID19Vaccine(code))
        case Terminology.snomedCT: return (nil, "SNOMED CT \(code)", false)
        case Terminology.icd11: return (nil, "ICD-11 \(code)", false)
        default: return (nil, code, false)
        }
    }

    static func test(_ concept: JSONValue?) -> (String?, String) {
        guard let coding = concept?["coding"]?[0], let code = coding["code"]?.stringValue else { return (nil, "") }
        if coding["system"]?.stringValue == Terminology.loinc {
            return (COVID19LabTestLOINC.lookup(code)?.display, "LOINC \(code)")
        }
        return (nil, code)
    }

    /// A lab result's value in words.
    static func value(of observation: JSONValue) -> String {
        if let coding = observation["valueCodeableConcept"]?["coding"]?[0], let code = coding["code"]?.stringValue {
            if coding["system"]?.stringValue == Terminology.snomedCT, let entry = LabResultSNOMED.lookup(code) {
                return withoutSemanticTag(entry.display)
            }
            return code
        }
        if let quantity = observation["valueQuantity"] {
            let unit = quantity["unit"]?.stringValue ?? quantity["code"]?.stringValue ?? ""
            return [quantity["comparator"]?.stringValue, quantity["value"]?.numberLexeme, unit].compactMap { $0 }
                .filter { !$0.isEmpty }.joined(separator: " ")
        }
        return observation["valueString"]?.stringValue ?? ""
    }

    /// `Not detected (qualifier value)` → `Not detected`: SNOMED CT's semantic tag is for terminologists.
    static func withoutSemanticTag(_ display: String) -> String {
        guard display.hasSuffix(")"), let open = display.lastIndex(of: "(") else { return display }
        return String(display[..<open]).trimmingCharacters(in: " ")
    }

    /// The card's title, e.g. `COVID-19 vaccination record`.
    public var title: String {
        switch kind {
        case .covid19Vaccination: return "COVID-19 vaccination record"
        case .vaccination: return "Vaccination record"
        case .labResult: return labResults.count == 1 ? "Laboratory test result" : "Laboratory test results"
        case .other: return "Health record"
        }
    }

    /// A FHIR date or dateTime for print: `YYYY-MM-DD` (or the partial date as given), with `hh:mm`
    /// when a time is given.
    static func printable(date: String) -> String {
        guard date.utf8.count > 10, let t = date.firstIndex(of: "T") else { return date }
        return String(date[..<t]) + " " + String(date[date.index(after: t)...].prefix(5))
    }
}
