import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures

#if canImport(Glibc)
    import Glibc
#endif

// Structure-aware fuzzing: the fuzzer's bytes are read as choices that build a well-formed, signed card
// (or a Bundle for `issue`, or a template's CSV rows, or one batch record) and then bend it: claims,
// dates, time zones, codes, references, member types and QR chunk headers take hostile values, so every
// rule of `verify` and `issue` runs on them. Mutating compressed bytes, as the older targets do, almost
// never inflates to a payload at all.
//
// This file is compiled into the libFuzzer targets (`Fuzz/run.sh` adds it to `card`, `issue`, `row` and
// `batch`) and into the test suite, where `FuzzRegressionTests` replays every stored input through the
// same properties. It uses neither Foundation nor swift-testing, so both builds take it as it is.

/// Reads choices from the fuzzer's bytes. When the bytes run out, every choice is 0: the unmutated shape.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isExhausted: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// 0 ..< n (n ≥ 1).
    mutating func int(_ n: Int) -> Int { n <= 1 ? 0 : Int(byte()) % n }

    /// True `inSixteen` times in 16; false when the bytes have run out.
    mutating func chance(_ inSixteen: Int) -> Bool { Int(byte() & 15) >= 16 - inSixteen }

    mutating func pick<T>(_ list: [T]) -> T { list[int(list.count)] }

    /// Up to `max` raw bytes (often invalid UTF-8, decoded with replacement characters).
    mutating func text(max: Int) -> String {
        let count = int(max + 1)
        return String(decoding: (0..<count).map { _ in byte() }, as: UTF8.self)
    }

    /// Up to `max` characters from `alphabet`.
    mutating func text(max: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<int(max + 1)).map { _ in characters[int(characters.count)] })
    }
}

/// The shapes the structure-aware targets build, and the properties they check.
enum FuzzShapes {
    /// The time every card is judged at (2023-11-14), and the `nbf` of the well-formed shapes.
    static let now: Int64 = 1_700_000_000
    static let nbf: Int64 = 1_690_000_000
    static let issuer = "https://issuer.example.org"

    // MARK: hostile values

    /// JSON number lexemes for `nbf`, `exp`, `doseQuantity.value`, `valueQuantity.value`, `crlVersion`.
    static let numbers = [
        "-1e300", "1e300", "1e400", "-1e400", "-0", "0", "0.5", "1690000000", "1690000000.5", "1690000000e0",
        "99999999999", "100000000000", "99999999999999", "100000000000000", "1e11", "1e14", "-1", "-1690000000",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "1.7976931348623157e308", "4.9e-324", "1E+2", "0.000000000000000000001", "1800000000", "1600000000",
    ]

    /// Pieces of FHIR dates and times, right and wrong.
    static let years = [
        "2021", "1960", "0000", "0001", "9999", "2100", "1969", "2023", "-202", "+202", "20a1", "٢٠٢١", "202",
    ]
    static let twoDigits = [
        "01", "12", "13", "00", "02", "29", "30", "31", "32", "-1", "+1", "1", "999", "0a", "٣٣", " 1", "60", "59",
        "23", "24",
    ]
    static let zones = [
        "Z", "+00:00", "-05:00", "+14:00", "-14:00", "+14:01", "-14:59", "+13:59", "+-1:00", "-+1:00", "+1:00", "+01:0",
        "+01:-1", "+99:99", "+ 1:00", "+٠١:٠٠", "+01:00Z", "z", "", "+0100", "-00:00", "+24:00", "+01:60",
    ]

    /// A FHIR date or dateTime, built from pieces that are mostly right.
    static func dateTime(_ f: inout FuzzBytes) -> String {
        switch f.int(8) {
        case 0: return f.text(max: 30)
        case 1: return f.text(max: 30, from: "0123456789-:T+Z.")
        default:
            var text = f.pick(years)
            if f.chance(14) { text += "-" + f.pick(twoDigits) }
            if f.chance(13) { text += "-" + f.pick(twoDigits) }
            if f.chance(8) {
                text +=
                    f.pick(["T", "T", "t", " "]) + f.pick(twoDigits) + ":" + f.pick(twoDigits) + ":" + f.pick(twoDigits)
                if f.chance(4) { text += "." + f.text(max: 12, from: "0123456789") }
                text += f.pick(zones)
            }
            return text
        }
    }

    static let systems = [
        Terminology.cvx, Terminology.loinc, Terminology.snomedCT, Terminology.icd11, "http://hl7.org/fhir/sid/cvx/", "",
        "urn:oid:2.16.840.1.113883.12.292", "http://example.org",
    ]
    static let codes = [
        "207", "208", "210", "212", "998", "999", "000", "2077", " 207", "207 ", "", "94558-4", "94500-6", "94500-5",
        "LA11883-8", "LA6576-8", "260415000", "260373001", "260373002", "0", "12345678901234567890", "XM68M6", "-1",
    ]
    static let references = [
        "resource:0", "resource:1", "resource:2", "resource:-1", "resource:01", "resource:99999999999999999999",
        "resource:", "Patient/1", "urn:uuid:1", "#p", "", "resource:0 ", "RESOURCE:0",
    ]

    /// A random JSON value of any kind, shallow.
    static func anyValue(_ f: inout FuzzBytes) -> JSONValue {
        switch f.int(8) {
        case 0: return .null
        case 1: return .bool(f.chance(8))
        case 2: return .number(JSONNumber(f.pick(numbers)) ?? "0")
        case 3: return .string(f.text(max: 24))
        case 4: return .string(dateTime(&f))
        case 5: return .array((0..<f.int(3)).map { _ in .string(f.text(max: 6)) })
        case 6: return .object([:])
        default: return .object([f.text(max: 8): .string(f.text(max: 8))])
        }
    }

    // MARK: well-formed shapes

    static func patient(_ f: inout FuzzBytes) -> JSONObject {
        var name: JSONObject = ["family": "Testperson", "given": ["Ada"]]
        if f.chance(2) { name["text"] = .string(f.text(max: 20)) }
        var patient: JSONObject = ["resourceType": "Patient", "name": [.object(name)], "birthDate": "1960-01-01"]
        if f.chance(5) { patient["birthDate"] = .string(dateTime(&f)) }
        if f.chance(1) { patient["birthDate"] = nil }
        return patient
    }

    static func coding(_ f: inout FuzzBytes, system: String, code: String) -> JSONValue {
        var coding: JSONObject = ["system": .string(system), "code": .string(code)]
        if f.chance(3) { coding["system"] = .string(f.pick(systems)) }
        if f.chance(3) { coding["code"] = .string(f.chance(12) ? f.pick(codes) : f.text(max: 12)) }
        if f.chance(1) { coding["display"] = "shown" }
        return .object(["coding": [.object(coding)]])
    }

    static func immunization(_ f: inout FuzzBytes) -> JSONObject {
        var r: JSONObject = [
            "resourceType": "Immunization", "status": "completed",
            "vaccineCode": coding(&f, system: Terminology.cvx, code: "207"),
            "patient": .object(["reference": "resource:0"]), "occurrenceDateTime": "2021-01-15",
            "performer": [.object(["actor": .object(["display": "ABC General Hospital"])])], "lotNumber": "0000001",
        ]
        if f.chance(6) { r["occurrenceDateTime"] = .string(dateTime(&f)) }
        if f.chance(1) { r["occurrenceString"] = .string(f.text(max: 10)) }
        if f.chance(2) { r["status"] = .string(f.pick(["not-done", "entered-in-error", "", "Completed"])) }
        if f.chance(2) { r["patient"] = .object(["reference": .string(f.pick(references))]) }
        if f.chance(1) { r["isSubpotent"] = f.chance(8) ? .bool(false) : .bool(true) }
        if f.chance(1) {
            r["doseQuantity"] = .object(["value": .number(JSONNumber(f.pick(numbers)) ?? "0"), "unit": "mL"])
        }
        return r
    }

    static func observation(_ f: inout FuzzBytes) -> JSONObject {
        var r: JSONObject = [
            "resourceType": "Observation", "status": "final",
            "code": coding(&f, system: Terminology.loinc, code: "94558-4"),
            "subject": .object(["reference": "resource:0"]), "effectiveDateTime": "2021-02-17T09:30:00-05:00",
            "valueCodeableConcept": coding(&f, system: Terminology.snomedCT, code: "260415000"),
        ]
        if f.chance(6) { r["effectiveDateTime"] = .string(dateTime(&f)) }
        if f.chance(2) { r["subject"] = .object(["reference": .string(f.pick(references))]) }
        if f.chance(2) {
            r["valueCodeableConcept"] = nil
            r["valueQuantity"] = .object(["value": .number(JSONNumber(f.pick(numbers)) ?? "0"), "unit": "mg"])
        }
        if f.chance(1) { r["status"] = .string(f.text(max: 8)) }
        return r
    }

    /// A minimized Bundle: a Patient and 1 to 4 Immunizations or lab Observations, each bent by the bytes.
    static func bundle(_ f: inout FuzzBytes) -> JSONValue {
        var resources: [JSONObject] = [patient(&f)]
        for _ in 0...f.int(4) { resources.append(f.chance(4) ? observation(&f) : immunization(&f)) }
        if f.chance(1) { resources.swapAt(0, resources.count - 1) }
        var entries: [JSONValue] = resources.enumerated().map { i, r in
            .object(["fullUrl": .string("resource:\(i)"), "resource": .object(r)])
        }
        if f.chance(1) { entries[f.int(entries.count)] = .object(["fullUrl": .string(f.pick(references))]) }
        var bundle: JSONValue = .object(["resourceType": "Bundle", "type": "collection", "entry": .array(entries)])
        for _ in 0..<f.int(4) { mutate(&bundle, &f, depth: 0) }
        return bundle
    }

    /// Replaces, removes or adds one member somewhere under `value`.
    static func mutate(_ value: inout JSONValue, _ f: inout FuzzBytes, depth: Int) {
        switch value {
        case .object(var object) where !object.isEmpty && depth < 8:
            let key = object.keys[f.int(object.count)]
            switch f.int(6) {
            case 0: object[key] = nil
            case 1: object[key] = anyValue(&f)
            case 2:
                object[f.pick(["id", "meta", "text", "display", "extension", "photo", "contact", "resourceType"])] =
                    anyValue(&f)
            default:
                if var child = object[key] {
                    mutate(&child, &f, depth: depth + 1)
                    object[key] = child
                }
            }
            value = .object(object)
        case .array(var items) where !items.isEmpty && depth < 8:
            let i = f.int(items.count)
            switch f.int(4) {
            case 0: items.remove(at: i)
            case 1: items.append(anyValue(&f))
            default: mutate(&items[i], &f, depth: depth + 1)
            }
            value = .array(items)
        default:
            value = anyValue(&f)
        }
    }

    /// The claims of a card around `bundle`, bent by the bytes.
    static func claims(_ f: inout FuzzBytes, bundle: JSONValue) -> JSONObject {
        var vc: JSONObject = [
            "type": ["https://smarthealth.cards#health-card"],
            "credentialSubject": .object(["fhirVersion": "4.0.1", "fhirBundle": bundle]),
        ]
        if f.chance(2) { vc["rid"] = .string(f.text(max: 30, from: "abcXYZ019-_+/=.")) }
        if f.chance(1) { vc["type"] = .array([.string(f.text(max: 40))]) }
        if f.chance(1) {
            vc["credentialSubject"] = .object(["fhirVersion": .string(f.text(max: 8)), "fhirBundle": bundle])
        }
        var claims: JSONObject = ["iss": .string(issuer), "nbf": .integer(nbf), "vc": .object(vc)]
        if f.chance(5) { claims["nbf"] = .number(JSONNumber(f.pick(numbers)) ?? "0") }
        if f.chance(3) { claims["exp"] = .number(JSONNumber(f.pick(numbers)) ?? "0") }
        if f.chance(1) { claims["nbf"] = anyValue(&f) }
        if f.chance(2) {
            claims["iss"] = .string(
                f.pick([issuer + "/", "http://issuer.example.org", "https://", "https://a b", "https://x?y"]))
        }
        var value = JSONValue.object(claims)
        if f.chance(1) { mutate(&value, &f, depth: 0) }
        return value.objectValue ?? claims
    }

    // MARK: keys and files

    /// The signing key of every shape, made once.
    static let key: P256Key? = try? P256Key.generate()

    /// A scratch folder of this process, with the key set of `key` at `site/.well-known/jwks.json`: in
    /// /dev/shm (memory) where there is one, since a batch run flushes its file system at the end.
    static let scratch: String? = {
        guard let key else { return nil }
        let dir = "\(FileIO.isDirectory("/dev/shm") ? "/dev/shm" : "/tmp")/healthcards-fuzz-\(getpid())"
        guard
            (try? FileIO.writeAtomically(JWKS(keys: [JWK(key: key)]).fileBytes, to: "\(dir)/site/.well-known/jwks.json"))
                != nil
        else { return nil }
        atexit { FuzzShapes.removeScratch() }
        return dir
    }()

    /// Removes the scratch folder (at exit).
    static func removeScratch() {
        func remove(_ path: String) {
            if FileIO.isDirectory(path) {
                for name in FileIO.list(path) { remove("\(path)/\(name)") }
                rmdir(path)
            } else {
                unlink(path)
            }
        }
        if let scratch { remove(scratch) }
    }

    /// A verifier with the shapes' key set, judging at `now`.
    static func verifier() -> FileVerifier? {
        guard let scratch else { return nil }
        return try? FileVerifier(keySets: ["\(scratch)/site"], now: now)
    }

    /// Empties a folder under the scratch folder and returns its path.
    static func freshFolder(_ name: String) -> String? {
        guard let scratch else { return nil }
        let dir = "\(scratch)/\(name)"
        for file in FileIO.list(dir) where !FileIO.isDirectory("\(dir)/\(file)") { unlink("\(dir)/\(file)") }
        try? FileIO.createDirectories(dir)
        return dir
    }

    /// A compact JWS of `payload` signed with `key`.
    static func sign(_ payload: [UInt8]) -> String? {
        guard let key, var signer = try? ES256Signer(key: key), let deflated = try? RawDeflater().deflate(payload)
        else { return nil }
        return try? JWS.sign(deflatedPayload: deflated, kid: JWK(key: key).kid, signer: &signer).compact
    }

    /// The QR texts of a JWS, chunked or not, with headers that may be bent.
    static func qrTexts(_ jws: String, _ f: inout FuzzBytes) -> [[UInt8]] {
        guard let digits = try? QRNumeric.digits(jws) else { return [] }
        var total = f.chance(4) ? 2 + f.int(3) : 1
        if f.chance(1) { total = f.pick([0, 1, 10, 99, 100_000, 999_999_999, Int(Int32.max)]) }
        let pieces = max(1, min(total, 4))
        let size = (digits.count / 2 + pieces - 1) / pieces * 2
        var texts: [[UInt8]] = []
        for i in 0..<pieces {
            let part = Array(digits.dropFirst(i * size).prefix(size))
            var header = total == 1 ? "shc:/" : "shc:/\(i + 1)/\(total)/"
            if f.chance(2) {
                header =
                    "shc:/"
                    + f.pick(["0/2/", "3/2/", "-1/2/", "+1/2/", "1//", "/1/2/", "1/2", "01/02/", "1/2/3/", "a/b/"])
            }
            var body = part
            if f.chance(1), !body.isEmpty { body[f.int(body.count)] = f.pick(Array("0123456789x".utf8)) }
            if f.chance(1) { body.removeLast(min(body.count, 1)) }
            texts.append(Array(header.utf8) + body)
        }
        if f.chance(2) { texts.reverse() }
        return texts
    }

    // MARK: properties

    /// `card`: a signed card built from the bytes, verified as a `.smart-health-card` file, as a bare JWS
    /// and as QR text files. Returns the properties that failed (empty: all held).
    static func checkCard(_ bytes: [UInt8]) -> [String] {
        var f = FuzzBytes(bytes)
        let bundle = bundle(&f)
        let claims = claims(&f, bundle: bundle)
        var payload = JSONWriter.minified(.object(claims))
        if f.chance(1) { payload = JSONWriter.pretty(.object(claims)) }
        guard let jws = sign(payload), let dir = freshFolder("card"), let verifier = verifier() else {
            return ["could not set up"]
        }
        var problems: [String] = []
        let qr = qrTexts(jws, &f)
        do {
            try FileIO.writeAtomically(
                JSONWriter.minified(.object(["verifiableCredential": [.string(jws)]])),
                to: "\(dir)/c.smart-health-card", sync: false)
            try FileIO.writeAtomically(Array(jws.utf8), to: "\(dir)/c.jws", sync: false)
            for (i, text) in qr.enumerated() { try FileIO.writeAtomically(text, to: "\(dir)/q\(i).txt", sync: false) }
            let reports = try verifier.verify([dir])
            problems += checkReports(reports)
            if bytes.isEmpty,
                let error = reports.flatMap(\.findings).first(where: { $0.isError && $0.code != .qrChunked })
            {
                problems.append("the unbent card has an error: \(error)")
            }
        } catch {
            problems.append("verify threw \(error)")
        }
        return problems
    }

    /// What every report must satisfy: its readable lines and JSON form are made without trapping, and the
    /// JSON form parses again.
    static func checkReports(_ reports: [CredentialReport]) -> [String] {
        var problems: [String] = []
        for report in reports {
            _ = report.summaryLines(now: 1_700_000_000)
            let json = JSONWriter.minified(report.json)
            if (try? JSONParser.parse(json)) == nil { problems.append("a report's JSON does not parse again") }
        }
        return problems
    }

    /// Settings for the issuing targets, bent by the bytes (QR images only now and then: they are slow).
    static func settings(_ f: inout FuzzBytes) -> (IssueSettings, QRSettings) {
        var qr = QRSettings(makeQR: f.chance(2))
        var settings = IssueSettings(issuer: issuer, notBefore: nbf)
        if f.chance(2) { settings.expires = f.pick([now + 1_000_000, nbf - 1, nbf, 100_000_000_000]) }
        if f.chance(2) { qr.chunk = true }
        return (settings, qr)
    }

    /// What `issue` makes must pass `verify`: a card the issuer signed is checked as a verifier would, with
    /// the same time; any error finding breaks the property "issue never signs what verify rejects".
    static func checkIssued(_ card: IssuedCard, name: String) -> [String] {
        guard let dir = freshFolder(name), let verifier = verifier() else { return ["could not set up"] }
        do {
            try FileIO.writeAtomically(card.fileBytes, to: "\(dir)/issued.smart-health-card", sync: false)
            let reports = try verifier.verify(["\(dir)/issued.smart-health-card"])
            var problems = checkReports(reports)
            for finding in reports.flatMap(\.findings) where finding.isError {
                problems.append("issue signed a card that verify rejects: \(finding)")
            }
            return problems
        } catch {
            return ["verify threw \(error)"]
        }
    }

    /// `issue`: a Bundle built from the bytes (not minimized, now and then), issued; the card, if any,
    /// must verify.
    static func checkIssue(_ bytes: [UInt8]) -> [String] {
        var f = FuzzBytes(bytes)
        var bundle = bundle(&f)
        if f.chance(3), var object = bundle.objectValue {
            // Shapes minimization must undo: ids, narratives, absolute references.
            object["id"] = "b1"
            if var entries = object["entry"]?.arrayValue {
                for i in entries.indices {
                    guard var entry = entries[i].objectValue, var resource = entry["resource"]?.objectValue else {
                        continue
                    }
                    resource["id"] = .string("r\(i)")
                    resource["text"] = .object(["status": "generated", "div": "<div/>"])
                    entry["fullUrl"] = .string(
                        "https://ehr.example.org/fhir/\(resource["resourceType"]?.stringValue ?? "X")/r\(i)")
                    entry["resource"] = .object(resource)
                    entries[i] = .object(entry)
                }
                object["entry"] = .array(entries)
            }
            bundle = .object(object)
        }
        let (settings, qr) = settings(&f)
        // Settings the issuer refuses (an exp not after nbf, …) are a refusal, as the CLI reports them.
        guard let key, let issuer = try? CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock()) else {
            return []
        }
        guard let card = try? issuer.issue(bundle: bundle, patientID: "fuzz"),
            (try? CardImages(jws: card.jws, settings: qr)) != nil
        else { return [] }
        return checkIssued(card, name: "issue")
    }

    /// The shipped COVID-19 template's columns, with the sample row's values.
    static let sampleRow: [String: String] = [
        "vax_event_id": "EV-0001", "recip_id": "P-1001", "recip_first_name": "Ada", "recip_middle_name": "M.",
        "recip_last_name": "Testperson", "recip_dob": "1960-04-12", "admin_name": "ABC General Hospital",
        "admin_date": "2021-01-15", "cvx": "207", "lot_number": "011J20A",
    ]

    /// One to three CSV rows of one patient for the COVID-19 template, bent by the bytes.
    static func rows(_ f: inout FuzzBytes) -> [[String: String]] {
        (0...f.int(3)).map { n in
            var row = sampleRow
            row["vax_event_id"] = "EV-000\(n)"
            for column in sampleRow.keys.sorted() where f.chance(3) {
                switch column {
                case "recip_dob", "admin_date": row[column] = dateTime(&f)
                case "cvx": row[column] = f.chance(10) ? f.pick(codes) : f.text(max: 6)
                case "recip_id": row[column] = f.pick(["P-1001", "", " P-1001", "P/1001", "..", f.text(max: 12)])
                default: row[column] = f.chance(4) ? "" : f.text(max: 40)
                }
            }
            return row
        }
    }

    /// `row`: template rows rendered by the shipped COVID-19 template, then issued; the card, if any, must verify.
    static func checkRow(_ bytes: [UInt8], template: Template) -> [String] {
        var f = FuzzBytes(bytes)
        let rows = rows(&f).enumerated().map { TemplateRow(values: $1, source: "fuzz:\($0 + 2)") }
        let rendered = template.render(rows: rows, now: Clock.nowSeconds())
        guard rendered.errors.isEmpty, let checked = rendered.checked else { return [] }
        let (settings, qr) = settings(&f)
        guard let key, let issuer = try? CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock()) else {
            return []
        }
        guard let card = try? issuer.issue(issuer.payload(for: checked, patientID: rows.first?["recip_id"])),
            (try? CardImages(jws: card.jws, settings: qr)) != nil
        else {
            return []
        }
        return checkIssued(card, name: "row")
    }

    /// A CSV field, quoted when it must be.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacing("\"", with: "\"\"") + "\""
    }

    /// `batch`: one record — a patient's CSV rows with the template, or one NDJSON Bundle line — issued by a
    /// batch run with one worker, sometimes twice (the second run resumes). (Bent rows may name a second
    /// patient, and a bent line may break in two: the records are counted by the input readers.)
    /// Properties: the run ends without throwing, reports every record as issued or rejected on one
    /// report line each, and an issued card verifies.
    static func checkBatch(_ bytes: [UInt8], templatePath: String) -> [String] {
        var f = FuzzBytes(bytes)
        guard let key, let dir = freshFolder("batch"), let out = freshFolder("batch/out"),
            let cards = freshFolder("batch/out/cards"),
            freshFolder("batch/out/qr") != nil, let verifier = verifier(),
            let template = try? Template(bytes: FileIO.read(templatePath), source: templatePath)
        else { return ["could not set up"] }
        _ = cards
        let input: BatchInput
        do {
            if f.chance(8) {
                let rows = rows(&f)
                let columns = template.columns.map(\.name)
                var text = columns.joined(separator: ",") + "\n"
                for row in rows { text += columns.map { csvField(row[$0] ?? "") }.joined(separator: ",") + "\n" }
                try FileIO.writeAtomically(Array(text.utf8), to: "\(dir)/in.csv", sync: false)
                input = .csv(path: "\(dir)/in.csv", template: template)
            } else {
                var line = JSONWriter.minified(bundle(&f))
                if f.chance(1) { line = Array(f.text(max: 40).utf8) }
                try FileIO.writeAtomically(line + [0x0A], to: "\(dir)/in.ndjson", sync: false)
                input = .bundles(path: "\(dir)/in.ndjson")
            }
        } catch {
            return ["could not write the input: \(error)"]
        }
        let (settings, qr) = settings(&f)
        // Settings the issuer refuses stop a run before its first record, by design (exit 2 from the CLI).
        guard (try? settings.validate(now: Clock.nowSeconds())) != nil else { return [] }
        var problems: [String] = []
        // The records the input holds, counted by the readers themselves: bent rows may name two patients,
        // a bent line may hold a line break. A file that cannot be read at all is one rejected record.
        let records: Int
        switch input {
        case .csv(let path, let template): records = (try? CSVTemplateInput(path: path, template: template).count) ?? 1
        case .bundles(let path): records = (try? BundleInput.Reader(path: path).count) ?? 1
        }
        for run in 0..<(f.chance(4) ? 2 : 1) {
            let batch = BatchIssuer(outDir: out, jobs: 1) {
                try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock())
            }
            batch.qr = qr
            do {
                let summary = try batch.run([input])
                if summary.total != records || summary.issued + summary.rejected != records {
                    problems.append(
                        "run \(run + 1): \(records) record(s) gave issued \(summary.issued), rejected \(summary.rejected) of \(summary.total)"
                    )
                }
                let report = try FileIO.read("\(out)/report.ndjson")
                if report.split(separator: 0x0A).count != records {
                    problems.append("run \(run + 1): the report does not have one line per record (\(records))")
                }
                if summary.issued > 0 {
                    let reports = try verifier.verify(["\(out)/cards"])
                    for finding in reports.flatMap(\.findings) where finding.isError {
                        problems.append("the batch issued a card that verify rejects: \(finding)")
                    }
                }
            } catch {
                problems.append("run \(run + 1) stopped: \(error)")
            }
        }
        return problems
    }
}
