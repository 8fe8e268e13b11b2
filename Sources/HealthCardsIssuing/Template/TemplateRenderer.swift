import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// One input row for a template: trimmed values by column name, and where it came from.
public struct TemplateRow: Sendable {
    /// Column name → trimmed value ("" when the column is absent or empty).
    public var values: [String: String]
    /// `file:line`, for messages and the report.
    public var source: String

    public init(values: [String: String], source: String) {
        self.values = values
        self.source = source
    }

    public subscript(column: String) -> String { values[column] ?? "" }
}

/// What rendering one patient's rows produced: the checked Bundle, and every reason it cannot be issued.
public struct RenderedBundle: Sendable {
    /// The rendered Bundle, minimized and checked; nil when rendering or minimizing failed.
    public var checked: CheckedBundle?
    /// Rendering errors and the checked Bundle's errors, each at the CSV row and column that caused it.
    public var errors: [HealthCardError]
    /// Rendering warnings (repeated rows); the Bundle's own warnings are in `checked`.
    public var warnings: [HealthCardError]
    /// Where each entry and value came from, to put the Bundle's warnings at their row and column too.
    var provenance: Template.Provenance?
}

extension Template {
    /// Renders the rows of one patient into one Bundle: the once-per-patient entries from the first
    /// row, the repeated entries once per row (duplicates of `eventKey` dropped with a warning).
    /// Every `fullUrl` becomes `resource:N` and references to template fullUrls are rewritten.
    ///
    /// Any bad row rejects the whole patient: a card with a missing dose is worse than no card.
    /// - Parameter now: seconds since 1970 to judge future dates against.
    public func render(rows: [TemplateRow], now: Int64) -> RenderedBundle {
        var errors: [HealthCardError] = []
        var warnings: [HealthCardError] = []
        guard let first = rows.first else {
            return RenderedBundle(checked: nil, errors: [HealthCardError(.template, "no rows")], warnings: [])
        }
        for row in rows {
            for column in columns where column.required && row[column.name].isEmpty {
                errors.append(
                    HealthCardError(
                        .template, code: .templateRequiredEmpty, "required column '\(column.name)' is empty; fill it in or drop the row",
                        at: "\(row.source) column \(column.name)"))
            }
        }
        for column in patientColumns.sorted() {
            let firstValue = first[column]
            for row in rows.dropFirst() where row[column] != firstValue {
                errors.append(
                    HealthCardError(
                        .template,
                        "rows of patient \(Quote.text(first[patientKey])) disagree on '\(column)': \(Quote.text(firstValue)) at \(first.source), \(Quote.text(row[column])) here; correct the export so each patient has one value",
                        at: "\(row.source) column \(column)"))
            }
        }
        let (eventRows, duplicateFindings) = deduplicatedEvents(rows)
        for finding in duplicateFindings {
            if finding.isConflict { errors.append(finding.error) } else { warnings.append(finding.error) }
        }
        // Final indices of the entries, and where each once-per-patient template fullUrl lands.
        var urlIndex: [String: Int] = [:]
        var count = 0
        for (entry, repeats) in entries {
            if !repeats, let url = entry["fullUrl"]?.stringValue { urlIndex[url] = count }
            count += repeats ? eventRows.count : 1
        }
        var produced: [JSONValue] = []
        var provenance = Provenance()
        for (entry, repeats) in entries {
            for row in repeats ? eventRows : [first] {
                guard let resource = entry["resource"] else { continue }
                provenance.entryRows.append(row.source)
                let rendered = renderValue(
                    resource, row: row, path: "Bundle.entry[\(produced.count)].resource", errors: &errors,
                    columns: &provenance.columns)
                var newEntry = JSONObject()
                newEntry["fullUrl"] = .string("resource:\(produced.count)")
                if var rendered {
                    Template.rewriteReferences(&rendered, urlIndex: urlIndex)
                    newEntry["resource"] = rendered
                }
                produced.append(.object(newEntry))
            }
        }
        guard errors.isEmpty else { return RenderedBundle(checked: nil, errors: errors, warnings: warnings) }
        var bundle = self.bundle
        bundle["entry"] = .array(produced)
        let (checked, checkErrors) = provenance.check(.object(bundle), now: now)
        return RenderedBundle(checked: checked, errors: checkErrors, warnings: warnings, provenance: provenance)
    }

    static func rewriteReferences(_ node: inout JSONValue, urlIndex: [String: Int]) {
        switch node {
        case .object(var o):
            if let r = o["reference"]?.stringValue, let i = urlIndex[r] { o["reference"] = .string("resource:\(i)") }
            for (k, v) in o {
                var child = v
                rewriteReferences(&child, urlIndex: urlIndex)
                o[k] = child
            }
            node = .object(o)
        case .array(var a):
            for i in a.indices { rewriteReferences(&a[i], urlIndex: urlIndex) }
            node = .array(a)
        default: break
        }
    }

    /// Renders one template value; nil means "drop this element". `columns` records, by FHIR path in
    /// the output, which column filled each value.
    func renderValue(
        _ node: JSONValue, row: TemplateRow, path: String, errors: inout [HealthCardError],
        columns: inout [String: String]
    ) -> JSONValue? {
        switch node {
        case .string(let text):
            guard let pieces = try? Placeholder.pieces(of: text) else { return node }
            if pieces.count == 1, case .placeholder(let p) = pieces[0] {
                let value = row[p.column]
                if value.isEmpty { return nil }
                do {
                    let typed = try Template.typedValue(value, as: p.type, dateFormat: dateFormat)
                    columns[path] = p.column
                    return typed
                } catch {
                    errors.append(HealthCardError(.template, error.text, at: "\(row.source) column \(p.column)"))
                    return nil
                }
            }
            var out = ""
            var used: String?
            for piece in pieces {
                switch piece {
                case .text(let t): out += t
                case .placeholder(let p):
                    let value = row[p.column]
                    if value.isEmpty { return nil }
                    out += value
                    used = used ?? p.column
                }
            }
            if let used { columns[path] = used }
            return .string(out)
        case .array(let items):
            var kept: [JSONValue] = []
            for item in items {
                if let r = renderValue(
                    item, row: row, path: "\(path)[\(kept.count)]", errors: &errors, columns: &columns)
                {
                    kept.append(r)
                }
            }
            return kept.isEmpty ? nil : .array(kept)
        case .object(let object):
            var kept = JSONObject()
            for (k, v) in object {
                if let r = renderValue(v, row: row, path: "\(path).\(k)", errors: &errors, columns: &columns) {
                    kept[k] = r
                }
            }
            return kept.isEmpty ? nil : .object(kept)
        default:
            return node
        }
    }

    /// Converts trimmed, non-empty text to the JSON value of a placeholder type.
    /// - Parameter dateFormat: the export's date format (the template's `dateFormat`); nil reads
    ///   `YYYY-MM-DD` only. Dates in it are written as `YYYY-MM-DD`.
    /// - Throws: `HealthCardError(.template)` saying what was found and which format is expected.
    static func typedValue(_ value: String, as type: Placeholder.ValueType, dateFormat: DateFormat? = nil) throws(HealthCardError)
        -> JSONValue
    {
        switch type {
        case .string:
            return .string(value)
        case .code:
            if value.unicodeScalars.contains(where: { $0.value < 0x20 }) || value.contains("  ") {
                throw HealthCardError(
                    .template, "code \(Quote.text(value)) has line breaks, tabs or repeated spaces; expected a code such as 207")
            }
            return .string(value)
        case .date:
            if FHIRDate.isValidDate(value, allowPartial: false) { return .string(value) }
            if let iso = dateFormat?.fhirDate(value) { return .string(iso) }
            throw HealthCardError(.template, "\(Quote.text(value)) is not a date in the form \(expectedDate(dateFormat))\(DateFormat.hint(for: value, format: dateFormat))")
        case .dateTime:
            if FHIRDate.isValidDateTime(value, allowPartial: false) { return .string(value) }
            if let iso = dateFormat?.fhirDate(value) { return .string(iso) }
            throw HealthCardError(
                .template,
                "\(Quote.text(value)) is not a FHIR dateTime; expected \(expectedDate(dateFormat)), or YYYY-MM-DDThh:mm:ss with a time zone (Z or +hh:mm)"
                    + DateFormat.hint(for: value, format: dateFormat))
        case .decimal:
            guard let number = JSONNumber(value) else {
                throw HealthCardError(
                    .template,
                    "\(Quote.text(value)) is not a decimal number; expected digits with an optional '.' (e.g. 4.50), no thousands separators or units"
                )
            }
            return .number(number)
        case .integer:
            guard let number = JSONNumber(value), !value.contains("."), !value.lowercased().contains("e") else {
                throw HealthCardError(.template, "'\(value)' is not a whole number")
            }
            return .number(number)
        case .boolean:
            switch value.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: throw HealthCardError(.template, "\(Quote.text(value)) is not a boolean; expected true or false")
            }
        }
    }

    /// `YYYY-MM-DD`, or the template's format and `YYYY-MM-DD`.
    private static func expectedDate(_ format: DateFormat?) -> String {
        format.map { "\($0) (the template's dateFormat) or YYYY-MM-DD" } ?? "YYYY-MM-DD"
    }
}
