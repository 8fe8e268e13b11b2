import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
import HealthCardsTestSupport

@Suite struct QRDecoderTests {
    let examples = VerifyFixtures.specExamples

    @Test func formatInfoKnownCodewords() {
        // ISO/IEC 18004 Table C.1: L/mask 0 = 111011111000100, M/mask 0 = 101010000010010 (the XOR mask itself).
        #expect(QRFormatInfo(errorCorrection: .L, mask: 0).codeword == 0b111011111000100)
        #expect(QRFormatInfo(errorCorrection: .M, mask: 0).codeword == 0x5412)
        #expect(QRFormatInfo(errorCorrection: .H, mask: 7).codeword == 0b000100000111011)
        #expect(Set(QRFormatInfo.table.map(\.codeword)).count == 32)
        // Any two codewords differ in at least 7 bits, so 3 errors are correctable.
        let words = QRFormatInfo.table.map(\.codeword)
        var minDistance = 15
        for i in words.indices { for j in words.indices where j > i { minDistance = min(minDistance, (words[i] ^ words[j]).nonzeroBitCount) } }
        #expect(minDistance == 7)
        let l5 = QRFormatInfo(errorCorrection: .L, mask: 5)
        #expect(QRFormatInfo.decode(l5.codeword)! == (l5, 0))
        #expect(QRFormatInfo.decode(l5.codeword ^ 0b100000010000001)! == (l5, 3))
    }

    @Test func formatInfoFromSpecModuleGrid() throws {
        // derived/qr-modules holds the module rows of the spec's own SVG (example 00: V18, L, mask 5).
        let rows = try VerifyFixtures.text(examples.appendingPathComponent("derived/qr-modules/example-00-g-qr-code-0.txt"))
            .split(separator: "\n")
        let grid = try #require(QRModuleGrid(size: rows.count, modules: rows.flatMap { $0.map { $0 == "1" } }))
        #expect(grid.version == 18)
        #expect(grid.functionPatternMismatch == 0)
        #expect(grid.formatInfo == QRFormatInfo(errorCorrection: .L, mask: 5))
    }

    @Test(arguments: ["00", "02"])
    func roundTripOurEncoder(example: String) throws {
        let jws = try VerifyFixtures.text(examples.appendingPathComponent("example-\(example)-d-jws.txt"))
        let chunks = QRNumeric.chunks(jws)
        for (index, chunk) in chunks.enumerated() {
            let code = try QRCode(jws: chunk, chunk: index + 1, of: chunks.count)
            #expect(QRModuleGrid(size: code.size, modules: code.modules)?.formatInfo?.errorCorrection == .L)
            for scale in [2, 4] {
                let png = try QRImage(scale: scale).png(code)
                let found = try SHCQRCodeReader.read(png: png)
                try #require(found.count == 1)
                #expect(found[0].text == (try QRNumeric.text(jws: String(chunk), chunk: index + 1, of: chunks.count)))
                #expect(found[0].version == code.version)
                #expect(found[0].errorCorrection == .L)
                #expect(found[0].mask == QRModuleGrid(size: code.size, modules: code.modules)?.formatInfo?.mask)
                // The grid sampled from the image is exactly the encoder's module matrix.
                let grid = QRModuleGrid(image: try GrayImage(png: png), corners: found[0].corners.map { (x: $0.x, y: $0.y) })
                #expect(grid?.modules == code.modules)
                #expect(grid?.functionPatternMismatch == 0)
                // Corners: the symbol spans pixels 4·scale … (4 + size)·scale − 1; zbar's estimates are within 1 px.
                let low = 4 * scale, high = (4 + code.size) * scale - 1
                #expect(found[0].corners.count == 4)
                for p in found[0].corners {
                    #expect(abs(p.x - low) <= 1 || abs(p.x - high) <= 1, "\(p)")
                    #expect(abs(p.y - low) <= 1 || abs(p.y - high) <= 1, "\(p)")
                }
            }
        }
    }

    @Test func byteSegmentComesBackRaw() throws {
        // Not valid UTF-8 and full of ISO-8859-1 / Shift-JIS lead bytes: a charset guess would rewrite them.
        let raw: [UInt8] = Array("shc:/".utf8) + [0xC3, 0x28, 0xFF, 0xE9, 0x82, 0xA0, 0x00, 0x7F, 0x80]
        let code = try QRCode(byteSegment: raw, numericSegment: Array("0123456789".utf8))
        let found = try QRDecoder().decode(GrayImage(png: QRImage(scale: 3).png(code)))
        try #require(found.count == 1)
        #expect(found[0].bytes == raw + Array("0123456789".utf8))
        #expect(found[0].version == code.version)
        #expect(found[0].errorCorrection == .L)
    }

    /// Any module matrix becomes a PNG whose pixels are the modules (scale and quiet zone as asked), and a
    /// matrix that is not square is refused.
    @Test func moduleMatrixPNGHasTheModulesAsPixels() throws {
        let size = 5
        let modules = (0..<size * size).map { ($0 * 7) % 3 == 0 }
        let image = try GrayImage(png: QRImage(scale: 3, quietZone: 2).png(size: size, modules: modules))
        #expect(image.width == (size + 4) * 3 && image.height == image.width)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let (mx, my) = (x / 3 - 2, y / 3 - 2)
                let dark = (0..<size).contains(mx) && (0..<size).contains(my) && modules[my * size + mx]
                #expect(image.pixels[y * image.width + x] == (dark ? 0 : 255), "pixel \(x),\(y)")
            }
        }
        let error = #expect(throws: HealthCardError.self) { try QRImage().png(size: 5, modules: modules + [true]) }
        #expect(error?.kind == .configuration)
    }

    @Test func specPNGsDecodeToTheirNumericText() throws {
        // (version, mask) from derived/facts.json; all are ECC L.
        let facts: [String: (Int, Int)] = [
            "example-00-g-qr-code-0": (18, 5), "example-01-g-qr-code-0": (18, 6), "example-02-g-qr-code-0": (21, 6),
            "example-02-g-qr-code-1": (21, 7), "example-02-g-qr-code-2": (21, 7), "example-03-g-qr-code-0": (18, 6),
        ]
        let pngs = try VerifyFixtures.files(in: examples.appendingPathComponent("derived/qr-png"), suffix: ".png")
        #expect(pngs.count == 6)
        for png in pngs {
            let name = png.deletingPathExtension().lastPathComponent
            let chunk = name.split(separator: "-").last!
            let prefix = name.replacingOccurrences(of: "-g-qr-code-\(chunk)", with: "")
            let expected = try VerifyFixtures.text(examples.appendingPathComponent("\(prefix)-f-qr-code-numeric-value-\(chunk).txt"))
            let found = try SHCQRCodeReader.read(png: VerifyFixtures.bytes(png))
            try #require(found.count == 1, "\(name)")
            #expect(found[0].text == expected, "\(name)")
            let (version, mask) = try #require(facts[name])
            #expect(found[0].version == version, "\(name)")
            #expect(found[0].mask == mask, "\(name)")
            #expect(found[0].errorCorrection == .L, "\(name)")
        }
    }

    @Test func igScenarioPNGsDecodeToTheirNumericText() throws {
        let dir = examples.appendingPathComponent("ig-vaccination-examples")
        let pngs = try VerifyFixtures.files(in: dir, suffix: "-qr-code-0.png")
        #expect(pngs.count == 3)
        for png in pngs {
            let stem = png.lastPathComponent.replacingOccurrences(of: "-qr-code-0.png", with: "")
            let expected = try VerifyFixtures.text(dir.appendingPathComponent("\(stem)-qr-code-numeric-value-0.txt"))
            let found = try SHCQRCodeReader.read(png: VerifyFixtures.bytes(png))
            try #require(found.count == 1, "\(stem)")
            #expect(found[0].text == expected, "\(stem)")
            // 194 px = 2 px × (89 modules + 8 quiet-zone modules): version (89 − 17) / 4 = 18.
            #expect(found[0].version == 18, "\(stem)")
            #expect(found[0].errorCorrection == .L, "\(stem)")
            // The text also decodes back to the JWS beside it.
            let jws = try VerifyFixtures.text(dir.appendingPathComponent("\(stem)-jws.txt"))
            #expect(try QRNumeric.jws(fromDigits: found[0].text.dropFirst(5).utf8) == jws)
        }
    }

    @Test func noSymbolAndBadPNG() throws {
        let blank = try GrayImage(png: Self.whitePNG(side: 64))
        #expect(blank.width == 64 && blank.pixels.allSatisfy { $0 == 255 })
        #expect(try QRDecoder().decode(blank).isEmpty)
        let error = #expect(throws: HealthCardError.self) { try SHCQRCodeReader.read(png: Array("not a png".utf8)) }
        #expect(error?.kind == .png)
    }

    /// A white 8-bit gray PNG written by hand (`TestImages.whitePNG`).
    static func whitePNG(side: Int) -> [UInt8] { TestImages.whitePNG(side: side) }
}
