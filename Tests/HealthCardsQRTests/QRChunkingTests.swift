import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsTestSupport

/// Chunked QRs (digest section 6): balanced pieces that each fit a version-22 QR at ECC L.
@Suite struct QRChunkingTests {
    @Test func characterLimitsFollowFromVersion22() {
        #expect(QRNumeric.maxCharacters(prefixBytes: 5) == 1195)  // shc:/
        #expect(QRNumeric.maxCharacters(prefixBytes: 9) == 1191)  // shc:/1/3/
        #expect(QRNumeric.maxCharacters(prefixBytes: 11) == 1188)  // shc:/10/11/
    }

    static func jws(_ length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// 13,096 characters made 11 chunks of 1,191 under the spec's rule, and `shc:/11/11/` then needs
    /// version 23. Every chunk of every length here must encode at version 22 or lower.
    @Test(arguments: [1196, 2383, 3285, 11_910, 11_911, 13_096, 14_000, 25_000])
    func everyChunkFitsVersion22(length: Int) throws {
        let text = Self.jws(length)
        let chunks = QRNumeric.chunks(text)
        #expect(chunks.joined() == text)
        #expect(chunks.count >= (length + 1190) / 1191)
        let sizes = chunks.map(\.count)
        #expect(sizes.dropLast().allSatisfy { $0 == sizes[0] } && sizes.last! <= sizes[0])
        for (i, chunk) in chunks.enumerated() {
            let code = try QRCode(jws: chunk, chunk: i + 1, of: chunks.count)
            #expect(code.version <= 22)
        }
    }

    /// verify judges chunk sets by the same rule: what `chunks` makes is neither too long nor unbalanced,
    /// also with two-digit headers (13,096 characters: 12 chunks, not the 11 of the 1191 rule).
    @Test(arguments: [3285, 13_096])
    func verifyAcceptsTheChunkSetsWeMake(length: Int) throws {
        let chunks = QRNumeric.chunks(Self.jws(length))
        #expect(chunks.count == QRNumeric.chunkCount(forLength: length))
        let dir = try TestSupport.tempDir()
        for (i, chunk) in chunks.enumerated() {
            try TestSupport.write(try QRNumeric.text(jws: String(chunk), chunk: i + 1, of: chunks.count), to: "qr-\(i).txt", in: dir)
        }
        let run = try TestSupport.cli(["verify", "--json", dir.path])
        #expect(run.stdout.contains("\"QR_CHUNKED\""), "\(run.stdout.prefix(400))")
        #expect(!run.stdout.contains("QR_CHUNK_UNBALANCED") && !run.stdout.contains("QR_CHUNK_TOO_LONG") && !run.stdout.contains("QR_CHUNK_MISSING"))
    }

    @Test func twoDigitHeadersLowerTheChunkLimit() {
        #expect(QRNumeric.chunkCount(forLength: 13_096) == 12)
        #expect(QRNumeric.maxChunkCharacters(chunk: 10, of: 11) == 1188)
        #expect(QRNumeric.maxChunkCharacters(chunk: 1, of: 3) == QRNumeric.maxChunkCharacters)
    }

    @Test func specExample02KeepsItsThreeChunksOf1095() throws {
        #expect(QRNumeric.chunks(Self.jws(3285)).map(\.count) == [1095, 1095, 1095])
    }
}
