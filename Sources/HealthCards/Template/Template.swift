/// A Bundle template: a FHIR R4 Bundle with `{{column}}` placeholders plus the metadata that turns
/// CSV rows into one Bundle per patient (see `docs/templates.md`).
///
/// File shape (JSON):
/// ```
/// {"name": "...", "description": "...", "patientKey": "recip_id", "eventKey": "vax_event_id",
///  "columns": {"recip_id": {"required": true, "description": "..."}, ...},
///  "repeat": ["urn:template:immunization"],
///  "bundle": {"resourceType": "Bundle", "type": "collection", "entry": [...]}}
/// ```
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
    /// The Bundle with placeholders; entry order is output order.
    var bundle: JSONObject
    /// Template entries: the entry, and whether it repeats per row.
    var entries: [(entry: JSONObject, repeats: Bool)]
    /// Columns used by entries that are written once per patient; rows of one patient must agree.
    public var patientColumns: Set<String>

    public func column(_ name: String) -> Column? { columns.first { $0.name == name } }

    /// Loads and checks a template file.
    /// - Throws: `HealthCardError(.template)` naming the problem: not JSON, a missing member, a
    ///   placeholder naming an undeclared column or an unknown type, a `repeat` fullUrl that matches no
    ///   entry, a reference to a repeated entry.
    public init(bytes: [UInt8], source: String) throws {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            throw HealthCardError(.template, "\(source) is not valid JSON: \(error)")
        }
        func fail(_ message: String) -> HealthCardError { HealthCardError(.template, "\(source): \(message)") }
        guard let root = json.objectValue else { throw fail("a template is a JSON object") }
        guard let name = root["name"]?.stringValue, !name.isEmpty else { throw fail("\"name\" (a string) is missing") }
        guard let patientKey = root["patientKey"]?.stringValue else {
            throw fail("\"patientKey\" (a column name) is missing")
        }
        guard let columnsObject = root["columns"]?.objectValue, !columnsObject.isEmpty else {
            throw fail("\"columns\" (an object of column name -> {\"required\": bool}) is missing")
        }
        guard let bundle = root["bundle"]?.objectValue, bundle["resourceType"]?.stringValue == "Bundle",
            let entryList = bundle["entry"]?.arrayValue, !entryList.isEmpty
        else { throw fail("\"bundle\" must be a FHIR Bundle with at least one entry") }
        self.name = name
        self.description = root["description"]?.stringValue ?? ""
        self.patientKey = patientKey
        self.eventKey = root["eventKey"]?.stringValue
        self.bundle = bundle
        var columns: [Column] = []
        for (columnName, spec) in columnsObject {
            columns.append(
                Column(
                    name: columnName, required: spec["required"] == .bool(true),
                    description: spec["description"]?.stringValue))
        }
        self.columns = columns
        guard let key = columns.first(where: { $0.name == patientKey }), key.required else {
            throw fail("patientKey '\(patientKey)' must be a declared, required column")
        }
        if let eventKey, !columns.contains(where: { $0.name == eventKey }) {
            throw fail("eventKey '\(eventKey)' is not a declared column")
        }
        let repeatURLs = Set((root["repeat"]?.arrayValue ?? []).compactMap(\.stringValue))
        var entries: [(JSONObject, Bool)] = []
        var fullUrls = Set<String>()
        for (i, item) in entryList.enumerated() {
            guard let entry = item.objectValue, entry["resource"]?.objectValue != nil else {
                throw fail("bundle.entry[\(i)] has no resource")
            }
            let url = entry["fullUrl"]?.stringValue ?? ""
            if !url.isEmpty && !fullUrls.insert(url).inserted {
                throw fail("bundle.entry[\(i)] repeats fullUrl '\(url)'")
            }
            entries.append((entry, repeatURLs.contains(url)))
        }
        for url in repeatURLs where !fullUrls.contains(url) {
            throw fail("\"repeat\" names '\(url)', which is no entry's fullUrl")
        }
        self.entries = entries
        // Check placeholders and references.
        var patientColumns = Set<String>()
        let declared = Set(columns.map(\.name))
        for (i, (entry, repeats)) in entries.enumerated() {
            var used: [(placeholder: Placeholder, path: String)] = []
            do { try Placeholder.collect(in: .object(entry), path: "bundle.entry[\(i)]", into: &used) } catch let error as HealthCardError {
                throw fail("\(error.location.map { "\($0): " } ?? "")\(error.message)")
            }
            for (placeholder, path) in used {
                guard declared.contains(placeholder.column) else {
                    throw fail("\(path): {{\(placeholder.column)}} names a column that is not declared in \"columns\"; declare it there or correct the name")
                }
                if !repeats { patientColumns.insert(placeholder.column) }
            }
            var references: [String] = []
            Template.collectReferences(.object(entry), into: &references)
            for reference in references where repeatURLs.contains(reference) {
                throw fail(
                    "bundle.entry[\(i)] refers to '\(reference)', an entry repeated per row; only entries written once per patient can be referred to"
                )
            }
        }
        patientColumns.insert(patientKey)
        self.patientColumns = patientColumns
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
