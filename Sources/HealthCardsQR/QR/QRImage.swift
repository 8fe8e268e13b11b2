internal import CPNG
import HealthCardsCore
import HealthCardsVerify

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

/// An 8-bit grayscale raster decoded from a PNG or a JPEG (for reading QR images back).
package struct GrayImage: Sendable {
    public let width: Int
    public let height: Int
    /// Row-major luminance, 0 black … 255 white.
    public let pixels: [UInt8]

    /// The caller has checked that `pixels.count == width × height`.
    init(checkedWidth width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The pixel count of an image whose header (a PNG's IHDR, a JPEG's SOF) gives `width` × `height`, checked
    /// against the budget before any pixel is decoded (the one check for every image format read).
    /// - Returns: `width × height` (both below 2^32, so the product fits an Int of 64 bits).
    /// - Throws: `HealthCardError(.input)` naming the size and the budget when either side is 0 or the image has
    ///   more than `maxPixels` pixels.
    static func pixelCount(width: UInt32, height: UInt32, maxPixels: Int) throws -> Int {
        let pixels = Int(width) * Int(height)
        guard width > 0, height > 0, pixels <= maxPixels else {
            throw HealthCardError(.input, "the image is \(width) × \(height) pixels; QR images may have at most \(maxPixels) pixels "
                + "(e.g. 8192 × 8192; docs/verify.md, \"Budgets\"). Scale it down and check it again")
        }
        return pixels
    }

    /// The text a C decoder (libpng, libjpeg) left in `buffer`, up to its first NUL.
    static func decoderMessage(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes any PNG (palette, RGB, alpha, 16-bit) to 8-bit gray with libpng.
    ///
    /// The width and height are read from the PNG's header first and checked against `maxPixels`
    /// before any pixel is decoded: a small file that claims 20000 × 20000 pixels costs nothing. The
    /// pixels are decoded straight into this value's buffer (one byte a pixel, no second copy).
    /// - Parameter maxPixels: the most width × height accepted (`InputBudget.imagePixels` by default).
    /// - Throws: `HealthCardError(.png)` with libpng's message; `HealthCardError(.input)` naming the size
    ///   and the budget when the image has more than `maxPixels` pixels.
    public init(png data: [UInt8], maxPixels: Int = InputBudget.imagePixels) throws {
        try self.init(
            maxPixels: maxPixels,
            readSize: { CPNG_read_size(data, data.count, &$0, &$1, $2, $3) },
            decode: { CPNG_decode_gray8(data, data.count, $0, $1, &$2, &$3, $4, $5) })
    }

    /// Decodes an image with a C decoder's two calls: `readSize` reads width and height from the header, which
    /// are checked against `maxPixels` (`pixelCount`) before `decode` writes 8-bit gray into a buffer of exactly
    /// width × height bytes (straight into this value's buffer: no second copy). Each call returns 0 on success,
    /// or fills the message buffer it is given (pointer, capacity in bytes).
    /// - Throws: `HealthCardError(.png)` with the decoder's message; `HealthCardError(.input)` from `pixelCount`.
    init(
        maxPixels: Int,
        readSize: (inout UInt32, inout UInt32, UnsafeMutablePointer<CChar>, Int) -> Int32,
        decode: (UnsafeMutablePointer<UInt8>?, Int, inout UInt32, inout UInt32, UnsafeMutablePointer<CChar>, Int) -> Int32
    ) throws {
        var width: UInt32 = 0
        var height: UInt32 = 0
        var error = [CChar](repeating: 0, count: 256)
        let errorCount = error.count
        guard readSize(&width, &height, &error, errorCount) == 0 else { throw HealthCardError(.png, Self.decoderMessage(error)) }
        let pixels = try Self.pixelCount(width: width, height: height, maxPixels: maxPixels)
        var status: Int32 = 0
        let decoded = [UInt8](unsafeUninitializedCapacity: pixels) { buffer, count in
            status = decode(buffer.baseAddress, pixels, &width, &height, &error, errorCount)
            // On failure the decoder may have written part of the rows: zero what is handed back.
            if status != 0 { buffer.initialize(repeating: 0) }
            count = pixels
        }
        guard status == 0, Int(width) * Int(height) == pixels else { throw HealthCardError(.png, Self.decoderMessage(error)) }
        self.init(checkedWidth: Int(width), height: Int(height), pixels: decoded)
    }
}
