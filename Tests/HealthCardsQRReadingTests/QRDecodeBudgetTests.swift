import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
import HealthCardsTestSupport

/// The budgets of reading one QR image (docs/verify.md, "Budgets"; case `qr-decode-budget/`): zxing-cpp is not
/// given an image of more finder-like patterns than `FinderPatternCount.zxingLimit` (a 4 KB PNG of tiled finders
/// kept it busy for over ten minutes), at most `QRDecoder.maxSymbols` symbols are checked, and each budget that
/// stops something is said as `QR_DECODE_BUDGET`, never silently.
@Suite struct QRDecodeBudgetTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("qr-decode-budget")

    static func image(_ name: String) throws -> GrayImage {
        try GrayImage(png: try VerifyFixtures.bytes(caseDir.appendingPathComponent(name)))
    }

    /// Known answers: the images tile finder-like squares (7 × 7 modules of 2 pixels) every 18 pixels from
    /// pixel 2, so 128 pixels hold 7 × 7 whole ones and 256 hold 14 × 14; our encoder's symbol has 3, and a
    /// blank image none. Past its limit the count stops.
    @Test func finderPatternsAreCounted() throws {
        #expect(FinderPatternCount.count(try Self.image("128-finders.png"), limit: 1000) == 49)
        #expect(FinderPatternCount.count(try Self.image("256-finders.png"), limit: 1000) == 196)
        #expect(FinderPatternCount.count(try Self.image("1024-finders.png"), limit: 300) == 301)
        let code = try QRCode(jws: "a.b.c")
        for scale in [1, 2, 5] {
            let png = try QRImage(scale: scale).png(code)
            #expect(FinderPatternCount.count(try GrayImage(png: png), limit: 300) == 3, "scale \(scale)")
        }
        let blank = GrayImage(checkedWidth: 64, height: 64, pixels: [UInt8](repeating: 255, count: 64 * 64))
        #expect(FinderPatternCount.count(blank, limit: 300) == 0)
    }

    /// The reported image: 3,249 finder-like squares in 1024 × 1024 pixels. zxing-cpp is not run on it (nor on it
    /// binarized), so it is judged at once: no symbol, and the budget that stopped zxing-cpp is said. (A bound in
    /// seconds only to catch a hang: before, it ran for more than ten minutes.)
    @Test func tiledFindersAreJudgedWithoutZxing() throws {
        let bytes = try VerifyFixtures.bytes(Self.caseDir.appendingPathComponent("1024-finders.png"))
        let start = ContinuousClock.now
        let decoder = try QRDecoder()
        let symbols = try decoder.decode(try GrayImage(png: bytes))
        #expect(symbols.isEmpty)
        // Not on the image, nor on it binarized or enlarged 1.5× (it is 1024 × 1024, small enough for that pass);
        // inverted, its light squares on a dark ground are few finder-like patterns, and zxing-cpp is given it.
        #expect(decoder.budgetNotes.count == 1, "\(decoder.budgetNotes)")
        #expect(decoder.budgetNotes.first?.hasPrefix("zxing-cpp was not run on the image, the image binarized, the image enlarged 1.5×"
            + ": it shows more than 300 finder-like patterns (the squares at a QR symbol's corners, three a symbol)") == true,
            "\(decoder.budgetNotes)")
        let (pieces, _, findings) = QRImageCheck.read(image: bytes, file: "1024-finders.png")
        #expect(pieces.isEmpty)
        #expect(findings.map(\.code) == [.qrNoSymbol, .qrDecodeBudget], "\(findings.map(\.code.rawValue))")
        #expect(findings.last?.severity == .warning)
        #expect(ContinuousClock.now - start < .seconds(120))
    }

    /// 121 symbols in one image: the first 100 (top to bottom, then left to right) are read and checked, and
    /// the rest are said to be left.
    @Test func atMostAHundredSymbolsAnImage() throws {
        let code = try QRCode(segments: [(.byte, Array("shc:/".utf8)), (.numeric, Array("5676".utf8))], level: .L)
        let tile = try GrayImage(png: try QRImage(scale: 3).png(code))
        let across = 11
        let width = tile.width * across, height = tile.height * across
        var pixels = [UInt8](repeating: 255, count: width * height)
        for ty in 0..<across {
            for tx in 0..<across {
                for y in 0..<tile.height {
                    let row = (ty * tile.height + y) * width + tx * tile.width
                    pixels.replaceSubrange(row..<(row + tile.width), with: tile.pixels[(y * tile.width)..<((y + 1) * tile.width)])
                }
            }
        }
        let sheet = GrayImage(checkedWidth: width, height: height, pixels: pixels)
        let decoder = try QRDecoder()
        let symbols = try decoder.decode(sheet)
        #expect(symbols.count == QRDecoder.maxSymbols)
        #expect(symbols.allSatisfy { $0.text == "shc:/5676" })
        #expect(decoder.budgetNotes.count == 1 && decoder.budgetNotes[0].contains("121"), "\(decoder.budgetNotes)")
        // Top to bottom: the last one kept is in the tenth row of symbols (rows of 11: 100 = 9 × 11 + 1).
        #expect(symbols.last.map { $0.corners.map(\.y).min()! / tile.height } == 9)
    }

    /// An 8192 × 8192 image crowded with finder-like squares (the case's pattern, 207,000 of them; zbar ran on it
    /// for over five minutes): zbar reads it shrunk to 2048 × 2048, zxing-cpp is not given it, and both are said.
    @Test func largeImageCrowdedWithFindersIsReadShrunk() throws {
        let side = 8192
        // The case's tile: 7 × 7 modules of 2 pixels from pixel 2, every 18 pixels.
        func dark(_ x: Int, _ y: Int) -> Bool {
            let mx = (x % 18 - 2), my = (y % 18 - 2)
            guard (0..<14).contains(mx), (0..<14).contains(my) else { return false }
            let (u, v) = (mx / 2, my / 2)
            return u == 0 || u == 6 || v == 0 || v == 6 || ((2...4).contains(u) && (2...4).contains(v))
        }
        let rows: [[UInt8]] = (0..<18).map { y in (0..<side).map { dark($0, y) ? 0 : 255 } }
        var pixels: [UInt8] = []
        pixels.reserveCapacity(side * side)
        for y in 0..<side { pixels += rows[y % 18] }
        let image = GrayImage(checkedWidth: side, height: side, pixels: pixels)
        #expect(FinderPatternCount.count(image, limit: FinderPatternCount.zbarLimit) == FinderPatternCount.zbarLimit + 1)
        let decoder = try QRDecoder()
        let start = ContinuousClock.now
        #expect(try decoder.decode(image).isEmpty)
        #expect(decoder.budgetNotes.contains { $0.hasPrefix("zbar read the image only shrunk to 2048 × 2048 pixels") }, "\(decoder.budgetNotes)")
        // (The image binarized after shrinking is a blur of few finder-like patterns: zxing-cpp may be given that.)
        #expect(decoder.budgetNotes.contains { $0.hasPrefix("zxing-cpp was not run on the image") }, "\(decoder.budgetNotes)")
        // A bound only against a hang (over five minutes before).
        #expect(ContinuousClock.now - start < .seconds(120))
    }
}
