import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// A synthetic person and their vaccinations or lab results as an issuer's system would export them, the
/// input of the fixture catalogue's cards. Everything random (names, birth date, lots, dates, ids) comes
/// from the catalogue's seed; dates are counted back from the catalogue's `now`.
struct FixtureRecord: Sendable {
    struct Dose: Sendable {
        var cvx: String
        var display: String
        /// `YYYY-MM-DD`, or nil to leave `occurrenceDateTime` out (a fault).
        var date: String?
        var lot: String
        var performer: String
        var status = "completed"
    }

    struct LabResult: Sendable {
        var loinc: String
        var loincDisplay: String
        var snomed: String
        var snomedDisplay: String
        /// `YYYY-MM-DDThh:mm:ss+00:00`, as the IG recommends for lab results.
        var effective: String
        var performer: String
        var status = "final"
    }

    var patientID: String
    var given: String
    var family: String
    var birthDate: String
    var doses: [Dose] = []
    var labs: [LabResult] = []
    /// `meta.lastUpdated` of the exported resources.
    var exported: String

    /// The Bundle as an EHR exports it: `Bundle.id` and `meta`, absolute `fullUrl`s, and in every resource
    /// `id`, `meta`, a narrative, `Coding.display`, `CodeableConcept.text` and `Type/id` references:
    /// everything the minimizer removes or rewrites (digest section 3), so the minimization stage has
    /// real work to do and each of its steps can be left out on its own.
    var sourceBundle: JSONValue {
        let base = "https://ehr.example.org/fhir/"
        let meta: JSONValue = .object(["versionId": "1", "lastUpdated": .string(exported)])
        func narrative(_ text: String) -> JSONValue {
            .object([
                "status": "generated", "div": .string("<div xmlns=\"http://www.w3.org/1999/xhtml\">\(text)</div>"),
            ])
        }
        func coding(_ system: String, _ code: String, _ display: String) -> JSONValue {
            .object([
                "coding": [.object(["system": .string(system), "code": .string(code), "display": .string(display)])],
                "text": .string(display),
            ])
        }
        var entries: [JSONValue] = []
        var patient: JSONObject = ["resourceType": "Patient", "id": .string(patientID), "meta": meta]
        patient["text"] = narrative("\(given) \(family), born \(birthDate)")
        patient["name"] = [.object(["family": .string(family), "given": [.string(given)]])]
        patient["birthDate"] = .string(birthDate)
        entries.append(.object(["fullUrl": .string(base + "Patient/" + patientID), "resource": .object(patient)]))
        let patientReference: JSONValue = .object(["reference": .string("Patient/" + patientID)])
        for (i, dose) in doses.enumerated() {
            let id = "\(patientID)-imm-\(i + 1)"
            var immunization: JSONObject = ["resourceType": "Immunization", "id": .string(id), "meta": meta]
            immunization["text"] = narrative("CVX \(dose.cvx) \(dose.display), \(dose.date ?? "date unknown")")
            immunization["status"] = .string(dose.status)
            immunization["vaccineCode"] = coding(Terminology.cvx, dose.cvx, dose.display)
            immunization["patient"] = patientReference
            if let date = dose.date { immunization["occurrenceDateTime"] = .string(date) }
            immunization["performer"] = [.object(["actor": .object(["display": .string(dose.performer)])])]
            immunization["lotNumber"] = .string(dose.lot)
            entries.append(
                .object(["fullUrl": .string(base + "Immunization/" + id), "resource": .object(immunization)]))
        }
        for (i, lab) in labs.enumerated() {
            let id = "\(patientID)-lab-\(i + 1)"
            var observation: JSONObject = ["resourceType": "Observation", "id": .string(id), "meta": meta]
            observation["text"] = narrative("LOINC \(lab.loinc): SNOMED CT \(lab.snomed), \(lab.effective)")
            observation["status"] = .string(lab.status)
            observation["code"] = coding("http://loinc.org", lab.loinc, lab.loincDisplay)
            observation["subject"] = patientReference
            observation["effectiveDateTime"] = .string(lab.effective)
            observation["performer"] = [.object(["display": .string(lab.performer)])]
            observation["valueCodeableConcept"] = coding("http://snomed.info/sct", lab.snomed, lab.snomedDisplay)
            entries.append(.object(["fullUrl": .string(base + "Observation/" + id), "resource": .object(observation)]))
        }
        return .object([
            "resourceType": "Bundle", "id": .string("\(patientID)-export"),
            "meta": .object(["lastUpdated": .string(exported)]),
            "type": "collection", "entry": .array(entries),
        ])
    }
}

/// Makes the catalogue's synthetic records from its seed and `now`.
struct FixturePeople {
    let seed: UInt64
    let now: Int64

    static let givenNames = [
        "Ada", "Bram", "Cleo", "Dev", "Edda", "Finn", "Gala", "Hugo", "Ines", "Jory", "Kaia", "Levi",
        "Mina", "Nils", "Oona", "Pere",
    ]
    static let familyNames = [
        "Testperson", "Samplewood", "Fixturon", "Mockridge", "Dummett", "Placeholt", "Examplar",
        "Specimenson",
    ]
    static let places = ["ABC General Hospital", "Northside Clinic", "City Pharmacy 12", "Harbor Health Center"]

    /// COVID-19 mRNA vaccine, the code the spec examples use.
    static let covid19 = (cvx: "207", display: "COVID-19, mRNA, LNP-S, PF, 100 mcg/0.5mL dose or 50 mcg/0.25mL dose")
    /// Measles, mumps and rubella: a vaccination that is not COVID-19.
    static let mmr = (cvx: "03", display: "MMR")

    /// `YYYY-MM-DDThh:mm:ssZ` of a time in seconds (FHIR instant, UTC).
    static func instant(_ seconds: Int64) -> String {
        let text = Clock.describe(seconds)  // YYYY-MM-DD hh:mm:ss UTC
        return String(text.prefix(10)) + "T" + String(text.dropFirst(11).prefix(8)) + "Z"
    }

    /// `YYYY-MM-DD` of `days` days before `now` (UTC).
    func date(daysAgo days: Int) -> String { Clock.todayUTC(now - Int64(days) * 86_400) }

    /// The record of person `name` (a label: each name has its own random stream).
    func person(_ name: String) -> FixtureRecord {
        var random = SeededRandom(seed: seed, label: "person/\(name)")
        let birthYear = Int(Clock.todayUTC(now).prefix(4)).map { $0 - random.int(in: 18...80) } ?? 1970
        let month = random.int(in: 1...12)
        let day = random.int(in: 1...28)
        let birth = "\(birthYear)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)"
        return FixtureRecord(
            patientID: "P" + random.string(6, from: "0123456789"), given: random.pick(Self.givenNames),
            family: random.pick(Self.familyNames), birthDate: birth, exported: Self.instant(now - 86_400))
    }

    /// `count` doses of `vaccine` for person `name`, 28 days apart, the last at least 60 days before
    /// `now`; lots of `lotLength` characters (letters and digits).
    func doses(_ name: String, count: Int, vaccine: (cvx: String, display: String), lotLength: Int = 6)
        -> [FixtureRecord.Dose]
    {
        var random = SeededRandom(seed: seed, label: "doses/\(name)")
        let last = 60 + random.below(30)
        let place = random.pick(Self.places)
        return (0..<count).map { i in
            let lot =
                random.string(2, from: "ABCDEFGHJKLMNPRSTUVWXYZ")
                + random.string(max(0, lotLength - 2), from: "0123456789")
            return FixtureRecord.Dose(
                cvx: vaccine.cvx, display: vaccine.display, date: date(daysAgo: last + 28 * (count - 1 - i)),
                lot: lot, performer: place)
        }
    }

    /// A qualitative SARS-CoV-2 antigen test (LOINC 94558-4) read "Not detected" (SNOMED CT 260415000).
    func lab(_ name: String) -> FixtureRecord.LabResult {
        var random = SeededRandom(seed: seed, label: "lab/\(name)")
        let day = date(daysAgo: 60 + random.below(30))
        let hour = random.int(in: 8...17)
        let minute = random.below(60)
        let time = "\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute):00+00:00"
        return FixtureRecord.LabResult(
            loinc: "94558-4",
            loincDisplay: "SARS-CoV-2 (COVID-19) Ag [Presence] in Respiratory specimen by Rapid immunoassay",
            snomed: "260415000", snomedDisplay: "Not detected", effective: day + "T" + time,
            performer: random.pick(Self.places))
    }
}
