internal import CPNG
import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

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
