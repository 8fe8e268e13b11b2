/// A strict RFC 8259 JSON parser over UTF-8 bytes that keeps member order and number lexemes.
///
/// It rejects: a byte order mark, trailing content, duplicate object members, lone surrogate
/// escapes, invalid UTF-8, unescaped control characters in strings, and nesting deeper than
/// `maxDepth`.
public struct JSONParser {
    /// A parse failure, with the 0-based byte offset and 1-based line and column where it was found: what the
    /// package's own readers switch on (`parseFailing`). A client gets it as `HealthCardError` (`parse`).
    package struct Failure: Swift.Error, CustomStringConvertible, Equatable, Sendable {
        package var message: String
        package var offset: Int
        package var line: Int
        package var column: Int
        package var description: String { "\(message) at line \(line), column \(column) (byte \(offset))" }

        /// The failure as the library's error: kind `.input`, code `JSON_INVALID`, the text `description` gives,
        /// and the place in `location` (`line`, and `offset`, the 0-based byte).
        package var healthCardError: HealthCardError {
            HealthCardError(.input, description, code: .jsonInvalid, location: .init(line: line, offset: offset))
        }
    }

    /// Deepest nesting of arrays and objects accepted.
    public static let maxDepth = 256

    /// Parses one JSON text.
    /// - Parameter bytes: UTF-8 JSON, with optional surrounding whitespace; no BOM.
    /// - Throws: `HealthCardError` of kind `.input` with code `JSON_INVALID`, saying what was found and where
    ///   ("… at line L, column C (byte B)"); `location.line` and `location.offset` (the 0-based byte) say it too.
    public static func parse<Bytes: Collection>(_ bytes: Bytes) throws(HealthCardError) -> JSONValue
    where Bytes.Element == UInt8 {
        do { return try parseFailing(bytes) } catch { throw error.healthCardError }
    }

    /// Parses one JSON text from a String.
    /// - Throws: `HealthCardError` with code `JSON_INVALID`, as `parse(_:)` on bytes does.
    public static func parse(_ text: String) throws(HealthCardError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses one JSON text, throwing the parser's own failure (message, offset, line, column) for the readers in
    /// this package that turn it into their own rule's finding.
    package static func parseFailing<Bytes: Collection>(_ bytes: Bytes) throws(Failure) -> JSONValue
    where Bytes.Element == UInt8 {
        let array = Array(bytes)
        var parser = JSONParser(bytes: array)
        return try parser.parseDocument()
    }

    /// `parseFailing(_:)` on a String.
    package static func parseFailing(_ text: String) throws(Failure) -> JSONValue {
        try parseFailing(Array(text.utf8))
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func fail(_ message: String, at offset: Int? = nil) -> Failure {
        let at = min(offset ?? index, bytes.count)
        var line = 1
        var lineStart = 0
        var i = 0
        while i < at {
            if bytes[i] == 0x0A {
                line += 1
                lineStart = i + 1
            }
            i += 1
        }
        return Failure(message: message, offset: at, line: line, column: at - lineStart + 1)
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private mutating func parseDocument() throws(Failure) -> JSONValue {
        if bytes.starts(with: UTF8BOM.bytes) {
            throw fail("JSON text starts with a UTF-8 byte order mark; save it as UTF-8 without BOM", at: 0)
        }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count {
            throw fail("unexpected \(describe(bytes[index])) after the end of the JSON value")
        }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of JSON text; a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(JSONNumber(checked: try parseNumber()))
        default: throw fail("unexpected \(describe(bytes[index])); a JSON value was expected")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let text = literal.withUTF8Buffer { Array($0) }
        guard bytes.count - index >= text.count, Array(bytes[index..<index + text.count]) == text else {
            throw fail("invalid literal; expected \(literal)")
        }
        index += text.count
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        if depth > JSONParser.maxDepth { throw fail("nesting deeper than \(JSONParser.maxDepth) levels") }
    }

    private mutating func parseObject() throws(Failure) -> JSONValue {
        try enter()
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a member name in double quotes")
            }
            let keyStart = index
            let key = try parseString()
            if object[key] != nil { throw fail("duplicate member name \"\(key)\"", at: keyStart) }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw fail("expected ':' after member name \"\(key)\"")
            }
            index += 1
            skipWhitespace()
            object.append(key, try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON text inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(object)
            }
            throw fail("expected ',' or '}' in an object, found \(describe(bytes[index]))")
        }
    }

    private mutating func parseArray() throws(Failure) -> JSONValue {
        try enter()
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON text inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(items)
            }
            throw fail("expected ',' or ']' in an array, found \(describe(bytes[index]))")
        }
    }

    private mutating func parseNumber() throws(Failure) -> String {
        let start = index
        func digit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, digit(bytes[index]) else { throw fail("a digit was expected in a number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count && digit(bytes[index]) { throw fail("numbers must not have leading zeros") }
        } else {
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, digit(bytes[index]) else { throw fail("a digit was expected after '.'") }
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard index < bytes.count, digit(bytes[index]) else { throw fail("a digit was expected in exponent") }
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseHex4() throws(Failure) -> UInt16 {
        guard bytes.count - index >= 4 else { throw fail("incomplete \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let nibble: UInt16
            switch b {
            case 0x30...0x39: nibble = UInt16(b - 0x30)
            case 0x41...0x46: nibble = UInt16(b - 0x41 + 10)
            case 0x61...0x66: nibble = UInt16(b - 0x61 + 10)
            default: throw fail("invalid hex digit in \\u escape")
            }
            value = value << 4 | nibble
            index += 1
        }
        return value
    }

    private mutating func parseString() throws(Failure) -> String {
        let start = index
        index += 1
        var out: [UInt8] = []
        var runStart = index
        while true {
            guard index < bytes.count else { throw fail("unterminated string", at: start) }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                out.append(contentsOf: bytes[runStart..<index])
                index += 1
                break
            }
            if b < 0x20 { throw fail("unescaped control character \(describe(b)) in a string") }
            if b == UInt8(ascii: "\\") {
                out.append(contentsOf: bytes[runStart..<index])
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    let unit = try parseHex4()
                    var scalarValue = UInt32(unit)
                    if unit >= 0xD800 && unit < 0xDC00 {
                        guard bytes.count - index >= 6, bytes[index] == 0x5C, bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("lone high surrogate in \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw fail("invalid low surrogate in \\u escape") }
                        scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    } else if unit >= 0xDC00 && unit < 0xE000 {
                        throw fail("lone low surrogate in \\u escape")
                    }
                    // Surrogates were excluded above, so every value here is a Unicode scalar.
                    guard let scalar = Unicode.Scalar(scalarValue) else { throw fail("invalid \\u escape") }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: throw fail("invalid escape \\\(Character(Unicode.Scalar(e)))")
                }
                runStart = index
                continue
            }
            index += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw fail("string is not valid UTF-8", at: start)
        }
        return text
    }
}
