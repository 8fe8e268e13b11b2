import CQRencode

/// Asks libqrencode which QR version a given list of segments needs at a given error correction level.
///
/// `QRCode` (the encoder) always writes the two SHC segments at level L; `verify` also needs the answer
/// for other levels and for a single byte segment, to tell a symbol that is larger than it needs to be
/// from one whose text was put in one byte segment (digest section 6). Nothing is drawn from this.
enum QRVersionProbe {
    enum Mode { case byte, numeric }

    /// The encoded symbol: version and modules (row-major, true is dark). Nil when nothing fits.
    /// - Parameter version: the smallest version to use (0: the smallest that fits).
    static func encode(_ segments: [(Mode, [UInt8])], level: QRErrorCorrection, version: Int = 0) -> (version: Int, size: Int, modules: [Bool])? {
        let ecc: QRecLevel
        switch level {
        case .L: ecc = QR_ECLEVEL_L
        case .M: ecc = QR_ECLEVEL_M
        case .Q: ecc = QR_ECLEVEL_Q
        case .H: ecc = QR_ECLEVEL_H
        }
        guard let input = QRinput_new2(Int32(version), ecc) else { return nil }
        defer { QRinput_free(input) }
        for (mode, data) in segments {
            guard QRinput_append(input, mode == .byte ? QR_MODE_8 : QR_MODE_NUM, Int32(data.count), data) == 0 else { return nil }
        }
        guard let code = QRcode_encodeInput(input) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let modules = UnsafeBufferPointer(start: code.pointee.data, count: width * width).map { $0 & 1 == 1 }
        return (Int(code.pointee.version), width, modules)
    }

    /// The smallest version for `segments` at `level`, or nil when none (up to 40) fits.
    static func smallestVersion(_ segments: [(Mode, [UInt8])], level: QRErrorCorrection) -> Int? {
        encode(segments, level: level)?.version
    }

    /// The SMART Health Cards segments of a QR text: byte `shc:/` (with `C/N/`), then the digits.
    static func shcSegments(_ text: [UInt8]) -> [(Mode, [UInt8])] {
        var split = text.count
        while split > 0, (0x30...0x39).contains(text[split - 1]) { split -= 1 }
        // A chunk header ends in '/': the digits after the last '/' are the numeric segment.
        if let slash = text.lastIndex(of: 0x2F) { split = max(split, slash + 1) }
        return [(.byte, Array(text[..<split])), (.numeric, Array(text[split...]))]
    }
}
