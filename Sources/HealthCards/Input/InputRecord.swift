/// One record of a batch as read: a Bundle for one patient (or every reason there is none), and where
/// it came from. Nothing is minimized or checked yet: `checked()` does that, as template rendering does
/// for CSV rows, and both give the issuer the same `CheckedRecord`.
public struct InputRecord: Sendable {
    /// `file:line` for CSV (the patient's first row), `file:index` (1-based) for JSON and NDJSON.
    public var source: String
    /// The patient id (CSV) or `<file stem>-<index>` (Bundle input); nil when it could not be read.
    public var id: String?
    /// The Bundle as read; nil when the record was rejected while reading.
    public var bundle: JSONValue?
    public var errors: [HealthCardError]
    public var warnings: [HealthCardError]

    public init(source: String, id: String?, bundle: JSONValue?, errors: [HealthCardError] = [], warnings: [HealthCardError] = []) {
        self.source = source
        self.id = id
        self.bundle = bundle
        self.errors = errors
        self.warnings = warnings
    }

    /// The record made ready for the issuer: its Bundle minimized and checked (`CheckedBundle.minimizing`),
    /// the Bundle's errors (`RULE_CODE: sentence` at the FHIR path) added to the record's.
    /// - Parameter now: seconds since 1970 to judge future dates against.
    public func checked(now: Int64 = Clock.nowSeconds()) -> CheckedRecord {
        var record = CheckedRecord(source: source, id: id, checked: nil, errors: errors, warnings: warnings)
        guard errors.isEmpty, let bundle else { return record }
        do {
            let checked = try CheckedBundle.minimizing(bundle, now: now)
            record.checked = checked
            record.errors = checked.errors.map(BundleValidator.Findings.asError)
        } catch {
            record.errors = error.errors
        }
        return record
    }
}

/// One record made ready for the issuer, whatever the input (a template's CSV rows, a `.json` or
/// `.ndjson` Bundle): where it came from, the patient id, the checked Bundle, and every reason it cannot
/// be issued. The issuer signs from `checked` only (`CardIssuer.payload(for:patientID:)`), which carries
/// the profile and findings that the report shows.
public struct CheckedRecord: Sendable {
    /// `file:line` (CSV) or `file:index` (JSON, NDJSON).
    public var source: String
    /// The patient id; nil when it could not be read.
    public var id: String?
    /// The minimized, checked Bundle; nil when the record was rejected before one could be made.
    public var checked: CheckedBundle?
    /// Why the record cannot be issued: reading and rendering errors, and the Bundle's errors (for CSV
    /// rows located at the row and column that caused them).
    public var errors: [HealthCardError]
    /// Reading and rendering warnings (the Bundle's own warnings come with the issued card).
    public var warnings: [HealthCardError]

    public init(source: String, id: String?, checked: CheckedBundle?, errors: [HealthCardError], warnings: [HealthCardError]) {
        self.source = source
        self.id = id
        self.checked = checked
        self.errors = errors
        self.warnings = warnings
    }
}

/// Reads `.json` (one Bundle) and `.ndjson` (one Bundle per line) inputs.
public enum BundleInput {
    /// The records of a `.json` or `.ndjson` file, in file order. A line or file that is not JSON,
    /// or not a Bundle, becomes a rejected record naming the line; the others are still read.
    /// - Throws: `HealthCardError(.io)` when the file cannot be read at all, `.input` for an
    ///   `.ndjson` file without a single non-blank line, or a file in UTF-16 or UTF-32.
    public static func records(path: String) throws -> [InputRecord] {
        let bytes = try FileIO.read(path)
        if let encoding = TextEncoding.nonUTF8Unicode(bytes[...]) {
            throw HealthCardError(.input, TextEncoding.message(path: path, encoding: encoding))
        }
        let stem = FileIO.stem(path)
        if path.hasSuffix(".ndjson") {
            var records: [InputRecord] = []
            var lineNumber = 0
            for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
                lineNumber += 1
                var text = Array(line)
                if text.last == 0x0D { text.removeLast() }
                if lineNumber == 1 && text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }
                if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                records.append(record(text, source: "\(path):\(lineNumber)", id: "\(stem)-\(records.count + 1)"))
            }
            if records.isEmpty {
                throw HealthCardError(.input, "\(path) has no Bundle lines (it is empty or blank); expected one FHIR Bundle per line. Check that the export finished and that this is the right file")
            }
            return records
        }
        var text = bytes
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }
        return [record(text, source: "\(path):1", id: "\(stem)-1")]
    }

    static func record(_ bytes: [UInt8], source: String, id: String) -> InputRecord {
        do {
            let json = try JSONParser.parse(bytes)
            guard json["resourceType"]?.stringValue == "Bundle" else {
                return InputRecord(source: source, id: id, bundle: nil, errors: [HealthCardError(.input, "expected a FHIR Bundle (\"resourceType\": \"Bundle\"), found \(json["resourceType"]?.stringValue.map { "resourceType '\($0)'" } ?? "no resourceType")")])
            }
            return InputRecord(source: source, id: id, bundle: json)
        } catch {
            return InputRecord(source: source, id: id, bundle: nil, errors: [HealthCardError(.input, "not valid JSON: \(error)")])
        }
    }
}
