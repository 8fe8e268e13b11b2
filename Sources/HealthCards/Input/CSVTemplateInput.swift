/// Turns a CSV file into one record per patient with a `Template`: rows sharing the template's
/// `patientKey` form one Bundle, whatever their order in the file.
///
/// The first pass reads the whole file once (checking UTF-8, quoting and field counts) and keeps an
/// index of positions only: per data row its byte offset, line and the next row of the same patient
/// (16 bytes a row), and per record its first row (4 bytes). Patients are matched by a 64-bit hash
/// of their key, so no row text and no key is held; the second pass reads each patient's rows back
/// (sequentially when the file is grouped by patient, by byte offset otherwise) and checks the keys
/// really match. Memory is therefore about 16 bytes per row, whatever the rows hold.
public final class CSVTemplateInput {
    public let path: String
    public let template: Template
    /// Header columns in file order.
    public private(set) var header: [String] = []
    private var columnIndex: [String: Int] = [:]
    private var headerFields = 0
    private var keyIndex = 0
    /// Data rows in file order: byte offset, 1-based line, next row of the same patient (-1: none).
    private var rowOffsets: [Int] = []
    private var rowLines: [Int32] = []
    private var nextRow: [Int32] = []
    /// Records in order of first appearance: a patient's first row, or `-(row + 1)` for a row that
    /// matched no patient (its error is in `orphanErrors`).
    private var entries: [Int32] = []
    private var orphanErrors: [Int32: HealthCardError] = [:]

    /// Reads the header and indexes the rows.
    /// - Throws: `HealthCardError(.input)` for a file that cannot be used at all: unreadable, not
    ///   UTF-8, broken quoting, no header, or a required column missing from the header. Nothing is
    ///   issued from such a file.
    public init(path: String, template: Template) throws {
        self.path = path
        self.template = template
        let reader = try CSVReader(path: path)
        guard let head = try reader.next() else {
            throw HealthCardError(.input, "\(path) is empty; expected a header line with the columns \(template.columns.filter(\.required).map(\.name).joined(separator: ", "))")
        }
        header = head.fields.map { $0.trimmingCharacters(in: " \t") }
        headerFields = header.count
        for (i, name) in header.enumerated() where columnIndex[name] == nil { columnIndex[name] = i }
        let missing = template.columns.filter { $0.required && columnIndex[$0.name] == nil }.map(\.name)
        if !missing.isEmpty {
            throw HealthCardError(.input, "\(path): the header lacks required column(s) \(missing.joined(separator: ", ")) of template '\(template.name)'; found: \(header.joined(separator: ", "))")
        }
        keyIndex = columnIndex[template.patientKey]!
        try index(reader)
    }

    /// The first pass: positions and patient chains.
    private func index(_ reader: CSVReader) throws {
        var byKey: [UInt64: Int32] = [:]  // key hash → patient ordinal
        var lastRow: [Int32] = []  // patient ordinal → its last row so far
        while let record = try reader.next() {
            let row = Int32(rowOffsets.count)
            rowOffsets.append(record.offset)
            rowLines.append(Int32(truncatingIfNeeded: record.line))
            nextRow.append(-1)
            let source = "\(path):\(record.line)"
            guard record.fields.count > keyIndex else {
                orphanErrors[row] = HealthCardError(.input, "row has \(record.fields.count) fields, the header has \(headerFields); the patient id column '\(template.patientKey)' is missing, so the row cannot be matched to a patient", at: source)
                entries.append(-(row + 1))
                continue
            }
            let key = record.fields[keyIndex].trimmingCharacters(in: " \t")
            if key.isEmpty {
                orphanErrors[row] = HealthCardError(.input, "the patient id column '\(template.patientKey)' is empty, so the row cannot be matched to a patient", at: "\(source) column \(template.patientKey)")
                entries.append(-(row + 1))
                continue
            }
            let hash = Self.hash(key)
            if let patient = byKey[hash] {
                nextRow[Int(lastRow[Int(patient)])] = row
                lastRow[Int(patient)] = row
            } else {
                byKey[hash] = Int32(lastRow.count)
                lastRow.append(row)
                entries.append(row)
            }
        }
    }

    /// 64-bit hash of a patient key (SipHash with this process's seed). A collision merges two
    /// patients' chains; the second pass sees the differing keys and splits them again.
    static func hash(_ key: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(key)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// Number of records: patients plus rows that matched no patient (a hash collision, about one
    /// in 10^8 runs of a million patients, adds one more when read).
    public var count: Int { entries.count }

    /// Number of data rows.
    public var rowCount: Int { rowOffsets.count }

    /// One patient's rows as read back, before rendering.
    public struct PatientRows: Sendable {
        /// `file:line` of the patient's first row.
        public var source: String
        /// The patient key; nil for a row that matched no patient.
        public var id: String?
        public var rows: [TemplateRow]
        public var errors: [HealthCardError]

        /// Renders the rows into the record's Bundle (or its errors) with `template`.
        public func render(_ template: Template) -> InputRecord {
            guard errors.isEmpty, let id else { return InputRecord(source: source, id: id, bundle: nil, errors: errors) }
            let rendered = template.render(rows: rows)
            return InputRecord(source: source, id: id, bundle: rendered.bundle, errors: rendered.errors, warnings: rendered.warnings)
        }
    }

    /// Reads the records back in order of first appearance, one patient at a time.
    public final class Cursor {
        private let input: CSVTemplateInput
        private var entry = 0
        private var reader: CSVReader?
        private var readerRow = -1  // the row `reader.next()` returns next
        private var pending: [PatientRows] = []  // patients split off a hash collision

        init(_ input: CSVTemplateInput) { self.input = input }

        /// The CSV file read.
        public var path: String { input.path }

        /// The next record's rows, or nil after the last.
        /// - Throws: `HealthCardError(.input)` when the file changed since it was indexed or cannot
        ///   be read.
        public func next() throws -> PatientRows? {
            if !pending.isEmpty { return pending.removeFirst() }
            guard entry < input.entries.count else { return nil }
            let first = input.entries[entry]
            entry += 1
            if first < 0 {
                let row = Int(-(first + 1))
                return PatientRows(source: "\(input.path):\(input.rowLines[row])", id: nil, rows: [],
                                   errors: [input.orphanErrors[Int32(row)]!])
            }
            var groups: [PatientRows] = []
            var row = Int(first)
            while row >= 0 {
                let fields = try read(row)
                let line = Int(input.rowLines[row])
                let source = "\(input.path):\(line)"
                let key = fields.count > input.keyIndex ? fields[input.keyIndex].trimmingCharacters(in: " \t") : ""
                var g = groups.firstIndex { $0.id == key } ?? -1
                if g < 0 {
                    groups.append(PatientRows(source: source, id: key, rows: [], errors: []))
                    g = groups.count - 1
                }
                if fields.count != input.headerFields {
                    groups[g].errors.append(HealthCardError(.input, "row has \(fields.count) fields, the header has \(input.headerFields); check for an unquoted comma or a missing field", at: source))
                } else {
                    var values: [String: String] = [:]
                    for column in input.template.columns {
                        if let i = input.columnIndex[column.name] { values[column.name] = fields[i].trimmingCharacters(in: " \t\r\n") }
                    }
                    groups[g].rows.append(TemplateRow(values: values, source: source))
                }
                row = Int(input.nextRow[row])
            }
            pending = Array(groups.dropFirst())
            return groups[0]
        }

        /// The fields of data row `row`: the open reader goes on when the row is the next in the file
        /// (a file grouped by patient is read straight through); otherwise it reopens at the row's offset.
        private func read(_ row: Int) throws -> [String] {
            if reader == nil || readerRow != row {
                reader = try CSVReader(path: input.path, offset: input.rowOffsets[row], line: Int(input.rowLines[row]))
            }
            guard let record = try reader!.next(), record.offset == input.rowOffsets[row] else {
                throw HealthCardError(.input, "\(input.path) changed while it was read (row at line \(input.rowLines[row]) is gone); run again on a file nobody is writing")
            }
            readerRow = row + 1
            return record.fields
        }
    }

    /// A cursor over the records, from the first.
    public func cursor() -> Cursor { Cursor(self) }

    /// Every record, rendered, in order of first appearance (holds them all: for small inputs and tests).
    public func records() throws -> [InputRecord] {
        let cursor = self.cursor()
        var out: [InputRecord] = []
        while let patient = try cursor.next() { out.append(patient.render(template)) }
        return out
    }
}
