internal import CZXing
import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// One QR symbol as zxing-cpp (Debian `libzxing2`) read it.
struct ZXingSymbol: Sendable {
    /// Every segment's data concatenated, no charset conversion.
    let bytes: [UInt8]
    /// The error-corrected data codewords in stream order; nil when the library does not report them
    /// (zxing-cpp 2 and later).
    let codewords: [UInt8]?
    /// Outer corners in continuous pixel coordinates, in the symbol's order: top left, top right, bottom right,
    /// bottom left.
    let corners: [(x: Double, y: Double)]
    /// The level from the format information zxing-cpp decoded.
    let errorCorrection: QRErrorCorrection?
    /// The symbol was read mirrored.
    let mirrored: Bool

    /// The version whose data codewords at `errorCorrection` number exactly `codewords.count` (the count grows
    /// with the version at any one level, so at most one matches).
    var version: Int? {
        guard let codewords, let level = errorCorrection else { return nil }
        return (1...40).first { QRSymbolLayout.dataCodewords(version: $0, level: level) == codewords.count }
    }

    /// This symbol with its corners multiplied by `factor` (read from an image enlarged or shrunk).
    func scaled(by factor: Double) -> ZXingSymbol {
        ZXingSymbol(bytes: bytes, codewords: codewords, corners: corners.map { (x: $0.x * factor, y: $0.y * factor) },
                    errorCorrection: errorCorrection, mirrored: mirrored)
    }

    /// The segments read from `codewords`, when their data is exactly `bytes`.
    var segments: [QRSegment]? {
        guard let codewords, let version else { return nil }
        guard let read = QRBitStream.parse(codewords, version: version), read.flatMap(\.data) == bytes else { return nil }
        return read
    }
}

/// zxing-cpp's QR reader over a gray raster, through the C shim `CZXing` (C++ exceptions stay in the shim).
enum ZXingReader {
    /// The zxing-cpp version the program was built against (e.g. "1.4.0"; the library has no run-time call).
    static var buildVersion: String { String(cString: CZXing_version()) }

    /// Every QR symbol zxing-cpp reads in `image`, trying harder (rotations, downscaling, more finder
    /// candidates) when `tryHarder`; with `pure`, only a symbol that fills the image (its quiet zone around it),
    /// straight, read without a finder pattern search.
    /// - Throws: `HealthCardError(.qr)` when zxing-cpp fails (not when it merely finds nothing).
    static func read(_ image: GrayImage, tryHarder: Bool = true, pure: Bool = false) throws -> [ZXingSymbol] {
        var found: UnsafeMutablePointer<CZXing_symbol>? = nil
        var count = 0
        var error = [CChar](repeating: 0, count: 256)
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            CZXing_read(pixels.baseAddress, Int32(image.width), Int32(image.height), tryHarder ? 1 : 0, pure ? 1 : 0, &found, &count, &error, error.count)
        }
        guard status == 0 else {
            throw HealthCardError(.qr, String(decoding: error.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { CZXing_free(found, count) }
        guard let found else { return [] }
        return (0..<count).map { i in
            let symbol = found[i]
            let bytes = symbol.bytes.map { Array(UnsafeBufferPointer(start: $0, count: symbol.length)) } ?? []
            let codewords = symbol.codewords.map { Array(UnsafeBufferPointer(start: $0, count: symbol.codeword_count)) }
            let c = symbol.corners
            let corners = [(c.0, c.1), (c.2, c.3), (c.4, c.5), (c.6, c.7)].map { (x: Double($0.0), y: Double($0.1)) }
            let level: QRErrorCorrection? =
                switch UInt8(bitPattern: symbol.error_correction) {
                case UInt8(ascii: "L"): .L
                case UInt8(ascii: "M"): .M
                case UInt8(ascii: "Q"): .Q
                case UInt8(ascii: "H"): .H
                default: nil
                }
            return ZXingSymbol(bytes: bytes, codewords: codewords, corners: corners, errorCorrection: level, mirrored: symbol.mirrored != 0)
        }
    }
}
