import HealthCardsCore
import HealthCardsQR

/// The wallet-size cut-out: an ID-1 card (85.6 × 54 mm) inside a dashed cut line, with a tip or the note
/// beside it.
extension CardPrinter {
    /// What stands beside a single wallet card.
    enum WalletAside {
        /// A tip: keep the card with your ID; its code is the large one's.
        case cardTip
        /// The note about the card (when the top of the page holds the card's code and a link's).
        case note(String)
        /// A tip for a wallet card holding the link: it opens the card, keep it private.
        case linkTip
    }

    /// Draws one cut-out per QR code (labelled "Code C of N" when chunked; "SMART Health Link" for
    /// `.linkTip`), at the foot of the current page when they fit there, else on a new page; beside a single
    /// cut-out, `aside`.
    func drawWalletCards(
        _ sheet: CardSheet, issuerName: String, codes: [QRSymbol], aside: WalletAside, on page: PageFlow
    ) throws {
        let cardW = mm(Self.walletCard.width)
        let cardH = mm(Self.walletCard.height)
        let gap = mm(8)
        let caption = layout(
            "Wallet card: cut along the dashed line", TextStyle(size: 8, color: Palette.muted), width: page.width)
        let perRow = codes.count == 1 ? 1 : max(1, Int((page.width + gap) / (cardW + gap)))
        let rowCount = (codes.count + perRow - 1) / perRow
        let asideWidth = page.width - cardW - gap
        var asideHeight = 0.0
        if codes.count == 1, case .note(let note) = aside { asideHeight = noteLayout(note, width: asideWidth).height }
        let cardRow = max(cardH, asideHeight)
        let rowHeight = cardRow + mm(5)
        // Everything on one page when it fits: at its foot, below the records.
        let block = caption.height + mm(2) + Double(rowCount) * rowHeight - mm(5)
        if block <= page.remaining {
            page.y = page.limit - block
        } else {
            try page.reserve(caption.height + mm(2) + rowHeight)
        }
        caption.draw(on: page.canvas, x: page.margin, y: page.y)
        page.y += caption.height + mm(2)
        for rowStart in stride(from: 0, to: codes.count, by: perRow) {
            try page.reserve(rowStart + perRow >= codes.count ? cardRow : rowHeight)
            for (column, index) in (rowStart..<min(codes.count, rowStart + perRow)).enumerated() {
                let x = page.margin + Double(column) * (cardW + gap)
                let kicker: String
                if codes.count > 1 {
                    kicker = "Code \(index + 1) of \(codes.count)"
                } else if case .linkTip = aside {
                    kicker = "SMART Health Link"
                } else {
                    kicker = "SMART Health Card"
                }
                if let refusal = try drawWalletCard(
                    sheet, issuerName: issuerName, code: codes[index], kicker: kicker, x: x, y: page.y,
                    on: page.canvas), page.refusal == nil
                {
                    page.refusal = refusal
                }
            }
            if codes.count == 1 {
                let x = page.margin + cardW + gap
                switch aside {
                case .note(let note): drawNote(note, x: x, y: page.y, width: asideWidth, on: page.canvas)
                case .cardTip, .linkTip:
                    let tip = layout(
                        Self.walletTip(link: { if case .linkTip = aside { true } else { false } }()),
                        TextStyle(size: 8, color: Palette.muted), width: asideWidth)
                    tip.draw(on: page.canvas, x: x, y: page.y + mm(2))
                }
            }
            page.y += rowHeight
            page.placed()
        }
    }

    /// What the text beside a single wallet card says.
    static func walletTip(link: Bool) -> String {
        link
            ? "Cut out the card and keep it with your ID. Its QR code is the same link as the code above: it opens "
                + "your card, so keep it as private as the card itself, and opening it needs an internet connection. "
                + "It shows your name and date of birth so that a checker can match it to your ID."
            : "Cut out the card and keep it with your ID. Its QR code holds the same signed record as the large "
                + "code above; either one can be scanned, without an internet connection. It shows your name and "
                + "date of birth so that a checker can match it to your ID."
    }

    /// The smallest size a name is set in on the wallet card, points: a name that does not fit whole at it
    /// refuses the card's PDF rather than lose a letter.
    static let walletNameMinimumPoints = 5.0

    /// One ID-1 card: text on the left under `kicker` (set in capitals), the QR code (42 mm symbol and its
    /// quiet zone, or a link's sized by its modules) on the right.
    ///
    /// The name is never cut: set smaller (11 down to 7 points) to keep within three lines, then wrapped onto
    /// more; when that leaves no room, the one-line summary and then the issuer's name give way, and then the name
    /// goes down to `walletNameMinimumPoints`.
    /// - Returns: why the card must not be handed out, when the name does not fit whole even so (nothing is cut:
    ///   the name is drawn whole over the card's edge, and the card gets no PDF).
    /// - Throws: `HealthCardError(.pdf)` when Cairo cannot draw the code.
    func drawWalletCard(
        _ sheet: CardSheet, issuerName: String, code: QRSymbol, kicker: String, x: Double, y: Double,
        on canvas: Canvas
    ) throws -> HealthCardError? {
        let cardW = mm(Self.walletCard.width)
        let cardH = mm(Self.walletCard.height)
        canvas.strokeRounded(
            x: x, y: y, width: cardW, height: cardH, radius: mm(3.18), color: Palette.muted, lineWidth: 0.7,
            dash: [4, 2.5])
        let (side, module) = qrGeometry(code, millimetres: walletMillimetres(code))
        let qrX = x + cardW - side - mm(1.5)
        let qrY = y + (cardH - side) / 2
        try canvas.drawQR(code, x: qrX, y: qrY, module: module, quietZone: Self.quietZone)
        let textX = x + mm(4)
        let width = qrX - textX - mm(0.5)
        let top = y + mm(4)
        let bottom = y + cardH - mm(4)
        let kicker = layout(
            kicker.uppercased(),
            TextStyle(size: 6.2, bold: true, color: Palette.accent, tracking: 0.5), width: width, maxLines: 1)
        let issuer = layout(issuerName, TextStyle(size: 6.5, color: Palette.muted), width: width, maxLines: 2)
        let born = layout(
            "Born \(sheet.birthDate ?? "unknown")", TextStyle(size: 8, color: Palette.ink), width: width, maxLines: 1)
        let summary = layout(
            Self.walletSummary(sheet), TextStyle(size: 6.5, color: Palette.muted), width: width, maxLines: 3)
        let nameStyle = TextStyle(size: 11, bold: true, color: Palette.ink)
        let nameText = Self.nameLine(sheet)
        var name = whole(nameText, nameStyle, width: width, lines: 3, minSize: 7)
        var showIssuer = true
        var showSummary = true
        func height() -> Double {
            kicker.height + mm(0.6) + (showIssuer ? issuer.height + mm(2.5) : mm(1.5)) + name.height + mm(1)
                + born.height + (showSummary ? mm(1) + summary.height : 0)
        }
        if height() > bottom - top { showSummary = false }
        if height() > bottom - top { showIssuer = false }
        if height() > bottom - top {
            name = whole(nameText, nameStyle, width: width, lines: 3, minSize: Self.walletNameMinimumPoints)
            if name.lineCount > 3 {
                // At the smallest size, as many lines as the card holds.
                var style = nameStyle
                style.size = Self.walletNameMinimumPoints
                name = layout(nameText, style, width: width)
            }
        }
        var ty = top
        kicker.draw(on: canvas, x: textX, y: ty)
        ty += kicker.height + mm(0.6)
        if showIssuer {
            issuer.draw(on: canvas, x: textX, y: ty)
            ty += issuer.height + mm(2.5)
        } else {
            ty += mm(1.5)
        }
        name.draw(on: canvas, x: textX, y: ty)
        ty += name.height + mm(1)
        born.draw(on: canvas, x: textX, y: ty)
        if showSummary {
            summary.draw(on: canvas, x: textX, y: max(ty + born.height + mm(1), bottom - summary.height))
        }
        guard height() > bottom - top + 0.01 else { return nil }
        return HealthCardError(
            .pdf, code: .pdfNameTooLong,
            "the person's name (\(nameText.count) characters) does not fit whole on the wallet card, even at "
                + "\(Int(Self.walletNameMinimumPoints)) points on every line the card has: a printed name is never cut, so "
                + "no PDF was made. The card itself is issued; check the name in the record")
    }

    /// The printed width of a code on the wallet card (without quiet zone), millimetres: 42 for the card's own
    /// code; a link's sized by its modules like on the page (`linkModuleMillimetres`), as large as the card's
    /// height allows with its quiet zone and 1.5 mm to spare above and below.
    func walletMillimetres(_ symbol: QRSymbol) -> Double {
        guard symbol.isLink else { return Self.walletQRMillimetres }
        let largest = (Self.walletCard.height - 3) * Double(symbol.size) / Double(symbol.size + 2 * Self.quietZone)
        return min(max(Self.walletQRMillimetres, Double(symbol.size) * Self.linkModuleMillimetres), largest)
    }

    /// "COVID-19 vaccination record · 2 doses, last 2021-02-12".
    static func walletSummary(_ sheet: CardSheet) -> String {
        if let last = sheet.doses.last {
            let count = sheet.doses.count == 1 ? "1 dose" : "\(sheet.doses.count) doses"
            return "\(sheet.title) · \(count), last \(CardSheet.printable(date: last.date).prefix(10))"
        }
        if let last = sheet.labResults.last {
            return "\(sheet.title) · \(last.value), \(CardSheet.printable(date: last.date).prefix(10))"
        }
        return sheet.title
    }
}
