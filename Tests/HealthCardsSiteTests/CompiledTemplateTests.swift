import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsSite
import HealthCardsTestSupport

/// A template is compiled once (`Template.Node`): rendering a row into the compiled form must give exactly what
/// walking the template value for that row gives. The walk below is the renderer as it was before compiling
/// (placeholders parsed per string, every path built), kept here as the reference.
@Suite struct CompiledTemplateTests {
    /// The reference: the template value rendered for one row, the column of each filled path recorded.
    static func walk(
        _ node: JSONValue, row: TemplateRow, path: String, dateFormat: DateFormat?, errors: inout [HealthCardError],
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
                    errors.append(HealthCardError(.template, code: error.code ?? .templateValue, error.text, at: "\(row.source) column \(p.column)"))
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
                if let r = walk(item, row: row, path: "\(path)[\(kept.count)]", dateFormat: dateFormat, errors: &errors, columns: &columns) {
                    kept.append(r)
                }
            }
            return kept.isEmpty ? nil : .array(kept)
        case .object(let object):
            var kept = JSONObject()
            for (k, v) in object {
                if let r = walk(v, row: row, path: "\(path).\(k)", dateFormat: dateFormat, errors: &errors, columns: &columns) { kept[k] = r }
            }
            return kept.isEmpty ? nil : .object(kept)
        default:
            return node
        }
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

    /// Empty objects and arrays (dropped), fixed subtrees that refer to the once-per-patient entry (rewritten), a
    /// reference filled by a placeholder, interpolated text, typed values, and a value that is not of its type.
    static let template = #"""
        {"name": "t", "patientKey": "id", "eventKey": "ev", "repeat": ["urn:template:dose"],
         "columns": {"id": {"required": true}, "ev": {"required": true}, "given": {}, "date": {}, "n": {}, "ref": {},
                     "flag": {}, "dose": {}},
         "bundle": {"resourceType": "Bundle", "type": "collection", "entry": [
           {"fullUrl": "urn:template:patient", "resource": {"resourceType": "Patient", "name": [{"given": ["{{given}}"], "family": "Fixed"}],
              "empty": {}, "none": [], "nested": {"a": {}, "b": [[], {}]}, "birthDate": "{{date|date}}"}},
           {"fullUrl": "urn:template:dose", "resource": {"resourceType": "Immunization", "status": "completed",
              "patient": {"reference": "urn:template:patient"}, "other": {"reference": "{{ref}}"},
              "deep": [{"x": {"reference": "urn:template:patient", "display": "fixed"}}],
              "note": [{"text": "Dose {{dose}} of {{n}}"}], "doseNumber": "{{n|integer}}", "primary": "{{flag|boolean}}",
              "occurrenceDateTime": "{{date|date}}", "lotNumber": "{{ev}}-{{given}}"}}]}}
        """#

    @Test func compiledRenderingEqualsTheWalk() throws {
        let template = try Template(bytes: Array(Self.template.utf8), source: "t.json")
        let rows: [[String: String]] = [
            ["id": "A", "ev": "1", "given": "Ann", "date": "2021-01-02", "n": "2", "ref": "urn:template:patient", "flag": "true", "dose": "1"],
            ["id": "A", "ev": "2", "given": "", "date": "", "n": "", "ref": "Patient/elsewhere", "flag": "", "dose": ""],
            ["id": "A", "ev": "3", "given": "Bo", "date": "2021-13-40", "n": "2.5", "ref": "", "flag": "maybe", "dose": "3"],
        ]
        var sawRewrittenPlaceholder = false
        for (r, values) in rows.enumerated() {
            let row = TemplateRow(values: values, source: "in.csv:\(r + 2)")
            var urlIndex: [String: Int] = [:]
            var at = 0
            for entry in template.compiled {
                if let url = entry.onceURL { urlIndex[url] = at }
                at += entry.repeats ? 2 : 1
            }
            for (i, entry) in template.compiled.enumerated() {
                let original = template.entries[i].entry["resource"]!
                var expectedErrors: [HealthCardError] = []
                var expectedColumns: [String: String] = [:]
                var expected = Self.walk(
                    original, row: row, path: "Bundle.entry[\(i)].resource", dateFormat: template.dateFormat, errors: &expectedErrors,
                    columns: &expectedColumns)
                if var value = expected {
                    Self.rewriteReferences(&value, urlIndex: urlIndex)
                    expected = value
                }
                var errors: [HealthCardError] = []
                var columns: [String: String] = [:]
                let context = Template.RenderContext(urlIndex: urlIndex, dateFormat: template.dateFormat)
                let rendered = Template.render(
                    entry.resource, row: row, context: context, path: "Bundle.entry[\(i)].resource", errors: &errors, columns: &columns)
                #expect(rendered.map { JSONWriter.minified($0) } == expected.map { JSONWriter.minified($0) }, "row \(r), entry \(i)")
                #expect(columns == expectedColumns, "row \(r), entry \(i)")
                func described(_ e: [HealthCardError]) -> [String] { e.map { "\($0.location.description) \($0.code.map { "\($0)" } ?? ""): \($0.text)" } }
                #expect(described(errors) == described(expectedErrors), "row \(r), entry \(i)")
                if r == 2, i == 1 { #expect(errors.count == 3, "the date, the integer and the boolean of row 4 are refused: \(described(errors))") }
                // Without a path the value is the same and no column is recorded.
                var none: [String: String] = [:]
                var errors2: [HealthCardError] = []
                let unpathed = Template.render(entry.resource, row: row, context: context, path: nil, errors: &errors2, columns: &none)
                #expect(unpathed.map { JSONWriter.minified($0) } == rendered.map { JSONWriter.minified($0) } && none.isEmpty)
                if r == 0, i == 1 { sawRewrittenPlaceholder = rendered?["other"]?["reference"] == .string("resource:0") }
            }
        }
        #expect(sawRewrittenPlaceholder, "a reference filled by a placeholder that names the patient entry is rewritten")
    }

    /// What compiling reduces: the Patient's empty members are gone at load time, and its fixed name part is a constant.
    @Test func fixedSubtreesAreReducedOnce() throws {
        let template = try Template(bytes: Array(Self.template.utf8), source: "t.json")
        guard case .object(let members, _) = template.compiled[0].resource else {
            Issue.record("the Patient has a placeholder, so it is compiled as an object")
            return
        }
        let byKey = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
        for dropped in ["empty", "none", "nested"] {
            guard case .dropped = byKey[dropped] else { Issue.record("\(dropped) renders to nothing for every row"); continue }
        }
        guard case .constant(.string("Patient")) = byKey["resourceType"] else { Issue.record("resourceType is fixed"); return }
        // The Immunization's fixed reference to the patient entry stays a structure: N is known only per patient.
        guard case .object(let imm, _) = template.compiled[1].resource,
            case .object(_, let hasReference) = Dictionary(uniqueKeysWithValues: imm.map { ($0.key, $0.value) })["patient"]
        else {
            Issue.record("the reference to the patient entry is rewritten per patient")
            return
        }
        #expect(hasReference)
    }
}
