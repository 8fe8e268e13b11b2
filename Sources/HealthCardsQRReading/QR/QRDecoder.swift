internal import CZbar
import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// One QR symbol found in an image.
public struct DecodedQR: Sendable, Equatable {
    /// The symbol's data exactly as encoded: the bytes of all its segments concatenated, with no charset
    /// conversion (zbar runs with `ZBAR_CFG_BINARY`; zxing-cpp's raw bytes).
    public let bytes: [UInt8]
    /// Corner points of the symbol in pixels of the image given, as the decoder reports them (4).
    public let corners: [Point]
    /// QR version 1…40: read from the module grid, or from the count of data codewords zxing-cpp corrected;
    /// nil when neither could be had (a symbol too blurred or distorted to sample, that zxing-cpp did not read).
    public let version: Int?
    /// Error correction level from the format information; nil when it could not be read.
    public let errorCorrection: QRErrorCorrection?
    /// Data mask 0…7 from the format information of the sampled grid; nil when the grid could not be sampled.
    public let mask: Int?
    /// The segments read from the symbol's own bit stream (`QRBitStream`): mode indicators and character
    /// counts, which zbar does not report. They come from the module grid sampled from the image or, when that
    /// does not read cleanly, from the data codewords zxing-cpp error-corrected. Nil when neither gives them:
    /// the segments' data must concatenate to exactly `bytes`, or they are not trusted.
    package let segments: [QRSegment]?
    /// Which decoder found the symbol.
    package let readBy: Decoder

    /// The decoders `QRDecoder` tries, in order.
    package enum Decoder: String, Sendable {
        /// zbar on the image as given.
        case zbar
        /// zxing-cpp (trying harder: rotations, downscaling), where zbar found nothing or left a symbol unchecked.
        case zxing = "zxing-cpp"
        /// zbar on the image enlarged 2× (bilinear), where neither found anything in a small image.
        case zbarEnlarged = "zbar, image enlarged 2×"
        /// zbar, then zxing-cpp, on the image made black and white against each pixel's neighbourhood
        /// (`GrayImage.binarized`), where nothing else found anything: shadows, gradients of light, blurred JPEGs.
        case binarized = "zbar or zxing-cpp, image binarized"
        /// zxing-cpp on the image enlarged 1.5× (bilinear), the last try for a small image: its finder search
        /// misses some photographed symbols at one size and finds them at another.
        case zxingEnlarged = "zxing-cpp, image enlarged 1.5×"
        /// zbar, then zxing-cpp, on the image inverted (up to `binarizeMaxPixels`): a light symbol on a dark ground,
        /// which neither reads as it is (zxing-cpp 1.4 has no inversion of its own).
        case inverted = "zbar or zxing-cpp, image inverted"
        /// zxing-cpp's pure-symbol reader, the last try: an image that is one straight symbol and its quiet zone,
        /// read without a finder pattern search (zxing-cpp 1.4's misses some at about 1.25 pixels a module).
        case pure = "zxing-cpp, pure symbol"
    }

    /// A pixel position: `x` to the right, `y` down, from the top-left corner of the image.
    public struct Point: Sendable, Equatable {
        public let x: Int
        public let y: Int
    }

    /// `bytes` as UTF-8 (invalid sequences become U+FFFD). For `shc:/` texts this is exact: they are ASCII.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Version, level and segments were all read (the symbol's checks can all be made).
    var fullyRead: Bool { version != nil && errorCorrection != nil && segments != nil }
}

/// Finds and decodes QR symbols in a gray raster: zbar's image scanner (Debian `libzbar0`) first, then
/// zxing-cpp (Debian `libzxing2`) where zbar finds nothing or a symbol's grid cannot be read, and, each only
/// while nothing has been found: zbar on the image enlarged 2× (small images), zbar then zxing-cpp on the
/// image binarized against each pixel's neighbourhood (shrunk first to `binarizeMaxPixels`), zxing-cpp on the
/// image enlarged 1.5× (small images), zbar then zxing-cpp on the image inverted (light on dark; up to
/// `binarizeMaxPixels`), zxing-cpp's pure-symbol reader. Which one read a symbol is `DecodedQR.readBy`; docs/verify.md ("QR
/// images as people send them") has the decode rates this gives.
///
/// An instance owns one `zbar_image_scanner_t`; it is not thread-safe, so use one decoder per task.
/// Only the QR symbology is enabled. Byte segments are returned as raw bytes: zbar otherwise guesses a
/// charset (ISO-8859-1, Shift-JIS, UTF-8) and converts to UTF-8, which would alter binary data.
public final class QRDecoder {
    private let scanner: OpaquePointer

    /// The largest image (width × height) enlarged for the last try: 1024 × 1024 (4 MiB after enlarging).
    /// Symbols that small images hold at under 2 pixels per module are what the enlarging is for.
    public static let enlargeMaxPixels = 1 << 20

    /// The most pixels the binarizing pass works on: 4,194,304 (2048 × 2048). A larger image is shrunk by a
    /// whole factor (averaging) first, so the pass costs the same for a 64-megapixel image as for a 4-megapixel
    /// one.
    public static let binarizeMaxPixels = 1 << 22

    /// The most symbols read from one image: 100 (a sheet of cards printed for a household or a class). Past them
    /// the rest are not sampled or checked (a hostile 8192 × 8192 image of tiled symbols held 1,764).
    public static let maxSymbols = 100

    /// What a budget kept the last `decode(_:)` from doing (a decoder not run, symbols not read), one sentence each;
    /// empty when every pass ran in full. `QRImageCheck` says each as `QR_DECODE_BUDGET`.
    package var budgetNotes: [String] {
        let zxing = zxingSkipped.isEmpty ? [] : [
            "zxing-cpp was not run on " + zxingSkipped.joined(separator: ", ") + ": it shows more than "
                + "\(FinderPatternCount.zxingLimit) finder-like patterns (the squares at a QR symbol's corners, three a symbol), "
                + "and zxing-cpp's time grows with the cube of their count",
        ]
        return zxing + symbolsLeft
    }
    /// The images zxing-cpp was not given in the last `decode(_:)` ("the image", "the image binarized", …).
    private var zxingSkipped: [String] = []
    /// The passes the last `decode(_:)` ran, in order: the decoder ("zbar", "zxing-cpp", "zxing-cpp's pure-symbol
    /// reader") and the image it was given ("the image", "it enlarged 2×", "it binarized", …).
    private var passesRun: [(decoder: String, image: String)] = []

    /// What the last `decode(_:)` tried, for a message when it found nothing: each decoder that ran with the images
    /// it was given, and the images the finder-pattern budget kept zxing-cpp from, e.g. "zbar on the image and on it
    /// inverted; zxing-cpp on it inverted; zxing-cpp's pure-symbol reader on the image; zxing-cpp was not run on the
    /// image (QR_DECODE_BUDGET)". Only passes that ran are named.
    package var triedSummary: String {
        func list(_ items: [String], _ last: String) -> String {
            items.count < 2 ? items.joined() : items.dropLast().joined(separator: ", ") + " \(last) " + items.last!
        }
        var decoders: [String] = []
        var images: [String: [String]] = [:]
        for pass in passesRun {
            if images[pass.decoder] == nil { decoders.append(pass.decoder) }
            images[pass.decoder, default: []].append("on " + pass.image)
        }
        var parts = decoders.map { "\($0) " + list(images[$0]!, "and") }
        if !zxingSkipped.isEmpty {
            let skipped = zxingSkipped.map(Self.asPronoun)
            parts.append("zxing-cpp was not run " + list(skipped.map { "on " + $0 }, "or") + " (QR_DECODE_BUDGET)")
        }
        return parts.joined(separator: "; ")
    }
    /// "the image inverted" as the summary's later mentions say it: "it inverted" ("the image" stays).
    private static func asPronoun(_ image: String) -> String {
        image.hasPrefix("the image ") ? "it " + image.dropFirst("the image ".count) : image
    }
    /// Symbols the last `decode(_:)` read but did not check, said.
    private var symbolsLeft: [String] = []

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

    /// The zxing-cpp version the program was built against (e.g. "1.4.0"; zxing-cpp has no run-time call).
    public static var zxingBuildVersion: String { ZXingReader.buildVersion }

    /// Every QR symbol found in `image`, ordered top to bottom, then left to right.
    ///
    /// Version, ECC level, mask and segments come from `QRModuleGrid`, `QRFormatInfo` and `QRBitStream`, since
    /// zbar does not report them; where the grid cannot be sampled, from what zxing-cpp read of the same symbol.
    /// - Returns: an empty array when no decoder finds a readable QR symbol.
    /// - Throws: `HealthCardError(.qr)` when a decoder fails (not when it merely finds nothing).
    package func decode(_ image: GrayImage) throws -> [DecodedQR] {
        try decode(image, decoders: [.zbar, .zxing, .zbarEnlarged, .binarized, .zxingEnlarged, .inverted, .pure])
    }

    /// `decode(_:)` with only some of the decoders (for tests and the measurements in docs/verify.md).
    func decode(_ image: GrayImage, decoders: Set<DecodedQR.Decoder>) throws -> [DecodedQR] {
        guard image.width > 0, image.height > 0, image.pixels.count == image.width * image.height else {
            throw HealthCardError(.qr, "the image is empty or its pixel count does not match \(image.width)×\(image.height)")
        }
        zxingSkipped = []
        symbolsLeft = []
        passesRun = []
        var found: [DecodedQR] = []
        if decoders.contains(.zbar) {
            let shrink = image.width * image.height > Self.binarizeMaxPixels
                ? Int((Double(image.width * image.height) / Double(Self.binarizeMaxPixels)).squareRoot().rounded(.up)) : 1
            if shrink > 1, FinderPatternCount.count(image, limit: FinderPatternCount.zbarLimit) > FinderPatternCount.zbarLimit {
                // A large image crowded with finder-like patterns: zbar reads it shrunk (grids still sampled in the image).
                let small = image.shrunk(by: shrink)
                passesRun.append(("zbar", "the image shrunk to \(small.width) × \(small.height)"))
                found = try zbarSymbols(small, readBy: .zbar, original: image, factor: Double(shrink))
                symbolsLeft.append("zbar read the image only shrunk to \(small.width) × \(small.height) pixels: it shows more "
                    + "than \(FinderPatternCount.zbarLimit) finder-like patterns, on which zbar's time grows faster than their count")
            } else {
                passesRun.append(("zbar", "the image"))
                found = try zbarSymbols(image, readBy: .zbar, original: image)
            }
        }
        if decoders.contains(.zxing), found.isEmpty || found.contains(where: { !$0.fullyRead }) {
            for symbol in try zxing(image, "the image") {
                if let i = found.firstIndex(where: { $0.bytes == symbol.bytes && !$0.fullyRead }) {
                    found[i] = found[i].completed(by: symbol)
                } else if !found.contains(where: { $0.bytes == symbol.bytes }) {
                    found.append(DecodedQR(zxing: symbol, image: image))
                }
            }
        }
        if decoders.contains(.zbarEnlarged), found.isEmpty,
            image.width * image.height <= Self.enlargeMaxPixels,
            let enlarged = image.enlarged(by: 2, maxPixels: 4 * Self.enlargeMaxPixels)
        {
            passesRun.append(("zbar", "it enlarged 2×"))
            found = try zbarSymbols(enlarged, readBy: .zbarEnlarged, original: image, factor: 0.5)
        }
        if decoders.contains(.binarized), found.isEmpty {
            // A large image (a photo of many megapixels, whose symbol's modules are many pixels wide) is first
            // shrunk to at most `binarizeMaxPixels`, so this pass costs the same whatever the image's size.
            let shrink = image.width * image.height > Self.binarizeMaxPixels
                ? Int((Double(image.width * image.height) / Double(Self.binarizeMaxPixels)).squareRoot().rounded(.up)) : 1
            let small = shrink > 1 ? image.shrunk(by: shrink) : image
            // A neighbourhood about a fortieth of the image across: a few modules of a symbol that fills a
            // good part of it. The grid is still sampled from the image as given.
            let binary = small.binarized(radius: max(4, min(small.width, small.height) / 40))
            passesRun.append(("zbar", "it binarized"))
            found = try zbarSymbols(binary, readBy: .binarized, original: image, factor: Double(shrink))
            if found.isEmpty {
                found = try zxing(binary, "the image binarized").map {
                    DecodedQR(zxing: $0.scaled(by: Double(shrink)), image: image, readBy: .binarized)
                }
            }
        }
        if decoders.contains(.zxingEnlarged), found.isEmpty, image.width * image.height <= Self.enlargeMaxPixels,
            let enlarged = image.enlarged(by: 1.5, maxPixels: 3 * Self.enlargeMaxPixels)
        {
            found = try zxing(enlarged, "the image enlarged 1.5×").map { DecodedQR(zxing: $0.scaled(by: 1 / 1.5), image: image, readBy: .zxingEnlarged) }
        }
        if decoders.contains(.inverted), found.isEmpty, image.width * image.height <= Self.binarizeMaxPixels {
            // Light on dark: the grid is sampled from the inverted image too, where the symbol's dark modules are dark.
            let inverted = GrayImage(checkedWidth: image.width, height: image.height, pixels: image.pixels.map { 255 - $0 })
            passesRun.append(("zbar", "it inverted"))
            found = try zbarSymbols(inverted, readBy: .inverted, original: inverted)
            if found.isEmpty {
                found = try zxing(inverted, "the image inverted").map { DecodedQR(zxing: $0, image: inverted, readBy: .inverted) }
            }
        }
        if decoders.contains(.pure), found.isEmpty {
            // No finder pattern search: its cost is one look at the image, whatever it holds.
            passesRun.append(("zxing-cpp's pure-symbol reader", "the image"))
            found = try ZXingReader.read(image, tryHarder: false, pure: true).map { DecodedQR(zxing: $0, image: image, readBy: .pure) }
        }
        let sorted = found.sorted {
            let a = $0.corners.first ?? .init(x: 0, y: 0), b = $1.corners.first ?? .init(x: 0, y: 0)
            return (a.y, a.x) < (b.y, b.x)
        }
        guard sorted.count > Self.maxSymbols else { return sorted }
        symbolsLeft.append("\(sorted.count) QR symbols were read in the image; only the first \(Self.maxSymbols) (top to bottom, "
            + "then left to right) were checked (at most \(Self.maxSymbols) an image). Crop the image to the symbols wanted, "
            + "or give them in several images")
        return Array(sorted.prefix(Self.maxSymbols))
    }

    /// zxing-cpp's symbols in `image` (`what` names it in a budget note), or none when the image shows more
    /// finder-like patterns than `FinderPatternCount.zxingLimit`: zxing-cpp 1.4's time grows with the cube of
    /// their count (a 1024 × 1024 image of tiled finders took over ten minutes), so it is not run, and
    /// `budgetNotes` says so.
    private func zxing(_ image: GrayImage, _ what: String) throws -> [ZXingSymbol] {
        let limit = FinderPatternCount.zxingLimit
        guard FinderPatternCount.count(image, limit: limit) <= limit else {
            zxingSkipped.append(what)
            return []
        }
        passesRun.append(("zxing-cpp", Self.asPronoun(what)))
        return try ZXingReader.read(image)
    }

    /// zbar's symbols in `image`, which is `original` transformed (enlarged, shrunk, binarized) so that a point
    /// (x, y) of it is (x, y) × `factor` in `original`: corners are given back, and grids sampled, in `original`.
    private func zbarSymbols(_ image: GrayImage, readBy: DecodedQR.Decoder, original: GrayImage, factor: Double = 1) throws -> [DecodedQR] {
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
            // Every QR symbol with its first corner, in the order `decode` gives them (top to bottom, then left to
            // right); only the first `maxSymbols` have their grids sampled, the rest are counted.
            var symbols: [(symbol: OpaquePointer, y: Int32, x: Int32)] = []
            var symbol = zbar_image_first_symbol(zimage)
            while let current = symbol {
                if zbar_symbol_get_type(current) == ZBAR_QRCODE {
                    let located = zbar_symbol_get_loc_size(current) > 0
                    symbols.append((current, located ? zbar_symbol_get_loc_y(current, 0) : 0, located ? zbar_symbol_get_loc_x(current, 0) : 0))
                }
                symbol = zbar_symbol_next(current)
            }
            if symbols.count > Self.maxSymbols {
                symbols.sort { ($0.y, $0.x) < ($1.y, $1.x) }
                symbolsLeft.append("zbar read \(symbols.count) QR symbols in the image; only the first \(Self.maxSymbols) (top to "
                    + "bottom, then left to right) were checked (at most \(Self.maxSymbols) an image). Crop the image to the "
                    + "symbols wanted, or give them in several images")
            }
            return symbols.prefix(Self.maxSymbols).map {
                DecodedQR(symbol: $0.symbol, original: original, factor: factor, readBy: readBy)
            }
        }
    }
}

extension DecodedQR {
    /// Copies data and corners out of a zbar symbol (valid only during the scan) and samples the grid in
    /// `original`, where a point of the scanned image is that point × `factor`.
    fileprivate init(symbol: OpaquePointer, original: GrayImage, factor: Double, readBy: Decoder) {
        let length = Int(zbar_symbol_get_data_length(symbol))
        var bytes: [UInt8] = []
        if length > 0, let data = zbar_symbol_get_data(symbol) {
            bytes = data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
        }
        let points = (0..<zbar_symbol_get_loc_size(symbol)).map {
            (x: Int(zbar_symbol_get_loc_x(symbol, $0)), y: Int(zbar_symbol_get_loc_y(symbol, $0)))
        }
        let corners = points.map { Point(x: Int((Double($0.x) * factor).rounded(.down)), y: Int((Double($0.y) * factor).rounded(.down))) }
        self.init(bytes: bytes, corners: corners, readBy: readBy) { refine in
            if factor == 1 { return QRModuleGrid(image: original, zbarCorners: points, refine: refine) }
            // zbar's corners are the symbol's outermost pixels: their outer edges, in the original's pixels.
            guard points.count == 4 else { return nil }
            let edges = QRModuleGrid.expanded(points.map { (x: Double($0.x) + 0.5, y: Double($0.y) + 0.5) }, by: 0.5)
            return QRModuleGrid(image: original, edgeCorners: edges.map { (x: $0.x * factor, y: $0.y * factor) }, refine: refine)
        }
    }

    /// A symbol only zxing-cpp read: the grid is sampled from its corners; version, level and segments come from
    /// its codewords where the grid does not give them.
    fileprivate init(zxing symbol: ZXingSymbol, image: GrayImage, readBy: Decoder = .zxing) {
        let corners = symbol.corners.map { Point(x: Int($0.x.rounded(.down)), y: Int($0.y.rounded(.down))) }
        self = DecodedQR(bytes: symbol.bytes, corners: corners, readBy: readBy) { refine in
            QRModuleGrid(image: image, edgeCorners: symbol.corners, refine: refine)
        }.completed(by: symbol)
    }

    /// Reads version, level, mask and segments from the grid `sample(false)` gives; when its segments do not
    /// read back `bytes`, from the grid `sample(true)` gives (its corners refined), if that reads better.
    private init(bytes: [UInt8], corners: [Point], readBy: Decoder, sample: (_ refine: Bool) -> QRModuleGrid?) {
        func read(_ grid: QRModuleGrid?) -> (grid: QRModuleGrid, format: QRFormatInfo?, segments: [QRSegment]?)? {
            guard let grid else { return nil }
            let format = grid.formatInfo
            let segments = format.flatMap { QRBitStream.segments(grid: grid, format: $0) }
            return (grid, format, segments.flatMap { $0.flatMap(\.data) == bytes ? $0 : nil })
        }
        var found = read(sample(false))
        if found?.segments == nil, let refined = read(sample(true)), refined.segments != nil || found == nil || found?.format == nil {
            found = refined
        }
        self.init(bytes: bytes, corners: corners, version: found?.grid.version, errorCorrection: found?.format?.errorCorrection,
                  mask: found?.format?.mask, segments: found?.segments, readBy: readBy)
    }

    /// This symbol with what its own grid did not give taken from zxing-cpp's reading of the same symbol. The
    /// codewords zxing-cpp corrected are trusted over a grid that did not read cleanly: when they give segments,
    /// their version and level replace the grid's (and the grid's mask, which they do not vouch for, is dropped).
    func completed(by symbol: ZXingSymbol) -> DecodedQR {
        guard !fullyRead, symbol.bytes == bytes else { return self }
        if let segments = symbol.segments, let version = symbol.version, let level = symbol.errorCorrection {
            let keepMask = self.version == version && errorCorrection == level
            return DecodedQR(bytes: bytes, corners: corners, version: version, errorCorrection: level,
                             mask: keepMask ? mask : nil, segments: segments, readBy: readBy)
        }
        return self
    }
}

/// Reads SMART Health Card QR images: PNG bytes in, the QR symbols' texts with version and ECC level out.
package enum SHCQRCodeReader {
    /// Decodes every QR symbol in a PNG.
    /// - Parameter png: the file's bytes; any PNG colour type or bit depth.
    /// - Returns: the symbols top to bottom, then left to right; empty when there is none. A SMART Health Card
    ///   symbol's `text` is `shc:/` followed by digits (or `shc:/C/N/` and digits for chunk C of N).
    /// - Throws: `HealthCardError(.png)` for a PNG libpng cannot decode, `.qr` when a decoder fails.
    public static func read(png: [UInt8]) throws -> [DecodedQR] {
        try QRDecoder().decode(GrayImage(png: png))
    }

    /// Decodes every QR symbol in a PNG or a JPEG (told apart by their first bytes).
    /// - Parameter image: the file's bytes.
    /// - Returns: as `read(png:)`.
    /// - Throws: `HealthCardError(.input)` for an image over `InputBudget.imagePixels`, `.png` for
    ///   one that cannot be decoded (or bytes that are neither format), `.qr` when a decoder fails.
    public static func read(image: [UInt8]) throws -> [DecodedQR] {
        try QRDecoder().decode(GrayImage(imageBytes: image))
    }
}
