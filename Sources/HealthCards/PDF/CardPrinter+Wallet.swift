/// The wallet-size cut-out: an ID-1 card (85.6 × 54 mm) inside a dashed cut line.
extension CardPrinter {
    /// Draws one cut-out per QR code (labelled "Code C of N" when chunked), at the foot of the current
    /// page when they fit there, else on a new page.
    func drawWalletCards(_ sheet: CardSheet, issuerName: String, codes: [QRSymbol], on page: PageFlow) throws {
        let cardW = mm(Self.walletCard.width)
        let cardH = mm(Self.walletCard.height)
        let gap = mm(8)
        let caption = layout(
            "Wallet card: cut along the dashed line", TextStyle(size: 8, color: Palette.muted), width: page.width)
        let perRow = codes.count == 1 ? 1 : max(1, Int((page.width + gap) / (cardW + gap)))
        let rowCount = (codes.count + perRow - 1) / perRow
        let rowHeight = cardH + mm(5)
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
            try page.reserve(rowStart + perRow >= codes.count ? cardH : rowHeight)
            for (column, index) in (rowStart..<min(codes.count, rowStart + perRow)).enumerated() {
                let x = page.margin + Double(column) * (cardW + gap)
                drawWalletCard(
                    sheet, issuerName: issuerName, code: codes[index],
                    chunk: codes.count > 1 ? (index + 1, codes.count) : nil,
                    x: x, y: page.y, on: page.canvas)
            }
            if codes.count == 1 {
                let x = page.margin + cardW + gap
                let tip = layout(
                    "Cut out the card and keep it with your ID. Its QR code holds the same signed record as the large "
                        + "code above; either one can be scanned. It shows your name and date of birth so that a "
                        + "checker can match it to your ID.", TextStyle(size: 8, color: Palette.muted),
                    width: page.width - cardW - gap)
                tip.draw(on: page.canvas, x: x, y: page.y + mm(2))
            }
            page.y += rowHeight
            page.placed()
        }
    }

    /// One ID-1 card: text on the left, the QR code (42 mm symbol and its quiet zone) on the right.
    func drawWalletCard(
        _ sheet: CardSheet, issuerName: String, code: QRSymbol, chunk: (Int, Int)?, x: Double, y: Double,
        on canvas: Canvas
    ) {
        let cardW = mm(Self.walletCard.width)
        let cardH = mm(Self.walletCard.height)
        canvas.strokeRounded(
            x: x, y: y, width: cardW, height: cardH, radius: mm(3.18), color: Palette.muted, lineWidth: 0.7,
            dash: [4, 2.5])
        let (side, module) = qrGeometry(code, millimetres: Self.walletQRMillimetres)
        let qrX = x + cardW - side - mm(1.5)
        let qrY = y + (cardH - side) / 2
        canvas.drawQR(code, x: qrX, y: qrY, module: module, quietZone: Self.quietZone)
        let textX = x + mm(4)
        let width = qrX - textX - mm(0.5)
        var ty = y + mm(4)
        let kicker = layout(
            chunk.map { "CODE \($0.0) OF \($0.1)" } ?? "SMART HEALTH CARD",
            TextStyle(size: 6.2, bold: true, color: Palette.accent, tracking: 0.5), width: width, maxLines: 1)
        kicker.draw(on: canvas, x: textX, y: ty)
        ty += kicker.height + mm(0.6)
        let issuer = layout(issuerName, TextStyle(size: 6.5, color: Palette.muted), width: width, maxLines: 2)
        issuer.draw(on: canvas, x: textX, y: ty)
        ty += issuer.height + mm(2.5)
        let name = fitted(
            sheet.name ?? "No name on the card", TextStyle(size: 11, bold: true, color: Palette.ink), width: width,
            lines: 3,
            minSize: 7, maxLines: 4)
        name.draw(on: canvas, x: textX, y: ty)
        ty += name.height + mm(1)
        let born = layout(
            "Born \(sheet.birthDate ?? "unknown")", TextStyle(size: 8, color: Palette.ink), width: width, maxLines: 1)
        born.draw(on: canvas, x: textX, y: ty)
        let summary = layout(
            Self.walletSummary(sheet), TextStyle(size: 6.5, color: Palette.muted), width: width, maxLines: 3)
        summary.draw(on: canvas, x: textX, y: max(ty + born.height + mm(1), y + cardH - mm(4) - summary.height))
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
