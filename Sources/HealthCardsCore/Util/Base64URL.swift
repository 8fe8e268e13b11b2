/// Base64 in the URL-safe alphabet without padding (RFC 4648 section 5), as JWS, kid and rid use
/// (digest sections 1 and 8); and standard base64 with padding, as `x5c` uses (digest section 7).
public enum Base64URL {
    private static let urlAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let stdAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let urlDecodeTable: [Int8] = table(urlAlphabet)
    private static let stdDecodeTable: [Int8] = table(stdAlphabet)

    private static func table(_ alphabet: [UInt8]) -> [Int8] {
        var t = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = Int8(i) }
        return t
    }

    /// Encodes bytes as base64url without padding: 4 characters per 3 bytes, rounded up.
    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        String(decoding: encodeBytes(bytes, alphabet: urlAlphabet, pad: false), as: UTF8.self)
    }

    /// Encodes bytes as base64url into ASCII bytes (no padding).
    public static func encodeBytes<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        encodeBytes(bytes, alphabet: urlAlphabet, pad: false)
    }

    /// Encodes bytes as standard base64 with `+`, `/` and `=` padding (RFC 4648 section 4).
    public static func encodeStandard<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        String(decoding: encodeBytes(bytes, alphabet: stdAlphabet, pad: true), as: UTF8.self)
    }

    private static func encodeBytes<Bytes: Collection>(_ input: Bytes, alphabet: [UInt8], pad: Bool) -> [UInt8]
    where Bytes.Element == UInt8 {
        let bytes = Array(input)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if pad { out.append(contentsOf: [61, 61]) }
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            if pad { out.append(61) }
        }
        return out
    }

    /// Decodes base64url without padding. Returns nil for any character outside the alphabet, for
    /// padding, or for a length of 1 modulo 4, or non-zero trailing bits (non-canonical text).
    public static func decode<Chars: Collection>(_ text: Chars) -> [UInt8]? where Chars.Element == UInt8 {
        decode(Array(text), table: urlDecodeTable, padded: false)
    }

    /// Decodes base64url text from a String.
    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }

    /// Decodes standard base64 with required `=` padding.
    public static func decodeStandard(_ text: String) -> [UInt8]? {
        decode(Array(text.utf8), table: stdDecodeTable, padded: true)
    }

    private static func decode(_ input: [UInt8], table: [Int8], padded: Bool) -> [UInt8]? {
        var chars = input
        if padded {
            guard chars.count % 4 == 0 else { return nil }
            while chars.last == 61 { chars.removeLast() }
            guard input.count - chars.count <= 2 else { return nil }
        }
        if chars.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        // Through buffer pointers (the table holds 256 entries, so any byte indexes it): a location GET decodes 118
        // characters, and the checked loop was 2 % of its instructions by callgrind.
        let valid = table.withUnsafeBufferPointer { table -> Bool in
            precondition(table.count == 256)
            return chars.withUnsafeBufferPointer { chars -> Bool in
                for c in chars {
                    let v = table[Int(c)]
                    if v < 0 { return false }
                    acc = acc << 6 | UInt32(v)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                    }
                }
                return true
            }
        }
        guard valid else { return nil }
        if bits > 0 && acc & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }
}
