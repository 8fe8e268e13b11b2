import HealthCardsCore
import HealthCardsQR

/// The top of a printed card: header, the person and the QR code(s), the note, chunk codes.
extension CardPrinter {
    /// Logo, issuer name and URL on the left; "SMART Health Card" and the card's title on the right;
    /// an accent rule below.
    func drawHeader(_ sheet: CardSheet, issuerName: String, on page: PageFlow) throws {
        let canvas = page.canvas
        let top = page.y
        var x = page.margin
        var height = 0.0
        if let logo {
            let maxW = mm(34)
            let maxH = mm(16)
            let w = min(maxW, maxH * logo.aspectRatio)
            let h = w / logo.aspectRatio
            switch logo {
            case .png(let image): canvas.drawImage(image, x: x, y: top, width: w, height: h)
            case .svg(let image): try image.draw(on: canvas, x: x, y: top, width: w, height: h)
            }
            x += w + mm(4)
            height = h
        }
        let titleStyle = TextStyle(size: 13, bold: true, color: Palette.ink, alignment: .end)
        let rightWidth = min(mm(80), layout(sheet.title, titleStyle, width: nil).size.width + 1)
        let kicker = layout(
            "SMART HEALTH CARD",
            TextStyle(size: 7.5, bold: true, color: Palette.accent, alignment: .end, tracking: 0.3), width: rightWidth)
        let title = layout(sheet.title, titleStyle, width: rightWidth, maxLines: 2)
        let rightX = page.margin + page.width - rightWidth
        kicker.draw(on: canvas, x: rightX, y: top)
        title.draw(on: canvas, x: rightX, y: top + kicker.height + mm(0.5))
        height = max(height, kicker.height + mm(0.5) + title.height)

        let issuerWidth = rightX - mm(4) - x
        let name = fitted(
            issuerName, TextStyle(size: 15, bold: true, color: Palette.ink), width: issuerWidth, lines: 2, minSize: 10,
            maxLines: 3)
        let url = layout(sheet.issuer, TextStyle(size: 8.5, color: Palette.muted), width: issuerWidth, maxLines: 2)
        name.draw(on: canvas, x: x, y: top)
        url.draw(on: canvas, x: x, y: top + name.height + mm(0.5))
        height = max(height, name.height + mm(0.5) + url.height)

        page.y = top + height + mm(3)
        canvas.line(from: page.margin, page.y, to: page.margin + page.width, page.y, color: Palette.accent, width: 1.2)
        page.y += mm(5)
        page.placed()
        page.continuation = { [unowned self] flow in
            // The whole name, never cut (as on the first page).
            let line = self.layout(
                "\(Self.nameLine(sheet, separator: " / "))  ·  born \(sheet.birthDate ?? "unknown")  ·  \(sheet.title) (continued)",
                TextStyle(size: 8.5, color: Palette.muted), width: flow.width)
            line.draw(on: flow.canvas, x: flow.margin, y: flow.y)
            flow.y += line.height + mm(2)
            flow.canvas.line(
                from: flow.margin, flow.y, to: flow.margin + flow.width, flow.y, color: Palette.rule, width: 0.5)
            flow.y += mm(5)
        }
    }

    /// The person (name, birth date), who issued the card and the note on the left; the top codes (`TopCode`:
    /// the card's, the link's, or both side by side) on the right, each with its caption below.
    func drawIdentity(_ sheet: CardSheet, issuerName: String, codes: [TopCode], note: String?, on page: PageFlow)
        throws
    {
        let canvas = page.canvas
        let top = page.y
        var qrBottom = top
        var right = page.margin + page.width
        for code in codes.reversed() {
            let (side, module) = qrGeometry(code.symbol, millimetres: code.millimetres)
            let qrX = right - side
            try canvas.drawQR(code.symbol, x: qrX, y: top, module: module, quietZone: Self.quietZone)
            var y = top + side + mm(0.5)
            if let title = code.title {
                let heading = label(title, width: side, color: Palette.accent, alignment: .center)
                heading.draw(on: canvas, x: qrX, y: y)
                y += heading.height + mm(1)
            }
            let caption = layout(
                code.caption,
                TextStyle(
                    size: code.title == nil ? 8 : 7.5, color: code.title == nil ? Palette.muted : Palette.ink,
                    alignment: code.alignment),
                width: side)
            caption.draw(on: canvas, x: qrX, y: y)
            qrBottom = max(qrBottom, y + caption.height)
            right = qrX - mm(6)
        }
        let columnWidth = codes.isEmpty ? page.width : right - mm(2) - page.margin
        var y = top + mm(2)
        let x = page.margin
        func field(_ name: String, _ value: TextLayout, gap: Double = 3.5) {
            let heading = label(name, width: columnWidth)
            heading.draw(on: canvas, x: x, y: y)
            y += heading.height + mm(0.8)
            value.draw(on: canvas, x: x, y: y)
            y += value.height + mm(gap)
        }
        // The whole name, in both scripts when the card has both: set smaller to fit two lines, then wrapped.
        field(
            "Name",
            whole(
                Self.nameLine(sheet), TextStyle(size: 22, bold: true, color: Palette.ink), width: columnWidth, lines: 2,
                minSize: 12))
        field(
            "Date of birth",
            layout(sheet.birthDate ?? "Not on the card", TextStyle(size: 15, color: Palette.ink), width: columnWidth))
        var issued = "Issued by \(issuerName)"
        if let nbf = sheet.issuedAt { issued += " on \(Clock.todayUTC(nbf))" }
        field(
            "Issuer", layout(issued, TextStyle(size: 10.5, color: Palette.ink), width: columnWidth, maxLines: 3), gap: 5
        )
        if let note { y = drawNote(note, x: x, y: y, width: columnWidth, on: canvas) }
        page.y = max(y, qrBottom) + mm(6)
        page.placed()
    }

    /// The person's name as printed: `name`, and `otherName` (the name in another script) after `separator`
    /// (a line separator: on a line of its own).
    static func nameLine(_ sheet: CardSheet, separator: String = "\u{2028}") -> String {
        let name = sheet.name ?? "No name on the card"
        guard let other = sheet.otherName else { return name }
        return name + separator + other
    }

    /// The plain-language note in a tinted box, headed "About this card"; returns the y below it.
    @discardableResult
    func drawNote(_ note: String, x: Double, y: Double, width: Double, on canvas: Canvas) -> Double {
        let (heading, body, height) = noteLayout(note, width: width)
        let pad = mm(3.5)
        canvas.fillRounded(x: x, y: y, width: width, height: height, radius: mm(2), color: Palette.tint)
        heading.draw(on: canvas, x: x + pad, y: y + pad)
        body.draw(on: canvas, x: x + pad, y: y + pad + heading.height + mm(1))
        return y + height
    }

    /// The note's heading and body laid out for a box `width` points wide, and the box's height.
    func noteLayout(_ note: String, width: Double) -> (heading: TextLayout, body: TextLayout, height: Double) {
        let pad = mm(3.5)
        let heading = layout(
            "About this card", TextStyle(size: 9.5, bold: true, color: Palette.accent), width: width - 2 * pad)
        let body = layout(note, TextStyle(size: 8.3, color: Palette.ink), width: width - 2 * pad)
        return (heading, body, pad + heading.height + mm(1) + body.height + pad)
    }

    /// The codes of a chunked card, two per row, each labelled "Code C of N".
    func drawChunkGrid(_ codes: [QRSymbol], on page: PageFlow) throws {
        let heading = layout(
            "Scan all \(codes.count) codes: this card is split over \(codes.count) QR codes, in any order",
            TextStyle(size: 11, bold: true, color: Palette.ink), width: page.width)
        let side = codes.map { qrGeometry($0, millimetres: Self.qrMillimetres).side }.max() ?? 0
        let labelHeight = layout("Code", TextStyle(size: 10, bold: true), width: nil).height
        let rowHeight = labelHeight + mm(1) + side + mm(5)
        try page.reserve(heading.height + mm(3) + rowHeight)
        heading.draw(on: page.canvas, x: page.margin, y: page.y)
        page.y += heading.height + mm(3)
        page.placed()
        let columns = max(1, Int((page.width + mm(8)) / (side + mm(8))))
        let cellWidth = page.width / Double(columns)
        for rowStart in stride(from: 0, to: codes.count, by: columns) {
            try page.reserve(rowHeight)
            for (column, index) in (rowStart..<min(codes.count, rowStart + columns)).enumerated() {
                let cellX = page.margin + Double(column) * cellWidth
                let (side, module) = qrGeometry(codes[index], millimetres: Self.qrMillimetres)
                let x = cellX + (cellWidth - side) / 2
                let tag = layout(
                    "Code \(index + 1) of \(codes.count)",
                    TextStyle(size: 10, bold: true, color: Palette.accent, alignment: .center), width: side)
                tag.draw(on: page.canvas, x: x, y: page.y)
                try page.canvas.drawQR(
                    codes[index], x: x, y: page.y + labelHeight + mm(1), module: module, quietZone: Self.quietZone)
            }
            page.y += rowHeight
            page.placed()
        }
        page.y += mm(2)
    }
}
