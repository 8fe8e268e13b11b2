import HealthCardsCore
import HealthCardsVerify

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
    /// The name of the record's output files (`OutputNames`), given by the batch that reads it; nil: `OutputNames.safe(id)`.
    public var fileName: String?

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
    public func checked(now: Int64) -> CheckedRecord {
        var record = CheckedRecord(source: source, id: id, checked: nil, errors: errors, warnings: warnings)
        guard errors.isEmpty, let bundle else { return record }
        do {
            let checked = try CheckedBundle.minimizing(bundle, now: now)
            record.checked = checked
            record.errors = checked.errors.map(BundleValidator.Findings.asError)
        } catch {
            record.errors = error.all
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
    /// For CSV rows: where each entry and value came from (`located(_:)`); nil for Bundle input.
    var provenance: Template.Provenance?

    /// A warning of the issued card at the CSV row and column that caused it (its FHIR path kept in the
    /// message), as the record's errors are; unchanged for Bundle input or a warning with no Bundle path.
    package func located(_ warning: HealthCardError) -> HealthCardError {
        guard let provenance, let checked, warning.location.path?.hasPrefix("Bundle.") == true else { return warning }
        return provenance.located(warning, origins: checked.origins)
    }

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
    /// True for an `.ndjson` path, in any case (`.NDJSON` is NDJSON).
    static func isNDJSON(_ path: String) -> Bool { path.lowercased().hasSuffix(".ndjson") }

    /// The records of a `.json` or `.ndjson` file, in file order, all held at once (for small inputs and
    /// tests; a batch reads them one at a time with `Reader`). A line or file that is not JSON, or not a
    /// Bundle, becomes a rejected record naming the line; the others are still read.
    /// - Throws: as `Reader.init(path:)`.
    public static func records(path: String) throws -> [InputRecord] {
        let reader = try Reader(path: path)
        var records: [InputRecord] = []
        while let record = try reader.next() { records.append(record) }
        return records
    }

    /// A `.json` or `.ndjson` input read one record at a time: an `.ndjson` file of any length costs one
    /// line of memory (at most `InputBudget.bundleBytes`). Its non-blank lines are counted first, so the
    /// number of records is known before the first is read.
    public final class Reader {
        public let path: String
        /// Records in the file (non-blank lines of an `.ndjson`, 1 for a `.json`).
        public let count: Int
        /// The budgets the file is read within (a Bundle's size, records in a file).
        public let limits: InputLimits
        private let stem: String
        private var lines: LineReader?
        private var single: [UInt8]?
        private var index = 0
        /// Bytes of the file the last record returned took (its line, or the whole `.json`).
        public private(set) var lastRecordBytes = 0

        /// Opens `path` and counts its records.
        /// - Parameter limits: the budgets the file is read within (`InputLimits.standard` by default).
        /// - Throws: `HealthCardError(.io)` when the file cannot be read at all; `.input` for a file in
        ///   UTF-16 or UTF-32, a `.json` over `limits.bundleBytes`, an empty or blank file (`.inputEmpty`: a
        ///   `.json` with nothing but white space, an `.ndjson` without a single non-blank line), or one of more
        ///   than `limits.bundleRecordsPerFile` lines.
        public init(path: String, limits: InputLimits = .standard) throws {
            self.path = path
            self.limits = limits
            stem = FileIO.stem(path)
            if let encoding = TextEncoding.nonUTF8Unicode(try FileIO.readPrefix(path, count: 512)[...]) {
                throw HealthCardError(.input, code: .inputEncoding, TextEncoding.message(path: path, encoding: encoding))
            }
            guard BundleInput.isNDJSON(path) else {
                var text = try FileIO.read(path, maxBytes: limits.bundleBytes)
                if text.starts(with: UTF8BOM.bytes) { text.removeFirst(3) }
                if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
                    throw HealthCardError(.input, code: .inputEmpty, "\(path) is empty; expected one FHIR Bundle (a JSON object with \"resourceType\": \"Bundle\"). Check that the export finished and that this is the right file")
                }
                single = text
                count = 1
                return
            }
            let counter = try LineReader(path: path, maxLineBytes: limits.bundleBytes)
            var records = 0
            while let line = try counter.next() {
                if let bytes = line.bytes, Self.isBlank(bytes, first: line.number == 1) { continue }
                records += 1
                if records > limits.bundleRecordsPerFile {
                    throw HealthCardError(.input, code: .inputTooLarge, "\(path) has more than \(limits.bundleRecordsPerFile) Bundle lines, the most one input "
                        + "may hold (docs/verify.md, \"Budgets\"); split it into several files")
                }
            }
            if records == 0 {
                throw HealthCardError(.input, code: .inputEmpty, "\(path) has no Bundle lines (it is empty or blank); expected one FHIR Bundle per line. Check that the export finished and that this is the right file")
            }
            count = records
            lines = try LineReader(path: path, maxLineBytes: limits.bundleBytes)
        }

        private static func isBlank(_ bytes: [UInt8], first: Bool) -> Bool {
            let text = first ? UTF8BOM.strip(bytes) : bytes[...]
            return text.allSatisfy { $0 == 0x20 || $0 == 0x09 }
        }

        /// The next record, or nil after the last.
        /// - Throws: `HealthCardError(.io)` when the file cannot be read any more.
        public func next() throws -> InputRecord? {
            if let text = single {
                single = nil
                index = 1
                lastRecordBytes = text.count
                return BundleInput.record(text, source: "\(path):1", id: "\(stem)-1")
            }
            guard let lines else { return nil }
            while let line = try lines.next() {
                let source = "\(path):\(line.number)"
                lastRecordBytes = line.bytes?.count ?? 0
                guard var text = line.bytes else {
                    index += 1
                    return InputRecord(source: source, id: "\(stem)-\(index)", bundle: nil, errors: [HealthCardError(
                        .input, code: .inputTooLarge, "the line is longer than \(InputBudget.describe(bytes: limits.bundleBytes)), the most one Bundle may take "
                            + "(docs/verify.md, \"Budgets\"); check the export")])
                }
                if Self.isBlank(text, first: line.number == 1) { continue }
                if line.number == 1 && text.starts(with: UTF8BOM.bytes) { text.removeFirst(3) }
                index += 1
                return BundleInput.record(text, source: source, id: "\(stem)-\(index)")
            }
            return nil
        }
    }

    static func record(_ bytes: [UInt8], source: String, id: String) -> InputRecord {
        do {
            let json = try JSONParser.parseFailing(bytes)
            guard json["resourceType"]?.stringValue == "Bundle" else {
                return InputRecord(source: source, id: id, bundle: nil, errors: [HealthCardError(.input, code: .inputNotBundle, "expected a FHIR Bundle (\"resourceType\": \"Bundle\"), found \(json["resourceType"]?.stringValue.map { "resourceType '\($0)'" } ?? "no resourceType")")])
            }
            return InputRecord(source: source, id: id, bundle: json)
        } catch {
            return InputRecord(source: source, id: id, bundle: nil, errors: [HealthCardError(.input, code: .inputNotBundle, "not valid JSON: \(error)")])
        }
    }
}
