internal import CQRencode

#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore

/// A QR symbol for SMART Health Cards, made by libqrencode from exactly two explicit segments
/// (byte `shc:/…`, numeric digits) at error correction L, in the smallest version that fits, never
/// above version 22 (digest section 6).
public struct QRCode: Sendable, Equatable {
    /// QR version, 1 to 22.
    public let version: Int
    /// Modules per side (`17 + 4 × version`), without the quiet zone.
    public let size: Int
    /// Row-major modules, `size × size`; true is dark.
    public let modules: [Bool]
    /// libqrencode's byte for each module, row-major, copied as it is: bit 0 dark, bit 2 format
    /// information, bit 7 non-data (function). The flags below are read from it when asked for.
    private let flags: [UInt8]
    /// Row-major flags (made on each read: keep the array), true for function modules (finder, separator,
    /// timing, alignment, format and version information), false for data and error-correction modules,
    /// which the mask applies to.
    public var functionModules: [Bool] { flags.map { $0 & 0x80 != 0 } }
    /// Row-major flags (made on each read: keep the array), true for the modules holding the 15-bit format
    /// information.
    public var formatModules: [Bool] { flags.map { $0 & 0x04 != 0 } }

    /// The highest version the spec allows.
    public static let maxVersion = 22

    /// The version of the libqrencode this process runs with, as it reports it (`QRcode_APIVersionString()`,
    /// e.g. "4.1.1").
    public static var libqrencodeRuntimeVersion: String { String(cString: QRcode_APIVersionString()) }

    /// Encodes one chunk of a JWS.
    /// - Parameters:
    ///   - jws: the JWS text or one chunk of it (`-` … `z` characters only).
    ///   - chunk, total: 1-based chunk index and chunk count; 1 and 1 for a single QR.
    /// - Throws: `HealthCardError(.qr)` when the text needs a version above 22 or libqrencode fails.
    public init(jws: some StringProtocol, chunk: Int = 1, of total: Int = 1) throws {
        let prefix = Array(QRNumeric.prefix(chunk: chunk, of: total).utf8)
        let digits = try QRNumeric.digits(String(jws))
        try self.init(byteSegment: prefix, numericSegment: digits)
    }

    /// Encodes a byte-mode segment followed by a numeric-mode segment at error correction L.
    /// - Throws: `HealthCardError(.qr)` when the symbol would need a version above 22.
    public init(byteSegment: [UInt8], numericSegment: [UInt8]) throws {
        try self.init(segments: [(.byte, byteSegment), (.numeric, numericSegment)], level: .L)
        guard version <= QRCode.maxVersion else {
            throw HealthCardError(.qr, code: .qrTooLong, "the QR needs version \(version); SMART Health Cards allow at most version 22 (1195 JWS characters); make chunked QRs or make the card smaller")
        }
    }

    /// A QR segment's mode.
    public enum SegmentMode: Sendable { case byte, numeric }

    /// Encodes any list of segments at any error correction level, in the smallest version that fits
    /// (at least `minimumVersion`), with no SHC limit: `verify` uses it to find the version a text needs.
    /// - Throws: `HealthCardError(.qr)` when nothing up to version 40 fits or libqrencode refuses a segment.
    public init(segments: [(SegmentMode, [UInt8])], level: QRErrorCorrection, minimumVersion: Int = 0) throws {
        let ecc: QRecLevel
        switch level {
        case .L: ecc = QR_ECLEVEL_L
        case .M: ecc = QR_ECLEVEL_M
        case .Q: ecc = QR_ECLEVEL_Q
        case .H: ecc = QR_ECLEVEL_H
        }
        guard let input = QRinput_new2(Int32(clamping: max(0, min(40, minimumVersion))), ecc) else {
            throw HealthCardError(.qr, "libqrencode could not allocate its input")
        }
        defer { QRinput_free(input) }
        for (mode, data) in segments {
            // No QR symbol holds more than 7,089 characters; a longer segment is refused before libqrencode sees it.
            guard data.count <= 7_089, QRinput_append(input, mode == .byte ? QR_MODE_8 : QR_MODE_NUM, Int32(data.count), data) == 0 else {
                throw HealthCardError(.qr, "libqrencode refused a \(mode == .byte ? "byte" : "numeric") segment of \(data.count) bytes")
            }
        }
        guard let code = QRcode_encodeInput(input) else {
            let digits = segments.filter { $0.0 == .numeric }.map(\.1.count).reduce(0, +)
            throw HealthCardError(.qr, "the QR text (\(digits / 2) JWS characters) does not fit any QR version at error correction \(level.rawValue)")
        }
        defer { QRcode_free(code) }
        let version = Int(code.pointee.version)
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.version = version
        self.size = width
        // One copy of libqrencode's bytes, and one pass for the dark modules (every image reads them).
        self.flags = Array(data)
        self.modules = [Bool](unsafeUninitializedCapacity: data.count) { buffer, initialized in
            for i in data.indices { buffer[i] = data[i] & 1 == 1 }
            initialized = data.count
        }
    }

    /// The data mask libqrencode chose (0 to 7), read back from the format information.
    public var mask: Int? { QRFormatInfo.read(size: size, dark: { self[$0, $1] })?.mask }

    /// True where data mask `mask` (ISO/IEC 18004 section 7.8.2, i = row, j = column) inverts a module.
    public static func maskInverts(_ mask: Int, row i: Int, column j: Int) -> Bool {
        switch mask {
        case 0: return (i + j) % 2 == 0
        case 1: return i % 2 == 0
        case 2: return j % 3 == 0
        case 3: return (i + j) % 3 == 0
        case 4: return (i / 2 + j / 3) % 2 == 0
        case 5: return (i * j) % 2 + (i * j) % 3 == 0
        case 6: return ((i * j) % 2 + (i * j) % 3) % 2 == 0
        default: return ((i + j) % 2 + (i * j) % 3) % 2 == 0
        }
    }

    /// The data and error-correction modules with the data mask removed: the codeword layout itself,
    /// independent of which mask the encoder chose. Function modules are returned as they are.
    public var unmaskedModules: [Bool]? {
        guard let mask else { return nil }
        return modules.indices.map { index in
            let i = index / size, j = index % size
            return flags[index] & 0x80 != 0 ? modules[index] : modules[index] != QRCode.maskInverts(mask, row: i, column: j)
        }
    }

    /// The module at column `x`, row `y` (0-based, no quiet zone); true is dark.
    public subscript(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// The modules as text rows of `0` and `1`, as in `derived/qr-modules/*.txt`.
    public var rowsText: [String] {
        (0..<size).map { y in String((0..<size).map { self[$0, y] ? "1" : "0" }) }
    }
}
