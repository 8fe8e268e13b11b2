import CQRencode

#if canImport(Glibc)
    import Glibc
#endif

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

    /// The highest version the spec allows.
    public static let maxVersion = 22

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

    /// Encodes a byte-mode segment followed by a numeric-mode segment.
    public init(byteSegment: [UInt8], numericSegment: [UInt8]) throws {
        guard let input = QRinput_new2(0, QR_ECLEVEL_L) else {
            throw HealthCardError(.qr, "libqrencode could not allocate its input")
        }
        defer { QRinput_free(input) }
        guard QRinput_append(input, QR_MODE_8, Int32(byteSegment.count), byteSegment) == 0,
            QRinput_append(input, QR_MODE_NUM, Int32(numericSegment.count), numericSegment) == 0
        else { throw HealthCardError(.qr, "libqrencode refused the QR segments") }
        guard let code = QRcode_encodeInput(input) else {
            throw HealthCardError(.qr, "the QR text (\(numericSegment.count / 2) JWS characters) does not fit any QR version at error correction L")
        }
        defer { QRcode_free(code) }
        let version = Int(code.pointee.version)
        let width = Int(code.pointee.width)
        guard version <= QRCode.maxVersion else {
            throw HealthCardError(.qr, "the QR needs version \(version); SMART Health Cards allow at most version 22 (1195 JWS characters); use --chunk or make the card smaller")
        }
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.version = version
        self.size = width
        self.modules = data.map { $0 & 1 == 1 }
    }

    /// The module at column `x`, row `y` (0-based, no quiet zone); true is dark.
    public subscript(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// The modules as text rows of `0` and `1`, as in `derived/qr-modules/*.txt`.
    public var rowsText: [String] {
        (0..<size).map { y in String((0..<size).map { self[$0, y] ? "1" : "0" }) }
    }
}
