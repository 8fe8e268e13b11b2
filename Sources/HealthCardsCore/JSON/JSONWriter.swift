/// Writes `JSONValue`s as UTF-8 JSON text the way ECMAScript `JSON.stringify` does, which is what
/// the spec's generator used: member order kept, `/` not escaped, non-ASCII written raw, control
/// characters escaped, number lexemes written as kept.
public enum JSONWriter {
    /// Minified JSON (no whitespace at all), as the JWS payload requires (digest section 3).
    public static func minified(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, into: &out, indent: nil, depth: 0)
        return out
    }

    /// Minified JSON as a String.
    public static func minifiedString(_ value: JSONValue) -> String {
        String(decoding: minified(value), as: UTF8.self)
    }

    /// Pretty JSON with `indent` spaces per level (2 by default), as `JSON.stringify(v, null, 2)`.
    /// No final newline.
    public static func pretty(_ value: JSONValue, indent: Int = 2) -> [UInt8] {
        var out: [UInt8] = []
        write(value, into: &out, indent: indent, depth: 0)
        return out
    }

    /// Appends the minified JSON of `value` to `out`.
    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        write(value, into: &out, indent: nil, depth: 0)
    }

    private static func newline(_ out: inout [UInt8], _ indent: Int?, _ depth: Int) {
        guard let indent else { return }
        out.append(0x0A)
        out.append(contentsOf: repeatElement(0x20, count: indent * depth))
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8], indent: Int?, depth: Int) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.lexeme.utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            if items.isEmpty {
                out.append(UInt8(ascii: "]"))
                return
            }
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(&out, indent, depth + 1)
                write(item, into: &out, indent: indent, depth: depth + 1)
            }
            newline(&out, indent, depth)
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            if object.isEmpty {
                out.append(UInt8(ascii: "}"))
                return
            }
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(&out, indent, depth + 1)
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if indent != nil { out.append(0x20) }
                write(member.value, into: &out, indent: indent, depth: depth + 1)
            }
            newline(&out, indent, depth)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes a JSON string literal: `"` and `\\` escaped, C0 controls as `\\b \\f \\n \\r \\t` or `\\u00XX`.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // The runs of bytes that need no escape are copied whole (a native string's UTF-8 is contiguous).
        let copied: Void? = s.utf8.withContiguousStorageIfAvailable { bytes in
            var start = 0
            for i in 0..<bytes.count where bytes[i] == 0x22 || bytes[i] == 0x5C || bytes[i] < 0x20 {
                if i > start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i])) }
                escape(bytes[i], into: &out)
                start = i + 1
            }
            if bytes.count > start { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
        }
        if copied == nil {
            for byte in s.utf8 {
                if byte == 0x22 || byte == 0x5C || byte < 0x20 { escape(byte, into: &out) } else { out.append(byte) }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The escape of a byte that cannot stand in a JSON string as it is: `"`, `\\` or a C0 control.
    private static func escape(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
        case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
        case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
        case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        default:
            out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
    }
}
