/// Counts the finder-like patterns of an image (a dark square ring around a dark square: runs dark, light,
/// dark, light, dark of widths 1:1:3:1:1 across and down), for the budget of zxing-cpp.
///
/// zxing-cpp 1.4 (Debian's `libzxing2`) tries every three of the finder patterns it finds as a symbol's corners:
/// its time grows with the cube of their count. An image of nothing but tiled finder-like squares (3,249 of them
/// in a 4 KB, 1024 × 1024 PNG) kept it busy for over ten minutes; 196 take 0.1 s. A card's image has three a
/// symbol. This count is made first, in one pass over every other row, and stops as soon as it passes its
/// limit, so it costs at most one look at the image.
enum FinderPatternCount {
    /// The most finder-like patterns an image given to zxing-cpp may show: 300 (a hundred symbols, the most read
    /// from one image). zxing-cpp takes under a second on that many.
    static let zxingLimit = 300

    /// The most finder-like patterns an image over `QRDecoder.binarizeMaxPixels` may show for zbar to read it as
    /// it is: 10,000. zbar's time grows faster than their count too (an 8192 × 8192 image of 207,000 tiled finders
    /// ran for over five minutes; 1,764 symbols, 5,292 finders, take seconds); past it zbar reads the image shrunk
    /// to `binarizeMaxPixels`.
    static let zbarLimit = 10_000

    /// The finder-like patterns in `image`, up to `limit + 1` (the count stops there).
    ///
    /// A pattern is counted where a row (every other one, which every pattern of modules 1 pixel wide or more
    /// meets in its 3 centre rows) crosses it in the ratio 1:1:3:1:1 (each part within half a module) and the
    /// column through the centre found does too; the crossings of one pattern on several rows (centres within
    /// half its width) count once. The image is made black and white at the midpoint of its darkest and
    /// lightest pixels, as a crisp hostile image is; a photo's patterns may be missed or counted twice, which
    /// is what a count for a budget can allow.
    static func count(_ image: GrayImage, limit: Int) -> Int {
        let width = image.width, height = image.height
        guard width >= 7, height >= 7, image.pixels.count == width * height else { return 0 }
        let threshold: UInt8
        do {
            var low: UInt8 = 255, high: UInt8 = 0
            let step = max(1, image.pixels.count / 1_000_000)
            for i in stride(from: 0, to: image.pixels.count, by: step) {
                low = min(low, image.pixels[i])
                high = max(high, image.pixels[i])
            }
            guard high > low else { return 0 }
            threshold = UInt8((Int(low) + Int(high) + 1) / 2)
        }
        // Centres found so far, by column bucket (x / 8): (x, y, width across).
        var centres: [Int: [(x: Int, y: Int, size: Int)]] = [:]
        var found = 0
        return image.pixels.withUnsafeBufferPointer { pixels -> Int in
            func dark(_ x: Int, _ y: Int) -> Bool { pixels[y * width + x] < threshold }
            /// Whether runs `r` (5 widths) are 1:1:3:1:1 within half a module.
            func ratio(_ r: (Int, Int, Int, Int, Int)) -> Bool {
                let total = r.0 + r.1 + r.2 + r.3 + r.4
                guard total >= 7 else { return false }
                // A module is total / 7; a part of n modules within half a module of that, in integers:
                // |part − n × total / 7| ≤ total / 14, times 14.
                func near(_ part: Int, _ modules: Int) -> Bool { abs(14 * part - 2 * modules * total) <= total }
                return near(r.0, 1) && near(r.1, 1) && near(r.2, 3) && near(r.3, 1) && near(r.4, 1)
            }
            /// The centre row of a pattern crossed at column `x` near row `y`, when the column shows 1:1:3:1:1 of
            /// about `size` across.
            func vertical(_ x: Int, _ y: Int, size: Int) -> Int? {
                guard dark(x, y) else { return nil }
                var top = y, bottom = y
                while top > 0, dark(x, top - 1), y - top < size { top -= 1 }
                while bottom < height - 1, dark(x, bottom + 1), bottom - y < size { bottom += 1 }
                var runs = [0, 0, 0, 0, 0]
                runs[2] = bottom - top + 1
                var above = top - 1
                for (index, want) in [(1, false), (0, true)] {
                    while above >= 0, dark(x, above) == want, runs[index] <= size { runs[index] += 1; above -= 1 }
                    guard runs[index] > 0 else { return nil }
                }
                var below = bottom + 1
                for (index, want) in [(3, false), (4, true)] {
                    while below < height, dark(x, below) == want, runs[index] <= size { runs[index] += 1; below += 1 }
                    guard runs[index] > 0 else { return nil }
                }
                let total = runs.reduce(0, +)
                guard abs(total - size) * 2 <= size, ratio((runs[0], runs[1], runs[2], runs[3], runs[4])) else { return nil }
                return (top + bottom) / 2
            }
            func record(_ x: Int, _ y: Int, size: Int) {
                let bucket = x >> 3
                for b in (bucket - 1)...(bucket + 1) {
                    for c in centres[b, default: []] where abs(c.x - x) * 2 <= c.size && abs(c.y - y) * 2 <= c.size { return }
                }
                centres[bucket, default: []].append((x, y, size))
                found += 1
            }
            for y in stride(from: 0, to: height, by: 2) {
                // The widths of the last five runs, the oldest first, and the colour of the current one.
                var runs = (0, 0, 0, 0, 0)
                var current = 0
                var isDark = dark(0, y)
                var x = 0
                while x <= width {
                    let here = x < width ? dark(x, y) : !isDark
                    if here == isDark {
                        current += 1
                    } else {
                        runs = (runs.1, runs.2, runs.3, runs.4, current)
                        // A dark run just ended: is it the last of dark, light, dark, light, dark?
                        if isDark, runs.0 > 0, ratio(runs) {
                            let size = runs.0 + runs.1 + runs.2 + runs.3 + runs.4
                            let centreX = x - runs.4 - runs.3 - (runs.2 + 1) / 2
                            if let centreY = vertical(centreX, y, size: size) {
                                record(centreX, centreY, size: size)
                                if found > limit { return found }
                            }
                        }
                        isDark = here
                        current = 1
                    }
                    x += 1
                }
            }
            return found
        }
    }
}
