import HealthCardsCore

/// Puts QR pieces together (digest section 6): a single QR stands alone; chunks `shc:/C/N/` are grouped
/// into their cards and joined in chunk order.
///
/// Chunks of several cards may come in one call, in any order and under any file names, and two cards may
/// have the same chunk count N. Chunks are then told apart by what they hold, chunk number by chunk
/// number: a set of chunks 1…k−1 takes the chunk k whose text continues it as a JWS can (a JSON header,
/// then a raw DEFLATE stream that inflates to the start of a JSON payload), and the last chunk is the one
/// that completes a JWS signed by a key given (or, without keys, a JWS whose payload inflates and parses).
/// Each step is a bipartite matching (sets × chunks, augmenting paths in input order), so the grouping is
/// deterministic and polynomial; beyond `maxJudgedPairs` candidate pairs or `maxJudgedCharacters` per step
/// it falls back to input order.
package enum QRAssembly {
    /// A credential made of one or more pieces.
    package struct Set {
        package var pieces: [QRPiece]
        package var jws: String?
        package var findings: [Finding]
    }

    /// Most (set, chunk) pairs judged by content at one chunk number; more are paired in input order.
    static let maxJudgedPairs = 4096
    /// Most JWS characters inflated and parsed to judge one chunk number (all pairs together); beyond it,
    /// too, chunks are paired in input order, so hostile input cannot make grouping slow.
    static let maxJudgedCharacters = 32 * 1024 * 1024

    /// The characters judging every (set, chunk) pair would read.
    static func judgedCharacters(_ sets: [[QRPiece]], _ candidates: [QRPiece]) -> Int {
        let prefixes = sets.reduce(0) { total, set in total + set.reduce(0) { $0 + ($1.jws?.utf8.count ?? 0) } }
        let chunks = candidates.reduce(0) { $0 + ($1.jws?.utf8.count ?? 0) }
        return prefixes * candidates.count + chunks * sets.count
    }

    package static func assemble(_ pieces: [QRPiece], checker: JWSCheck = JWSCheck(now: 0)) -> [Set] {
        let budget = SignatureBudget(checker.limits.signatureVerificationsPerGrouping)
        var sets: [Set] = []
        var chunked: [Int: [QRPiece]] = [:]
        var order: [Int] = []
        for piece in pieces {
            guard let chunk = piece.chunk else {
                sets.append(Set(pieces: [piece], jws: piece.jws, findings: piece.findings))
                continue
            }
            if chunked[chunk.total] == nil { order.append(chunk.total) }
            chunked[chunk.total, default: []].append(piece)
        }
        for total in order {
            for group in group(chunked[total] ?? [], total: total, checker: checker, budget: budget) {
                sets.append(assembleChunks(group, total: total))
            }
        }
        return sets
    }

    /// Splits the chunks of one count `total` into the sets of their cards.
    static func group(_ pieces: [QRPiece], total: Int, checker: JWSCheck, budget: SignatureBudget) -> [[QRPiece]] {
        guard total >= 2 else { return pieces.map { [$0] } }
        var byIndex = [[QRPiece]](repeating: [], count: total + 1)
        for piece in pieces {
            guard let index = piece.chunk?.index, index >= 1, index <= total else { continue }
            byIndex[index].append(piece)
        }
        // Sets holding chunks 1…k−1 that were judged to fit together, and sets with a gap (a chunk missing,
        // or starting after chunk 1), which take what is left in input order.
        var intact: [[QRPiece]] = byIndex[1].map { [$0] }
        var loose: [[QRPiece]] = []
        for index in 2...total {
            let candidates = byIndex[index]
            var taken = [Bool](repeating: false, count: candidates.count)
            if intact.count == 1 && candidates.count == 1 {
                // Nothing to tell apart: the chunk joins the set (and the whole is judged when checked).
                intact[0].append(candidates[0])
                taken[0] = true
            } else if !intact.isEmpty && !candidates.isEmpty {
                let assignment: [Int?]
                if intact.count * candidates.count <= maxJudgedPairs
                    && judgedCharacters(intact, candidates) <= maxJudgedCharacters
                {
                    let fits = fitMatrix(intact, candidates, last: index == total, checker: checker, budget: budget)
                    assignment = match(rows: intact.count, columns: candidates.count) { fits[$0][$1] }
                } else {
                    assignment = intact.indices.map { $0 < candidates.count ? $0 : nil }
                }
                var next: [[QRPiece]] = []
                for (row, set) in intact.enumerated() {
                    if let column = assignment[row] {
                        next.append(set + [candidates[column]])
                        taken[column] = true
                    } else {
                        loose.append(set)
                    }
                }
                intact = next
            } else {
                loose += intact
                intact = []
            }
            for (column, piece) in candidates.enumerated() where !taken[column] {
                if let k = loose.firstIndex(where: { set in !set.contains { $0.chunk?.index == index } }) {
                    loose[k].append(piece)
                } else {
                    loose.append([piece])
                }
            }
        }
        return intact + loose
    }

    /// `fits[set][chunk]`: whether the chunk continues the set as a JWS can. For the last chunk: the whole
    /// is signed by a key given, when any pair is; otherwise it is a well-formed JWS.
    static func fitMatrix(
        _ sets: [[QRPiece]], _ candidates: [QRPiece], last: Bool, checker: JWSCheck, budget: SignatureBudget
    ) -> [[Bool]] {
        let prefixes: [String?] = sets.map { set in
            let parts = set.compactMap(\.jws)
            return parts.count == set.count ? parts.joined() : nil
        }
        func text(_ row: Int, _ column: Int) -> String? {
            guard let prefix = prefixes[row], let chunk = candidates[column].jws else { return nil }
            return prefix + chunk
        }
        guard last else {
            return sets.indices.map { row in candidates.indices.map { text(row, $0).map(JWSShape.isPrefix) ?? false } }
        }
        let signed = sets.indices.map { row in
            candidates.indices.map { text(row, $0).flatMap { checker.signedByAnyKey($0, budget: budget) } ?? false }
        }
        if signed.contains(where: { $0.contains(true) }) { return signed }
        return sets.indices.map { row in candidates.indices.map { text(row, $0).map(JWSShape.isComplete) ?? false } }
    }

    /// A maximum bipartite matching (Kuhn's augmenting paths), rows tried in order and each row's columns in
    /// order, so equal inputs give equal answers. Returns the column of each row, or nil.
    static func match(rows: Int, columns: Int, _ fits: (Int, Int) -> Bool) -> [Int?] {
        var owner = [Int?](repeating: nil, count: columns)
        func augment(_ row: Int, _ seen: inout [Bool]) -> Bool {
            for column in 0..<columns where fits(row, column) && !seen[column] {
                seen[column] = true
                if let other = owner[column] {
                    guard augment(other, &seen) else { continue }
                }
                owner[column] = row
                return true
            }
            return false
        }
        for row in 0..<rows {
            var seen = [Bool](repeating: false, count: columns)
            _ = augment(row, &seen)
        }
        var assignment = [Int?](repeating: nil, count: rows)
        for (column, row) in owner.enumerated() { if let row { assignment[row] = column } }
        return assignment
    }

    private static func assembleChunks(_ group: [QRPiece], total: Int) -> Set {
        let sorted = group.sorted { ($0.chunk?.index ?? 0) < ($1.chunk?.index ?? 0) }
        var findings = sorted.flatMap(\.findings)
        let files = sorted.map(\.file)
        // A finding on the set as a whole is at its one file, or at none when it spans several (the
        // report's `files` list them).
        let setFile = Swift.Set(files).count == 1 ? files.first : nil
        let have = Swift.Set(sorted.compactMap { $0.chunk?.index })
        let missing = (1...max(1, total)).filter { !have.contains($0) }
        if !missing.isEmpty {
            findings.append(
                Finding(
                    .qrChunkMissing,
                    "chunk(s) \(missing.map(String.init).joined(separator: ", ")) of \(total) are missing; give all chunks of a set together (or in one folder)",
                    at: .init(file: setFile)))
            return Set(pieces: sorted, jws: nil, findings: findings)
        }
        let parts = sorted.compactMap(\.jws)
        guard parts.count == total else { return Set(pieces: sorted, jws: nil, findings: findings) }
        let jws = parts.joined()
        let length = jws.utf8.count
        findings.append(
            Finding(
                .qrChunked,
                "the card is split into \(total) chunked QRs; chunking is deprecated since SHC 1.3.0 and some verifiers refuse it",
                at: .init(file: setFile)))
        let needed = QRNumeric.chunkCount(forLength: length)
        if needed == 1 {
            findings.append(
                Finding(
                    .qrChunkNeedless,
                    "the JWS is \(length) characters, so it needs no chunking: one QR holds up to \(QRNumeric.maxSingleJWSCharacters); put it in a single QR ('shc:/' and the digits) instead of \(total) chunks",
                    at: .init(file: setFile)))
            return Set(pieces: sorted, jws: jws, findings: findings)
        }
        let balanced = (length + total - 1) / total
        if total != needed || parts.contains(where: { $0.utf8.count > balanced }) {
            findings.append(
                Finding(
                    .qrChunkUnbalanced,
                    "chunk sizes are \(parts.map { String($0.utf8.count) }.joined(separator: ", ")) characters; a \(length)-character JWS splits into \(needed) balanced chunks of at most \((length + needed - 1) / needed)",
                    at: .init(file: setFile)))
        }
        return Set(pieces: sorted, jws: jws, findings: findings)
    }
}

/// Whether a text can be the start of, or a whole, health card JWS, judged from the text alone: used to
/// tell apart the QR chunks of several cards (`QRAssembly`).
enum JWSShape {
    /// Most characters a JWS signature part has: 86 for the 64-byte R‖S, up to 96 for a DER one.
    static let maxSignatureCharacters = 96

    /// True when `text` can begin a JWS: compact characters, a header that is a JSON object, then a payload
    /// whose base64url so far inflates (raw DEFLATE) to the start of a JSON text, and, once the payload's '.'
    /// is there, a payload that inflates and parses whole.
    static func isPrefix(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ RID.isBase64URLCharacter($0) || $0 == 0x2E }) else { return false }
        let parts = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard parts.count <= 3 else { return false }
        guard parts.count >= 2 else { return true }  // still in the header: nothing to judge
        guard isHeader(parts[0]) else { return false }
        if parts.count == 3 {
            return parts[2].count <= maxSignatureCharacters && payloadParses(parts[1])
        }
        let whole = parts[1].count / 4 * 4
        guard let compressed = Base64URL.decode(Array(parts[1].prefix(whole))),
            let (output, ended) = RawInflate.inflatePrefix(compressed)
        else { return false }
        // A stream that ended before the payload text did has trailing data: not a payload.
        if ended { return parts[1].count == whole && (try? JSONParser.parse(output)) != nil }
        return isJSONPrefix(output)
    }

    /// True when `text` is a whole JWS in form: three parts, a JSON header, a payload that inflates and parses,
    /// a signature of 64 bytes (or DER).
    static func isComplete(_ text: String) -> Bool {
        let parts = Array(text.utf8).split(separator: 0x2E, omittingEmptySubsequences: false)
        guard parts.count == 3, isHeader(parts[0]), payloadParses(parts[1]),
            let signature = Base64URL.decode(Array(parts[2]))
        else { return false }
        return signature.count == 64 || (signature.first == 0x30 && signature.count <= 72)
    }

    private static func isHeader(_ part: ArraySlice<UInt8>) -> Bool {
        guard let bytes = Base64URL.decode(Array(part)), let header = try? JSONParser.parse(bytes) else { return false }
        return header.objectValue != nil
    }

    private static func payloadParses(_ part: ArraySlice<UInt8>) -> Bool {
        guard let compressed = Base64URL.decode(Array(part)),
            let (output, ended) = RawInflate.inflatePrefix(compressed), ended
        else { return false }
        return (try? JSONParser.parse(output)) != nil
    }

    /// True when `bytes` can begin a JSON text: parsing fails only where the bytes run out, that is within
    /// the last few bytes (which may cut a number, a UTF-8 sequence or an escape in two), or in a string the
    /// bytes end inside (the parser names its start).
    static func isJSONPrefix(_ bytes: [UInt8]) -> Bool {
        do {
            _ = try JSONParser.parseFailing(bytes)
            return true
        } catch {
            return error.offset >= bytes.count - 8 || error.message == "unterminated string"
        }
    }
}
