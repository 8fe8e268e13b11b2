internal import CCairo
import HealthCardsCore
import HealthCardsQR

/// A length on paper in PDF points (1/72 inch), made from millimetres.
package enum Points {
    /// Points in one millimetre: 72 / 25.4.
    public static let perMillimetre = 72.0 / 25.4
    /// `mm` millimetres in points.
    public static func mm(_ mm: Double) -> Double { mm * perMillimetre }
}

/// An RGB colour, each component 0 to 1.
struct RGB: Sendable {
    var r: Double, g: Double, b: Double
    init(_ r: Double, _ g: Double, _ b: Double) { (self.r, self.g, self.b) = (r, g, b) }
    /// From `0xRRGGBB`.
    init(hex: UInt32) {
        self.init(Double(hex >> 16 & 0xFF) / 255, Double(hex >> 8 & 0xFF) / 255, Double(hex & 0xFF) / 255)
    }
    static let black = RGB(0, 0, 0)
    static let white = RGB(1, 1, 1)
}

/// One page drawn into a Cairo recording surface: vector operations (paths, glyph runs, images) kept
/// in memory, to be played into one or more PDF files (a card's own PDF and the run's combined PDF)
/// without laying the page out again. It owns the surface and frees it when released. A page is made
/// on one thread and may be played on another, never on two at once.
final class RecordedPage: @unchecked Sendable {
    /// Page size in points.
    let width: Double
    let height: Double
    fileprivate let surface: OpaquePointer

    fileprivate init(surface: OpaquePointer, width: Double, height: Double) {
        self.surface = surface
        self.width = width
        self.height = height
    }

    deinit { cairo_surface_destroy(surface) }
}

/// The Cairo drawing context of one page being drawn (Debian `libcairo2`): the one owner of Cairo
/// objects in the toolkit. It draws into a recording surface (`RecordedPage`); `PDFFile` plays
/// recorded pages into a PDF. Coordinates are points from the top-left corner, y down.
///
/// Text is not drawn here: `TextLayout` (Pango) draws on the context lent by `withContext`.
final class Canvas {
    let width: Double
    let height: Double
    private let surface: OpaquePointer
    private let cr: OpaquePointer
    /// Characters of the text drawn on this page that no installed font has a glyph for (Unicode scalar
    /// values): they print as empty boxes (`TextLayout.draw`).
    var unknownCharacters: [UInt32] = []

    /// A blank page of `width` × `height` points.
    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot make the surface (out of memory).
    init(width: Double, height: Double) throws {
        var extents = cairo_rectangle_t(x: 0, y: 0, width: width, height: height)
        guard let surface = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, &extents),
            cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS
        else { throw HealthCardError(.pdf, "Cairo could not make a page of \(width)×\(height) points") }
        guard let cr = cairo_create(surface), cairo_status(cr) == CAIRO_STATUS_SUCCESS else {
            cairo_surface_destroy(surface)
            throw HealthCardError(.pdf, "Cairo could not make a drawing context")
        }
        self.surface = surface
        self.cr = cr
        self.width = width
        self.height = height
    }

    deinit {
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
    }

    /// Ends drawing and hands the page over (the canvas must not be drawn on afterwards).
    /// - Throws: `HealthCardError(.pdf)` when any drawing call failed (Cairo keeps the first error).
    func finish() throws -> RecordedPage {
        let status = cairo_status(cr)
        guard status == CAIRO_STATUS_SUCCESS else {
            throw HealthCardError(.pdf, "drawing the page failed: \(String(cString: cairo_status_to_string(status)))")
        }
        cairo_surface_flush(surface)
        // The page takes its own reference; the canvas's is dropped in deinit.
        return RecordedPage(surface: cairo_surface_reference(surface), width: width, height: height)
    }

    /// Lends the Cairo context (`cairo_t *`) to the text owner, which draws glyphs at the current point.
    func withContext<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T { try body(cr) }

    /// Lends Cairo font options for print (`cairo_font_options_t *`): no hinting, unhinted metrics, so
    /// text is laid out at its true size on paper.
    func withPrintFontOptions(_ body: (OpaquePointer) -> Void) {
        guard let options = cairo_font_options_create() else { return }
        defer { cairo_font_options_destroy(options) }
        cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
        cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE)
        body(options)
    }

    func setColor(_ c: RGB) { cairo_set_source_rgb(cr, c.r, c.g, c.b) }

    /// Moves the current point, where the next text is drawn (its top-left corner).
    func move(to x: Double, _ y: Double) { cairo_move_to(cr, x, y) }

    /// Fills a rectangle.
    func fill(x: Double, y: Double, width: Double, height: Double, color: RGB) {
        setColor(color)
        cairo_rectangle(cr, x, y, width, height)
        cairo_fill(cr)
    }

    /// Fills a rectangle with rounded corners of radius `r`.
    func fillRounded(x: Double, y: Double, width: Double, height: Double, radius r: Double, color: RGB) {
        roundedPath(x: x, y: y, width: width, height: height, radius: r)
        setColor(color)
        cairo_fill(cr)
    }

    /// Strokes a rectangle with rounded corners; `dash` (points on, off) makes a cut line.
    func strokeRounded(
        x: Double, y: Double, width: Double, height: Double, radius r: Double, color: RGB,
        lineWidth: Double, dash: [Double] = []
    ) {
        roundedPath(x: x, y: y, width: width, height: height, radius: r)
        setColor(color)
        cairo_set_line_width(cr, lineWidth)
        cairo_set_dash(cr, dash, Int32(dash.count), 0)
        cairo_stroke(cr)
        cairo_set_dash(cr, nil, 0, 0)
    }

    /// A straight line.
    func line(from x0: Double, _ y0: Double, to x1: Double, _ y1: Double, color: RGB, width: Double) {
        setColor(color)
        cairo_set_line_width(cr, width)
        cairo_move_to(cr, x0, y0)
        cairo_line_to(cr, x1, y1)
        cairo_stroke(cr)
    }

    private func roundedPath(x: Double, y: Double, width w: Double, height h: Double, radius r: Double) {
        let r = min(r, w / 2, h / 2)
        cairo_new_sub_path(cr)
        cairo_arc(cr, x + w - r, y + r, r, -Double.pi / 2, 0)
        cairo_arc(cr, x + w - r, y + h - r, r, 0, Double.pi / 2)
        cairo_arc(cr, x + r, y + h - r, r, Double.pi / 2, Double.pi)
        cairo_arc(cr, x + r, y + r, r, Double.pi, 3 * Double.pi / 2)
        cairo_close_path(cr)
    }

    /// The QR symbols already drawn on this page.
    private var drawnSymbols: Set<ObjectIdentifier> = []

    /// Draws a QR symbol as vector modules: a white square for the symbol and its quiet zone, then the
    /// symbol's form (`QRSymbol`), scaled to `module` points a module.
    ///
    /// A symbol drawn a second time on one page (the card's code and the wallet card's) is drawn through a form
    /// of its own that holds the first: Cairo 1.16 names a form once in a page's resources for each time it is
    /// drawn, so the same form twice gave a resource dictionary with a repeated key, which `qpdf --check`
    /// reports and strict readers refuse. The modules are still written once.
    /// - Parameters:
    ///   - x, y: top-left corner of the quiet zone.
    ///   - module: the side of one module in points.
    ///   - quietZone: light modules on each side (4, the QR standard's minimum).
    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot make the second form (out of memory).
    func drawQR(_ symbol: QRSymbol, x: Double, y: Double, module: Double, quietZone: Int) throws {
        let side = Double(symbol.size + 2 * quietZone) * module
        fill(x: x, y: y, width: side, height: side, color: .white)
        var source = symbol.surface
        var wrapper: OpaquePointer?
        defer { if let wrapper { cairo_surface_destroy(wrapper) } }
        if !drawnSymbols.insert(ObjectIdentifier(symbol)).inserted {
            var extents = cairo_rectangle_t(x: 0, y: 0, width: Double(symbol.size), height: Double(symbol.size))
            guard let surface = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, &extents),
                cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS, let inner = cairo_create(surface)
            else { throw HealthCardError(.pdf, "Cairo could not draw a QR symbol") }
            wrapper = surface
            cairo_set_source_surface(inner, symbol.surface, 0, 0)
            cairo_paint(inner)
            cairo_destroy(inner)
            source = surface
        }
        cairo_save(cr)
        cairo_translate(cr, x + Double(quietZone) * module, y + Double(quietZone) * module)
        cairo_scale(cr, module, module)
        cairo_set_source_surface(cr, source, 0, 0)
        cairo_paint(cr)
        cairo_restore(cr)
    }

    /// Draws an image scaled to fit `width` × `height` points (aspect kept, top-left aligned).
    /// - Returns: the size drawn, in points.
    @discardableResult
    func drawImage(_ image: RasterImage, x: Double, y: Double, width: Double, height: Double) -> (
        width: Double, height: Double
    ) {
        let scale = min(width / Double(image.width), height / Double(image.height))
        cairo_save(cr)
        cairo_translate(cr, x, y)
        cairo_scale(cr, scale, scale)
        cairo_set_source_surface(cr, image.surface, 0, 0)
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD)
        cairo_paint(cr)
        cairo_restore(cr)
        return (Double(image.width) * scale, Double(image.height) * scale)
    }
}

/// A QR symbol's dark modules as vector outlines in a Cairo recording surface of its own, one unit per
/// module: every edge between a dark module and a light one (or the symbol's border), joined into closed
/// loops with a point at each corner only, all in one path filled once (nonzero winding: the loops around
/// light holes run the other way), so the filled area is exactly the dark modules and a viewer that
/// anti-aliases shows no seams between them. Drawn scaled (`Canvas.drawQR`), it becomes one PDF form with
/// small whole-number coordinates, written once however often the page shows it (the main code and the wallet
/// card's). Outlines take about a fifth fewer points than rectangles of merged runs (which this drew before),
/// and every point is a number Cairo formats with `printf` and compresses: the largest part of a printed page's
/// cost (docs/performance.md, "Printed cards").
final class QRSymbol {
    let size: Int
    fileprivate let surface: OpaquePointer
    /// A SMART Health Link's code (printed by its module size), not a card's.
    let isLink: Bool

    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot draw it (out of memory).
    init(_ code: QRCode, isLink: Bool = false) throws {
        size = code.size
        self.isLink = isLink
        var extents = cairo_rectangle_t(x: 0, y: 0, width: Double(code.size), height: Double(code.size))
        guard let surface = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA, &extents) else {
            throw HealthCardError(.pdf, "Cairo could not make a QR symbol")
        }
        self.surface = surface
        guard let cr = cairo_create(surface) else { throw HealthCardError(.pdf, "Cairo could not draw a QR symbol") }
        defer { cairo_destroy(cr) }
        cairo_new_path(cr)
        for loop in Self.outlines(code) {
            cairo_move_to(cr, Double(loop[0].x), Double(loop[0].y))
            for point in loop.dropFirst() { cairo_line_to(cr, Double(point.x), Double(point.y)) }
            cairo_close_path(cr)
        }
        cairo_set_fill_rule(cr, CAIRO_FILL_RULE_WINDING)
        cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE)
        cairo_set_source_rgb(cr, 0, 0, 0)
        cairo_fill(cr)
        guard cairo_status(cr) == CAIRO_STATUS_SUCCESS else {
            throw HealthCardError(.pdf, "Cairo could not draw a QR symbol")
        }
    }

    deinit { cairo_surface_destroy(surface) }

    /// The outlines of the dark modules in module units (x right, y down): closed loops of corner points
    /// along every edge between a dark module and a light one or the border, each edge once, oriented with the
    /// dark side on the right, so that a loop around dark modules turns one way and one around a light hole the
    /// other. Filled with the nonzero rule they cover exactly the dark modules. Where two dark modules touch
    /// only at a corner the loop turns so that they stay apart.
    static func outlines(_ code: QRCode) -> [[(x: Int, y: Int)]] {
        let n = code.size
        let side = n + 1  // vertices per row
        func dark(_ x: Int, _ y: Int) -> Bool { x >= 0 && y >= 0 && x < n && y < n && code[x, y] }
        // Directed boundary edges, at most two leaving a vertex (two where dark modules touch at a corner).
        var first = [Int32](repeating: -1, count: side * side)
        var second = [Int32](repeating: -1, count: side * side)
        func edge(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) {
            let from = y0 * side + x0, to = Int32(y1 * side + x1)
            if first[from] < 0 { first[from] = to } else { second[from] = to }
        }
        for y in 0..<n {
            for x in 0..<n where code[x, y] {
                if !dark(x, y - 1) { edge(x, y, x + 1, y) }  // top, left to right
                if !dark(x + 1, y) { edge(x + 1, y, x + 1, y + 1) }  // right, downwards
                if !dark(x, y + 1) { edge(x + 1, y + 1, x, y + 1) }  // bottom, right to left
                if !dark(x - 1, y) { edge(x, y + 1, x, y) }  // left, upwards
            }
        }
        var loops: [[(x: Int, y: Int)]] = []
        var path: [Int] = []
        for start in 0..<(side * side) {
            while first[start] >= 0 {
                // Every vertex has as many edges leaving as arriving, so a walk from `start` can only end there.
                path.removeAll(keepingCapacity: true)
                var vertex = start
                var previous = -1
                repeat {
                    path.append(vertex)
                    var next = Int(first[vertex])
                    if second[vertex] >= 0, previous >= 0 {
                        // Two edges leave where two dark modules touch at a corner: the right turn (the dark side is
                        // on the right) keeps to the module the loop came along, so the two are outlined apart.
                        let (dx, dy) = (vertex % side - previous % side, vertex / side - previous / side)
                        let right = vertex - dy + dx * side
                        if Int(second[vertex]) == right { next = right }
                    }
                    if Int(first[vertex]) == next {
                        first[vertex] = second[vertex]
                    }
                    second[vertex] = -1
                    previous = vertex
                    vertex = next
                } while vertex != start
                // Corners only: a vertex whose step in and step out differ.
                var points: [(x: Int, y: Int)] = []
                for (i, v) in path.enumerated() {
                    let before = path[(i + path.count - 1) % path.count], after = path[(i + 1) % path.count]
                    if v - before != after - v { points.append((v % side, v / side)) }
                }
                loops.append(points)
            }
        }
        return loops
    }
}

/// A PNG image decoded by Cairo (an image surface), e.g. an issuer's logo; shareable between threads
/// for reading.
final class RasterImage: @unchecked Sendable {
    let width: Int
    let height: Int
    fileprivate let surface: OpaquePointer

    /// The largest side accepted, in pixels: a logo needs far less, and a hostile header could ask
    /// for gigabytes.
    static let maxSide = 8192

    /// Decodes PNG bytes.
    /// - Throws: `HealthCardError(.pdf)` when the bytes are not a PNG Cairo can read, or a side is over
    ///   `maxSide` pixels.
    init(png bytes: [UInt8], source: String) throws {
        // IHDR: width and height, big-endian, at bytes 16 and 20, checked before decoding.
        guard bytes.count > 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw HealthCardError(.pdf, "\(source) is not a PNG image (no PNG signature); give a PNG or SVG logo")
        }
        func be32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        let (w, h) = (be32(16), be32(20))
        guard (1...Self.maxSide).contains(w), (1...Self.maxSide).contains(h) else {
            throw HealthCardError(
                .pdf, "\(source) is \(w)×\(h) pixels; a logo may be at most \(Self.maxSide) pixels on a side")
        }
        let reader = PNGByteReader(bytes)
        let surface = withExtendedLifetime(reader) {
            cairo_image_surface_create_from_png_stream(
                { closure, data, length in
                    guard let closure, let data else { return CAIRO_STATUS_READ_ERROR }
                    let reader = Unmanaged<PNGByteReader>.fromOpaque(closure).takeUnretainedValue()
                    return reader.read(into: data, count: Int(length)) ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_READ_ERROR
                }, Unmanaged.passUnretained(reader).toOpaque())
        }
        guard let surface else { throw HealthCardError(.pdf, "Cairo could not read \(source)") }
        let status = cairo_surface_status(surface)
        guard status == CAIRO_STATUS_SUCCESS else {
            cairo_surface_destroy(surface)
            throw HealthCardError(
                .pdf, "\(source) is not a PNG image Cairo can read: \(String(cString: cairo_status_to_string(status)))")
        }
        self.surface = surface
        self.width = Int(cairo_image_surface_get_width(surface))
        self.height = Int(cairo_image_surface_get_height(surface))
    }

    deinit { cairo_surface_destroy(surface) }
}

/// Hands PNG bytes to Cairo's read callback in pieces.
private final class PNGByteReader {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(into data: UnsafeMutablePointer<UInt8>, count: Int) -> Bool {
        guard count >= 0, count <= bytes.count - offset else { return false }
        bytes.withUnsafeBufferPointer { data.update(from: $0.baseAddress! + offset, count: count) }
        offset += count
        return true
    }
}

/// A PDF being written (Cairo's PDF surface), page by page from recorded pages, to a byte sink: memory
/// for one card's file, or a file for a whole run (`PDFFile.Sink`).
package final class PDFFile {
    /// Where the PDF's bytes go as Cairo writes them.
    final class Sink {
        /// Bytes kept in memory (when `write` is nil).
        var bytes: [UInt8] = []
        /// Receives each piece instead of `bytes`; returns false on a write error.
        let write: ((UnsafeBufferPointer<UInt8>) -> Bool)?
        /// Set when `write` failed: Cairo then stops, and `finish` reports it.
        var failed = false
        init(write: ((UnsafeBufferPointer<UInt8>) -> Bool)? = nil) { self.write = write }
    }

    private let surface: OpaquePointer
    private let cr: OpaquePointer
    private let sink: Sink
    private var pages = 0
    private var finished = false

    /// - Parameters:
    ///   - title, author: the PDF's document information (`/Title`, `/Author`).
    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot start the PDF.
    init(sink: Sink = Sink(), title: String, author: String) throws {
        self.sink = sink
        let closure = Unmanaged.passUnretained(sink).toOpaque()
        guard
            let surface = cairo_pdf_surface_create_for_stream(
                { closure, data, length in
                    guard let closure, let data else { return CAIRO_STATUS_WRITE_ERROR }
                    let sink = Unmanaged<Sink>.fromOpaque(closure).takeUnretainedValue()
                    let piece = UnsafeBufferPointer(start: data, count: Int(length))
                    if let write = sink.write {
                        guard write(piece) else {
                            sink.failed = true
                            return CAIRO_STATUS_WRITE_ERROR
                        }
                    } else {
                        sink.bytes.append(contentsOf: piece)
                    }
                    return CAIRO_STATUS_SUCCESS
                }, closure, 595, 842), cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS
        else { throw HealthCardError(.pdf, "Cairo could not start a PDF") }
        self.surface = surface
        guard let cr = cairo_create(surface) else {
            cairo_surface_destroy(surface)
            throw HealthCardError(.pdf, "Cairo could not make a PDF drawing context")
        }
        self.cr = cr
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, title)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_AUTHOR, author)
        cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "healthcards")
    }

    deinit {
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
    }

    /// Plays a recorded page as the next page of the PDF, at its own size.
    func add(_ page: RecordedPage) {
        cairo_pdf_surface_set_size(surface, page.width, page.height)
        cairo_set_source_surface(cr, page.surface, 0, 0)
        cairo_paint(cr)
        cairo_show_page(cr)
        pages += 1
    }

    /// Ends the PDF (fonts and the cross-reference table are written now).
    /// - Returns: the PDF's bytes when the sink keeps them in memory (empty for a writing sink).
    /// - Throws: `HealthCardError(.pdf)` when Cairo failed, `.io` when the sink could not write.
    func finish() throws -> [UInt8] {
        guard !finished else { return sink.bytes }
        finished = true
        let drawing = cairo_status(cr)
        cairo_surface_finish(surface)
        let status = drawing != CAIRO_STATUS_SUCCESS ? drawing : cairo_surface_status(surface)
        if sink.failed { throw HealthCardError(.io, "writing the PDF failed") }
        guard status == CAIRO_STATUS_SUCCESS else {
            throw HealthCardError(
                .pdf, "Cairo could not write the PDF: \(String(cString: cairo_status_to_string(status)))")
        }
        return sink.bytes
    }
}

extension PDFFile {
    /// The version of the Cairo this process runs with, as Cairo reports it (e.g. "1.16.0").
    package static var cairoRuntimeVersion: String { String(cString: cairo_version_string()) }
}
