internal import CPNG
import HealthCardsCore

/// Writes a QR symbol as a PNG: 1-bit grayscale, a quiet zone of `quietZone` modules (4, the QR
/// standard's minimum), `scale` pixels per module.
public struct QRImage: Sendable {
    /// Pixels per module. 4 px at 300 dpi gives a V18 symbol (97 modules with quiet zone) of about 33 mm.
    public var scale: Int
    /// Light modules around the symbol; the QR standard requires 4.
    public var quietZone: Int
    /// zlib level for the PNG's IDAT stream, 0 to 9. Default 1: measured on V18 symbols at 4 px per
    /// module it makes images about 18% larger than level 9 (about 2.1 KB against 1.8 KB) in a
    /// seventh of the time (docs/performance.md).
    public var compressionLevel: Int32
    /// PNG row filter: 0 none (the default: a 1-bit image gains nothing from filters at speed),
    /// 1 all (adaptive), 2 libpng default.
    public var filter: Int32

    /// The width the symbol (without its quiet zone) is meant to print at, in millimetres, written as
    /// the PNG's `pHYs` chunk so a document program places the image at that size; nil writes no `pHYs`.
    /// Default 40 mm, the size SMART Health Cards aim at (digest section 6).
    public var printMillimetres: Double? = 40

    /// Default pixels per module.
    public static let defaultScale = 4

    /// The fewest pixels per module the commands write (`--qr-scale`). Measured on a version 22 symbol (the
    /// largest single QR) scaled by 0.7 to 1.7 with bilinear resampling, with and without a slight blur (what a
    /// document program or a screen does to an image): at 3 px per module zbar (what `verify` reads with) and
    /// zxing-cpp (the engine of many phone scanners) read every variant; at 2 px zbar misses the scaled-down
    /// ones and zxing-cpp the blurred ones; at 1 px zbar reads none, not even the image as written.
    public static let minimumReliableScale = 3

    /// The `pHYs` value for a symbol of `modules` modules at `scale` pixels each printed
    /// `printMillimetres` wide: pixels per metre, rounded (0 when there is no print size).
    public func pixelsPerMetre(modules: Int) -> UInt32 {
        guard let mm = printMillimetres, mm > 0 else { return 0 }
        let value = (Double(modules * scale) / (mm / 1000)).rounded()
        return value.isFinite && value >= 1 && value < Double(Int32.max) ? UInt32(value) : 0
    }

    public init(scale: Int = QRImage.defaultScale, quietZone: Int = 4, compressionLevel: Int32 = 1, filter: Int32 = 0) {
        self.scale = scale
        self.quietZone = quietZone
        self.compressionLevel = compressionLevel
        self.filter = filter
    }

    /// The version of the libpng this process runs with, as libpng reports it (e.g. "1.6.39").
    public static var libpngRuntimeVersion: String { String(cString: CPNG_libpng_version()) }

    /// Encodes `code` as PNG bytes.
    /// - Throws: `HealthCardError(.png)` when libpng fails, `.configuration` for a scale outside 1...64 or a quiet
    ///   zone outside 0...64 modules.
    public func png(_ code: QRCode) throws -> [UInt8] {
        try png(size: code.size, modules: code.modules)
    }

    /// Encodes any square module matrix as PNG bytes, with this image's scale and quiet zone: a symbol
    /// made elsewhere (another encoder, a forced version or error correction level), for tests and
    /// fixtures.
    /// - Parameters:
    ///   - size: modules per side, 1 to 177 (QR version 40).
    ///   - modules: row-major, `size × size`; true is dark.
    /// - Throws: `HealthCardError(.configuration)` for a size outside 1...177, a matrix of another length or a scale
    ///   outside 1...64; `HealthCardError(.png)` when libpng fails.
    public func png(size: Int, modules: [Bool]) throws -> [UInt8] {
        guard (1...64).contains(scale) else {
            throw HealthCardError(.configuration, "QR scale \(scale) px per module is outside 1...64")
        }
        guard (1...177).contains(size), modules.count == size * size else {
            throw HealthCardError(
                .configuration, "a module matrix of \(modules.count) modules is not \(size) × \(size) with 1...177 per side")
        }
        guard (0...64).contains(quietZone) else {
            throw HealthCardError(.configuration, "a quiet zone of \(quietZone) modules is outside 0...64")
        }
        let side = (size + 2 * quietZone) * scale
        let stride = (side + 7) / 8
        // 1-bit gray: a set bit is white. Start all white, clear the dark modules of one row of
        // modules, then copy that pixel row `scale` times.
        var rows = [UInt8](repeating: 0xFF, count: stride * side)
        rows.withUnsafeMutableBufferPointer { raster in
            let base = raster.baseAddress!
            modules.withUnsafeBufferPointer { modules in
                for my in 0..<size {
                    let y0 = (my + quietZone) * scale
                    let row = base + y0 * stride
                    for mx in 0..<size where modules[my * size + mx] {
                        var x = (mx + quietZone) * scale
                        let end = x + scale
                        while x < end {
                            row[x >> 3] &= ~(0x80 >> UInt8(x & 7))
                            x += 1
                        }
                    }
                    for y in 1..<scale { (row + y * stride).update(from: row, count: stride) }
                }
            }
        }
        var buffer = CPNG_buffer()
        var message = [CChar](repeating: 0, count: 256)
        let status = CPNG_encode_gray1(rows, UInt32(side), UInt32(side), stride, compressionLevel, filter,
                                       pixelsPerMetre(modules: size), &buffer, &message, message.count)
        guard status == 0 else {
            throw HealthCardError(.png, String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { CPNG_buffer_free(&buffer) }
        return Array(UnsafeBufferPointer(start: buffer.data, count: buffer.size))
    }
}
