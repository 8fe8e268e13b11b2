import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// Asks the QR encoder (`QRCode`, over libqrencode) which QR version a given list of segments needs at a given error correction level.
///
/// `QRCode` (the encoder) always writes the two SHC segments at level L; `verify` also needs the answer
/// at the level a symbol uses, to tell whether it is larger than its segments need (digest section 6),
/// and the tests use it to make symbols of other layouts. Nothing is drawn from this.
enum QRVersionProbe {
    typealias Mode = QRCode.SegmentMode

    /// The encoded symbol: version and modules (row-major, true is dark). Nil when nothing fits.
    /// - Parameter version: the smallest version to use (0: the smallest that fits).
    static func encode(_ segments: [(Mode, [UInt8])], level: QRErrorCorrection, version: Int = 0) -> (version: Int, size: Int, modules: [Bool])? {
        guard let code = try? QRCode(segments: segments, level: level, minimumVersion: version) else { return nil }
        return (code.version, code.size, code.modules)
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
