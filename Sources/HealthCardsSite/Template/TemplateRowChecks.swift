import HealthCardsCore
import HealthCardsVerify

/// Checks on one patient's rendered rows that need to know where each value came from: repeated event
/// ids, and validation errors located at the CSV row and column that caused them.
extension Template {
    /// A repeated event id: a warning when the repeats are identical (counted once), an error when
    /// they differ (which one is right cannot be known).
    struct DuplicateFinding {
        var error: HealthCardError
        var isConflict: Bool
    }

    /// The rows with each `eventKey` value kept once (first occurrence), and one finding per repeated
    /// event id naming every row that repeats it. Without an `eventKey`, rows identical in every column
    /// the template reads are kept once, with a warning: a repeated export row must not silently become
    /// a second dose (rows that differ and still make the same dose are refused by
    /// `IMMUNIZATION_DUPLICATE`).
    func deduplicatedEvents(_ rows: [TemplateRow]) -> ([TemplateRow], [DuplicateFinding]) {
        guard let eventKey else { return deduplicatedRows(rows) }
        var kept: [TemplateRow] = []
        var firstRow: [String: TemplateRow] = [:]
        var repeats: [String: [TemplateRow]] = [:]
        var order: [String] = []
        for row in rows {
            let event = row[eventKey]
            if event.isEmpty {
                kept.append(row)
            } else if firstRow[event] == nil {
                firstRow[event] = row
                kept.append(row)
            } else {
                if repeats[event] == nil { order.append(event) }
                repeats[event, default: []].append(row)
            }
        }
        var findings: [DuplicateFinding] = []
        for event in order {
            guard let original = firstRow[event], let others = repeats[event] else { continue }
            let differing = columns.map(\.name).filter { name in others.contains { $0[name] != original[name] } }
            let lines = others.map(\.source).joined(separator: ", ")
            if differing.isEmpty {
                findings.append(
                    DuplicateFinding(
                        error: HealthCardError(
                            .template,
                            "duplicate event \(Quote.text(event)): the same row is repeated at \(lines); counted once",
                            at: "\(original.source) column \(eventKey)"), isConflict: false))
            } else {
                findings.append(
                    DuplicateFinding(
                        error: HealthCardError(
                            .template, code: .eventConflict,
                            "conflicting rows: event \(Quote.text(event)) is at \(original.source) and again at \(lines), with different "
                                + "\(differing.joined(separator: ", ")); which row is right cannot be known, so no card is issued. Give each "
                                + "event its own id or remove the wrong row",
                            at: "\(original.source) column \(eventKey)"), isConflict: true))
            }
        }
        return (kept, findings)
    }

    /// Rows identical in every declared column kept once, with one warning per repeated row content.
    func deduplicatedRows(_ rows: [TemplateRow]) -> ([TemplateRow], [DuplicateFinding]) {
        var kept: [TemplateRow] = []
        var firstRow: [[String]: Int] = [:]  // values → index in `kept`
        var repeats: [Int: [TemplateRow]] = [:]
        for row in rows {
            let values = columns.map { row[$0.name] }
            if let first = firstRow[values] {
                repeats[first, default: []].append(row)
            } else {
                firstRow[values] = kept.count
                kept.append(row)
            }
        }
        let findings = repeats.keys.sorted().map { index in
            let lines = (repeats[index] ?? []).map(\.source).joined(separator: ", ")
            return DuplicateFinding(
                error: HealthCardError(
                    .template,
                    "the same row is repeated at \(lines); counted once. The template has no \"eventKey\" to tell events apart, "
                        + "so identical rows are taken for one event: check the export, or add an event id column as \"eventKey\"",
                    at: kept[index].source), isConflict: false)
        }
        return (kept, findings)
    }

    /// Where each rendered entry and value came from, so a problem found in the Bundle can be
    /// reported at the CSV row and column that caused it.
    struct Provenance {
        /// The template the entries were rendered from.
        var template: Template
        /// `file:line` of the row each entry was rendered from, by entry index.
        var entryRows: [String] = []
        /// Each entry's compiled template entry (index in `Template.compiled`) and row, to render it again with paths.
        var rendered: [(entry: Int, row: TemplateRow)] = []

        init(template: Template) { self.template = template }

        /// FHIR path (`Bundle.entry[1].resource.occurrenceDateTime`) → column of the placeholder that filled it.
        /// Rendering builds no paths (most cards have no finding to locate): they are rendered again here, the
        /// same rows into the same template, which gives the same values at the same paths.
        var columns: [String: String] {
            var columns: [String: String] = [:]
            var errors: [HealthCardError] = []
            let context = RenderContext(urlIndex: [:], dateFormat: template.dateFormat)
            for (index, (entry, row)) in rendered.enumerated() {
                _ = Template.render(
                    template.compiled[entry].resource, row: row, context: context, path: "Bundle.entry[\(index)].resource",
                    errors: &errors, columns: &columns)
            }
            return columns
        }

        /// Minimizes the rendered Bundle as it will be signed and checks it: the checked Bundle (nil when
        /// it cannot be minimized), and every error, located at its row and column with the FHIR path (in
        /// the card) kept in the message.
        func check(_ bundle: JSONValue, now: Int64) -> (checked: CheckedBundle?, errors: [HealthCardError]) {
            let checked: CheckedBundle
            do { checked = try CheckedBundle.minimizing(bundle, now: now) } catch {
                // Minimization paths are in the rendered Bundle already.
                let columns = self.columns
                return (nil, error.all.map { located($0, renderedPath: $0.location.path, columns: columns) })
            }
            let found = checked.errors
            if found.isEmpty { return (checked, []) }
            let columns = self.columns
            let errors = found.map(BundleValidator.Findings.asError).map { error in
                located(error, renderedPath: error.location.path.map { Self.path($0, origins: checked.origins) }, columns: columns)
            }
            return (checked, errors)
        }

        /// A finding of the checked Bundle (at its FHIR path, as `CheckedBundle.findings` give it) at the row and
        /// column that caused it, its path kept in the message; anything else as it is.
        func located(_ finding: HealthCardError, origins: [Int]) -> HealthCardError {
            located([finding], origins: origins)[0]
        }

        /// The same for several findings (the columns by path rendered once for all).
        func located(_ findings: [HealthCardError], origins: [Int]) -> [HealthCardError] {
            guard findings.contains(where: { $0.location.path != nil }) else { return findings }
            let columns = self.columns
            return findings.map { located($0, renderedPath: $0.location.path.map { Self.path($0, origins: origins) }, columns: columns) }
        }

        /// `error` at the row and column of `renderedPath`, its own path kept in the message.
        private func located(_ error: HealthCardError, renderedPath: String?, columns: [String: String]) -> HealthCardError {
            guard let path = error.location.path, let renderedPath, let row = location(of: renderedPath, columns: columns) else { return error }
            var located = error
            located.text = "\(error.text) (\(path))"
            located.location = row
            return located
        }

        /// A FHIR path of the checked Bundle (`Bundle.entry[N]…`) with N its entry's index as rendered.
        static func path(_ path: String, origins: [Int]) -> String {
            let prefix = "Bundle.entry["
            guard path.hasPrefix(prefix), let close = path.firstIndex(of: "]") else { return path }
            let digits = path[path.index(path.startIndex, offsetBy: prefix.count)..<close]
            guard digits.utf8.count <= 9, let index = Int(digits), origins.indices.contains(index) else { return path }
            return "\(prefix)\(origins[index])\(path[close...])"
        }

        /// `file:line column C` for a FHIR path, or `file:line` when no placeholder filled it.
        func location(of path: String, columns: [String: String]) -> HealthCardError.Location? {
            rowLocation(of: path, columns: columns).map { HealthCardError(.template, "", at: $0).location }
        }

        private func rowLocation(of path: String, columns: [String: String]) -> String? {
            guard path.hasPrefix("Bundle.entry["), let close = path.firstIndex(of: "]"),
                path.distance(from: path.startIndex, to: close) <= 22,
                let index = Int(path[path.index(path.startIndex, offsetBy: 13)..<close]),
                entryRows.indices.contains(index)
            else { return nil }
            var candidate = Substring(path)
            while true {
                if let column = columns[String(candidate)] { return "\(entryRows[index]) column \(column)" }
                guard let cut = candidate.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
                candidate = candidate[..<cut]
            }
            // A value inside the entry that no placeholder filled: name the one column of the entry, if unique.
            let prefix = "Bundle.entry[\(index)]."
            let used = Set(columns.filter { $0.key.hasPrefix(prefix) && $0.key.hasPrefix(path) }.values)
            if used.count == 1, let column = used.first { return "\(entryRows[index]) column \(column)" }
            return entryRows[index]
        }
    }
}
