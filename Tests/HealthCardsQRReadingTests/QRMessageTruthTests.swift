import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsQRReading
import HealthCardsTestSupport

/// `QR_NO_SYMBOL` named decoders that had not run: "zbar and zxing-cpp both tried" on an image the finder-pattern
/// budget kept zxing-cpp from (`QR_DECODE_BUDGET` beside it). It names only the passes that ran on the image.
@Suite struct QRMessageTruthTests {
    static func noSymbol(_ bytes: [UInt8], _ name: String) throws -> (message: String, codes: [RuleCode]) {
        let (pieces, _, findings) = QRImageCheck.read(image: bytes, file: name)
        #expect(pieces.isEmpty)
        let message = try #require(findings.first { $0.code == .qrNoSymbol }?.message)
        return (message, findings.map(\.code))
    }

    /// The case's 1024 × 1024 image of 3,249 tiled finder-like squares: zxing-cpp's finder search is not given it,
    /// nor it binarized or enlarged 1.5× (too many finder-like patterns in each); zbar reads it as given, enlarged 2×,
    /// binarized and inverted; zxing-cpp reads it inverted (few patterns there: light squares on dark) and with its
    /// pure-symbol reader (no finder search).
    @Test func noSymbolNamesOnlyTheDecodersThatRan() throws {
        let bytes = try VerifyFixtures.bytes(
            VerifyFixtures.cases.appendingPathComponent("qr-decode-budget").appendingPathComponent("1024-finders.png"))
        let (message, codes) = try Self.noSymbol(bytes, "1024-finders.png")
        #expect(codes == [.qrNoSymbol, .qrDecodeBudget])
        #expect(!message.contains("zbar and zxing-cpp both tried"), "\(message)")
        #expect(message.contains(
            "tried: zbar on the image, on it enlarged 2×, on it binarized and on it inverted; zxing-cpp on it inverted; "
                + "zxing-cpp's pure-symbol reader on the image; zxing-cpp was not run on the image, on it binarized or on "
                + "it enlarged 1.5× (QR_DECODE_BUDGET)"), "\(message)")
    }

    /// A blank 64 × 64 image: every pass runs, and each is named.
    @Test func noSymbolNamesEveryPassWhenAllRan() throws {
        let (message, codes) = try Self.noSymbol(TestImages.whitePNG(side: 64), "white.png")
        #expect(codes == [.qrNoSymbol])
        #expect(message.contains(
            "tried: zbar on the image, on it enlarged 2×, on it binarized and on it inverted; zxing-cpp on the image, "
                + "on it binarized, on it enlarged 1.5× and on it inverted; zxing-cpp's pure-symbol reader on the image)"),
            "\(message)")
        #expect(!message.contains("was not run"), "\(message)")
    }
}
