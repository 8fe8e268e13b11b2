import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// The module grid of one QR symbol in a raster, found from the symbol's corner points as a decoder reports them.
///
/// This is a reporting helper for `verify`, not a general QR reader: the decoder (zbar, zxing-cpp) has found the
/// symbol and read its data; this reads what they do not report (version, format information, the segment
/// headers). The symbol may be turned any way (a quarter turn, upside down, a few degrees), mirrored, scaled
/// or seen in slight perspective: the four corners give a projective map from module coordinates to pixels,
/// and every one of the eight ways the symbol's corners can lie on the four points is tried. For each way and
/// each of versions 1…40 it samples the function patterns every symbol of that size must have (three finder
/// patterns with separators and both timing patterns, ISO/IEC 18004:2015, 6.3) and keeps the way and version
/// whose samples match best; from version 7 on, the version information (6.10) must then agree. A module is
/// dark when its centre (interpolated between pixels) is darker than the midpoint of the symbol's darkest and
/// lightest pixels (5th and 95th percentile), which copes with a gray, low-contrast or slightly blurred image.
package struct QRModuleGrid: Sendable {
    /// QR version, 1…40.
    public let version: Int
    /// Modules per side, `17 + 4 × version`.
    public let size: Int
    /// Row-major modules, `size × size`; true is dark.
    public let modules: [Bool]
    /// Fraction (0…1) of function-pattern modules that did not sample as expected for `version`.
    public let functionPatternMismatch: Double
    /// Where the symbol's corners were taken to be, in continuous pixel coordinates: top left, top right, bottom
    /// right, bottom left of the symbol (not of the image); empty for a grid built from modules.
    let corners: [(x: Double, y: Double)]

    /// Largest `functionPatternMismatch` accepted as a found grid.
    public static let maxMismatch = 0.05

    /// A mismatch so small that no other way of placing the corners is tried (see the sampling initializer).
    static let clearMatch = 0.01

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
        self.corners = []
    }

    /// Samples the symbol whose outer corners zbar reports (`zbar_symbol_get_loc_x/y`): pixel indices of the
    /// symbol's outermost pixels, in any order.
    /// - Parameters:
    ///   - image: 8-bit gray raster.
    ///   - corners: the symbol's four corners (without quiet zone); with two, the opposite corners of an
    ///     upright symbol.
    /// - Returns: nil when the corners describe a region under 21 pixels across, or when no way and version
    ///   matches within `maxMismatch` (a symbol too blurred, too small or too distorted to sample).
    public init?(image: GrayImage, corners: [(x: Int, y: Int)]) {
        self.init(image: image, zbarCorners: corners, refine: false)
    }

    /// As `init(image:corners:)`, refining the corners when `refine` (see `init(image:edgeCorners:refine:)`).
    init?(image: GrayImage, zbarCorners corners: [(x: Int, y: Int)], refine: Bool) {
        var points = corners.map { (x: Double($0.x) + 0.5, y: Double($0.y) + 0.5) }
        if points.count == 2 {
            let (a, b) = (points[0], points[1])
            points = [a, (x: b.x, y: a.y), b, (x: a.x, y: b.y)]
        }
        // Pixel centres to the symbol's outer edges: half a pixel outwards.
        self.init(image: image, edgeCorners: Self.expanded(points, by: 0.5), refine: refine)
    }

    /// Samples the symbol whose four outer corners are `edgeCorners`, in continuous pixel coordinates (pixel
    /// (i, j) covers [i, i+1) × [j, j+1)), in any order: zxing-cpp's `Result::position()`.
    /// - Parameter refine: also move each corner by up to a few pixels to where the function patterns match
    ///   best (slower; for a symbol whose first sampling did not read cleanly, such as one in perspective,
    ///   whose corners a decoder estimates less well).
    init?(image: GrayImage, edgeCorners corners: [(x: Double, y: Double)], refine: Bool = false) {
        guard corners.count == 4, image.width > 0, image.height > 0 else { return nil }
        let cx = corners.map(\.x).reduce(0, +) / 4, cy = corners.map(\.y).reduce(0, +) / 4
        // Cyclic order around the centre.
        let ring = corners.sorted { Self.pseudoAngle($0.x - cx, $0.y - cy) < Self.pseudoAngle($1.x - cx, $1.y - cy) }
        func length(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double)) -> Double { ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot() }
        let shortest = (0..<4).map { length(ring[$0], ring[($0 + 1) % 4]) }.min() ?? 0
        guard shortest >= 21, shortest.isFinite else { return nil }
        guard let threshold = Self.threshold(image, corners: ring) else { return nil }

        // (symbol corner k: top left, top right, bottom right, bottom left) -> ring[(r ± k) mod 4].
        func placement(_ rotation: Int, _ mirrored: Bool, _ points: [(x: Double, y: Double)]) -> [(x: Double, y: Double)] {
            (0..<4).map { k in points[(rotation + (mirrored ? 4 - k : k)) % 4] }
        }
        typealias Candidate = (corners: [(x: Double, y: Double)], version: Int, mismatch: Double)
        var candidates: [Candidate] = []
        // The ways are tried in turn; once one matches almost perfectly (a clean image), the rest cannot match
        // as well (but for its mirror image turned a quarter, which is told apart below), so they are not tried.
        placements: for mirrored in [false, true] {
            for rotation in 0..<4 {
                if candidates.contains(where: { $0.mismatch <= Self.clearMatch }) { break placements }
                let placed = placement(rotation, mirrored, ring)
                guard let map = Projective(placed) else { continue }
                for version in 1...40 {
                    let size = 17 + 4 * version
                    // Below about a pixel per module nothing can be sampled.
                    guard Double(size) <= shortest else { break }
                    candidates.append((placed, version, Self.mismatch(size: size, dark: Self.sampler(image, map, size, threshold))))
                }
            }
        }
        candidates.sort { $0.mismatch < $1.mismatch }
        // zbar's and zxing-cpp's corners are off by up to about a pixel: at 2 pixels per module that is half a
        // module at the far side. Keep the way and version, and take the corners grown or shrunk by up to a
        // pixel that match best; when refining, the corners are moved further (`refined`), for the best way and
        // version and, while none matches, the next two.
        func improved(_ candidate: Candidate) -> Candidate {
            var best = candidate
            let size = 17 + 4 * candidate.version
            for delta in [-1.0, -0.5, 0.5, 1.0] {
                let grown = Self.expanded(candidate.corners, by: delta)
                guard let map = Projective(grown) else { continue }
                let score = Self.mismatch(size: size, dark: Self.sampler(image, map, size, threshold))
                if score < best.mismatch { best = (grown, candidate.version, score) }
            }
            guard refine else { return best }
            let moved = Self.refined(best.corners, image: image, size: size, threshold: threshold)
            if let map = Projective(moved) {
                let score = Self.mismatch(size: size, dark: Self.sampler(image, map, size, threshold))
                if score <= best.mismatch { best = (moved, candidate.version, score) }
            }
            return best
        }
        guard let first = candidates.first else { return nil }
        var best = improved(first)
        if refine && best.mismatch > Self.maxMismatch {
            for other in candidates.dropFirst().prefix(2) {
                let tried = improved(other)
                if tried.mismatch < best.mismatch { best = tried }
                if best.mismatch <= Self.maxMismatch { break }
            }
        }
        guard best.mismatch <= Self.maxMismatch, var map = Projective(best.corners) else { return nil }
        var size = 17 + 4 * best.version
        var dark = Self.sampler(image, map, size, threshold)
        // Every function pattern is symmetric about the main diagonal, so a symbol and its mirror image turned a
        // quarter match equally well; the format information is not. Keep the way whose format information
        // reads with fewer wrong bits (the one given first on a tie).
        let transposed = [best.corners[0], best.corners[3], best.corners[2], best.corners[1]]
        if let otherMap = Projective(transposed) {
            let otherDark = Self.sampler(image, otherMap, size, threshold)
            let errors = QRFormatInfo.readErrors(size: size, dark: dark) ?? .max
            if let otherErrors = QRFormatInfo.readErrors(size: size, dark: otherDark), otherErrors < errors {
                (best.corners, map, dark) = (transposed, otherMap, otherDark)
            }
        }
        // From version 7 the symbol says its version (6.10): a grid whose version information names another
        // version (read within 3 bit errors) is sampled at that one, or not at all.
        if best.version >= 7, let stated = QRVersionInformation.read(size: size, dark: dark), stated != best.version {
            let other = 17 + 4 * stated
            let otherDark = Self.sampler(image, map, other, threshold)
            let score = Self.mismatch(size: other, dark: otherDark)
            guard Double(other) <= shortest, score <= Self.maxMismatch,
                QRVersionInformation.read(size: other, dark: otherDark) == stated
            else { return nil }
            (best.version, best.mismatch, size, dark) = (stated, score, other, otherDark)
        }
        self.version = best.version
        self.size = size
        self.modules = (0..<(size * size)).map { dark($0 % size, $0 / size) }
        self.functionPatternMismatch = best.mismatch
        self.corners = best.corners
    }

    /// The corners (top left, top right, bottom right, bottom left of the symbol) moved, one at a time and in
    /// steps of 1, ½ and ¼ pixel up to about 3 pixels in all, to where the function patterns' modules lie
    /// furthest on their right side of `threshold` (a sum of luminance distances, which, unlike a count of
    /// wrong modules, still improves when every module is already right).
    static func refined(_ start: [(x: Double, y: Double)], image: GrayImage, size: Int, threshold: Double) -> [(x: Double, y: Double)] {
        let step = 1 / Double(size)
        let patterns = functionPatterns(size: size).map { (u: (Double($0.x) + 0.5) * step, v: (Double($0.y) + 0.5) * step, dark: $0.dark) }
        func cost(_ corners: [(x: Double, y: Double)]) -> Double {
            guard let map = Projective(corners) else { return .infinity }
            var total = 0.0
            for pattern in patterns {
                let p = map.point(u: pattern.u, v: pattern.v)
                let lum = image.luminance(x: p.x, y: p.y)
                total += pattern.dark ? max(0, lum - threshold + 32) : max(0, threshold + 32 - lum)
            }
            return total
        }
        var corners = start
        var current = cost(corners)
        for delta in [1.0, 0.5, 0.25] {
            for _ in 0..<3 {
                var moved = false
                for k in 0..<4 {
                    for (dx, dy) in [(delta, 0.0), (-delta, 0), (0, delta), (0, -delta), (delta, delta), (-delta, -delta), (delta, -delta), (-delta, delta)] {
                        var trial = corners
                        trial[k] = (trial[k].x + dx, trial[k].y + dy)
                        // Stay within 3 pixels of where the decoder put the corner.
                        guard abs(trial[k].x - start[k].x) <= 3, abs(trial[k].y - start[k].y) <= 3 else { continue }
                        let c = cost(trial)
                        if c < current {
                            (corners, current, moved) = (trial, c, true)
                        }
                    }
                }
                if !moved { break }
            }
        }
        return corners
    }

    /// A number that grows with the angle of (dx, dy) from the x axis over 0 to 4 (a quarter turn each), without
    /// trigonometry: enough to put points in cyclic order.
    static func pseudoAngle(_ dx: Double, _ dy: Double) -> Double {
        let sum = abs(dx) + abs(dy)
        guard sum > 0 else { return 0 }
        let p = dy / sum
        return dx < 0 ? 2 - p : (p < 0 ? 4 + p : p)
    }

    /// Each point moved `delta` pixels outwards (away from the centre) along both axes.
    static func expanded(_ points: [(x: Double, y: Double)], by delta: Double) -> [(x: Double, y: Double)] {
        let cx = points.map(\.x).reduce(0, +) / Double(points.count), cy = points.map(\.y).reduce(0, +) / Double(points.count)
        func sign(_ v: Double) -> Double { abs(v) < 0.5 ? 0 : (v < 0 ? -1 : 1) }
        return points.map { (x: $0.x + delta * sign($0.x - cx), y: $0.y + delta * sign($0.y - cy)) }
    }

    /// Module (x, y) of a `size`-module symbol is dark when the luminance at its centre is below `threshold`.
    static func sampler(_ image: GrayImage, _ map: Projective, _ size: Int, _ threshold: Double) -> (Int, Int) -> Bool {
        let step = 1 / Double(size)
        return { x, y in
            let p = map.point(u: (Double(x) + 0.5) * step, v: (Double(y) + 0.5) * step)
            return image.luminance(x: p.x, y: p.y) < threshold
        }
    }

    /// The midpoint of the 5th and 95th percentile of the pixels in the corners' bounding box (at most about
    /// 250,000 of them, evenly spread); nil for a box outside the image or without contrast.
    static func threshold(_ image: GrayImage, corners: [(x: Double, y: Double)]) -> Double? {
        let x0 = max(0, Int(corners.map(\.x).min()!.rounded(.down))), x1 = min(image.width - 1, Int(corners.map(\.x).max()!.rounded(.up)))
        let y0 = max(0, Int(corners.map(\.y).min()!.rounded(.down))), y1 = min(image.height - 1, Int(corners.map(\.y).max()!.rounded(.up)))
        guard x0 <= x1, y0 <= y1 else { return nil }
        let area = (x1 - x0 + 1) * (y1 - y0 + 1)
        let stride = max(1, Int((Double(area) / 250_000).squareRoot().rounded(.up)))
        var histogram = [Int](repeating: 0, count: 256)
        var total = 0
        image.pixels.withUnsafeBufferPointer { pixels in
            for y in Swift.stride(from: y0, through: y1, by: stride) {
                for x in Swift.stride(from: x0, through: x1, by: stride) {
                    histogram[Int(pixels[y * image.width + x])] += 1
                    total += 1
                }
            }
        }
        func percentile(_ p: Double) -> Int {
            let target = Int(Double(total) * p)
            var seen = 0
            for (value, count) in histogram.enumerated() {
                seen += count
                if seen > target { return value }
            }
            return 255
        }
        let dark = percentile(0.05), light = percentile(0.95)
        guard light - dark >= 16 else { return nil }
        return Double(dark + light) / 2
    }

    /// The fraction of function-pattern modules (`functionPatterns`) that do not match a symbol of `size` modules.
    static func mismatch(size: Int, dark: (Int, Int) -> Bool) -> Double {
        let patterns = functionPatterns(size: size)
        let wrong = patterns.reduce(0) { $0 + (dark($1.x, $1.y) != $1.dark ? 1 : 0) }
        return Double(wrong) / Double(patterns.count)
    }

    /// The modules whose colour every symbol of `size` modules has (ISO/IEC 18004:2015, 6.3): the three finder
    /// patterns (7×7: dark ring, light ring, dark 3×3 core) with their light separators, both timing patterns
    /// (row and column 6, dark on even indices), and the alignment patterns (5×5: dark ring, light ring, dark
    /// centre), which tie down the inside and the bottom right of the symbol, where there is no finder pattern.
    static func functionPatterns(size: Int) -> [(x: Int, y: Int, dark: Bool)] {
        guard (21...177).contains(size), (size - 17) % 4 == 0 else { return makeFunctionPatterns(size: size) }
        return functionPatternTable[(size - 17) / 4]
    }

    /// `functionPatterns` of every version, made once (index 0 unused).
    private static let functionPatternTable: [[(x: Int, y: Int, dark: Bool)]] = [[]] + (1...40).map { makeFunctionPatterns(size: 17 + 4 * $0) }

    private static func makeFunctionPatterns(size: Int) -> [(x: Int, y: Int, dark: Bool)] {
        var out: [(x: Int, y: Int, dark: Bool)] = []
        for (ox, oy) in [(0, 0), (size - 7, 0), (0, size - 7)] {
            for dy in -1...7 {
                for dx in -1...7 {
                    let x = ox + dx, y = oy + dy
                    guard x >= 0, y >= 0, x < size, y < size else { continue }
                    let ring = max(abs(dx - 3), abs(dy - 3))
                    out.append((x, y, ring == 3 || ring <= 1))
                }
            }
        }
        for i in 8..<(size - 8) {
            out.append((i, 6, i % 2 == 0))
            out.append((6, i, i % 2 == 0))
        }
        let centres = QRSymbolLayout.alignmentCentres(version: (size - 17) / 4)
        for cy in centres {
            for cx in centres {
                let onFinder = (cx == 6 && cy == 6) || (cx == 6 && cy == size - 7) || (cx == size - 7 && cy == 6)
                guard !onFinder else { continue }
                for dy in -2...2 {
                    for dx in -2...2 {
                        // Where an alignment pattern meets a timing pattern, the timing pattern's modules are
                        // already counted.
                        guard cx + dx != 6, cy + dy != 6 else { continue }
                        out.append((cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1))
                    }
                }
            }
        }
        return out
    }
}

/// The projective map (homography) taking the unit square to a quadrilateral: (0, 0), (1, 0), (1, 1), (0, 1) to
/// the four points in that order (Heckbert, "Fundamentals of Texture Mapping and Image Warping", 1989, 2.2.3).
struct Projective {
    private let a, b, c, d, e, f, g, h: Double

    /// - Returns: nil for a degenerate quadrilateral (three points in a line).
    init?(_ p: [(x: Double, y: Double)]) {
        guard p.count == 4 else { return nil }
        let dx1 = p[1].x - p[2].x, dx2 = p[3].x - p[2].x, dx3 = p[0].x - p[1].x + p[2].x - p[3].x
        let dy1 = p[1].y - p[2].y, dy2 = p[3].y - p[2].y, dy3 = p[0].y - p[1].y + p[2].y - p[3].y
        let den = dx1 * dy2 - dx2 * dy1
        guard abs(den) > 1e-9 else { return nil }
        g = (dx3 * dy2 - dx2 * dy3) / den
        h = (dx1 * dy3 - dx3 * dy1) / den
        a = p[1].x - p[0].x + g * p[1].x
        b = p[3].x - p[0].x + h * p[3].x
        c = p[0].x
        d = p[1].y - p[0].y + g * p[1].y
        e = p[3].y - p[0].y + h * p[3].y
        f = p[0].y
        guard [a, b, c, d, e, f, g, h].allSatisfy(\.isFinite) else { return nil }
    }

    /// The image of (u, v).
    func point(u: Double, v: Double) -> (x: Double, y: Double) {
        let w = g * u + h * v + 1
        guard abs(w) > 1e-12 else { return (-1, -1) }
        return ((a * u + b * v + c) / w, (d * u + e * v + f) / w)
    }
}

/// The version information of versions 7 and up (ISO/IEC 18004:2015, 6.10, Annex D): 6 bits of version and a
/// 12-bit BCH code (generator 0x1F25), in two copies beside the top-right and bottom-left finder patterns.
enum QRVersionInformation {
    /// The 18-bit codeword for `version` (7…40).
    static func codeword(_ version: Int) -> Int {
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        return version << 12 | remainder
    }

    /// The version either copy names within 3 bit errors (the copy with fewer errors wins); nil when neither
    /// can be read or the symbol is too small to have them.
    static func read(size: Int, dark: (_ x: Int, _ y: Int) -> Bool) -> Int? {
        guard size >= 45 else { return nil }
        var best: (version: Int, errors: Int)? = nil
        for copy in 0..<2 {
            var bits = 0
            for i in 0..<18 {
                let (a, b) = (size - 11 + i % 3, i / 3)
                if copy == 0 ? dark(a, b) : dark(b, a) { bits |= 1 << i }
            }
            for version in 7...40 {
                let errors = (codeword(version) ^ bits).nonzeroBitCount
                if errors <= 3, best == nil || errors < best!.errors { best = (version, errors) }
            }
        }
        return best?.version
    }
}

extension QRFormatInfo {
    /// The fewest wrong bits with which either copy of the format information in a grid decodes (the positions
    /// of ISO/IEC 18004:2015, Figure 25, as `read(size:dark:)` reads them); nil when neither is within 3.
    static func readErrors(size: Int, dark: (_ x: Int, _ y: Int) -> Bool) -> Int? {
        var first: [(Int, Int)] = (0..<6).map { (8, $0) }
        first += [(8, 7), (8, 8), (7, 8)]
        first += (9..<15).map { (14 - $0, 8) }
        var second: [(Int, Int)] = (0..<8).map { (size - 1 - $0, 8) }
        second += (8..<15).map { (8, size - 15 + $0) }
        var best: Int? = nil
        for positions in [first, second] {
            var bits = 0
            for (i, (x, y)) in positions.enumerated() where dark(x, y) { bits |= 1 << i }
            if let found = decode(bits) { best = min(best ?? found.errors, found.errors) }
        }
        return best
    }
}
