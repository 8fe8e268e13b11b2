import HealthCardsCore
import HealthCardsQR

/// Prints SMART Health Cards: lays out a `CardSheet` and its QR codes on A4 or Letter pages, as a
/// clinic hands them to a person (`docs/printing.md`):
/// - a header with the issuer's logo, name and URL and the card's title;
/// - the person's name (`HumanName`) and birth date, who issued the card, and a short plain-language note;
/// - the QR code as vector modules, 60 mm wide (the symbol, without its 4-module quiet zone), or one
///   per chunk labelled "Code C of N" for a chunked card;
/// - with a SMART Health Link, the link's QR code (0.65 mm a module: 40–45 mm for a typical link) with a caption
///   saying what a link is and that opening it needs an internet connection: beside the card's code (whose
///   caption says it needs none), or in place of chunks for a card too large for one code;
/// - every dose (date, vaccine from the CVX table, code, lot, performer) or lab result (date, test,
///   result, performer) in date order, continued on more pages when needed;
/// - a wallet-size cut-out (85.6 × 54 mm, ISO/IEC 7810 ID-1) with the name, birth date and a 42 mm QR
///   code (one per chunk; the link's when the card has no code of its own);
/// - a footer with the print date and "Page i of N".
///
/// Text is laid out by Pango (any script; right-to-left names run right to left). A person's name is never
/// cut: set smaller, then wrapped; with its form in another script when the card has one (`CardSheet.otherName`).
/// A card that cannot be printed as it says (a character no installed font has, a name that does not fit whole
/// on the wallet card) is laid out but refused (`PrintedCard.refusal`). One printer per thread: it owns a Pango
/// context and its decoded logo.
public final class CardPrinter {
    public let settings: PrintSettings
    let text: TextContext
    let logo: DecodedLogo?
    let pageWidth: Double
    let pageHeight: Double

    /// Width of the main QR symbol (without quiet zone), millimetres.
    public static let qrMillimetres = 60.0
    /// The module of a SMART Health Link's QR symbol on paper, millimetres: a link's code is printed
    /// `size × 0.65` mm wide (its symbol, without the quiet zone), on the page and, as far as the card's height
    /// allows, on the wallet card. A link of 230–330 characters (a viewer URL, a label) is version 11–13 at ECC M
    /// (61–69 modules): 40–45 mm. At a fixed 40 mm such a code had modules of 0.58–0.66 mm, and under a slight blur
    /// a phone read few of them; 0.65 mm is what the card's own code has at 60 mm for a typical card.
    public static let linkModuleMillimetres = 0.65
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
    /// - Parameters:
    ///   - codes: the card's QR symbols, one per chunk; empty when the card has no QR code of its own (it is
    ///     over the single-QR limit) and `link` carries it.
    ///   - link: the card's SMART Health Link, or nil. With a card of one QR code, the link's QR code is
    ///     printed beside the card's, each with its caption, and the note moves beside the wallet card. With a
    ///     card of several chunks (or none), the link's QR code takes the card's place: no chunk is printed
    ///     (chunking is deprecated since SHC 1.3.0, and the links specification sends such cards to a link),
    ///     the note says why, and the wallet card holds the link.
    /// - Throws: `HealthCardError(.pdf)` when there is neither a QR code nor a link, or drawing fails.
    public func print(_ sheet: CardSheet, codes: [QRCode], link: PrintedLink? = nil) throws -> PrintedCard {
        let cardCodes = link != nil && codes.count > 1 ? [] : codes
        guard !cardCodes.isEmpty || link != nil else {
            throw HealthCardError(.pdf, "a printed card needs its QR code or its SMART Health Link; neither was made")
        }
        let symbols = try cardCodes.map { try QRSymbol($0) }
        let page = PageFlow(printer: self)
        try page.start()
        let issuerName = settings.issuerDisplayName(sheet.issuer)
        try drawHeader(sheet, issuerName: issuerName, on: page)
        if let link {
            let linkSymbol = try QRSymbol(link.code, isLink: true)
            if let card = symbols.first {
                // The card's code and the link's, side by side; the note goes beside the wallet card.
                try drawIdentity(
                    sheet, issuerName: issuerName,
                    codes: [cardCode(card, titled: true), linkCode(linkSymbol, link: link, issuerName: issuerName)],
                    note: nil, on: page)
                try drawRecords(sheet, on: page)
                try drawWalletCards(
                    sheet, issuerName: issuerName, codes: symbols,
                    aside: .note(Self.note(issuerName: issuerName, withLink: true)),
                    on: page)
            } else {
                try drawIdentity(
                    sheet, issuerName: issuerName, codes: [mainLinkCode(linkSymbol, link: link)],
                    note: Self.linkOnlyNote(issuerName: issuerName, link: link), on: page)
                try drawRecords(sheet, on: page)
                try drawWalletCards(sheet, issuerName: issuerName, codes: [linkSymbol], aside: .linkTip, on: page)
            }
        } else {
            try drawIdentity(
                sheet, issuerName: issuerName, codes: symbols.count == 1 ? [cardCode(symbols[0], titled: false)] : [],
                note: Self.note(issuerName: issuerName), on: page)
            if symbols.count > 1 { try drawChunkGrid(symbols, on: page) }
            try drawRecords(sheet, on: page)
            try drawWalletCards(sheet, issuerName: issuerName, codes: symbols, aside: .cardTip, on: page)
        }
        let pages = try page.finish(footer: "Printed \(settings.today) · \(issuerName) · \(sheet.issuer)")
        let refusal = page.refusal ?? Self.unknownGlyphRefusal(page.canvases.flatMap(\.unknownCharacters))
        return PrintedCard(
            pages: pages, title: "SMART Health Card: \(sheet.title)", author: issuerName, refusal: refusal)
    }

    /// Why a page with characters no font can draw must not be handed out: they print as empty boxes (a name
    /// that reads wrong, or not at all). Says how many, their scripts (ISO 15924) and the first code point, to
    /// find a font; never the text itself (this goes to logs).
    static func unknownGlyphRefusal(_ drawn: [UInt32]) -> HealthCardError? {
        // Each character once (a name is on the page and on the wallet card), in the order first drawn.
        var characters: [UInt32] = []
        for character in drawn where !characters.contains(character) { characters.append(character) }
        guard let first = characters.first else { return nil }
        var scripts: [String] = []
        for character in characters {
            let script = TextLayout.scriptCode(character)
            if !scripts.contains(script) { scripts.append(script) }
        }
        let hex = String(first, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return HealthCardError(
            .pdf, code: .pdfGlyphMissing,
            "no installed font has a glyph for \(characters.count) character\(characters.count == 1 ? "" : "s") on this "
                + "card (script \(scripts.joined(separator: ", ")) in ISO 15924 codes; the first is \(code)): printed, "
                + "\(characters.count == 1 ? "it" : "they") would be empty boxes, so no PDF was made. Install a font that "
                + "has \(characters.count == 1 ? "it" : "them") (fc-list ':charset=\(hex.lowercased())' lists the installed "
                + "fonts that do; Debian's fonts-noto-core covers most scripts) and print the card again")
    }

    // MARK: Text helpers

    func layout(_ string: String, _ style: TextStyle, width: Double?, maxLines: Int? = nil) -> TextLayout {
        TextLayout(string, style: style, width: width, maxLines: maxLines, on: text)
    }

    /// A small capitalised label.
    func label(
        _ string: String, width: Double? = nil, color: RGB = Palette.muted, alignment: TextStyle.Alignment = .start
    ) -> TextLayout {
        layout(
            string.uppercased(), TextStyle(size: 7, bold: true, color: color, alignment: alignment, tracking: 0.5),
            width: width)
    }

    /// `string` whole, never cut: at the largest size from `style.size` down to `minSize` (half a point at a
    /// time) that fits `width` in at most `lines` lines; past that, at `minSize` on as many lines as it takes.
    /// Words are broken only where a word is wider than the line, and without a hyphen.
    func whole(_ string: String, _ style: TextStyle, width: Double, lines: Int, minSize: Double) -> TextLayout {
        var style = style
        while style.size > minSize {
            let candidate = layout(string, style, width: width)
            if candidate.lineCount <= lines { return candidate }
            style.size = max(minSize, style.size - 0.5)
        }
        return layout(string, style, width: width)
    }

    /// `string` at the largest size from `style.size` down to `minSize` that fits `width` in at most
    /// `lines` lines; at `minSize`, wrapped to at most `maxLines` lines ("…" beyond). Not for a name or an
    /// identifier, which are never cut (`whole`).
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

    /// The smallest printed width of a link's QR symbol on the page (without quiet zone), millimetres: the 40 mm
    /// the printed-card rules set for a code (docs/printing.md).
    public static let linkMinimumMillimetres = 40.0

    /// The printed width of a link's QR symbol on the page (without quiet zone), millimetres: its modules at
    /// `linkModuleMillimetres`, and never under `linkMinimumMillimetres` (a short link of version 11, 61 modules,
    /// came out at 39.65 mm; version 10 at 37 mm).
    static func linkMillimetres(_ symbol: QRSymbol) -> Double {
        max(linkMinimumMillimetres, Double(symbol.size) * linkModuleMillimetres)
    }

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
    /// Why this card must not be handed out as printed, when it must not: a character no installed font has
    /// (it would print as an empty box), or a name that does not fit whole on the wallet card. Such a card
    /// gets no PDF (`pdf()` throws it, and a caller adds it to no combined PDF); the card itself is unaffected.
    public let refusal: HealthCardError?

    /// Pages the card takes.
    public var pageCount: Int { pages.count }

    /// The card as a PDF file of its own.
    /// - Throws: `refusal` when there is one; `HealthCardError(.pdf)` when Cairo fails.
    public func pdf() throws -> [UInt8] {
        if let refusal { throw refusal }
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
    /// Why the card must not be handed out as laid out (`PrintedCard.refusal`), set while drawing.
    var refusal: HealthCardError?

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
