import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// Chunked QRs of several cards in one call are grouped into their cards by content (any order, any names,
/// equal chunk counts); needless chunking is an error; chunk counts are bounded before anything is
/// allocated (case `crash-and-budget/chunk-count-huge.txt`).
@Suite struct QRGroupingTests {
    /// `count` signed cards that all split into the same number of chunks, with their chunks.
    static func cards(_ forge: VerifyForge, count: Int, chunks: Int = 2) throws -> [(jws: String, chunks: [String])] {
        // Enough doses for a JWS well inside the two-chunk range (1,196 to 2,382 characters), or three.
        var doses = 10
        let length = chunks == 2 ? 1600 : 2800
        while try forge.jws(claims: VerifyForge.claims(bundle: VerifyForge.bundle(doses: doses, distinctLots: true)))
            .utf8.count < length
        {
            doses += 2
        }
        var out: [(jws: String, chunks: [String])] = []
        for _ in 0..<count {
            let jws = try forge.jws(
                claims: VerifyForge.claims(bundle: VerifyForge.bundle(doses: doses, distinctLots: true)))
            out.append((jws, QRNumeric.chunks(jws).map(String.init)))
        }
        try #require(Set(out.map(\.chunks.count)).count == 1, "cards of equal chunk counts: \(out.map(\.chunks.count))")
        try #require(out[0].chunks.count == chunks)
        return out
    }

    static func text(_ card: (jws: String, chunks: [String]), _ i: Int) throws -> String {
        try QRNumeric.text(jws: card.chunks[i], chunk: i + 1, of: card.chunks.count)
    }

    /// The reported fault: four PNGs of two valid 2-chunk cards gave QR_CHUNK_MISSING and SIG_INVALID.
    /// Names interleave the cards (A1, B1, A2, B2 and the reverse), which the old first-fit grouping split wrongly.
    @Test func twoCardsOfEqualChunkCountInOneFolderOfImages() throws {
        let forge = try VerifyForge()
        let cards = try Self.cards(forge, count: 2)
        let n = cards[0].chunks.count
        var name = 0
        for i in 0..<n {
            for card in (i % 2 == 0 ? cards : cards.reversed()) {
                let png = try QRImage(scale: 2).png(try QRCode(jws: card.chunks[i], chunk: i + 1, of: n))
                name += 1
                _ = try forge.write(png, "images/\(name).png")
            }
        }
        let reports = try forge.verify([forge.dir.appendingPathComponent("images").path]).filter {
            $0.source == .qrImage
        }
        #expect(reports.count == 2)
        #expect(Set(reports.compactMap(\.jws)) == Set(cards.map(\.jws)))
        for report in reports {
            #expect(report.signature == .verified)
            #expect(report.findings.map(\.code) == [.qrChunked], "\(report.file): \(report.findings)")
            #expect(report.qrSymbols.count == n)
        }
    }

    /// Three cards' QR texts given as files in a shuffled order, without any key set: grouped by what the
    /// chunks hold (header, DEFLATE stream, payload JSON), not by a signature.
    @Test func threeCardsShuffledWithoutKeys() throws {
        let forge = try VerifyForge()
        let cards = try Self.cards(forge, count: 3)
        var paths: [String] = []
        for (c, card) in cards.enumerated() {
            for i in card.chunks.indices { paths.append(try forge.write(try Self.text(card, i), "t/\(c)-\(i).txt")) }
        }
        var generator = SeededRandom(state: 7)
        paths.shuffle(using: &generator)
        let reports = try forge.verify(paths, keySets: []).filter { $0.source == .qrText }
        #expect(reports.count == 3)
        #expect(Set(reports.compactMap(\.jws)) == Set(cards.map(\.jws)))
        #expect(reports.allSatisfy { !$0.findings.contains { $0.code == .qrChunkMissing } })
        // The same call twice gives the same grouping (file lists in the same order).
        let again = try forge.verify(paths, keySets: []).filter { $0.source == .qrText }
        #expect(again.map(\.file) == reports.map(\.file))
    }

    /// A set missing a chunk does not take another card's chunk: the whole card verifies, the other set
    /// reports its missing chunk.
    @Test func aMissingChunkStaysWithItsOwnCard() throws {
        let forge = try VerifyForge()
        let cards = try Self.cards(forge, count: 2)
        var paths = try cards[0].chunks.indices.map { try forge.write(try Self.text(cards[0], $0), "m/a-\($0).txt") }
        paths += try cards[1].chunks.indices.dropFirst().map {
            try forge.write(try Self.text(cards[1], $0), "m/b-\($0).txt")
        }
        paths.reverse()
        let reports = try forge.verify(paths).filter { $0.source == .qrText }
        #expect(reports.count == 2)
        let whole = try #require(reports.first { $0.jws != nil })
        #expect(whole.jws == cards[0].jws && whole.signature == .verified)
        let broken = try #require(reports.first { $0.jws == nil })
        #expect(broken.findings.contains { $0.code == .qrChunkMissing && $0.message.hasPrefix("chunk(s) 1 of") })
    }

    /// Chunking a JWS that fits one QR is an error, and says so; chunks of a card that needs chunking but
    /// are unbalanced stay a warning.
    @Test func needlessChunkingIsAnErrorUnbalancedAWarning() throws {
        let forge = try VerifyForge()
        let short = try forge.jws(claims: VerifyForge.claims())
        #expect(short.utf8.count <= QRNumeric.maxSingleJWSCharacters)
        let half = short.utf8.count / 2
        let parts = [String(short.prefix(half)), String(short.dropFirst(half))]
        let paths = try parts.enumerated().map {
            try forge.write(try QRNumeric.text(jws: $1, chunk: $0 + 1, of: 2), "n/\($0).txt")
        }
        let report = try #require(try forge.verify(paths).first { $0.source == .qrText })
        let needless = try #require(report.findings.first { $0.code == .qrChunkNeedless })
        #expect(needless.severity == .error)
        #expect(
            needless.message.contains("the JWS is \(short.utf8.count) characters, so it needs no chunking"),
            "\(needless.message)")
        #expect(!report.findings.contains { $0.code == .qrChunkUnbalanced })
        #expect(report.signature == .verified && !report.isValid)

        let long = try Self.cards(forge, count: 1)[0].jws
        try #require(QRNumeric.chunkCount(forLength: long.utf8.count) == 2)
        let cut = 1100
        let uneven = [String(long.prefix(cut)), String(long.dropFirst(cut))]
        try #require(
            uneven[1].utf8.count <= QRNumeric.maxChunkCharacters && uneven[1].utf8.count != uneven[0].utf8.count)
        let unevenPaths = try uneven.enumerated().map {
            try forge.write(try QRNumeric.text(jws: $1, chunk: $0 + 1, of: 2), "u/\($0).txt")
        }
        let unbalanced = try #require(try forge.verify(unevenPaths).first { $0.source == .qrText })
        #expect(unbalanced.findings.map(\.code) == [.qrChunked, .qrChunkUnbalanced])
        #expect(unbalanced.isValid, "\(unbalanced.findings)")
    }

    /// The case: `shc:/1/999999999999/…` is a finding with a code, and no count is allocated for.
    @Test func hugeChunkCountsAreFindings() throws {
        let huge = VerifyFixtures.cases.appendingPathComponent("crash-and-budget/chunk-count-huge.txt").path
        let run = try TestSupport.cli(["verify", huge])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stdout.contains("error QR_CHUNK_HEADER"), "\(run.stdout)")
        let forge = try VerifyForge()
        for header in ["1/100/", "1/99999999999999999999999/", "1/+2/", "1/-2/", "0/2/", "1/0/", "1/ 2/", "1/2/3/"] {
            let piece = QRPiece(text: Array("shc:/\(header)5676".utf8), file: "x")
            #expect(
                piece.chunk == nil && piece.findings.map(\.code) == [.qrChunkHeader], "\(header): \(piece.findings)")
        }
        // The largest count allowed is read, and a lone chunk of it is reported missing the others.
        let most = try forge.write("shc:/1/99/5676", "most.txt")
        let findings = try forge.verify([most]).flatMap(\.findings)
        #expect(findings.contains { $0.code == .qrChunkMissing && $0.message.contains("of 99") }, "\(findings)")
    }

    /// Three-chunk cards, interleaved, without keys: the middle chunks are told apart by the JWS prefix they
    /// make (a JSON header, then DEFLATE that inflates to the start of JSON).
    @Test func threeChunkCardsInterleaved() throws {
        let forge = try VerifyForge()
        let cards = try Self.cards(forge, count: 3, chunks: 3)
        var paths: [String] = []
        // Names sort the cards in a different order at each chunk number.
        for i in 0..<3 {
            for (c, card) in cards.enumerated() {
                paths.append(try forge.write(try Self.text(card, i), "three/\(i)-\((c + i) % 3).txt"))
            }
        }
        #expect(paths.count == 9)
        let reports = try forge.verify([forge.dir.appendingPathComponent("three").path], keySets: []).filter {
            $0.source == .qrText
        }
        #expect(Set(reports.compactMap(\.jws)) == Set(cards.map(\.jws)))
        #expect(reports.count == 3)
        for card in cards {
            #expect(JWSShape.isPrefix(card.chunks[0] + card.chunks[1]))
        }
        for (a, b) in [(0, 1), (1, 2), (2, 0)] {
            #expect(!JWSShape.isPrefix(cards[a].chunks[0] + cards[b].chunks[1]), "\(a)+\(b)")
        }
    }

    /// Judging a prefix: a splice of two cards' chunks is not a JWS start; the right continuation is.
    @Test func jwsPrefixJudgement() throws {
        let forge = try VerifyForge()
        let cards = try Self.cards(forge, count: 2)
        #expect(JWSShape.isPrefix(cards[0].chunks[0] + cards[0].chunks[1]))
        #expect(!JWSShape.isPrefix(cards[0].chunks[0] + cards[1].chunks[1]))
        #expect(!JWSShape.isPrefix(cards[1].chunks[0] + cards[0].chunks[1]))
        #expect(JWSShape.isComplete(cards[0].jws))
        #expect(!JWSShape.isComplete(cards[0].chunks.dropLast().joined() + cards[1].chunks.last!))
        #expect(JWSShape.isJSONPrefix(Array(#"{"iss":"https://exa"#.utf8)))
        #expect(!JWSShape.isJSONPrefix(Array(#"{"iss":"https://example.org"}}, "more": 1"#.utf8)))
        #expect(
            QRAssembly.match(rows: 3, columns: 3) { r, c in
                (r == 0 && c < 2) || (r == 1 && c == 0) || (r == 2 && c == 2)
            } == [1, 0, 2])
    }
}
