/// The `shc:/` QR text of a JWS (digest section 6): a byte segment `shc:/` (plus `C/N/` when chunked)
/// and a numeric segment with two digits `ord(c) - 45` per JWS character.
public enum QRNumeric {
    /// Largest JWS, in characters, that fits one version-22 QR at error correction L.
    public static let maxSingleJWSCharacters = 1195
    /// Largest chunk, in characters, when a JWS is split across QRs (room for `shc:/C/N/`).
    public static let maxChunkCharacters = 1191
    /// Most chunks a `shc:/C/N/` header may announce: a two-digit N (99 chunks hold over 117,000 JWS
    /// characters, far more than any card).
    public static let maxChunkCount = 99

    /// The numeric segment for `jws`: `2 × jws.count` ASCII digits.
    /// - Throws: `HealthCardError(.qr)` if `jws` holds a character outside `-` (45) ... `z` (122).
    public static func digits(_ jws: String) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(jws.utf8.count * 2)
        for byte in jws.utf8 {
            guard byte >= 45 && byte <= 122 else {
                throw HealthCardError(.qr, "character \(String(UnicodeScalar(byte))) cannot be put in a numeric shc:/ segment")
            }
            let v = byte - 45
            out.append(0x30 + v / 10)
            out.append(0x30 + v % 10)
        }
        return out
    }

    /// The byte-segment prefix: `shc:/` for a single QR, `shc:/C/N/` for chunk C (1-based) of N.
    public static func prefix(chunk: Int, of total: Int) -> String {
        total > 1 ? "shc:/\(chunk)/\(total)/" : "shc:/"
    }

    /// The whole QR text for one chunk: prefix followed by the digits.
    public static func text(jws: String, chunk: Int = 1, of total: Int = 1) throws -> String {
        prefix(chunk: chunk, of: total) + String(decoding: try digits(jws), as: UTF8.self)
    }

    /// How many balanced chunks a JWS of `length` characters is split into (1: it fits one QR). The
    /// rule `verify` checks chunk sets against, too.
    public static func chunkCount(forLength length: Int) -> Int {
        if length <= maxSingleJWSCharacters { return 1 }
        var n = (length + maxChunkCharacters - 1) / maxChunkCharacters
        while (length + n - 1) / n > maxChunkCharacters(chunk: n, of: n) { n += 1 }
        return n
    }

    /// The most JWS characters chunk `chunk` of `total` may hold in a version-22 QR: 1191 for one-digit
    /// headers, less when `shc:/C/N/` is longer.
    public static func maxChunkCharacters(chunk: Int, of total: Int) -> Int {
        maxCharacters(prefixBytes: prefix(chunk: chunk, of: total).utf8.count)
    }

    /// The most JWS characters that fit a version-22 QR at error correction L (8,048 data bits) after a
    /// byte-mode prefix of `prefixBytes` bytes: byte header 4 + 16 bits, the prefix, numeric header
    /// 4 + 12 bits, then 10 bits per 3 digits (4 or 7 for a last 1 or 2). 1195 for `shc:/`, 1191 for
    /// `shc:/C/N/` with one-digit C and N, 1188 for `shc:/10/11/`.
    public static func maxCharacters(prefixBytes: Int) -> Int {
        let available = 8048 - (4 + 16 + 8 * prefixBytes + 4 + 12)
        var characters = available * 3 / 20 + 1
        func bits(_ c: Int) -> Int { let d = 2 * c; return 10 * (d / 3) + [0, 4, 7][d % 3] }
        while bits(characters) > available { characters -= 1 }
        return characters
    }

    /// Decodes a numeric segment back to JWS text.
    /// - Throws: `HealthCardError(.qr)` for an odd digit count, a non-digit, or a pair above 77.
    public static func jws(fromDigits digits: Substring.UTF8View) throws -> String {
        let bytes = Array(digits)
        guard bytes.count % 2 == 0 else {
            throw HealthCardError(.qr, "the numeric segment has an odd number of digits (\(bytes.count)); each JWS character is two digits")
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 2)
        var i = 0
        while i < bytes.count {
            let a = bytes[i], b = bytes[i + 1]
            guard (0x30...0x39).contains(a), (0x30...0x39).contains(b) else {
                throw HealthCardError(.qr, "non-digit character in the numeric segment at offset \(i)")
            }
            let v = (a - 0x30) * 10 + (b - 0x30)
            guard v <= 77 else {
                throw HealthCardError(.qr, "digit pair \(v) at offset \(i) is above 77 (the largest is 77, for 'z')")
            }
            out.append(v + 45)
            i += 2
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Splits a JWS into balanced chunks as the spec generator does: a single chunk when it fits one QR,
    /// otherwise `n = ceil(len / 1191)` pieces of `ceil(len / n)` characters (the last may be shorter).
    /// The spec's 1191 assumes a one-digit `C/N` header; when `shc:/C/N/` is longer (10 chunks or
    /// more), `n` grows until every piece still fits a version-22 QR at error correction L.
    public static func chunks(_ jws: String) -> [Substring] {
        let count = jws.utf8.count
        let n = chunkCount(forLength: count)
        if n == 1 { return [Substring(jws)] }
        let size = (count + n - 1) / n
        var out: [Substring] = []
        var start = jws.startIndex
        while start < jws.endIndex {
            let end = jws.index(start, offsetBy: size, limitedBy: jws.endIndex) ?? jws.endIndex
            out.append(jws[start..<end])
            start = end
        }
        return out
    }
}
