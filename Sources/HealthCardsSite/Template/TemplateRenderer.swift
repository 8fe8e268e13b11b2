import HealthCardsCore
import HealthCardsVerify

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
        for column in rows.count > 1 ? patientColumns.sorted() : [] {
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
        var context = RenderContext(urlIndex: [:], dateFormat: dateFormat)
        var count = 0
        for entry in compiled {
            if let url = entry.onceURL { context.urlIndex[url] = count }
            count += entry.repeats ? eventRows.count : 1
        }
        var produced: [JSONValue] = []
        produced.reserveCapacity(count)
        var provenance = Provenance(template: self)
        var noColumns: [String: String] = [:]
        for (index, entry) in compiled.enumerated() {
            for row in entry.repeats ? eventRows : [first] {
                provenance.entryRows.append(row.source)
                provenance.rendered.append((index, row))
                // No paths here: the columns by path are rendered again only for a finding to locate (`Provenance`).
                let rendered = Template.render(
                    entry.resource, row: row, context: context, path: nil, errors: &errors, columns: &noColumns)
                var newEntry = JSONObject(capacity: 2)
                newEntry.append("fullUrl", .string("resource:\(produced.count)"))
                if let rendered { newEntry.append("resource", rendered) }
                produced.append(.object(newEntry))
            }
        }
        guard errors.isEmpty else { return RenderedBundle(checked: nil, errors: errors, warnings: warnings) }
        var bundle = self.bundle
        bundle["entry"] = .array(produced)
        let (checked, checkErrors) = provenance.check(.object(bundle), now: now)
        return RenderedBundle(checked: checked, errors: checkErrors, warnings: warnings, provenance: provenance)
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
            if value.unicodeScalars.contains(where: { $0.value < 0x20 }) || value.containsCharacters("  ") {
                throw HealthCardError(
                    .template, "code \(Quote.text(value)) has line breaks, tabs or repeated spaces; expected a code such as 207")
            }
            return .string(value)
        case .date:
            if FHIRDate.isValidDate(value, allowPartial: false) { return .string(value) }
            if let iso = dateFormat?.fhirDate(value) { return .string(iso) }
            if let why = DateFormat.notARealDate(value) {
                throw HealthCardError(.template, "\(Quote.text(value)) has the form YYYY-MM-DD but is not a date: \(why)")
            }
            if let withTime = DateFormat.timeOfDay(in: value, format: dateFormat) {
                if let why = DateFormat.timeOutOfRange(withTime.time) {
                    throw HealthCardError(
                        .template,
                        "\(Quote.text(value)) has a time of day that does not exist (\(withTime.time): \(why)); this column "
                            + "takes the date alone, in the form \(expectedDate(dateFormat))")
                }
                throw HealthCardError(
                    .template, code: .templateDateWithTime,
                    "\(Quote.text(value)) is a date with a time of day (\(withTime.time)), as a spreadsheet exports a date-and-time "
                        + "cell; this column takes the date alone, in the form \(expectedDate(dateFormat))"
                        + (withTime.date.map { " (here \($0))" } ?? "") + ". \(DateFormat.timeOfDayFix)")
            }
            throw HealthCardError(.template, "\(Quote.text(value)) is not a date in the form \(expectedDate(dateFormat))\(DateFormat.hint(for: value, format: dateFormat))")
        case .dateTime:
            if FHIRDate.isValidDateTime(value, allowPartial: false) { return .string(value) }
            if let iso = dateFormat?.fhirDate(value) { return .string(iso) }
            if let why = DateFormat.notARealDate(FHIRDate.datePart(value)) {
                throw HealthCardError(.template, "\(Quote.text(value)) is not a FHIR dateTime: its date is not one: \(why)")
            }
            if let withTime = DateFormat.timeOfDay(in: value, format: dateFormat) {
                if let why = DateFormat.timeOutOfRange(withTime.time) {
                    throw HealthCardError(
                        .template,
                        "\(Quote.text(value)) is not a FHIR dateTime: its time of day does not exist (\(withTime.time): \(why))")
                }
                throw HealthCardError(
                    .template, code: .templateDateWithTime,
                    "\(Quote.text(value)) is a date with a time of day (\(withTime.time)) in a spreadsheet's form; a FHIR dateTime "
                        + "is \(expectedDate(dateFormat)) alone\(withTime.date.map { " (here \($0))" } ?? ""), or "
                        + "YYYY-MM-DDThh:mm:ss with seconds and a time zone (Z or +hh:mm). \(DateFormat.timeOfDayFix)")
            }
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
                throw HealthCardError(.template, "\(Quote.text(value)) is not a whole number")
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
