/// A JSON value that keeps what the SMART Health Cards pipeline needs byte-exact:
/// object member order as written, and number lexemes as written (`1687450764.656` stays that text).
///
/// Foundation on Linux escapes `/` and reorders dictionary keys, so payloads never go through it
/// (digest section 3, "For Swift").
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number kept as its JSON lexeme (RFC 8259 section 6 grammar), e.g. `"4.0"` or `"1687450764"`;
    /// `JSONNumber` checks the lexeme when it is made, so a `JSONValue` never writes text that is not JSON.
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// An integer number value (written without fraction or exponent).
    public static func integer(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
    /// The number lexeme, for `.number`.
    public var numberLexeme: String? {
        if case .number(let n) = self { return n.lexeme }
        return nil
    }
    /// The number as a Double, for `.number`.
    public var doubleValue: Double? { numberLexeme.flatMap(Double.init) }

    /// What kind of JSON value this is, for a message about a member of the wrong type: "a string", "a number",
    /// "a boolean", "null", "an array" or "an object".
    package var typeName: String {
        switch self {
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// Member lookup on objects; nil for other kinds or absent members.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// Element lookup on arrays; nil for other kinds or an index out of range.
    public subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }

    /// True when both are the same JSON value in the RFC 8259 sense: object member order is ignored
    /// and numbers compare by value (`1.0` equals `1`).
    public func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)):
            return a == b || (Double(a.lexeme) != nil && Double(a.lexeme) == Double(b.lexeme))
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let theirs = b[key], value.isEquivalent(to: theirs) else { return false }
            }
            return true
        default: return false
        }
    }
}

/// A JSON object that keeps member order. Keys are unique; setting an existing key replaces its value
/// in place, setting a new key appends it.
///
/// Lookup and insertion take constant time: an object with more than `linearLimit` members keeps a
/// hash index of its keys beside the ordered list (small objects, the usual FHIR element, are searched
/// in order, which is faster at that size and allocates nothing). So parsing or building an object of
/// n members takes time in proportion to n, never n²: 100,000 members are parsed in milliseconds.
public struct JSONObject: Equatable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var members: [(key: String, value: JSONValue)]
    /// Position of each key in `members`; empty while `members.count <= linearLimit`.
    private var positions: [String: Int] = [:]

    /// Members searched in order before a key index is kept.
    static let linearLimit = 8

    public init() { members = [] }
    public init(_ members: [(String, JSONValue)]) {
        self.members = []
        for (k, v) in members { self[k] = v }
    }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// The position of `key` in `members`, or nil.
    private func position(of key: String) -> Int? {
        if members.count > Self.linearLimit { return positions[key] }
        return members.firstIndex(where: { $0.key == key })
    }

    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let index = position(of: key) {
                if let newValue { members[index].value = newValue } else { remove(at: index) }
            } else if let newValue {
                append(key, newValue)
            }
        }
    }

    /// An empty object with room for `capacity` members.
    package init(capacity: Int) {
        members = []
        members.reserveCapacity(capacity)
    }

    /// Appends a member whose key is known to be absent (the parser checks duplicates itself).
    package mutating func append(_ key: String, _ value: JSONValue) {
        members.append((key, value))
        if members.count > Self.linearLimit {
            if positions.isEmpty {
                positions.reserveCapacity(members.count * 2)
                for (i, member) in members.enumerated() { positions[member.key] = i }
            } else {
                positions[key] = members.count - 1
            }
        }
    }

    private mutating func remove(at index: Int) {
        members.remove(at: index)
        positions.removeAll(keepingCapacity: true)
        if members.count > Self.linearLimit {
            for (i, member) in members.enumerated() { positions[member.key] = i }
        }
    }

    /// Removes a member; returns its value if it was there.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let index = position(of: key) else { return nil }
        let value = members[index].value
        remove(at: index)
        return value
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { members.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// A JSON number as its lexeme: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259
/// section 6), kept as written so `4.50` stays `4.50` and `1687450764.656` is not rounded.
///
/// The lexeme is checked when a number is made: `init?(_:)` returns nil for anything else (`NaN`,
/// `1,000`, `0x10`, `+1`, `.5`, text with spaces), so no JSON value can carry text that would break
/// the JSON it is written into. No initializer traps: a lexeme that is not a number gives nil.
public struct JSONNumber: Hashable, Sendable, CustomStringConvertible {
    /// The number as written: ASCII, RFC 8259 grammar.
    public let lexeme: String

    /// A number from its lexeme; nil when `lexeme` is not an RFC 8259 number.
    public init?(_ lexeme: String) {
        guard Self.isValid(lexeme.utf8) else { return nil }
        self.lexeme = lexeme
    }

    /// An integer, written in decimal without sign for 0 and above.
    public init(_ value: Int64) { lexeme = String(value) }

    /// An unsigned integer, written in decimal.
    public init(_ value: UInt64) { lexeme = String(value) }

    /// `thousandths` / 1000 with three decimals (12345 → `12.345`, -5 → `-0.005`): a duration in milliseconds
    /// from microseconds, formatted without a string to validate.
    public init(thousandths: Int64) {
        let magnitude = thousandths.magnitude
        let fraction = magnitude % 1000
        var text = (thousandths < 0 ? "-" : "") + String(magnitude / 1000) + "."
        if fraction < 100 { text += fraction < 10 ? "00" : "0" }
        text += String(fraction)
        lexeme = text
    }

    /// A lexeme the parser has already checked.
    init(checked lexeme: String) { self.lexeme = lexeme }

    public var description: String { lexeme }

    /// True when `bytes` are exactly one RFC 8259 number.
    static func isValid<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        var i = bytes.startIndex
        func digit() -> Bool { i < bytes.endIndex && bytes[i] >= 0x30 && bytes[i] <= 0x39 }
        func digits() -> Bool {
            guard digit() else { return false }
            while digit() { i = bytes.index(after: i) }
            return true
        }
        if i < bytes.endIndex && bytes[i] == UInt8(ascii: "-") { i = bytes.index(after: i) }
        if i < bytes.endIndex && bytes[i] == UInt8(ascii: "0") {
            i = bytes.index(after: i)
        } else if !digits() {
            return false
        }
        if i < bytes.endIndex && bytes[i] == UInt8(ascii: ".") {
            i = bytes.index(after: i)
            guard digits() else { return false }
        }
        if i < bytes.endIndex && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            i = bytes.index(after: i)
            if i < bytes.endIndex && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) {
                i = bytes.index(after: i)
            }
            guard digits() else { return false }
        }
        return i == bytes.endIndex
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
