import HealthCardsCore
import HealthCardsVerify

/// A Bundle template: a FHIR R4 Bundle with `{{column}}` placeholders plus the metadata that turns
/// CSV rows into one Bundle per patient (see `docs/templates.md`).
///
/// File shape (JSON):
/// ```
/// {"name": "...", "description": "...", "patientKey": "recip_id", "eventKey": "vax_event_id",
///  "dateFormat": "MM/DD/YYYY", "delimiter": ";",
///  "columns": {"recip_id": {"required": true, "description": "..."}, ...},
///  "repeat": ["urn:template:immunization"],
///  "bundle": {"resourceType": "Bundle", "type": "collection", "entry": [...]}}
/// ```
/// `Template.members` lists every member; any other is refused (a misspelled `dateFormat` must not be
/// ignored).
/// Entries whose `fullUrl` is listed in `repeat` are written once per input row of the patient; the
/// others once per patient. Placeholders: a JSON string that is exactly `{{column}}` or
/// `{{column|type}}` becomes a typed value; `{{column}}` inside longer text is interpolated.
public struct Template: Sendable {
    /// A column the template reads.
    public struct Column: Sendable {
        public var name: String
        public var required: Bool
        public var description: String?
    }

    public var name: String
    public var description: String
    /// The column whose value identifies a patient; rows that share it form one Bundle.
    public var patientKey: String
    /// An optional column identifying one event (a dose, a test); repeats within a patient are
    /// reported once as duplicates and counted once.
    public var eventKey: String?
    /// Columns by name, in file order.
    public var columns: [Column]
    /// The export's date format (`dateFormat`); nil reads `YYYY-MM-DD` only.
    public var dateFormat: DateFormat?
    /// The byte between fields of the CSV export (`delimiter`): `,` (the default), `;`, tab or `|`.
    public var delimiter: UInt8
    /// The Bundle with placeholders; entry order is output order.
    var bundle: JSONObject
    /// Template entries: the entry, and whether it repeats per row.
    var entries: [(entry: JSONObject, repeats: Bool)]
    /// `entries` compiled once (placeholders parsed, fixed subtrees reduced), what each row is rendered into.
    var compiled: [CompiledEntry]
    /// Columns used by entries that are written once per patient; rows of one patient must agree.
    public var patientColumns: Set<String>

    public func column(_ name: String) -> Column? { columns.first { $0.name == name } }

    /// Every member a template may have, in the order `docs/templates.md` describes them.
    public static let members = [
        "name", "description", "patientKey", "eventKey", "dateFormat", "delimiter", "columns", "repeat", "bundle",
    ]
    /// Every member a column may have.
    public static let columnMembers = ["required", "description"]
    /// The delimiters a template may name, and how messages call them.
    static let delimiters: [(byte: UInt8, text: String, name: String)] = [
        (0x2C, ",", "','"), (0x3B, ";", "';'"), (0x09, "\t", "tab"), (0x7C, "|", "'|'"),
    ]

    /// Loads and checks a template file.
    /// - Throws: `HealthCardError(.template)` naming the problem: not JSON, a missing member, a
    ///   placeholder naming an undeclared column or an unknown type, a `repeat` fullUrl that matches no
    ///   entry, a reference to a repeated entry.
    public init(bytes: [UInt8], source: String) throws {
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
            throw HealthCardError(.template, "\(source) is not valid JSON: \(error)")
        }
        func fail(_ message: String) -> HealthCardError { HealthCardError(.template, "\(source): \(message)") }
        guard let root = json.objectValue else { throw fail("a template is a JSON object") }
        if let problem = Self.unknownMember(in: root, known: Self.members, what: "a template") { throw fail(problem) }
        /// A string member: nil when absent; a value of another type is named as such, not as missing.
        func string(_ member: String, _ what: String) throws -> String? {
            guard let value = root[member] else { return nil }
            guard let text = value.stringValue else {
                throw fail("\"\(member)\" must be a string (\(what)), found \(value.typeName) \(quoted(value))")
            }
            return text
        }
        guard let name = try string("name", "the template's name"), !name.isEmpty else {
            throw fail(root["name"] == nil ? "\"name\" (a string) is missing" : "\"name\" is empty; give the template a name")
        }
        guard let patientKey = try string("patientKey", "a column name") else {
            throw fail("\"patientKey\" (a column name) is missing")
        }
        let description = try string("description", "what the template is for")
        let eventKey = try string("eventKey", "a column name")
        guard let columnsValue = root["columns"] else {
            throw fail("\"columns\" (an object of column name -> {\"required\": bool}) is missing")
        }
        guard let columnsObject = columnsValue.objectValue, !columnsObject.isEmpty else {
            throw fail("\"columns\" must be an object of column name -> {\"required\": bool} with at least one column, found "
                + "\(columnsValue.typeName) \(quoted(columnsValue))")
        }
        guard let bundle = root["bundle"]?.objectValue, bundle["resourceType"]?.stringValue == "Bundle",
            let entryList = bundle["entry"]?.arrayValue, !entryList.isEmpty
        else { throw fail("\"bundle\" must be a FHIR Bundle with at least one entry") }
        self.name = name
        self.description = description ?? ""
        self.patientKey = patientKey
        self.eventKey = eventKey
        self.bundle = bundle
        do {
            self.dateFormat = try root["dateFormat"].map { value throws(HealthCardError) in
                guard let text = value.stringValue else { throw HealthCardError(.template, "\"dateFormat\" must be a string such as \"MM/DD/YYYY\"") }
                return try DateFormat(text)
            }
            self.delimiter = try Self.delimiter(root["delimiter"])
        } catch { throw fail(error.text) }
        var columns: [Column] = []
        for (columnName, spec) in columnsObject {
            let column = "column \(Quote.text(columnName))"
            guard let specObject = spec.objectValue else {
                throw fail("\(column) must be an object such as {\"required\": true, \"description\": \"...\"}")
            }
            if let problem = Self.unknownMember(in: specObject, known: Self.columnMembers, what: column) {
                throw fail(problem)
            }
            var required = false
            if let value = specObject["required"] {
                guard value == .bool(true) || value == .bool(false) else {
                    throw fail("\(column) has \"required\": \(quoted(value)) (\(value.typeName)); \"required\" is true or false")
                }
                required = value == .bool(true)
            }
            if let value = specObject["description"], value.stringValue == nil {
                throw fail("\(column) has \"description\": \(quoted(value)) (\(value.typeName)); a description is a string")
            }
            columns.append(Column(name: columnName, required: required, description: specObject["description"]?.stringValue))
        }
        self.columns = columns
        guard let key = columns.first(where: { $0.name == patientKey }) else {
            throw fail("patientKey \(Quote.text(patientKey)) is not a declared column; declare it in \"columns\" with \"required\": true")
        }
        guard key.required else {
            throw fail("patientKey \(Quote.text(patientKey)) must be a required column (every row names its patient): give it "
                + "\"required\": true")
        }
        if let eventKey, !columns.contains(where: { $0.name == eventKey }) {
            throw fail("eventKey \(Quote.text(eventKey)) is not a declared column")
        }
        guard let repeatList = root["repeat"] else {
            throw fail("\"repeat\" is missing: list the fullUrls of the entries written once per input row (one Immunization per dose, "
                + "e.g. \"repeat\": [\"urn:template:immunization\"]), or give [] when every patient has exactly one row. Without it, "
                + "a patient's second row could only disagree with the first")
        }
        guard let repeatItems = repeatList.arrayValue, repeatItems.allSatisfy({ $0.stringValue != nil }) else {
            throw fail("\"repeat\" must be a list of entry fullUrls (strings), e.g. [\"urn:template:immunization\"]")
        }
        let repeatURLs = Set(repeatItems.compactMap(\.stringValue))
        var entries: [(JSONObject, Bool)] = []
        var fullUrls = Set<String>()
        for (i, item) in entryList.enumerated() {
            guard let entry = item.objectValue, entry["resource"]?.objectValue != nil else {
                throw fail("bundle.entry[\(i)] has no resource")
            }
            let url = entry["fullUrl"]?.stringValue ?? ""
            if !url.isEmpty && !fullUrls.insert(url).inserted {
                throw fail("bundle.entry[\(i)] repeats fullUrl \(Quote.text(url))")
            }
            entries.append((entry, repeatURLs.contains(url)))
        }
        for url in repeatURLs where !fullUrls.contains(url) {
            throw fail("\"repeat\" names \(Quote.text(url)), which is no entry's fullUrl")
        }
        self.entries = entries
        self.compiled = Self.compile(entries)
        // Check placeholders and references.
        var patientColumns = Set<String>()
        let declared = Set(columns.map(\.name))
        for (i, (entry, repeats)) in entries.enumerated() {
            var used: [(placeholder: Placeholder, path: String)] = []
            do { try Placeholder.collect(in: .object(entry), path: "bundle.entry[\(i)]", into: &used) } catch let error as HealthCardError {
                throw fail("\(error.location.isEmpty ? "" : "\(error.location): ")\(error.text)")
            }
            for (placeholder, path) in used {
                guard declared.contains(placeholder.column) else {
                    let near = Self.nearest(placeholder.column, among: columns.map(\.name)).map { " (did you mean {{\($0)}}?)" } ?? ""
                    throw fail("\(path): {{\(ControlCharacters.escaped(placeholder.column))}} names a column that is not declared in \"columns\"\(near); declare it there or correct the name")
                }
                if !repeats { patientColumns.insert(placeholder.column) }
            }
            var references: [String] = []
            Template.collectReferences(.object(entry), into: &references)
            for reference in references where repeatURLs.contains(reference) {
                throw fail(
                    "bundle.entry[\(i)] refers to \(Quote.text(reference)), an entry repeated per row; only entries written once per patient can be referred to"
                )
            }
        }
        patientColumns.insert(patientKey)
        self.patientColumns = patientColumns
    }

    /// Why `object` has a member outside `known` (its name, the known ones, and the closest known name
    /// when one is near), or nil.
    static func unknownMember(in object: JSONObject, known: [String], what: String) -> String? {
        guard let unknown = object.keys.first(where: { !known.contains($0) }) else { return nil }
        let close = known.min { editDistance($0.lowercased(), unknown.lowercased()) < editDistance($1.lowercased(), unknown.lowercased()) }
        let suggestion = close.flatMap { editDistance($0.lowercased(), unknown.lowercased()) <= 2 ? " (did you mean \"\($0)\"?)" : nil } ?? ""
        return "\(what) has the member \"\(ControlCharacters.escaped(unknown))\", which templates do not have\(suggestion); "
            + "the members are \(known.map { "\"\($0)\"" }.joined(separator: ", ")). Correct or remove it"
    }

    /// The name among `names` closest to `name` (case ignored) when it is a likely misspelling of it: at most two
    /// edits away, and fewer edits than the name is long. Nil when none is that close.
    static func nearest(_ name: String, among names: [String]) -> String? {
        let lowered = name.lowercased()
        let scored = names.filter { $0 != name }.map { ($0, editDistance($0.lowercased(), lowered)) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 < max(name.count, 2) else { return nil }
        return best.0
    }

    /// Levenshtein distance, for member names (short; capped at 64 characters each).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a.unicodeScalars.prefix(64)), y = Array(b.unicodeScalars.prefix(64))
        guard !x.isEmpty, !y.isEmpty else { return max(x.count, y.count) }
        var row = Array(0...y.count)
        for i in 1...x.count {
            var diagonal = row[0]
            row[0] = i
            for j in 1...y.count {
                let above = row[j]
                row[j] = min(above + 1, row[j - 1] + 1, diagonal + (x[i - 1] == y[j - 1] ? 0 : 1))
                diagonal = above
            }
        }
        return row[y.count]
    }

    /// The delimiter byte a template names (default `,`).
    static func delimiter(_ value: JSONValue?) throws(HealthCardError) -> UInt8 {
        guard let value else { return 0x2C }
        let expected = "expected one of \",\" (the default), \";\", \"\\t\" (tab) or \"|\""
        guard let text = value.stringValue else { throw HealthCardError(.template, "\"delimiter\" must be a string; \(expected)") }
        guard text.utf8.count == 1, let byte = text.utf8.first, let known = delimiters.first(where: { $0.byte == byte }) else {
            throw HealthCardError(.template, "\"delimiter\" \(Quote.text(text)) is not a delimiter templates know; \(expected)")
        }
        return known.byte
    }

    /// How messages call a delimiter byte: `','`, `';'`, `tab`, `'|'`.
    static func delimiterName(_ byte: UInt8) -> String {
        delimiters.first { $0.byte == byte }?.name ?? "'\(String(decoding: [byte], as: UTF8.self))'"
    }

    static func collectReferences(_ node: JSONValue, into out: inout [String]) {
        switch node {
        case .object(let o):
            if let r = o["reference"]?.stringValue { out.append(r) }
            for (_, v) in o { collectReferences(v, into: &out) }
        case .array(let a): for v in a { collectReferences(v, into: &out) }
        default: break
        }
    }
}
