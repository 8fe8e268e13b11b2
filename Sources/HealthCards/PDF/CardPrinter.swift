/// Prints SMART Health Cards: lays out a `CardSheet` and its QR codes on A4 or Letter pages, as a
/// clinic hands them to a person (`docs/printing.md`):
/// - a header with the issuer's logo, name and URL and the card's title;
/// - the person's name (`HumanName`) and birth date, who issued the card, and a short plain-language note;
/// - the QR code as vector modules, 60 mm wide (the symbol, without its 4-module quiet zone), or one
///   per chunk labelled "Code C of N" for a chunked card;
/// - every dose (date, vaccine from the CVX table, code, lot, performer) or lab result (date, test,
///   result, performer) in date order, continued on more pages when needed;
/// - a wallet-size cut-out (85.6 × 54 mm, ISO/IEC 7810 ID-1) with the name, birth date and a 42 mm QR
///   code (one per chunk);
/// - a footer with the print date and "Page i of N".
///
/// Text is laid out by Pango (any script; right-to-left names run right to left); a name too long for
/// its line is set smaller, then wrapped, and cut with "…" only past six lines, so nothing leaves the
/// page. One printer per thread: it owns a Pango context and its decoded logo.
public final class CardPrinter {
    public let settings: PrintSettings
    let text: TextContext
    let logo: DecodedLogo?
    let pageWidth: Double
    let pageHeight: Double

    /// Width of the main QR symbol (without quiet zone), millimetres.
    public static let qrMillimetres = 60.0
    /// Width of the wallet card's QR symbol (without quiet zone), millimetres.
    public static let walletQRMillimetres = 42.0
    /// Light modules around every symbol (ISO/IEC 18004 minimum).
    public static let quietZone = 4
    /// ISO/IEC 7810 ID-1 card size in millimetres.
    public static let walletCard = (width: 85.6, height: 54.0)

    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot start, or the logo cannot be decoded.
    public init(settings: PrintSettings) throws {
        self.settings = settings
        let paper = settings.paper.millimetres
        pageWidth = Points.mm(paper.width)
        pageHeight = Points.mm(paper.height)
        text = try TextContext(canvas: try Canvas(width: 10, height: 10))
        logo = try settings.logo?.decoded()
    }

    /// Lays out one card.
    /// - Parameter codes: the card's QR symbols, one per chunk (at least one).
    /// - Throws: `HealthCardError(.pdf)` when there is no QR code or drawing fails.
    public func print(_ sheet: CardSheet, codes: [QRCode]) throws -> PrintedCard {
        guard !codes.isEmpty else { throw HealthCardError(.pdf, "a printed card needs its QR code; none was made") }
        let symbols = try codes.map(QRSymbol.init)
        let page = PageFlow(printer: self)
        try page.start()
        let issuerName = settings.issuerDisplayName(sheet.issuer)
        try drawHeader(sheet, issuerName: issuerName, on: page)
        try drawIdentity(sheet, issuerName: issuerName, codes: symbols, on: page)
        if symbols.count > 1 { try drawChunkGrid(symbols, on: page) }
        try drawRecords(sheet, on: page)
        try drawWalletCards(sheet, issuerName: issuerName, codes: symbols, on: page)
        let pages = try page.finish(footer: "Printed \(settings.today) · \(issuerName) · \(sheet.issuer)")
        return PrintedCard(pages: pages, title: "SMART Health Card: \(sheet.title)", author: issuerName)
    }

    // MARK: Text helpers

    func layout(_ string: String, _ style: TextStyle, width: Double?, maxLines: Int? = nil) -> TextLayout {
        TextLayout(string, style: style, width: width, maxLines: maxLines, on: text)
    }

    /// A small capitalised label.
    func label(_ string: String, width: Double? = nil, color: RGB = Palette.muted) -> TextLayout {
        layout(string.uppercased(), TextStyle(size: 7, bold: true, color: color, tracking: 0.5), width: width)
    }

    /// `string` at the largest size from `style.size` down to `minSize` that fits `width` in at most
    /// `lines` lines; at `minSize`, wrapped to at most `maxLines` lines ("…" beyond).
    func fitted(_ string: String, _ style: TextStyle, width: Double, lines: Int, minSize: Double, maxLines: Int)
        -> TextLayout
    {
        var style = style
        while style.size > minSize {
            let candidate = layout(string, style, width: width, maxLines: lines)
            if candidate.lineCount <= lines && !candidate.isEllipsized { return candidate }
            style.size = max(minSize, style.size - 1)
        }
        return layout(string, style, width: width, maxLines: maxLines)
    }

    /// Points for `mm` millimetres.
    func mm(_ mm: Double) -> Double { Points.mm(mm) }

    /// Size of a QR symbol with quiet zone, and of one module, for a symbol `millimetres` wide.
    func qrGeometry(_ code: QRSymbol, millimetres: Double) -> (side: Double, module: Double) {
        let module = mm(millimetres) / Double(code.size)
        return (module * Double(code.size + 2 * Self.quietZone), module)
    }
}

/// The colours of a printed card.
enum Palette {
    static let ink = RGB(hex: 0x1A1F24)
    static let muted = RGB(hex: 0x56616B)
    static let accent = RGB(hex: 0x0B5D6B)
    static let tint = RGB(hex: 0xEBF4F5)
    static let rule = RGB(hex: 0xC5D0D4)
    static let zebra = RGB(hex: 0xF4F6F7)
}

/// A card laid out on pages, ready to be written as a PDF (`pdf()`) or added to a combined PDF
/// (`CombinedPDF`). Made on one thread, used on one thread at a time.
public struct PrintedCard: @unchecked Sendable {
    let pages: [RecordedPage]
    /// The PDF's `/Title`: the card's kind, never the person's name (file managers show titles).
    let title: String
    let author: String

    /// Pages the card takes.
    public var pageCount: Int { pages.count }

    /// The card as a PDF file of its own.
    /// - Throws: `HealthCardError(.pdf)` when Cairo fails.
    public func pdf() throws -> [UInt8] {
        let file = try PDFFile(title: title, author: author)
        for page in pages { file.add(page) }
        return try file.finish()
    }
}

/// Pages being filled from top to bottom: the current page, the next free y, the space left above the
/// footer; a new page when a block does not fit.
final class PageFlow {
    let printer: CardPrinter
    private(set) var canvases: [Canvas] = []
    /// Next free y on the current page, points.
    var y = 0.0
    let margin: Double
    let top: Double
    /// Lowest y a block may reach (the footer is below).
    let limit: Double
    var width: Double { printer.pageWidth - 2 * margin }
    var canvas: Canvas { canvases[canvases.count - 1] }
    /// Drawn at the top of every page after the first (the person, "continued").
    var continuation: ((PageFlow) throws -> Void)?

    init(printer: CardPrinter) {
        self.printer = printer
        margin = Points.mm(15)
        top = Points.mm(13)
        limit = printer.pageHeight - Points.mm(17)
    }

    func start() throws {
        canvases.append(try Canvas(width: printer.pageWidth, height: printer.pageHeight))
        y = top
    }

    /// Space left on the current page, points.
    var remaining: Double { limit - y }

    /// Whether the current page has nothing but its heading yet.
    private var atPageTop = true

    /// Makes sure `height` points fit on the current page, starting a new page (with the continuation
    /// heading) when they do not and the page already holds something.
    func reserve(_ height: Double) throws {
        if height <= remaining + 0.01 || atPageTop { return }
        try newPage()
    }

    func newPage() throws {
        try start()
        try continuation?(self)
        atPageTop = true
    }

    /// Marks that content was placed on the current page.
    func placed() { atPageTop = false }

    /// Draws the footer on every page and ends them.
    func finish(footer: String) throws -> [RecordedPage] {
        let count = canvases.count
        for (index, canvas) in canvases.enumerated() {
            let y = printer.pageHeight - Points.mm(11)
            canvas.line(
                from: margin, y - Points.mm(2), to: printer.pageWidth - margin, y - Points.mm(2), color: Palette.rule,
                width: 0.5)
            let style = TextStyle(size: 7, color: Palette.muted)
            let pageText = printer.layout("Page \(index + 1) of \(count)", style, width: nil)
            let left = printer.layout(footer, style, width: width - pageText.size.width - Points.mm(6), maxLines: 1)
            left.draw(on: canvas, x: margin, y: y)
            pageText.draw(on: canvas, x: printer.pageWidth - margin - pageText.size.width, y: y)
        }
        return try canvases.map { try $0.finish() }
    }
}
