/// QR error correction level (ISO/IEC 18004:2015, 5.5 / Table 12), with its 2-bit format indicator.
public enum QRErrorCorrection: String, Sendable, CaseIterable {
    case L, M, Q, H

    /// The two bits the format information carries: L 01, M 00, Q 11, H 10.
    public var formatIndicator: Int {
        switch self {
        case .L: return 1
        case .M: return 0
        case .Q: return 3
        case .H: return 2
        }
    }

    init?(formatIndicator: Int) {
        guard let level = QRErrorCorrection.allCases.first(where: { $0.formatIndicator == formatIndicator }) else { return nil }
        self = level
    }
}

/// The 15-bit QR format information (ISO/IEC 18004:2015, 7.9): 2 bits of error correction level and 3 bits of
/// data mask, protected by a (15,5) BCH code and XORed with 0x5412 so it is never all light.
///
/// zbar decodes the data but does not report these, so `verify` reads them from the sampled module grid.
package struct QRFormatInfo: Sendable, Equatable {
    public let errorCorrection: QRErrorCorrection
    /// Data mask pattern, 0…7.
    public let mask: Int

    public init(errorCorrection: QRErrorCorrection, mask: Int) {
        self.errorCorrection = errorCorrection
        self.mask = mask
    }

    /// The mask that stops the format bits from being all zero.
    public static let xorMask = 0x5412
    /// BCH generator polynomial x^10 + x^8 + x^5 + x^4 + x^2 + x + 1.
    static let generator = 0x537

    /// The 15-bit codeword as placed in the symbol (after XOR with 0x5412). L with mask 0 is `0x77C4`
    /// (111011111000100); M with mask 0 is `0x5412`.
    public var codeword: Int {
        let data = errorCorrection.formatIndicator << 3 | mask
        var remainder = data << 10
        for bit in stride(from: 14, through: 10, by: -1) where remainder & (1 << bit) != 0 {
            remainder ^= QRFormatInfo.generator << (bit - 10)
        }
        return (data << 10 | remainder) ^ QRFormatInfo.xorMask
    }

    /// All 32 valid codewords with what they mean.
    static let table: [(codeword: Int, info: QRFormatInfo)] = QRErrorCorrection.allCases.flatMap { level in
        (0..<8).map { mask in
            let info = QRFormatInfo(errorCorrection: level, mask: mask)
            return (info.codeword, info)
        }
    }

    /// Decodes 15 sampled format bits by nearest valid codeword. Any two valid codewords differ in at least 7
    /// bits, so up to 3 bit errors are corrected.
    /// - Parameter bits: the 15 bits, bit 14 first as read (the ECC indicator's high bit).
    /// - Returns: the format and the Hamming distance to it, or nil when more than 3 bits are wrong.
    public static func decode(_ bits: Int) -> (info: QRFormatInfo, errors: Int)? {
        var best: (info: QRFormatInfo, errors: Int)? = nil
        for entry in table {
            let errors = (entry.codeword ^ bits).nonzeroBitCount
            if best == nil || errors < best!.errors { best = (entry.info, errors) }
        }
        guard let best, best.errors <= 3 else { return nil }
        return best
    }

    /// Reads both copies of the format information from a module grid and keeps the one nearer a valid codeword.
    /// - Parameters:
    ///   - size: modules per side (`17 + 4 × version`).
    ///   - dark: whether the module at column `x`, row `y` (0-based, no quiet zone) is dark.
    /// - Returns: nil when neither copy is within 3 bit errors of a valid codeword.
    public static func read(size: Int, dark: (_ x: Int, _ y: Int) -> Bool) -> QRFormatInfo? {
        // Positions (x, y) of bit i, 0 = least significant (ISO/IEC 18004:2015, Figure 25).
        var first: [(Int, Int)] = (0..<6).map { (8, $0) }
        first += [(8, 7), (8, 8), (7, 8)]
        first += (9..<15).map { (14 - $0, 8) }
        var second: [(Int, Int)] = (0..<8).map { (size - 1 - $0, 8) }
        second += (8..<15).map { (8, size - 15 + $0) }
        var best: (info: QRFormatInfo, errors: Int)? = nil
        for positions in [first, second] {
            var bits = 0
            for (i, (x, y)) in positions.enumerated() where dark(x, y) { bits |= 1 << i }
            if let found = decode(bits), best == nil || found.errors < best!.errors { best = found }
        }
        return best?.info
    }
}
