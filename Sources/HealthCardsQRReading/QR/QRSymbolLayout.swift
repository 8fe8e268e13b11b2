import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// Where the parts of a QR symbol of one version lie (ISO/IEC 18004:2015): which modules are function
/// patterns (finder patterns and separators, timing patterns, alignment patterns, format and version
/// information, the dark module; 6.3), the order data modules are placed in (7.7.3), and how codewords
/// are split into error correction blocks and interleaved (7.5.2, 7.6, Table 9).
///
/// `verify` uses it to read a symbol's bit stream from the module grid `QRModuleGrid` sampled, because
/// zbar returns only the decoded data, not the segment headers (`QRBitStream`). Tests check it against
/// libqrencode's own function-module flags and symbols for every version and level.
struct QRSymbolLayout: Sendable {
    /// 1…40.
    let version: Int
    /// Modules per side, `17 + 4 × version`.
    let size: Int
    /// Row-major, `size × size`; true for a function module (not data or error correction).
    let isFunction: [Bool]

    /// - Returns: nil for a version outside 1…40.
    init?(version: Int) {
        guard (1...40).contains(version) else { return nil }
        let size = 17 + 4 * version
        self.version = version
        self.size = size
        var function = [Bool](repeating: false, count: size * size)
        func mark(_ x: Int, _ y: Int) {
            guard x >= 0, y >= 0, x < size, y < size else { return }
            function[y * size + x] = true
        }
        // Finder patterns with their separators, and the format information beside them (9 × 9 at the
        // top left, 8 × 9 and 9 × 8 at the other two corners).
        for y in 0..<9 { for x in 0..<9 { mark(x, y) } }
        for y in 0..<9 { for x in (size - 8)..<size { mark(x, y) } }
        for y in (size - 8)..<size { for x in 0..<9 { mark(x, y) } }
        // Timing patterns.
        for i in 0..<size {
            mark(i, 6)
            mark(6, i)
        }
        // Alignment patterns: 5 × 5 around every pair of centre positions but the three finder corners.
        let centres = Self.alignmentCentres(version: version)
        for cy in centres {
            for cx in centres {
                let onFinder = (cx == 6 && cy == 6) || (cx == 6 && cy == size - 7) || (cx == size - 7 && cy == 6)
                guard !onFinder else { continue }
                for dy in -2...2 { for dx in -2...2 { mark(cx + dx, cy + dy) } }
            }
        }
        // Version information (version 7 and up): 6 × 3 blocks beside the top-right and bottom-left finders.
        if version >= 7 {
            for a in 0..<6 {
                for b in (size - 11)..<(size - 8) {
                    mark(b, a)
                    mark(a, b)
                }
            }
        }
        // The dark module (already inside the bottom-left 9 × 8 area, marked for clarity).
        mark(8, size - 8)
        self.isFunction = function
    }

    /// Row and column coordinates of alignment pattern centres (Annex E): 6, then evenly spaced steps
    /// (an even number of modules) ending at `size − 7`.
    static func alignmentCentres(version: Int) -> [Int] {
        guard version >= 2 else { return [] }
        let count = version / 7 + 2
        let last = 4 * version + 10
        let step = (version * 8 + count * 3 + 5) / (count * 4 - 4) * 2
        var centres = [6]
        for i in stride(from: count - 2, through: 0, by: -1) { centres.append(last - i * step) }
        return centres
    }

    /// Data and error correction modules, in placement order: two-module-wide columns from the right,
    /// upwards then downwards in turn, skipping the vertical timing pattern (column 6). Each is `(x, y)`.
    var placementOrder: [(x: Int, y: Int)] {
        var order: [(x: Int, y: Int)] = []
        order.reserveCapacity(size * size)
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = (right + 1) & 2 == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] { order.append((x, y)) }
            }
            right -= 2
        }
        return order
    }

    /// Codewords (8-bit) a symbol of `version` holds, data and error correction together.
    static func totalCodewords(version: Int) -> Int {
        var modules = (16 * version + 128) * version + 64
        if version >= 2 {
            let count = version / 7 + 2
            modules -= (25 * count - 10) * count - 55
            if version >= 7 { modules -= 36 }
        }
        return modules / 8
    }

    /// Error correction codewords per block, by level (L, M, Q, H) and version (index 0 unused).
    private static let eccPerBlock: [[Int]] = [
        [
            0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28,
            28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        ],
        [
            0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
    ]

    /// Error correction blocks, by level (L, M, Q, H) and version (index 0 unused).
    private static let blockCount: [[Int]] = [
        [
            0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17,
            18, 19, 19, 20, 21, 22, 24, 25,
        ],
        [
            0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29,
            31, 33, 35, 37, 38, 40, 43, 45, 47, 49,
        ],
        [
            0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38,
            40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68,
        ],
        [
            0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45,
            48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81,
        ],
    ]

    private static func row(_ level: QRErrorCorrection) -> Int {
        switch level {
        case .L: return 0
        case .M: return 1
        case .Q: return 2
        case .H: return 3
        }
    }

    /// The data codeword count of each error correction block, in block order: shorter blocks first, each
    /// later block one data codeword longer (Table 9), and the error correction codewords per block.
    static func blocks(version: Int, level: QRErrorCorrection) -> (dataPerBlock: [Int], eccPerBlock: Int) {
        let blocks = blockCount[row(level)][version]
        let ecc = eccPerBlock[row(level)][version]
        let total = totalCodewords(version: version)
        let short = total / blocks
        let shortBlocks = blocks - total % blocks
        return ((0..<blocks).map { $0 < shortBlocks ? short - ecc : short - ecc + 1 }, ecc)
    }

    /// Data codewords a symbol of `version` at `level` holds.
    static func dataCodewords(version: Int, level: QRErrorCorrection) -> Int {
        blocks(version: version, level: level).dataPerBlock.reduce(0, +)
    }
}

extension QRSymbolLayout {
    /// The data codewords in stream order from the codewords in symbol order, each error correction block
    /// first corrected (`QRReedSolomon`): block b holds the b-th of every interleaved data codeword, then the b-th
    /// of every error correction codeword (7.6).
    /// - Returns: the data and how many codewords were corrected in all; nil unless `codewords` holds exactly the
    ///   symbol's codewords and every block can be corrected.
    static func correctedData(_ codewords: [UInt8], version: Int, level: QRErrorCorrection) -> (data: [UInt8], corrected: Int)? {
        guard codewords.count == totalCodewords(version: version) else { return nil }
        let layout = blocks(version: version, level: level)
        let count = layout.dataPerBlock.count
        var blocks = layout.dataPerBlock.map { [UInt8]().reserving($0 + layout.eccPerBlock) }
        var next = 0
        for i in 0..<(layout.dataPerBlock.max() ?? 0) {
            for (b, length) in layout.dataPerBlock.enumerated() where i < length {
                blocks[b].append(codewords[next])
                next += 1
            }
        }
        for _ in 0..<layout.eccPerBlock {
            for b in 0..<count {
                blocks[b].append(codewords[next])
                next += 1
            }
        }
        var data: [UInt8] = []
        var corrected = 0
        for (b, block) in blocks.enumerated() {
            guard let fixed = QRReedSolomon.correct(block, ecc: layout.eccPerBlock) else { return nil }
            data += fixed.codewords.prefix(layout.dataPerBlock[b])
            corrected += fixed.errors
        }
        return (data, corrected)
    }
}

extension Array {
    fileprivate func reserving(_ capacity: Int) -> [Element] {
        var copy = self
        copy.reserveCapacity(capacity)
        return copy
    }
}
