import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// One segment of a QR symbol's data (ISO/IEC 18004:2015, 7.4): its mode and the data it carries.
package struct QRSegment: Sendable, Equatable, CustomStringConvertible {
    /// The mode indicator (Table 2).
    public enum Mode: String, Sendable {
        case numeric, alphanumeric, byte, kanji
        /// Extended Channel Interpretation: a charset designator, no data.
        case eci = "ECI"
        /// Structured append header: symbol position, count and parity, no data.
        case structuredAppend = "structured append"
        case fnc1 = "FNC1"
    }

    public let mode: Mode
    /// The data as zbar returns it: ASCII digits (numeric), ASCII characters (alphanumeric), the raw
    /// bytes (byte), the Shift JIS byte pairs (kanji); empty for the header-only modes.
    public let data: [UInt8]

    public init(mode: Mode, data: [UInt8]) {
        self.mode = mode
        self.data = data
    }

    /// `byte 'shc:/' (5 bytes)`, `numeric (1598 digits)`.
    public var description: String {
        switch mode {
        case .numeric: return "numeric (\(data.count) digits)"
        case .byte, .alphanumeric, .kanji:
            let shown = String(decoding: data.prefix(12).map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
            return "\(mode.rawValue) '\(shown)\(data.count > 12 ? "…" : "")' (\(data.count) bytes)"
        case .eci, .structuredAppend, .fnc1: return mode.rawValue
        }
    }
}

/// Reads a QR symbol's segments from its module grid, bit by bit (ISO/IEC 18004:2015, 7.4 to 7.7): the
/// data mask from the format information is removed, codewords are read in placement order, the data
/// codewords are taken out of their interleaved error correction blocks and corrected (`QRReedSolomon`: a few
/// modules sampled wrong from a blurred or distorted image), and the bit stream is parsed into mode indicators,
/// character counts and data. A grid with more errors than the blocks can correct gives nothing, and segments
/// whose data differs from what the decoder read are not trusted by the caller: the layout is then unread.
enum QRBitStream {
    /// The segments of the symbol in `grid`, or nil when an error correction block cannot be corrected or the
    /// bit stream does not parse (an unknown mode, a count running past the data, a numeric group above 999).
    static func segments(grid: QRModuleGrid, format: QRFormatInfo) -> [QRSegment]? {
        guard let layout = QRSymbolLayout(version: grid.version), layout.size == grid.size else { return nil }
        var codewords: [UInt8] = []
        codewords.reserveCapacity(QRSymbolLayout.totalCodewords(version: grid.version))
        var current: UInt8 = 0
        var bits = 0
        for (x, y) in layout.placementOrder {
            let dark = grid[x, y] != QRCode.maskInverts(format.mask, row: y, column: x)
            current = current << 1 | (dark ? 1 : 0)
            bits += 1
            if bits == 8 {
                codewords.append(current)
                current = 0
                bits = 0
                if codewords.count == QRSymbolLayout.totalCodewords(version: grid.version) { break }
            }
        }
        guard let data = QRSymbolLayout.correctedData(codewords, version: grid.version, level: format.errorCorrection)
        else { return nil }
        return parse(data.data, version: grid.version)
    }

    /// Parses data codewords into segments, up to the terminator (four zero bits) or the end of the data.
    static func parse(_ data: [UInt8], version: Int) -> [QRSegment]? {
        var reader = BitReader(data)
        var segments: [QRSegment] = []
        while reader.remaining >= 4 {
            guard let mode = reader.read(4) else { return nil }
            let group = version <= 9 ? 0 : (version <= 26 ? 1 : 2)
            switch mode {
            case 0:
                return segments
            case 0b0001:
                guard let count = reader.read([10, 12, 14][group]) else { return nil }
                var digits: [UInt8] = []
                var left = count
                while left > 0 {
                    let take = min(3, left)
                    guard let value = reader.read([0, 4, 7, 10][take]), value < [1, 10, 100, 1000][take] else {
                        return nil
                    }
                    var text = Array(String(value).utf8)
                    while text.count < take { text.insert(0x30, at: 0) }
                    digits += text
                    left -= take
                }
                segments.append(QRSegment(mode: .numeric, data: digits))
            case 0b0010:
                guard let count = reader.read([9, 11, 13][group]) else { return nil }
                let table = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)
                var text: [UInt8] = []
                var left = count
                while left > 0 {
                    if left >= 2 {
                        guard let value = reader.read(11), value < 45 * 45 else { return nil }
                        text += [table[value / 45], table[value % 45]]
                        left -= 2
                    } else {
                        guard let value = reader.read(6), value < 45 else { return nil }
                        text.append(table[value])
                        left -= 1
                    }
                }
                segments.append(QRSegment(mode: .alphanumeric, data: text))
            case 0b0100:
                guard let count = reader.read([8, 16, 16][group]), count * 8 <= reader.remaining else { return nil }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(count)
                for _ in 0..<count {
                    guard let value = reader.read(8) else { return nil }
                    bytes.append(UInt8(value))
                }
                segments.append(QRSegment(mode: .byte, data: bytes))
            case 0b1000:
                guard let count = reader.read([8, 10, 12][group]), count * 13 <= reader.remaining else { return nil }
                var bytes: [UInt8] = []
                for _ in 0..<count {
                    guard let value = reader.read(13) else { return nil }
                    let word = (value / 0xC0) << 8 | (value % 0xC0)
                    let sjis = word + (word < 0x1F00 ? 0x8140 : 0xC140)
                    bytes += [UInt8(truncatingIfNeeded: sjis >> 8), UInt8(truncatingIfNeeded: sjis)]
                }
                segments.append(QRSegment(mode: .kanji, data: bytes))
            case 0b0111:
                guard let first = reader.read(8) else { return nil }
                let extra = first & 0x80 == 0 ? 0 : (first & 0x40 == 0 ? 8 : 16)
                guard extra == 0 || reader.read(extra) != nil else { return nil }
                segments.append(QRSegment(mode: .eci, data: []))
            case 0b0011:
                guard reader.read(16) != nil else { return nil }
                segments.append(QRSegment(mode: .structuredAppend, data: []))
            case 0b0101:
                segments.append(QRSegment(mode: .fnc1, data: []))
            case 0b1001:
                guard reader.read(8) != nil else { return nil }
                segments.append(QRSegment(mode: .fnc1, data: []))
            default:
                return nil
            }
        }
        return segments
    }

    /// Reads big-endian bit fields from bytes.
    struct BitReader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var remaining: Int { bytes.count * 8 - position }

        /// The next `count` (0…16) bits as a number, or nil when fewer remain.
        mutating func read(_ count: Int) -> Int? {
            guard count >= 0, count <= 16, count <= remaining else { return nil }
            var value = 0
            for _ in 0..<count {
                let bit = bytes[position / 8] >> (7 - UInt8(position % 8)) & 1
                value = value << 1 | Int(bit)
                position += 1
            }
            return value
        }
    }
}
