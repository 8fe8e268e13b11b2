import HealthCardsCore
import HealthCardsVerify

/// A `{{column}}` or `{{column|type}}` placeholder in a template (see `docs/templates.md`).
struct Placeholder: Sendable, Equatable {
    /// How a placeholder's text becomes a JSON value.
    enum ValueType: String, Sendable, CaseIterable {
        /// The trimmed text as a JSON string.
        case string
        /// A FHIR `code`: trimmed, no line breaks or tabs.
        case code
        /// A FHIR `date`: `YYYY-MM-DD`, a real calendar date.
        case date
        /// A FHIR `dateTime`: `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ss` with a time zone.
        case dateTime
        /// A FHIR `decimal`: written as a JSON number with exactly the digits given (`4.50` stays `4.50`).
        case decimal
        /// A FHIR `integer`.
        case integer
        /// `true` or `false`.
        case boolean
    }

    var column: String
    var type: ValueType

    /// Parses the inside of `{{…}}`.
    static func parse(_ inner: Substring) throws(HealthCardError) -> Placeholder {
        let parts = inner.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " ") }
        guard parts.count <= 2, let column = parts.first, !column.isEmpty else {
            throw HealthCardError(
                .template, "placeholder {{\(inner)}} is not of the form {{column}} or {{column|type}}")
        }
        var type = ValueType.string
        if parts.count == 2 {
            guard let t = ValueType(rawValue: parts[1]) else {
                throw HealthCardError(
                    .template,
                    "placeholder {{\(inner)}} has unknown type \(Quote.text(parts[1])); expected one of "
                        + ValueType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            type = t
        }
        return Placeholder(column: column, type: type)
    }

    /// A template string split into literal text and placeholders.
    enum Piece: Sendable, Equatable {
        case text(String)
        case placeholder(Placeholder)
    }

    /// Splits `text` into pieces. A `{{` without a closing `}}` is an error.
    static func pieces(of text: String) throws(HealthCardError) -> [Piece] {
        var out: [Piece] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { out.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw HealthCardError(.template, "\(Quote.text(text)) opens a placeholder with {{ but never closes it with }}")
            }
            out.append(.placeholder(try parse(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { out.append(.text(String(rest))) }
        return out
    }

    /// Every placeholder under `node`, in document order, with the path of the string holding it
    /// (`path` is the path of `node`, e.g. `bundle.entry[1]`; members add `.name`, items `[i]`).
    /// - Throws: `HealthCardError(.template)` for a malformed placeholder, located at its path.
    static func collect(in node: JSONValue, path: String, into out: inout [(placeholder: Placeholder, path: String)]) throws {
        switch node {
        case .string(let s):
            let found: [Piece]
            do { found = try pieces(of: s) } catch { throw HealthCardError(error.kind, error.text, at: path) }
            for piece in found { if case .placeholder(let p) = piece { out.append((p, path)) } }
        case .array(let a): for (i, v) in a.enumerated() { try collect(in: v, path: "\(path)[\(i)]", into: &out) }
        case .object(let o): for (k, v) in o { try collect(in: v, path: "\(path).\(k)", into: &out) }
        default: break
        }
    }
}
