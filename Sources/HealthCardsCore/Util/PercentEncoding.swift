/// RFC 3986 percent-decoding (§2.1), the one the project's URI parsers share: a PKCS#11 URI's attributes
/// (RFC 7512) and the parameter names of a PostgreSQL URL, as libpq decodes them.
package enum PercentEncoding {
    /// `text` with every `%XX` (two hex digits, either case) replaced by its byte, read as UTF-8 (a byte that is not
    /// UTF-8 becomes U+FFFD); nil when a `%` is not followed by two hex digits. `+` is kept (it is a space only in
    /// form encoding).
    package static func decoded(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hex), let low = iterator.next().flatMap(hex) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value of one hex digit, or nil.
    static func hex(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
