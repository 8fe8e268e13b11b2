import HealthCardsCore
import HealthCardsVerify

/// Turns a CSV file into one record per patient with a `Template`: rows sharing the template's
/// `patientKey` form one Bundle, whatever their order in the file.
///
/// The first pass reads the whole file once (checking UTF-8, quoting and field counts) and keeps an
/// index of positions only: per data row the low 32 bits of its byte offset, its line and the next
/// row of the same patient (12 bytes a row), per record its first row (4 bytes), and per patient its key hash (8 bytes, to
/// find patients that appear in several files: `patients(withHashes:)`). Patients are
/// matched by a 64-bit hash of their key, so no row text and no key is held; the second pass reads
/// each patient's rows back (sequentially when the file is grouped by patient, by byte offset
/// otherwise) and checks the keys really match. Memory is therefore about 12 bytes per row plus 16
/// per patient (and, while indexing, a hash table of about 12 bytes per patient), whatever the rows
/// hold.
public final class CSVTemplateInput {
    /// The longest patient id a row may have, in bytes (UTF-8; 256 ASCII characters): an id goes into the
    /// rid, the file names and every report line. A row with a longer one is rejected as a record of its
    /// own, its id left out of the report.
    public static let maxIDBytes = PatientIdentity.maxIDBytes
    /// The longest value any other field may have, in bytes (UTF-8): 4096. A health card holds a few kB
    /// (a QR code at most 1195 characters of compressed JWS), so a longer value is an export error. The
    /// row's patient is rejected, naming the column and the length.
    public static let maxFieldBytes = 4096

    public let path: String
    public let template: Template
    /// The budgets the file is read within (rows, rows per patient, record size, bytes in flight).
    public let limits: InputLimits
    /// Header columns in file order.
    public private(set) var header: [String] = []
    private var columnIndex: [String: Int] = [:]
    /// The template's columns that the header has, in the template's order, each with its position in a row.
    private var readColumns: [(column: Template.Column, index: Int)] = []
    private var headerFields = 0
    private(set) var keyIndex = 0
    /// Data rows in file order: byte offset, 1-based line, next row of the same patient (-1: none).
    /// Offsets are kept as their low 32 bits; rows only move forward in the file, so the high part is
    /// the number of `offsetWraps` (rows where it grew) at or before the row.
    private var rowOffsetLow: [UInt32] = []
    private var offsetWraps: [Int32] = []
    private(set) var rowLines: [Int32] = []
    private(set) var nextRow: [Int32] = []
    /// Records in order of first appearance: a patient's first row, or `-(row + 1)` for a row that
    /// matched no patient (its error is in `orphanErrors`).
    private(set) var entries: [Int32] = []
    private var orphanErrors: [Int32: HealthCardError] = [:]
    /// For a wrong-width row that names no known patient: the value in its patient id column, if any,
    /// reported as the record's id (the columns may be shifted, which its error says).
    private var orphanIDs: [Int32: String] = [:]
    /// Errors of rows with the wrong number of fields, by the key hash of each patient whose id appears
    /// among the row's values: such a row's columns are shifted, so its patient id column cannot be
    /// trusted, and every patient it may belong to is rejected rather than issued without that row.
    private var misfitErrors: [UInt64: [HealthCardError]] = [:]
    /// Per patient, in order of first appearance in the file: the 64-bit hash of its key (8 bytes a
    /// patient), to find patients that appear in several files.
    private(set) var patientHashes: [UInt64] = []
    /// The file's size when it was indexed.
    private var fileSize = 0

    /// Reads the header and indexes the rows.
    /// - Throws: `HealthCardError(.input)` for a file that cannot be used at all: unreadable, not
    ///   UTF-8, broken quoting, empty (no header: `.inputEmpty`), a required column missing from the header, a column the
    ///   template reads appearing twice in the header, or no data rows below the header. Nothing is
    ///   issued from such a file.
    /// - Parameter limits: the budgets the file is read within (`InputLimits.standard` by default).
    public convenience init(path: String, template: Template, limits: InputLimits = .standard) throws {
        var indexed: [UInt64] = []
        try self.init(path: path, template: template, limits: limits, patientsBeforeFailure: &indexed)
    }

    /// The same, and when the rows cannot be read to the end (broken quoting, a byte that is not UTF-8, too many
    /// rows), `patientsBeforeFailure` gets the key hashes (`hash(_:)`) of the patients indexed before that
    /// point, so a run can hold back those patients' rows in its other inputs (`CrossFilePatients`).
    package init(path: String, template: Template, limits: InputLimits, patientsBeforeFailure: inout [UInt64]) throws {
        self.path = path
        self.limits = limits
        self.template = template
        let reader = try CSVReader(path: path, delimiter: template.delimiter, limits: limits)
        guard let head = try reader.next() else {
            throw HealthCardError(.input, code: .inputEmpty, "\(path) is empty; expected a header line with the columns \(template.columns.filter(\.required).map(\.name).joined(separator: ", "))")
        }
        header = head.fields.map(FieldText.trimmed)
        headerFields = header.count
        for (i, name) in header.enumerated() {
            guard let earlier = columnIndex[name] else {
                columnIndex[name] = i
                continue
            }
            // A repeated column the template reads: which copy holds the right value cannot be known.
            // Repeats of columns it does not read (often several blank header cells) cannot change a card.
            if template.column(name) != nil {
                throw HealthCardError(.input, code: .csvHeader, "\(path): the header has column \(Quote.text(name)) twice, at positions \(earlier + 1) and \(i + 1); template '\(template.name)' reads it, and which copy is right cannot be known. Remove or rename one of them and run again")
            }
        }
        let missing = template.columns.filter { $0.required && columnIndex[$0.name] == nil }.map(\.name)
        if !missing.isEmpty {
            let hint = Self.headerHint(header: header, missing: missing, template: template)
            let names = Set(template.columns.map { $0.name.lowercased() })
            // A cell that names a column (in any case), or a header another delimiter splits into column names,
            // makes the line a header. A "did you mean" alone does not: a patient's value ("X") can be two edits
            // from a column name ("cvx").
            let splitsIntoNames = hint.contains("-separated")
            guard splitsIntoNames || header.contains(where: { names.contains($0.lowercased()) }) else {
                // No cell names a column: the first line is most likely a patient's row (an export without
                // a header line), so its values are not repeated (this message also goes to stderr).
                let required = missing.joined(separator: ", ")
                throw HealthCardError(
                    .input,
                    "\(path): the first line has none of the columns of template '\(template.name)' (required: "
                        + "\(required)); it has \(header.count) field(s), not shown here because a file without a "
                        + "header line starts with a patient's row. Export with the column names in the first line, "
                        + "or check that this is the right file and template")
            }
            let found = header.map(ControlCharacters.escaped).joined(separator: ", ")
            throw HealthCardError(.input, code: .csvHeader, "\(path): the header lacks required column(s) \(missing.joined(separator: ", ")) of template '\(template.name)'; found: \(found)" + hint)
        }
        // `Template` requires patientKey to be a required column, and required columns were found above.
        guard let keyIndex = columnIndex[template.patientKey] else {
            throw HealthCardError(.input, code: .csvHeader, "\(path): the header lacks the patient id column '\(template.patientKey)' of template '\(template.name)'")
        }
        self.keyIndex = keyIndex
        readColumns = template.columns.compactMap { column in columnIndex[column.name].map { (column, $0) } }
        do { try index(reader) } catch {
            patientsBeforeFailure = patientHashes
            throw error
        }
        fileSize = FileIO.size(path) ?? 0
        if rowOffsetLow.isEmpty {
            throw HealthCardError(.input, code: .csvHeader, "\(path) has a header but no data rows; expected one row per event (a dose, a test) below the header. Check that the export finished and that this is the right file")
        }
    }

    /// What a header that lacks required columns most likely means: a file separated by another delimiter
    /// than the template's (one header field that splits into the missing names), or names that differ
    /// only in case (names are matched exactly). Empty when neither.
    static func headerHint(header: [String], missing: [String], template: Template) -> String {
        var hints: [String] = []
        let joined = header.joined(separator: String(decoding: [template.delimiter], as: UTF8.self))
        for other in Template.delimiters.map(\.byte) where other != template.delimiter {
            let split = joined.utf8.split(separator: other, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: " \t\"")
            }
            guard split.count > header.count else { continue }
            let lowered = Set(split.map { $0.lowercased() })
            if missing.contains(where: { lowered.contains($0.lowercased()) }) {
                let setting = other == 0x09 ? "\"\\t\"" : "\"\(String(decoding: [other], as: UTF8.self))\""
                hints.append("the header looks \(Template.delimiterName(other))-separated, and template '\(template.name)' reads "
                    + "\(Template.delimiterName(template.delimiter))-separated files: set \"delimiter\": \(setting) in the template (or export with \(Template.delimiterName(template.delimiter)))")
                break
            }
        }
        if hints.isEmpty {
            let read = Set(template.columns.map(\.name))
            for name in missing {
                if let near = header.first(where: { $0 != name && $0.lowercased() == name.lowercased() }) {
                    hints.append("the header has \(Quote.text(near)), which differs from '\(name)' only in case; column names are matched exactly: "
                        + "rename the column in the export (or in the template)")
                } else if let near = Template.nearest(name, among: header.filter { !read.contains($0) }) {
                    hints.append("did you mean \(Quote.text(near)) for '\(name)'? The header has \(Quote.text(near)), which the template "
                        + "does not read; rename the column in the export (or in the template)")
                }
            }
        }
        return hints.isEmpty ? "" : ". Hint: " + hints.joined(separator: "; ")
    }

    /// The first pass: positions and patient chains.
    private func index(_ reader: CSVReader) throws {
        var byKey = HashIndex()  // key hash → patient ordinal
        var lastRow: [Int32] = []  // patient ordinal → its last row so far
        var misfits: [(row: Int32, hashes: Set<UInt64>, error: HealthCardError)] = []
        defer { attach(misfits, known: byKey) }
        var high = 0
        while let record = try reader.next() {
            if rowOffsetLow.count == 64 { reserveRows(estimatedFrom: record.offset) }
            // Rows are numbered in 32 bits (12 bytes a row in all): the budget keeps them far below 2^31.
            guard rowOffsetLow.count < limits.csvRows else {
                throw HealthCardError(.input, code: .inputTooLarge, "\(path) has more than \(limits.csvRows) data rows, the most one input may hold "
                    + "(docs/verify.md, \"Budgets\"); split it into several files, keeping each patient's rows in one file")
            }
            let row = Int32(rowOffsetLow.count)
            while record.offset >> 32 > high {
                high += 1
                offsetWraps.append(row)
            }
            rowOffsetLow.append(UInt32(truncatingIfNeeded: record.offset))
            rowLines.append(Int32(truncatingIfNeeded: record.line))
            nextRow.append(-1)
            // Only a row's errors name it: the text is made for them alone.
            var source: String { "\(path):\(record.line)" }
            if record.fields.count != headerFields {
                let error = HealthCardError(.input, code: .csvFieldCount, "row has \(record.fields.count) fields, the header has \(headerFields); check for an unquoted comma or a missing field. Its columns are shifted, so every patient whose id appears in it is rejected", at: source)
                misfits.append((row, Set(record.fields.map { Self.hash(PatientIdentity.normalize($0)) }), error))
                if record.fields.count > keyIndex {
                    let key = PatientIdentity.normalize(record.fields[keyIndex])
                    if !key.isEmpty && key.utf8.count <= Self.maxIDBytes { orphanIDs[row] = key }
                }
                entries.append(-(row + 1))
                continue
            }
            // The one form of an id (grouping, file names, rids and `revoke` alike): `P-9` and `P-9` + U+00A0
            // are one patient.
            let key = PatientIdentity.normalize(record.fields[keyIndex])
            if key.isEmpty {
                orphanErrors[row] = HealthCardError(.input, code: .patientIDMissing, "the patient id column '\(template.patientKey)' is empty, so the row cannot be matched to a patient", at: "\(source) column \(template.patientKey)")
                entries.append(-(row + 1))
                continue
            }
            if key.utf8.count > Self.maxIDBytes {
                // Never matched, never reported: the id itself is the problem.
                orphanErrors[row] = HealthCardError(
                    .input, code: .inputTooLarge,
                    "the patient id in column '\(template.patientKey)' is \(key.utf8.count) bytes long; an id may have at most "
                        + "\(Self.maxIDBytes) (it goes into the rid, the file names and the report), so the row is rejected "
                        + "(its id is not repeated here). Check the export: is a column shifted, or a quote never closed?",
                    at: "\(source) column \(template.patientKey)")
                entries.append(-(row + 1))
                continue
            }
            if key.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
                // A control character (ESC, BEL, a line feed inside quotes, a tab) in an id would go into the rid,
                // file names, the report and every message that names the person; every other value is refused for
                // it too (STRING_CONTROL_CHARACTER). Never matched, never reported: the id itself is the problem.
                orphanErrors[row] = HealthCardError(
                    .input, code: .stringControlCharacter,
                    "the patient id in column '\(template.patientKey)' holds a control character (\(Quote.text(key)), shown "
                        + "escaped); an id is printable text. Check the export for a tab, a line break inside a quoted field "
                        + "or terminal codes",
                    at: "\(source) column \(template.patientKey)")
                entries.append(-(row + 1))
                continue
            }
            if let long = record.fields.indices.first(where: { record.fields[$0].utf8.count > Self.maxFieldBytes }) {
                // The patient is rejected (its other rows too): a card without this row would lack a dose.
                let column = long < header.count ? header[long] : "\(long + 1)"
                let error = HealthCardError(
                    .input, code: .inputTooLarge,
                    "column \(Quote.text(column)) holds \(record.fields[long].utf8.count) bytes; a field may hold at most "
                        + "\(Self.maxFieldBytes) (a health card holds a few kB), so this patient is rejected. Check the export "
                        + "for a column that holds something else (a document, a note) or a quote never closed",
                    at: "\(source) column \(column)")
                misfits.append((row, [Self.hash(key)], error))
                orphanIDs[row] = key
                entries.append(-(row + 1))
                continue
            }
            let hash = Self.hash(key)
            if let patient = byKey.find(hash) {
                nextRow[Int(lastRow[Int(patient)])] = row
                lastRow[Int(patient)] = row
            } else {
                byKey.set(hash, Int32(lastRow.count))
                lastRow.append(row)
                patientHashes.append(hash)
                entries.append(row)
            }
        }
    }

    /// After the first rows, sizes the per-row arrays for the whole file (its size over the mean row
    /// length so far, plus 5%), so they neither double past what is needed nor hold two copies while
    /// growing. A low estimate only means the arrays grow as usual.
    private func reserveRows(estimatedFrom offset: Int) {
        guard let size = FileIO.size(path), let first = rowOffsetLow.first, offset > Int(first) else { return }
        let mean = Double(offset - Int(first)) / Double(rowOffsetLow.count)
        let rows = Int(min(Double(limits.csvRows), Double(size) / mean * 1.05)) + 64
        rowOffsetLow.reserveCapacity(rows)
        rowLines.reserveCapacity(rows)
        nextRow.reserveCapacity(rows)
    }

    /// Bytes data row `row` takes in the file, up to the next row (blank lines included), from the index.
    func rowBytes(_ row: Int) -> Int {
        let start = offset(ofRow: row)
        let next = row + 1 < rowOffsetLow.count ? offset(ofRow: row + 1) : max(start, fileSize)
        return max(0, next - start)
    }

    /// The byte offset of data row `row`.
    func offset(ofRow row: Int) -> Int { Self.offset(low: rowOffsetLow[row], wraps: offsetWraps, row: row) }

    /// A byte offset from its low 32 bits and the rows at which the high part grew by one.
    static func offset(low: UInt32, wraps: [Int32], row: Int) -> Int {
        var high = 0
        while high < wraps.count && Int(wraps[high]) <= row { high += 1 }
        return high << 32 | Int(low)
    }

    /// Files each wrong-width row's error under every patient whose id it contains; a row that names
    /// no known patient stays a record of its own. A patient named by such a row is reported at the
    /// row's place when that comes before its first well-formed row, so the report keeps file order.
    private func attach(_ misfits: [(row: Int32, hashes: Set<UInt64>, error: HealthCardError)], known: HashIndex) {
        guard !misfits.isEmpty else { return }
        let firstRows = entries.filter { $0 >= 0 }  // patient ordinal → its first row
        var replaced: [Int32: [Int32]] = [:]  // orphan entry → the first rows of the patients it names
        for misfit in misfits {
            let patients = misfit.hashes.compactMap { known.find($0) }.sorted()
            if patients.isEmpty {
                orphanErrors[misfit.row] = misfit.error
                continue
            }
            for hash in misfit.hashes where known.find(hash) != nil { misfitErrors[hash, default: []].append(misfit.error) }
            replaced[-(misfit.row + 1)] = patients.map { firstRows[Int($0)] }
        }
        guard !replaced.isEmpty else { return }
        var placed = Set<Int32>()
        var reordered: [Int32] = []
        reordered.reserveCapacity(entries.count)
        for entry in entries {
            if let firstRows = replaced[entry] {
                for first in firstRows where first > -entry - 1 && placed.insert(first).inserted { reordered.append(first) }
            } else if entry < 0 || placed.insert(entry).inserted {
                reordered.append(entry)
            }
        }
        entries = reordered
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
    public var rowCount: Int { rowOffsetLow.count }

    /// One patient's rows as read back, before rendering.
    public struct PatientRows: Sendable {
        /// `file:line` of the patient's first row.
        public var source: String
        /// The patient key; nil for a row that matched no patient.
        public var id: String?
        public var rows: [TemplateRow]
        public var errors: [HealthCardError]
        /// Bytes of the file the rows take (from the index), for the batch's in-flight budget.
        public var inputBytes = 0

        /// Renders the rows with `template` into the record's checked Bundle (or its errors).
        /// - Parameter now: seconds since 1970 to judge future dates against.
        public func render(_ template: Template, now: Int64) -> CheckedRecord {
            guard errors.isEmpty, let id else { return CheckedRecord(source: source, id: id, checked: nil, errors: errors, warnings: []) }
            let rendered = template.render(rows: rows, now: now)
            var record = CheckedRecord(
                source: source, id: id, checked: rendered.checked, errors: rendered.errors, warnings: rendered.warnings)
            record.provenance = rendered.provenance
            return record
        }
    }

    /// Reads the records back in order of first appearance. Patients are read a window at a time
    /// (`window` records): their rows are read in file order, going on with the open reader across
    /// short gaps and reopening at the byte offset across long ones, so an extract sorted by date
    /// costs a few seeks per window rather than one per row. Memory holds one window's rows.
    public final class Cursor {
        private let input: CSVTemplateInput
        private let window: Int
        private var entry = 0
        private var reader: CSVReader?
        private var readerRow = -1  // the row `reader.next()` returns next
        private var ready: [PatientRows] = []
        private var readyIndex = 0

        init(_ input: CSVTemplateInput, window: Int = 512) {
            self.input = input
            self.window = max(1, window)
        }

        /// The CSV file read.
        public var path: String { input.path }

        /// The next record's rows, or nil after the last.
        /// - Throws: `HealthCardError(.input)` when the file changed since it was indexed or cannot
        ///   be read.
        public func next() throws -> PatientRows? {
            if readyIndex == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyIndex = 0
                try fill()
                if ready.isEmpty { return nil }
            }
            readyIndex += 1
            return ready[readyIndex - 1]
        }

        /// Reads the next window of records into `ready`: at most `window` records, and no more rows
        /// than `InputLimits.inFlightBytes` of the file (at least one record), sizes known from the index.
        private func fill() throws {
            guard entry < input.entries.count else { return }
            // (row, slot) for every row of the window's patients, read in file order.
            var wanted: [(row: Int32, slot: Int32)] = []
            var fields: [[[String]]] = []  // per slot, per row (file order)
            var slots: [Int32] = []  // per entry: its slot, or -1 for a row that matched no patient
            var sizes: [Int] = []  // per slot: bytes of its rows in the file
            var overfull: Set<Int32> = []  // slots of patients with more rows than the budget (first row read only)
            var end = entry
            var bytes = 0
            while end < input.entries.count && end - entry < window && (end == entry || bytes < input.limits.inFlightBytes) {
                let first = input.entries[end]
                end += 1
                guard first >= 0 else {
                    slots.append(-1)
                    continue
                }
                let slot = Int32(fields.count)
                slots.append(slot)
                fields.append([])
                var chain: [Int32] = []
                var size = 0
                var row = first
                while row >= 0 && chain.count <= input.limits.csvRowsPerPatient {
                    chain.append(row)
                    size += input.rowBytes(Int(row))
                    row = input.nextRow[Int(row)]
                }
                if chain.count > input.limits.csvRowsPerPatient {
                    overfull.insert(slot)
                    chain = [first]
                    size = input.rowBytes(Int(first))
                }
                sizes.append(size)
                bytes += size
                for row in chain { wanted.append((row, slot)) }
            }
            wanted.sort { $0.row < $1.row }
            for (row, slot) in wanted { fields[Int(slot)].append(try read(Int(row))) }
            for (i, e) in (entry..<end).enumerated() {
                let first = input.entries[e]
                if slots[i] < 0 {
                    let row = Int(-(first + 1))
                    let error = input.orphanErrors[Int32(row)]
                        ?? HealthCardError(.input, code: .patientIDMissing, "the row matches no patient", at: "\(input.path):\(input.rowLines[row])")
                    ready.append(PatientRows(source: "\(input.path):\(input.rowLines[row])", id: input.orphanIDs[Int32(row)], rows: [],
                                             errors: [error]))
                    continue
                }
                let slot = slots[i]
                if overfull.contains(slot) {
                    let source = "\(input.path):\(input.rowLines[Int(first)])"
                    let key = fields[Int(slot)].first.flatMap { $0.count > input.keyIndex ? $0[input.keyIndex] : nil }
                        .map(PatientIdentity.normalize)
                    ready.append(PatientRows(source: source, id: key, rows: [], errors: [HealthCardError(
                        .input, code: .inputTooLarge, "the patient has more than \(input.limits.csvRowsPerPatient) rows (one row per dose or test is "
                            + "expected; docs/verify.md, \"Budgets\"), so no card is issued for it; check the patient id column",
                        at: source)]))
                    continue
                }
                var rows: [Int] = []
                var row = Int(first)
                while row >= 0 {
                    rows.append(row)
                    row = Int(input.nextRow[row])
                }
                var patients = patient(rows: rows, fields: fields[Int(slot)])
                for p in patients.indices { patients[p].inputBytes = sizes[Int(slot)] }
                ready.append(contentsOf: patients)
            }
            entry = end
        }

        /// Turns one chain of rows into its patient (or, after a hash collision, its patients).
        private func patient(rows: [Int], fields: [[String]]) -> [PatientRows] {
            var groups: [PatientRows] = []
            for (row, fields) in zip(rows, fields) {
                let source = "\(input.path):\(input.rowLines[row])"
                let key = fields.count > input.keyIndex ? PatientIdentity.normalize(fields[input.keyIndex]) : ""
                var g = groups.firstIndex { $0.id == key } ?? -1
                if g < 0 {
                    groups.append(PatientRows(source: source, id: key, rows: [], errors: []))
                    g = groups.count - 1
                }
                if fields.count != input.headerFields {
                    groups[g].errors.append(HealthCardError(.input, code: .csvFieldCount, "row has \(fields.count) fields, the header has \(input.headerFields); check for an unquoted comma or a missing field", at: source))
                } else {
                    var values: [String: String] = [:]
                    values.reserveCapacity(input.readColumns.count)
                    for (column, i) in input.readColumns {
                        if column.name == input.template.patientKey {
                            values[column.name] = key
                            continue
                        }
                        // Around a value, what no one sees is trimmed; inside it, it is refused (`FieldText`).
                        let value = FieldText.trimmed(fields[i])
                        if let hidden = FieldText.hiddenCharacter(in: value) {
                            groups[g].errors.append(HealthCardError(
                                .input, code: .inputInvisibleCharacter,
                                "the value \(Quote.text(value)) holds \(FieldText.describe(hidden)): it would be signed "
                                    + "into the card, where the value no longer matches what everyone reads. Remove it from the export "
                                    + "(copying from another program often leaves one) and run again",
                                at: "\(source) column \(column.name)"))
                        }
                        values[column.name] = value
                    }
                    groups[g].rows.append(TemplateRow(values: values, source: source))
                }
            }
            for g in groups.indices {
                if let id = groups[g].id, let errors = input.misfitErrors[CSVTemplateInput.hash(id)] { groups[g].errors += errors }
            }
            return groups
        }

        /// The fields of data row `row`. The open reader goes on when the row is at most 32 rows
        /// ahead (the rows between are read and dropped); otherwise it reopens at the row's offset.
        func read(_ row: Int) throws -> [String] {
            if reader == nil || row < readerRow || row - readerRow > 32 {
                reader = try CSVReader(path: input.path, offset: input.offset(ofRow: row), line: Int(input.rowLines[row]),
                                       delimiter: input.template.delimiter, limits: input.limits)
                readerRow = row
            }
            while true {
                guard let record = try reader!.next() else { break }
                readerRow += 1
                if readerRow - 1 == row {
                    guard record.offset == input.offset(ofRow: row) else { break }
                    return record.fields
                }
            }
            throw HealthCardError(.input, "\(input.path) changed while it was read (the row at line \(input.rowLines[row]) is gone); run again on a file nobody is writing")
        }
    }

    /// A cursor over the records, from the first.
    public func cursor() -> Cursor { Cursor(self) }

    /// Every record, rendered, in order of first appearance (holds them all: for small inputs and tests).
    /// - Parameter now: the time dates are judged at, seconds since 1970.
    public func records(now: Int64) throws -> [CheckedRecord] {
        let cursor = self.cursor()
        var out: [CheckedRecord] = []
        while let patient = try cursor.next() { out.append(patient.render(template, now: now)) }
        return out
    }
}
