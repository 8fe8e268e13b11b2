/// One QR text (`shc:/…`) read from a text file or a QR image symbol, parsed (digest section 6).
struct QRPiece {
    var file: String
    /// Chunk number and count from a `shc:/C/N/` header; nil for a single QR.
    var chunk: (index: Int, total: Int)?
    /// The JWS text (or chunk of it) the digits decode to; nil when the digits are unusable.
    var jws: String?
    /// Version and ECC level of the image symbol the text came from.
    var symbol: (version: Int?, errorCorrection: QRErrorCorrection?)?
    var findings: [Finding] = []

    /// Most chunks a `shc:/C/N/` header may announce: a two-digit N. A larger N is a finding, read without
    /// allocating anything in proportion to it.
    static let maxChunkCount = 99

    /// Parses a QR text. Findings are located at `file` (and at the chunk, once known).
    init(text: [UInt8], file: String, symbol: (version: Int?, errorCorrection: QRErrorCorrection?)? = nil) {
        self.file = file
        self.symbol = symbol
        func add(_ code: RuleCode, _ message: String) {
            findings.append(Finding(code, message, at: .init(file: file, chunk: chunk?.index)))
        }
        let prefix = Array("shc:/".utf8)
        guard text.starts(with: prefix) else {
            let start = String(decoding: text.prefix(8), as: UTF8.self)
            let hint = start.lowercased().hasPrefix("shc:/") ? " (the scheme is lowercase)" : ""
            let shown = text.count > 8 ? "'\(ControlCharacters.escaped(start))…'" : Quote.text(start)
            add(.qrPrefix, "the QR text starts \(shown); a SMART Health Card QR starts 'shc:/'\(hint)")
            return
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

/// Reads QR images and checks the symbols themselves (digest section 6): version at most 22, error
/// correction level, exactly two segments as read from the symbol's bit stream (byte `shc:/`[`C/N/`], then
/// numeric), and the smallest version that fits them.
enum QRImageCheck {
    /// The pieces of every `shc:/` symbol in a PNG and the symbols holding a SMART Health Link (checked by
    /// `SHLCheck`), or a finding when none can be read.
    static func read(png: [UInt8], file: String) -> (pieces: [QRPiece], links: [DecodedQR], findings: [Finding]) {
        let symbols: [DecodedQR]
        do { symbols = try SHCQRCodeReader.read(png: png) } catch {
            return ([], [], [Finding(.qrImageUnreadable, "the image cannot be read: \(error)", at: .init(file: file))])
        }
        if symbols.isEmpty {
            return ([], [], [Finding(.qrNoSymbol, "no QR symbol was found in the image", at: .init(file: file))])
        }
        var pieces: [QRPiece] = []
        var links: [DecodedQR] = []
        for symbol in symbols {
            if SHLinkText.looksLikeLink(symbol.text) {
                links.append(symbol)
                continue
            }
            var piece = QRPiece(text: symbol.bytes, file: file, symbol: (symbol.version, symbol.errorCorrection))
            piece.findings += symbolFindings(symbol, file: file, chunk: piece.chunk?.index)
            pieces.append(piece)
        }
        return (pieces, links, [])
    }

    static func symbolFindings(_ symbol: DecodedQR, file: String, chunk: Int?) -> [Finding] {
        var found: [Finding] = []
        let at = Finding.Location(file: file, chunk: chunk)
        guard let version = symbol.version, let level = symbol.errorCorrection else {
            found.append(Finding(.qrGridUnreadable, "the symbol's version or ECC level could not be read from the image (rotated or skewed?); they were not checked", at: at))
            return found
        }
        if version > QRCode.maxVersion {
            found.append(Finding(.qrVersionTooHigh, "the symbol is version \(version); SMART Health Cards QRs are version 22 or lower", at: at))
        }
        if level != .L {
            found.append(Finding(.qrECCLevel, "the symbol uses error correction \(level.rawValue); the spec's sizes (1195 characters per QR) assume L, and higher levels make a denser symbol", at: at))
        }
        guard symbol.bytes.starts(with: Array("shc:/".utf8)) else { return found }  // QR_PREFIX says it
        guard let segments = symbol.segments else {
            found.append(Finding(.qrSegmentsUnreadable, "the segment headers could not be read from the symbol's modules (the grid sampled "
                + "from the image does not give back the data zbar decoded: a blurred, skewed or damaged image?); the two-segment layout "
                + "and the smallest version were not checked", at: at))
            return found
        }
        let expected = QRVersionProbe.shcSegments(symbol.bytes)
        let layout = segments.map(\.description).joined(separator: ", ")
        let rule = "a SMART Health Card QR has exactly two segments: byte 'shc:/' (with 'C/N/' when chunked), then numeric with all the digits"
        if segments.count == 1 && segments[0].mode == .byte {
            found.append(Finding(.qrSingleSegment, "the symbol holds one byte segment with the whole text (\(layout)); \(rule). "
                + "Encode it with explicit segments", at: at))
            return found
        }
        guard segments.count == 2, segments[0].mode == .byte, segments[1].mode == .numeric,
            segments[0].data == expected[0].1, segments[1].data == expected[1].1, !expected[1].1.isEmpty
        else {
            found.append(Finding(.qrSegments, "the symbol's segments are \(layout); \(rule)", at: at))
            return found
        }
        guard let smallest = QRVersionProbe.smallestVersion(expected, level: level), version > smallest else { return found }
        found.append(Finding(.qrVersionNotMinimal, "the symbol is version \(version) but its two segments fit version \(smallest) at ECC \(level.rawValue); let the encoder pick the smallest version", at: at))
        return found
    }
}
