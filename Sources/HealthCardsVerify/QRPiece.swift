import HealthCardsCore

/// One QR text (`shc:/…`) read from a text file or a QR image symbol, parsed (digest section 6).
package struct QRPiece {
    package var file: String
    /// Chunk number and count from a `shc:/C/N/` header; nil for a single QR.
    package var chunk: (index: Int, total: Int)?
    /// The JWS text (or chunk of it) the digits decode to; nil when the digits are unusable.
    var jws: String?
    /// Version and ECC level of the image symbol the text came from.
    package var symbol: (version: Int?, errorCorrection: QRErrorCorrection?)?
    package var findings: [Finding] = []

    /// Most chunks a `shc:/C/N/` header may announce: a two-digit N. A larger N is a finding, read without
    /// allocating anything in proportion to it.
    static let maxChunkCount = QRNumeric.maxChunkCount

    /// An ASCII letter in lower case; any other byte as it is.
    package static func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }

    /// Parses a QR text. Findings are located at `file` (and at the chunk, once known).
    package init(text: [UInt8], file: String, symbol: (version: Int?, errorCorrection: QRErrorCorrection?)? = nil) {
        self.file = file
        self.symbol = symbol
        func add(_ code: RuleCode, _ message: String) {
            findings.append(Finding(code, message, at: .init(file: file, chunk: chunk?.index)))
        }
        let prefix = Array("shc:/".utf8)
        guard text.count >= prefix.count, zip(text.prefix(prefix.count), prefix).allSatisfy({ Self.lower($0) == $1 }) else {
            let start = String(decoding: text.prefix(8), as: UTF8.self)
            let shown = text.count > 8 ? "'\(ControlCharacters.escaped(start))…'" : Quote.text(start)
            add(.qrPrefix, "the QR text starts \(shown); a SMART Health Card QR starts 'shc:/'")
            return
        }
        if !text.starts(with: prefix) {
            // RFC 3986 section 3.1: schemes are case-insensitive, so this is the same URI; the spec writes it in
            // lower case (digest section 6), and some apps match it exactly.
            add(.qrPrefixCase, "the QR text starts \(Quote.text(String(decoding: text.prefix(5), as: UTF8.self))); the scheme is "
                + "case-insensitive (RFC 3986 section 3.1), so it is read, but the spec writes 'shc:/' in lower case and apps "
                + "that compare it exactly refuse this QR. Write 'shc:/'")
        }
        var rest = Array(text.dropFirst(prefix.count))
        // Optional chunk header C/N/.
        let slashes = rest.indices.filter { rest[$0] == 0x2F }
        if !slashes.isEmpty {
            let headerEnd = slashes.count >= 2 ? slashes[1] : slashes[0]
            let header = String(decoding: rest[..<headerEnd], as: UTF8.self)
            // Only short runs of ASCII digits are read as numbers, so no header can make a huge count (and
            // nothing is allocated in proportion to it).
            let numbers = rest[..<headerEnd].split(separator: 0x2F, omittingEmptySubsequences: false).map { part -> Int? in
                guard !part.isEmpty, part.count <= 9, part.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
                return part.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            }
            guard slashes.count == 2, numbers.count == 2, let c = numbers[0], let n = numbers[1], c >= 1, n >= 1 else {
                add(.qrChunkHeader, "the chunk header \(Quote.text(header, limit: 40)) is not 'C/N/' with 1-based chunk C of N")
                return
            }
            guard n <= Self.maxChunkCount else {
                add(.qrChunkHeader, "the chunk header says \(n) chunks; no card has more than \(Self.maxChunkCount) "
                    + "(\(Self.maxChunkCount) chunks hold over \(Self.maxChunkCount * 1188) JWS characters)")
                return
            }
            if n == 1 {
                add(.qrChunkHeader, "the header says chunk \(c) of 1; a single QR has no chunk header (just 'shc:/' and the digits)")
                if c != 1 { return }
            } else if c > n {
                add(.qrChunkHeader, "the header says chunk \(c) of \(n); the chunk number is out of range")
                return
            } else {
                chunk = (c, n)
            }
            rest = Array(rest[(headerEnd + 1)...])
        }
        if let bad = rest.firstIndex(where: { !(0x30...0x39).contains($0) }) {
            add(.qrNonDigit, "the numeric part has a non-digit '\(String(decoding: [rest[bad]], as: UTF8.self))' at offset \(bad); after 'shc:/' come only digit pairs")
            return
        }
        if rest.count % 2 != 0 {
            add(.qrOddDigits, "the numeric part has an odd number of digits (\(rest.count)); every JWS character is two digits")
            return
        }
        var out: [UInt8] = []
        out.reserveCapacity(rest.count / 2)
        var i = 0
        while i < rest.count {
            let v = (rest[i] - 0x30) * 10 + (rest[i + 1] - 0x30)
            if v > 77 {
                add(.qrPairOutOfRange, "digit pair \(v) at offset \(i) is above 77 (the largest, for 'z'); the digits do not encode a JWS")
                return
            }
            out.append(v + 45)
            i += 2
        }
        jws = String(decoding: out, as: UTF8.self)
        if chunk == nil, out.count > QRNumeric.maxSingleJWSCharacters {
            add(.qrTooLong, "the QR holds \(out.count) JWS characters; one QR holds at most \(QRNumeric.maxSingleJWSCharacters) (version 22 at ECC L)")
        } else if let chunk, out.count > QRNumeric.maxChunkCharacters(chunk: chunk.index, of: chunk.total) {
            let limit = QRNumeric.maxChunkCharacters(chunk: chunk.index, of: chunk.total)
            add(.qrChunkTooLong, "chunk \(chunk.index) holds \(out.count) JWS characters; with its header a chunk holds at most \(limit) in a version-22 QR")
        }
    }
}
