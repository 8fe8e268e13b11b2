import HealthCardsCore

extension Template {
    /// A template value compiled once, when the template is loaded: every string's placeholders parsed, and every
    /// subtree that holds no placeholder reduced to the value each row renders it to, so rendering a row neither
    /// parses placeholders again nor walks what cannot change. Rendering a `Node` gives exactly what rendering the
    /// template value it came from gives (`Template.render`).
    indirect enum Node: Sendable {
        /// What every row renders the subtree to: it holds no placeholder (its empty objects and arrays, which
        /// rendering drops, already dropped) and no reference to rewrite.
        case constant(JSONValue)
        /// A subtree every row renders to nothing (empty objects and arrays, or ones holding only such).
        case dropped
        /// A string that is exactly one placeholder: the row's value as the placeholder's type.
        case value(Placeholder)
        /// Text with placeholders inside: the pieces joined; `first` is the first placeholder's column.
        case text([Placeholder.Piece], first: String)
        case array([Node])
        /// An object; `hasReference` when it has a `reference` member, which may name a once-per-patient
        /// entry's template fullUrl and is then rewritten to `resource:N`.
        case object([(key: String, value: Node)], hasReference: Bool)
    }

    /// A template entry compiled: its resource, and whether it is written once per row.
    struct CompiledEntry: Sendable {
        var resource: Node
        var repeats: Bool
        /// Its template fullUrl when it is written once per patient (references to it are rewritten).
        var onceURL: String?
    }

    /// Compiles the entries (`entries`): the resources as `Node`s.
    static func compile(_ entries: [(entry: JSONObject, repeats: Bool)]) -> [CompiledEntry] {
        var urls = Set<String>()
        for (entry, repeats) in entries where !repeats {
            if let url = entry["fullUrl"]?.stringValue { urls.insert(url) }
        }
        return entries.map { entry, repeats in
            CompiledEntry(
                resource: entry["resource"].map { compile($0, urls: urls) } ?? .dropped, repeats: repeats,
                onceURL: repeats ? nil : entry["fullUrl"]?.stringValue)
        }
    }

    /// The value a fixed node renders to (nil: dropped), or nil for a node that depends on the row.
    private static func fixed(_ node: Node) -> JSONValue?? {
        switch node {
        case .constant(let value): return .some(value)
        case .dropped: return .some(nil)
        default: return nil
        }
    }

    /// Compiles one template value; `urls` are the once-per-patient entries' template fullUrls.
    static func compile(_ node: JSONValue, urls: Set<String>) -> Node {
        switch node {
        case .string(let text):
            // A string that does not parse cannot be in a loaded template (`Placeholder.collect` refuses it);
            // rendering keeps it as written, as before.
            guard let pieces = try? Placeholder.pieces(of: text) else { return .constant(node) }
            var first: String?
            for piece in pieces {
                if case .placeholder(let p) = piece {
                    first = p.column
                    break
                }
            }
            // Without a placeholder the pieces are the text itself (one piece, or none for ""), joined as written.
            guard let first else { return .constant(node) }
            if pieces.count == 1, case .placeholder(let p) = pieces[0] { return .value(p) }
            return .text(pieces, first: first)
        case .array(let items):
            let nodes = items.map { compile($0, urls: urls) }
            let values = nodes.map(fixed)
            guard values.allSatisfy({ $0 != nil }) else { return .array(nodes) }
            let kept = values.compactMap { $0! }
            return kept.isEmpty ? .dropped : .constant(.array(kept))
        case .object(let object):
            let nodes = object.map { (key: $0.key, value: compile($0.value, urls: urls)) }
            let hasReference = object["reference"] != nil
            let values = nodes.map { fixed($0.value) }
            guard values.allSatisfy({ $0 != nil }) else { return .object(nodes, hasReference: hasReference) }
            var kept = JSONObject()
            for (member, value) in zip(nodes, values) {
                if let value = value! { kept[member.key] = value }
            }
            if kept.isEmpty { return .dropped }
            // A reference to a once-per-patient entry becomes `resource:N`, N known only when rendering.
            if let reference = kept["reference"]?.stringValue, urls.contains(reference) { return .object(nodes, hasReference: true) }
            return .constant(.object(kept))
        default:
            return .constant(node)
        }
    }

    /// What rendering one row into a compiled entry needs besides the row.
    struct RenderContext {
        /// Template fullUrl of each once-per-patient entry → its final index.
        var urlIndex: [String: Int]
        var dateFormat: DateFormat?
    }

    /// Renders a compiled value for one row; nil means "drop this element" (`renderValue` of the template value
    /// it came from). With a `path` (the FHIR path of the value in the output), `columns` records which column
    /// filled each value; without one, no path is built.
    static func render(
        _ node: Node, row: TemplateRow, context: RenderContext, path: String?, errors: inout [HealthCardError],
        columns: inout [String: String]
    ) -> JSONValue? {
        switch node {
        case .constant(let value):
            return value
        case .dropped:
            return nil
        case .value(let p):
            let value = row[p.column]
            if value.isEmpty { return nil }
            do {
                let typed = try Template.typedValue(value, as: p.type, dateFormat: context.dateFormat)
                if let path { columns[path] = p.column }
                return typed
            } catch {
                errors.append(HealthCardError(.template, code: error.code ?? .templateValue, error.text, at: "\(row.source) column \(p.column)"))
                return nil
            }
        case .text(let pieces, let first):
            var out = ""
            for piece in pieces {
                switch piece {
                case .text(let t): out += t
                case .placeholder(let p):
                    let value = row[p.column]
                    if value.isEmpty { return nil }
                    out += value
                }
            }
            if let path { columns[path] = first }
            return .string(out)
        case .array(let items):
            var kept: [JSONValue] = []
            kept.reserveCapacity(items.count)
            for item in items {
                if let r = render(item, row: row, context: context, path: path.map { "\($0)[\(kept.count)]" }, errors: &errors, columns: &columns) {
                    kept.append(r)
                }
            }
            return kept.isEmpty ? nil : .array(kept)
        case .object(let members, let hasReference):
            var kept = JSONObject(capacity: members.count)
            for (k, v) in members {
                // Template objects have unique keys (the parser refuses repeats), so each member is new.
                if let r = render(v, row: row, context: context, path: path.map { "\($0).\(k)" }, errors: &errors, columns: &columns) {
                    kept.append(k, r)
                }
            }
            if kept.isEmpty { return nil }
            if hasReference, let reference = kept["reference"]?.stringValue, let i = context.urlIndex[reference] {
                kept["reference"] = .string("resource:\(i)")
            }
            return .object(kept)
        }
    }
}
