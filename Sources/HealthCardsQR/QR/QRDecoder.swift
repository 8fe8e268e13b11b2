internal import CZbar
import HealthCardsCore
import HealthCardsVerify

/// One QR symbol found in an image.
public struct DecodedQR: Sendable, Equatable {
    /// The symbol's data exactly as encoded: the bytes of all its segments concatenated, with no charset
    /// conversion (zbar runs with `ZBAR_CFG_BINARY`).
    public let bytes: [UInt8]
    /// Corner points of the symbol in pixels, as zbar reports them (usually 4).
    public let corners: [Point]
    /// QR version 1…40 read from the module grid; nil when the grid could not be sampled (rotated, skewed).
    public let version: Int?
    /// Error correction level from the format information; nil when it could not be read.
    public let errorCorrection: QRErrorCorrection?
    /// Data mask 0…7 from the format information; nil when it could not be read.
    public let mask: Int?
    /// The segments read from the symbol's own bit stream (`QRBitStream`): mode indicators and character
    /// counts, which zbar does not report. Nil when the grid could not be read cleanly: the segments' data
    /// must concatenate to exactly `bytes`, or they are not trusted (no error correction is attempted).
    package let segments: [QRSegment]?

    /// A pixel position: `x` to the right, `y` down, from the top-left corner of the image.
    public struct Point: Sendable, Equatable {
        public let x: Int
        public let y: Int
    }

    /// `bytes` as UTF-8 (invalid sequences become U+FFFD). For `shc:/` texts this is exact: they are ASCII.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Finds and decodes QR symbols in a gray raster with zbar's image scanner (Debian `libzbar0`).
///
/// An instance owns one `zbar_image_scanner_t`; it is not thread-safe, so use one decoder per task.
/// Only the QR symbology is enabled. Byte segments are returned as raw bytes: zbar otherwise guesses a
/// charset (ISO-8859-1, Shift-JIS, UTF-8) and converts to UTF-8, which would alter binary data.
public final class QRDecoder {
    private let scanner: OpaquePointer

    /// - Throws: `HealthCardError(.qr)` when zbar cannot create or configure its scanner.
    public init() throws {
        guard let scanner = zbar_image_scanner_create() else {
            throw HealthCardError(.qr, "zbar could not create an image scanner")
        }
        self.scanner = scanner
        guard zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0) == 0,
            zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1) == 0,
            zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1) == 0
        else {
            zbar_image_scanner_destroy(scanner)
            throw HealthCardError(.qr, "zbar refused the QR-only, binary-data configuration")
        }
    }

    deinit { zbar_image_scanner_destroy(scanner) }

    /// The version of the zbar library this process runs with, as zbar reports it (e.g. "0.23.92").
    public static var zbarRuntimeVersion: String {
        var major: UInt32 = 0
        var minor: UInt32 = 0
        var patch: UInt32 = 0
        zbar_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }

    /// Every QR symbol zbar finds in `image`, ordered top to bottom, then left to right.
    ///
    /// Version, ECC level, mask and segments come from `QRModuleGrid`, `QRFormatInfo` and `QRBitStream`, since
    /// zbar does not report them.
    /// - Returns: an empty array when the image holds no readable QR symbol.
    /// - Throws: `HealthCardError(.qr)` when zbar fails (not when it merely finds nothing).
    package func decode(_ image: GrayImage) throws -> [DecodedQR] {
        guard image.width > 0, image.height > 0, image.pixels.count == image.width * image.height else {
            throw HealthCardError(.qr, "the image is empty or its pixel count does not match \(image.width)×\(image.height)")
        }
        guard let zimage = zbar_image_create() else {
            throw HealthCardError(.qr, "zbar could not create an image")
        }
        defer { zbar_image_destroy(zimage) }
        // "Y800": 8-bit gray, one byte per pixel, row-major.
        let y800 = UInt(UInt8(ascii: "Y")) | UInt(UInt8(ascii: "8")) << 8 | UInt(UInt8(ascii: "0")) << 16
            | UInt(UInt8(ascii: "0")) << 24
        zbar_image_set_format(zimage, y800)
        zbar_image_set_size(zimage, UInt32(image.width), UInt32(image.height))

        return try image.pixels.withUnsafeBufferPointer { pixels -> [DecodedQR] in
            // zbar only reads the buffer; no cleanup handler, and the buffer outlives the scan.
            zbar_image_set_data(zimage, pixels.baseAddress, UInt(pixels.count), nil)
            defer { zbar_image_set_data(zimage, nil, 0, nil) }
            guard zbar_scan_image(scanner, zimage) >= 0 else {
                throw HealthCardError(.qr, "zbar failed while scanning the image")
            }
            var found: [DecodedQR] = []
            var symbol = zbar_image_first_symbol(zimage)
            while let current = symbol {
                if zbar_symbol_get_type(current) == ZBAR_QRCODE {
                    found.append(DecodedQR(symbol: current, image: image))
                }
                symbol = zbar_symbol_next(current)
            }
            return found.sorted {
                let a = $0.corners.first ?? .init(x: 0, y: 0), b = $1.corners.first ?? .init(x: 0, y: 0)
                return (a.y, a.x) < (b.y, b.x)
            }
        }
    }
}

extension DecodedQR {
    /// Copies data and corners out of a zbar symbol (valid only during the scan) and samples the grid.
    fileprivate init(symbol: OpaquePointer, image: GrayImage) {
        let length = Int(zbar_symbol_get_data_length(symbol))
        if length > 0, let data = zbar_symbol_get_data(symbol) {
            bytes = data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        } else {
            bytes = []
        }
        corners = (0..<zbar_symbol_get_loc_size(symbol)).map {
            Point(x: Int(zbar_symbol_get_loc_x(symbol, $0)), y: Int(zbar_symbol_get_loc_y(symbol, $0)))
        }
        let grid = QRModuleGrid(image: image, corners: corners.map { (x: $0.x, y: $0.y) })
        let format = grid?.formatInfo
        version = grid?.version
        errorCorrection = format?.errorCorrection
        mask = format?.mask
        let read = grid.flatMap { grid in format.flatMap { QRBitStream.segments(grid: grid, format: $0) } }
        let data = bytes
        segments = read.flatMap { $0.flatMap(\.data) == data ? $0 : nil }
    }
}

/// Reads SMART Health Card QR images: PNG bytes in, the QR symbols' texts with version and ECC level out.
package enum SHCQRCodeReader {
    /// Decodes every QR symbol in a PNG.
    /// - Parameter png: the file's bytes; any PNG colour type or bit depth.
    /// - Returns: the symbols top to bottom, then left to right; empty when there is none. A SMART Health Card
    ///   symbol's `text` is `shc:/` followed by digits (or `shc:/C/N/` and digits for chunk C of N).
    /// - Throws: `HealthCardError(.png)` for a PNG libpng cannot decode, `.qr` when zbar fails.
    public static func read(png: [UInt8]) throws -> [DecodedQR] {
        try QRDecoder().decode(GrayImage(png: png))
    }
}
