import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
import HealthCardsTestSupport

/// Symbols a mainstream decoder (zxing-cpp 2 and later, as phones have it) reads and `verify` gave
/// `QR_NO_SYMBOL` for (case `qr-inverted-and-pure/`, the spec's example 00 QR made with Pillow): light on dark
/// (`inverted.png` at 4 pixels a module, `inverted-1x.png` at 2), which zxing-cpp 2 reads with its inversion on
/// and zxing-cpp 1.4 has no inversion for; and `1.25x-nearest.png` (121 × 121, 1.25 pixels a module), which
/// zxing-cpp 1.4's finder search misses with every binarizer, with and without trying harder or downscaling,
/// and its pure-symbol reader reads. Each is read, and fully checked, by the pass made for it.
@Suite struct QRInvertedAndPureTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("qr-inverted-and-pure")

    @Test(arguments: [
        ("inverted.png", DecodedQR.Decoder.inverted), ("inverted-1x.png", .inverted), ("1.25x-nearest.png", .pure),
    ])
    func readAndFullyChecked(name: String, readBy: DecodedQR.Decoder) throws {
        let expected = try VerifyFixtures.text(VerifyFixtures.specExamples.appendingPathComponent("example-00-f-qr-code-numeric-value-0.txt"))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes = try VerifyFixtures.bytes(Self.caseDir.appendingPathComponent(name))
        let symbols = try SHCQRCodeReader.read(image: bytes)
        try #require(symbols.count == 1, "\(name)")
        let symbol = symbols[0]
        #expect(symbol.text == expected)
        #expect(symbol.readBy == readBy)
        #expect(symbol.version == 18 && symbol.errorCorrection == .L, "\(name): \(String(describing: symbol.version))")
        #expect(symbol.segments?.map(\.mode) == [.byte, .numeric], "\(name)")
        let (pieces, _, findings) = QRImageCheck.read(image: bytes, file: name)
        #expect(findings.isEmpty && pieces.count == 1 && pieces[0].findings.isEmpty, "\(findings.map(\.code.rawValue))")
    }
}
