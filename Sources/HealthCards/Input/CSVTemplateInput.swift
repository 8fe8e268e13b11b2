/// Turns a CSV file into one record per patient with a `Template`: rows sharing the template's
/// `patientKey` form one Bundle, whatever their order in the file.
///
/// The first pass reads the whole file once (checking UTF-8, quoting and field counts) and keeps only
/// each patient's row positions; the second pass reads each patient's rows back by byte offset, so
/// memory holds positions, not rows.
public final class CSVTemplateInput {
    public let path: String
    public let template: Template
    /// Header columns in file order.
    public private(set) var header: [String] = []
    private var columnIndex: [String: Int] = [:]
    /// Patients in order of first appearance, with their rows' (offset, line).
    private var patients: [(key: String, rows: [(offset: Int, line: Int)])] = []
    /// Rows that could not be assigned to a patient.
    private var orphanErrors: [InputRecord] = []
    private var headerFields = 0

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
        let keyIndex = columnIndex[template.patientKey]!
        var byKey: [String: Int] = [:]
        while let record = try reader.next() {
            guard record.fields.count > keyIndex else {
                orphanErrors.append(InputRecord(source: "\(path):\(record.line)", id: nil, bundle: nil, errors: [
                    HealthCardError(.input, "row has \(record.fields.count) fields, the header has \(headerFields); the patient id column '\(template.patientKey)' is missing, so the row cannot be matched to a patient", at: "\(path):\(record.line)")
                ]))
                continue
            }
            let key = record.fields[keyIndex].trimmingCharacters(in: " \t")
            if key.isEmpty {
                orphanErrors.append(InputRecord(source: "\(path):\(record.line)", id: nil, bundle: nil, errors: [
                    HealthCardError(.input, "the patient id column '\(template.patientKey)' is empty, so the row cannot be matched to a patient", at: "\(path):\(record.line) column \(template.patientKey)")
                ]))
                continue
            }
            if let index = byKey[key] {
                patients[index].rows.append((record.offset, record.line))
            } else {
                byKey[key] = patients.count
                patients.append((key, [(record.offset, record.line)]))
            }
        }
    }

    /// Number of records (patients plus rows that matched no patient).
    public var count: Int { patients.count + orphanErrors.count }

    /// Every record: rows that matched no patient first, then each patient's Bundle (or its errors),
    /// in order of first appearance.
    public func records() throws -> [InputRecord] {
        var out = orphanErrors
        for index in patients.indices { out.append(try record(at: index)) }
        return out
    }

    /// The record of the `index`-th patient.
    public func record(at index: Int) throws -> InputRecord {
        let patient = patients[index]
        var rows: [TemplateRow] = []
        var errors: [HealthCardError] = []
        for (offset, line) in patient.rows {
            let reader = try CSVReader(path: path, offset: offset, line: line)
            guard let record = try reader.next() else { continue }
            let source = "\(path):\(line)"
            if record.fields.count != headerFields {
                errors.append(HealthCardError(.input, "row has \(record.fields.count) fields, the header has \(headerFields); check for an unquoted comma or a missing field", at: source))
                continue
            }
            var values: [String: String] = [:]
            for column in template.columns {
                if let i = columnIndex[column.name] { values[column.name] = record.fields[i].trimmingCharacters(in: " \t\r\n") }
            }
            rows.append(TemplateRow(values: values, source: source))
        }
        let source = "\(path):\(patient.rows[0].line)"
        if !errors.isEmpty { return InputRecord(source: source, id: patient.key, bundle: nil, errors: errors) }
        let rendered = template.render(rows: rows)
        return InputRecord(source: source, id: patient.key, bundle: rendered.bundle, errors: rendered.errors, warnings: rendered.warnings)
    }
}
