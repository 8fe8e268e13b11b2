internal import CJPEG
import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// The image formats QR images are read from, told apart by their first bytes (not their names).
package enum QRImageFormat: String, Sendable {
    /// PNG (signature `89 50 4E 47 0D 0A 1A 0A`).
    case png = "PNG"
    /// JPEG/JFIF/Exif (start-of-image marker `FF D8 FF`): what phones and scanners save photos as.
    case jpeg = "JPEG"

    /// The format of `bytes`, from their signature; nil for anything else.
    package static func sniff(_ bytes: [UInt8]) -> QRImageFormat? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        return nil
    }
}

extension GrayImage {
    /// The libjpeg-turbo version this was built with (e.g. "2.1.5"; with another libjpeg, its API version, e.g.
    /// "API 62"). libjpeg has no run-time version call.
    package static var libjpegTurboBuildVersion: String {
        let turbo = String(cString: CJPEG_turbo_version())
        return turbo.isEmpty ? "API \(CJPEG_lib_version())" : turbo
    }

    /// Builds a raster from pixels already in memory.
    /// - Returns: nil unless `pixels.count == width × height` with both at least 1.
    package init?(width: Int, height: Int, pixels: [UInt8]) {
        guard width > 0, height > 0, pixels.count == width * height else { return nil }
        self.init(checkedWidth: width, height: height, pixels: pixels)
    }

    /// Decodes a PNG or a JPEG, told apart by their first bytes (a `.jpg` that is a PNG is read as a PNG).
    /// - Parameter maxPixels: the most width × height accepted, checked from the file's header before any pixel
    ///   is decoded (`InputBudget.imagePixels` by default).
    /// - Throws: `HealthCardError(.input)` naming the size and the budget for an image over `maxPixels`;
    ///   `HealthCardError(.png)` for a PNG libpng or a JPEG libjpeg cannot decode, or for
    ///   bytes that are neither.
    package init(imageBytes data: [UInt8], maxPixels: Int = InputBudget.imagePixels) throws {
        switch QRImageFormat.sniff(data) {
        case .png: try self.init(png: data, maxPixels: maxPixels)
        case .jpeg: try self.init(jpeg: data, maxPixels: maxPixels)
        case nil:
            throw HealthCardError(.png, "neither a PNG nor a JPEG (the file does not start with either's signature)")
        }
    }

    /// Decodes a JPEG (baseline or progressive; gray, colour or CMYK) to 8-bit gray with libjpeg.
    ///
    /// As for a PNG, width and height are read from the header (the SOF marker) and checked against
    /// `maxPixels` before any pixel is decoded. libjpeg's own buffers are held to `InputBudget.jpegWorkingBytes`
    /// (a progressive JPEG keeps every DCT coefficient, 2 bytes per pixel and colour component) and a
    /// progressive JPEG to `InputBudget.jpegScans` scans, so a small crafted file cannot take much memory or time.
    /// Corrupt or cut-off data is decoded as far as it goes, as image viewers do. EXIF orientation is not
    /// applied (the QR decoders read any orientation).
    /// - Parameter maxPixels: the most width × height accepted (`InputBudget.imagePixels` by default).
    /// - Throws: `HealthCardError(.png)` (the image kind) with libjpeg's message; `HealthCardError(.input)` naming the size
    ///   and the budget when the image has more than `maxPixels` pixels.
    package init(jpeg data: [UInt8], maxPixels: Int = InputBudget.imagePixels) throws {
        try self.init(
            maxPixels: maxPixels,
            readSize: { CJPEG_read_size(data, data.count, &$0, &$1, $2, $3) },
            decode: {
                CJPEG_decode_gray8(data, data.count, $0, $1, InputBudget.jpegWorkingBytes, Int32(InputBudget.jpegScans), &$2, &$3, $4, $5)
            })
    }

    /// This image enlarged `factor` times in each direction by bilinear interpolation (pixel centres aligned):
    /// what zbar needs to find the finder patterns of a symbol drawn at under 2 pixels per module, and what puts
    /// the modules of a photograph at a size zxing-cpp's finder search copes with better.
    /// - Returns: nil when the result would have more than `maxPixels` pixels or `factor` is outside 1…4.
    func enlarged(by factor: Double, maxPixels: Int) -> GrayImage? {
        guard factor > 1, factor <= 4 else { return nil }
        let w = Int((Double(width) * factor).rounded()), h = Int((Double(height) * factor).rounded())
        guard w > 0, h > 0, w <= maxPixels / h else { return nil }
        var out = [UInt8](repeating: 0, count: w * h)
        let fx = Double(width) / Double(w), fy = Double(height) / Double(h)
        pixels.withUnsafeBufferPointer { src in
            for y in 0..<h {
                let sy = min(max((Double(y) + 0.5) * fy - 0.5, 0), Double(height - 1))
                let y0 = Int(sy), y1 = min(y0 + 1, height - 1), ty = sy - Double(y0)
                for x in 0..<w {
                    let sx = min(max((Double(x) + 0.5) * fx - 0.5, 0), Double(width - 1))
                    let x0 = Int(sx), x1 = min(x0 + 1, width - 1), tx = sx - Double(x0)
                    let top = Double(src[y0 * width + x0]) * (1 - tx) + Double(src[y0 * width + x1]) * tx
                    let bottom = Double(src[y1 * width + x0]) * (1 - tx) + Double(src[y1 * width + x1]) * tx
                    out[y * w + x] = UInt8((top * (1 - ty) + bottom * ty).rounded())
                }
            }
        }
        return GrayImage(checkedWidth: w, height: h, pixels: out)
    }

    /// This image shrunk `factor` times in each direction, each pixel the mean of a `factor` × `factor` block
    /// (the last blocks of a row or column may be smaller).
    func shrunk(by factor: Int) -> GrayImage {
        guard factor > 1 else { return self }
        let w = (width + factor - 1) / factor, h = (height + factor - 1) / factor
        var out = [UInt8](repeating: 0, count: w * h)
        var sums = [Int](repeating: 0, count: w)
        var counts = [Int](repeating: 0, count: w)
        pixels.withUnsafeBufferPointer { src in
            for by in 0..<h {
                for i in 0..<w { (sums[i], counts[i]) = (0, 0) }
                for y in (by * factor)..<min(height, (by + 1) * factor) {
                    let row = y * width
                    for x in 0..<width {
                        sums[x / factor] += Int(src[row + x])
                        counts[x / factor] += 1
                    }
                }
                for i in 0..<w { out[by * w + i] = UInt8(sums[i] / max(1, counts[i])) }
            }
        }
        return GrayImage(checkedWidth: w, height: h, pixels: out)
    }

    /// This image made black and white against the mean of each pixel's neighbourhood (a square of
    /// 2 × `radius` + 1 pixels; past the image's edges, the nearest pixels): a pixel darker than its
    /// neighbourhood's mean by more than `offset` is black. What evens out a shadow, a gradient of light or a
    /// blurred JPEG for the decoders. Memory: one row of column sums besides the result.
    func binarized(radius: Int, offset: Int = 3) -> GrayImage {
        let r = max(1, radius)
        var out = [UInt8](repeating: 255, count: width * height)
        var columns = [Int](repeating: 0, count: width)
        pixels.withUnsafeBufferPointer { src in
            func row(_ y: Int) -> Int { min(max(y, 0), height - 1) * width }
            // Column sums over rows −r…r around row 0 (rows past the top repeat row 0).
            for dy in -r...r {
                let base = row(dy)
                for x in 0..<width { columns[x] += Int(src[base + x]) }
            }
            let side = 2 * r + 1, area = side * side
            for y in 0..<height {
                if y > 0 {
                    let added = row(y + r), removed = row(y - r - 1)
                    for x in 0..<width { columns[x] += Int(src[added + x]) - Int(src[removed + x]) }
                }
                var sum = 0
                for dx in -r...r { sum += columns[min(max(dx, 0), width - 1)] }
                let base = y * width
                for x in 0..<width {
                    if x > 0 { sum += columns[min(x + r, width - 1)] - columns[max(x - r - 1, 0)] }
                    if Int(src[base + x]) * area < sum - offset * area { out[base + x] = 0 }
                }
            }
        }
        return GrayImage(checkedWidth: width, height: height, pixels: out)
    }

    /// The luminance at a point in continuous pixel coordinates (pixel (i, j) covers [i, i+1) × [j, j+1)), by
    /// bilinear interpolation between pixel centres; 255 (white, as a quiet zone) outside the image.
    func luminance(x: Double, y: Double) -> Double {
        let sx = x - 0.5, sy = y - 0.5
        guard sx > -1, sy > -1, sx < Double(width), sy < Double(height) else { return 255 }
        let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
        let fx = sx - Double(x0), fy = sy - Double(y0)
        func at(_ x: Int, _ y: Int) -> Double {
            guard x >= 0, y >= 0, x < width, y < height else { return 255 }
            return Double(pixels[y * width + x])
        }
        let top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
        let bottom = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
        return top * (1 - fy) + bottom * fy
    }
}
