/// A JSON value that keeps what the SMART Health Cards pipeline needs byte-exact:
/// object member order as written, and number lexemes as written (`1687450764.656` stays that text).
///
/// Foundation on Linux escapes `/` and reorders dictionary keys, so payloads never go through it
/// (digest section 3, "For Swift").
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number kept as its JSON lexeme (RFC 8259 section 6 grammar), e.g. `"4.0"` or `"1687450764"`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// An integer number value (written without fraction or exponent).
    public static func integer(_ value: Int64) -> JSONValue { .number(String(value)) }

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
        if case .number(let n) = self { return n }
        return nil
    }
    /// The number as a Double, for `.number`.
    public var doubleValue: Double? { numberLexeme.flatMap(Double.init) }

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
        case (.number(let a), .number(let b)): return a == b || (Double(a) != nil && Double(a) == Double(b))
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
public struct JSONObject: Equatable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init() { members = [] }
    public init(_ members: [(String, JSONValue)]) {
        self.members = []
        for (k, v) in members { self[k] = v }
    }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    public subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key == key })?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    /// Removes a member; returns its value if it was there.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let index = members.firstIndex(where: { $0.key == key }) else { return nil }
        return members.remove(at: index).value
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { members.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
