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
            add(.qrPrefix, "the QR text starts '\(start)…'; a SMART Health Card QR starts 'shc:/'\(hint)")
            return
        }
        var rest = Array(text.dropFirst(prefix.count))
        // Optional chunk header C/N/.
        let slashes = rest.indices.filter { rest[$0] == 0x2F }
        if !slashes.isEmpty {
            let headerEnd = slashes.count >= 2 ? slashes[1] : slashes[0]
            let header = String(decoding: rest[..<headerEnd], as: UTF8.self)
            let numbers = header.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
            guard slashes.count == 2, numbers.count == 2, let c = numbers[0], let n = numbers[1], c >= 1, n >= 1 else {
                add(.qrChunkHeader, "the chunk header '\(header)/' is not 'C/N/' with 1-based chunk C of N")
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

/// Reads QR images and checks the symbols themselves: version at most 22, the smallest that fits, two
/// segments, error correction level (digest section 6).
enum QRImageCheck {
    /// The pieces of every symbol in a PNG, or a finding when none can be read.
    static func read(png: [UInt8], file: String) -> (pieces: [QRPiece], findings: [Finding]) {
        let symbols: [DecodedQR]
        do { symbols = try SHCQRCodeReader.read(png: png) } catch let error as HealthCardError where error.kind == .input {
            return ([], [Finding(.fileTooLarge, error.message, at: .init(file: file))])
        } catch {
            return ([], [Finding(.qrImageUnreadable, "the image cannot be read: \(error)", at: .init(file: file))])
        }
        if symbols.isEmpty {
            return ([], [Finding(.qrNoSymbol, "no QR symbol was found in the image", at: .init(file: file))])
        }
        var pieces: [QRPiece] = []
        for symbol in symbols {
            var piece = QRPiece(text: symbol.bytes, file: file, symbol: (symbol.version, symbol.errorCorrection))
            piece.findings += symbolFindings(symbol, file: file, chunk: piece.chunk?.index)
            pieces.append(piece)
        }
        return (pieces, [])
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
        let segments = QRVersionProbe.shcSegments(symbol.bytes)
        guard let smallest = QRVersionProbe.smallestVersion(segments, level: level), version > smallest else { return found }
        let oneSegment = QRVersionProbe.smallestVersion([(.byte, symbol.bytes)], level: level)
        if oneSegment == version {
            found.append(Finding(.qrSingleSegment, "the symbol is version \(version), the size of the whole text in one byte segment; a SMART Health Card QR has two segments (byte 'shc:/', then numeric digits), which fit version \(smallest)", at: at))
        } else {
            found.append(Finding(.qrVersionNotMinimal, "the symbol is version \(version) but its text fits version \(smallest) at ECC \(level.rawValue); let the encoder pick the smallest version", at: at))
        }
        return found
    }
}

/// Puts QR pieces together: single QRs stand alone, chunks are grouped by their count and assembled.
enum QRAssembly {
    /// A credential made of one or more pieces.
    struct Set {
        var pieces: [QRPiece]
        var jws: String?
        var findings: [Finding]
    }

    static func assemble(_ pieces: [QRPiece]) -> [Set] {
        var sets: [Set] = []
        var chunked: [Int: [[QRPiece]]] = [:]
        var order: [Int] = []
        for piece in pieces {
            guard let chunk = piece.chunk else {
                sets.append(Set(pieces: [piece], jws: piece.jws, findings: piece.findings))
                continue
            }
            if chunked[chunk.total] == nil { order.append(chunk.total) }
            var groups = chunked[chunk.total] ?? []
            // A new set starts when this chunk number is already taken in the current one.
            if let last = groups.last, !last.contains(where: { $0.chunk?.index == chunk.index }) {
                groups[groups.count - 1].append(piece)
            } else {
                groups.append([piece])
            }
            chunked[chunk.total] = groups
        }
        for total in order {
            for group in chunked[total] ?? [] { sets.append(assembleChunks(group, total: total)) }
        }
        return sets
    }

    private static func assembleChunks(_ group: [QRPiece], total: Int) -> Set {
        let sorted = group.sorted { ($0.chunk?.index ?? 0) < ($1.chunk?.index ?? 0) }
        var findings = sorted.flatMap(\.findings)
        let files = sorted.map(\.file)
        let have = Swift.Set(sorted.compactMap { $0.chunk?.index })
        let missing = (1...total).filter { !have.contains($0) }
        if !missing.isEmpty {
            findings.append(Finding(.qrChunkMissing, "chunk(s) \(missing.map(String.init).joined(separator: ", ")) of \(total) are missing; give all chunks of a set together (or in one folder)", at: .init(file: files.first)))
            return Set(pieces: sorted, jws: nil, findings: findings)
        }
        let parts = sorted.compactMap(\.jws)
        guard parts.count == total else { return Set(pieces: sorted, jws: nil, findings: findings) }
        let jws = parts.joined()
        let length = jws.utf8.count
        findings.append(Finding(.qrChunked, "the card is split into \(total) chunked QRs; chunking is deprecated since SHC 1.3.0 and some verifiers refuse it", at: .init(file: files.first)))
        let needed = QRNumeric.chunkCount(forLength: length)
        let balanced = (length + total - 1) / total
        if total != needed || parts.contains(where: { $0.utf8.count > balanced }) {
            findings.append(Finding(.qrChunkUnbalanced, "chunk sizes are \(parts.map { String($0.utf8.count) }.joined(separator: ", ")) characters; a \(length)-character JWS splits into \(needed) balanced chunks of at most \((length + needed - 1) / needed)", at: .init(file: files.first)))
        }
        return Set(pieces: sorted, jws: jws, findings: findings)
    }
}
