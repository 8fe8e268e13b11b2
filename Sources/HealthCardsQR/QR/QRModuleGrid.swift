import HealthCardsCore
import HealthCardsVerify

/// The module grid of one upright, axis-aligned QR symbol in a raster, found from the symbol's corner points.
///
/// This is a reporting helper for `verify`, not a general QR reader: it assumes the symbol is neither rotated
/// nor skewed (true for PNGs this toolkit and the spec's generator write). It finds the version by trying each
/// of versions 1…40: for each, it samples the function patterns every symbol of that size must have (three
/// finder patterns with separators and both timing patterns, ISO/IEC 18004:2015, 6.3) and keeps the version
/// whose samples match best.
package struct QRModuleGrid: Sendable {
    /// QR version, 1…40.
    public let version: Int
    /// Modules per side, `17 + 4 × version`.
    public let size: Int
    /// Row-major modules, `size × size`; true is dark.
    public let modules: [Bool]
    /// Fraction (0…1) of function-pattern modules that did not sample as expected for `version`.
    public let functionPatternMismatch: Double

    /// Largest `functionPatternMismatch` accepted as a found grid.
    public static let maxMismatch = 0.05

    /// The module at column `x`, row `y` (0-based, no quiet zone); true is dark.
    public subscript(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// The format information (ECC level, mask) read from the grid, or nil when both copies are unreadable.
    public var formatInfo: QRFormatInfo? { QRFormatInfo.read(size: size) { self[$0, $1] } }

    /// Builds a grid from an already sampled module matrix (e.g. `QRCode.modules`).
    /// - Returns: nil unless `modules.count == size × size` with `size = 17 + 4 × version` for a version 1…40.
    public init?(size: Int, modules: [Bool]) {
        guard (21...177).contains(size), (size - 17) % 4 == 0, modules.count == size * size else { return nil }
        self.version = (size - 17) / 4
        self.size = size
        self.modules = modules
        self.functionPatternMismatch = QRModuleGrid.mismatch(size: size) { modules[$1 * size + $0] }
    }

    /// Samples the symbol whose outer corners are `corners` (pixel coordinates, any order; zbar's
    /// `zbar_symbol_get_loc_x/y`).
    /// - Parameters:
    ///   - image: 8-bit gray raster; a pixel below 128 is dark.
    ///   - corners: at least two opposite corners of the symbol (without quiet zone).
    /// - Returns: nil when the corners describe a region under 21 pixels wide, or when no version's function
    ///   patterns match within `maxMismatch` (a rotated or skewed symbol, for instance).
    public init?(image: GrayImage, corners: [(x: Int, y: Int)]) {
        guard corners.count >= 2 else { return nil }
        // zbar's corner estimates are off by up to a pixel each way. For an upright symbol, two corners lie on
        // each edge: average the two smallest and the two largest coordinates (with 2 corners, use them as is).
        func edges(_ values: [Int]) -> (Double, Double) {
            let v = values.sorted().map(Double.init)
            let k = min(2, v.count / 2)
            return (v.prefix(k).reduce(0, +) / Double(k), v.suffix(k).reduce(0, +) / Double(k))
        }
        let (left, right) = edges(corners.map(\.x)), (top, bottom) = edges(corners.map(\.y))
        // The far edge is the last pixel of the symbol, so the extent is inclusive.
        let width = right - left + 1, height = bottom - top + 1
        guard width >= 21, height >= 21 else { return nil }

        func sampler(_ size: Int) -> (Int, Int) -> Bool {
            let mx = width / Double(size), my = height / Double(size)
            return { x, y in
                let px = Int((left + (Double(x) + 0.5) * mx).rounded(.down)), py = Int((top + (Double(y) + 0.5) * my).rounded(.down))
                guard px >= 0, py >= 0, px < image.width, py < image.height else { return false }
                return image.pixels[py * image.width + px] < 128
            }
        }
        var best: (version: Int, mismatch: Double)? = nil
        for version in 1...40 {
            let size = 17 + 4 * version
            guard Double(size) <= min(width, height) else { break }
            let score = QRModuleGrid.mismatch(size: size, dark: sampler(size))
            if best == nil || score < best!.mismatch { best = (version, score) }
        }
        guard let best, best.mismatch <= QRModuleGrid.maxMismatch else { return nil }
        let size = 17 + 4 * best.version
        let dark = sampler(size)
        self.version = best.version
        self.size = size
        self.modules = (0..<(size * size)).map { dark($0 % size, $0 / size) }
        self.functionPatternMismatch = best.mismatch
    }

    /// The fraction of finder, separator and timing modules that do not match a symbol of `size` modules.
    static func mismatch(size: Int, dark: (Int, Int) -> Bool) -> Double {
        var wrong = 0, total = 0
        func expect(_ x: Int, _ y: Int, _ value: Bool) {
            total += 1
            if dark(x, y) != value { wrong += 1 }
        }
        // Finder patterns (7×7: dark ring, light ring, dark 3×3 core) and their light separators.
        for (ox, oy) in [(0, 0), (size - 7, 0), (0, size - 7)] {
            for dy in -1...7 {
                for dx in -1...7 {
                    let x = ox + dx, y = oy + dy
                    guard x >= 0, y >= 0, x < size, y < size else { continue }
                    let ring = max(abs(dx - 3), abs(dy - 3))
                    expect(x, y, ring == 3 || ring <= 1)
                }
            }
        }
        // Timing patterns: row 6 and column 6 alternate, dark on even indices, between the separators.
        for i in 8..<(size - 8) {
            expect(i, 6, i % 2 == 0)
            expect(6, i, i % 2 == 0)
        }
        return Double(wrong) / Double(total)
    }
}
