import HealthCardsCore
import HealthCardsQR

/// The table of doses or lab results, continued on the next page when it does not fit.
extension CardPrinter {
    /// A column: heading, share of the width (fixed millimetres, or nil for what is left), and the cell
    /// text of each row.
    struct Column {
        var heading: String
        var millimetres: Double?
        var cells: [String]
        /// Identifiers (a code, a lot number): set smaller to keep on one line, then broken between characters,
        /// never with a hyphen or "…".
        var identifier = false
    }

    func drawRecords(_ sheet: CardSheet, on page: PageFlow) throws {
        let title: String
        var columns: [Column]
        if !sheet.doses.isEmpty {
            title = sheet.doses.count == 1 ? "Vaccination" : "Vaccinations (\(sheet.doses.count))"
            columns = [
                Column(heading: "Date", millimetres: 22, cells: sheet.doses.map { CardSheet.printable(date: $0.date) }),
                Column(heading: "Vaccine", millimetres: nil, cells: sheet.doses.map { $0.vaccine ?? "Vaccine" }),
                Column(heading: "Code", millimetres: 21, cells: sheet.doses.map(\.code), identifier: true),
            ]
            if settings.showLot {
                columns.append(
                    Column(heading: "Lot", millimetres: 24, cells: sheet.doses.map { $0.lot ?? "" }, identifier: true))
            }
            if settings.showPerformer {
                columns.append(
                    Column(heading: "Given by", millimetres: 38, cells: sheet.doses.map { $0.performer ?? "" }))
            }
        } else if !sheet.labResults.isEmpty {
            title = sheet.labResults.count == 1 ? "Test result" : "Test results (\(sheet.labResults.count))"
            columns = [
                Column(
                    heading: "Date", millimetres: 30, cells: sheet.labResults.map { CardSheet.printable(date: $0.date) }
                ),
                Column(
                    heading: "Test", millimetres: nil,
                    cells: sheet.labResults.map { [$0.test, $0.code].compactMap { $0 }.joined(separator: "\u{2028}") }),
                Column(heading: "Result", millimetres: 34, cells: sheet.labResults.map(\.value)),
            ]
            if settings.showPerformer {
                columns.append(
                    Column(heading: "Performed by", millimetres: 40, cells: sheet.labResults.map { $0.performer ?? "" })
                )
            }
        } else {
            let none = layout(
                "This card holds no vaccination or lab result that can be listed here.",
                TextStyle(size: 9.5, color: Palette.muted), width: page.width)
            try page.reserve(none.height)
            none.draw(on: page.canvas, x: page.margin, y: page.y)
            page.y += none.height + mm(6)
            page.placed()
            return
        }
        let fixed = columns.compactMap(\.millimetres).map(mm).reduce(0, +)
        let widths = columns.map { $0.millimetres.map(mm) ?? max(mm(30), page.width - fixed) }
        let scale = min(1, page.width / widths.reduce(0, +))
        let columnWidths = widths.map { $0 * scale }
        let pad = mm(1.6)
        let rows = columns[0].cells.count

        let headingStyle = TextStyle(size: 7, bold: true, color: Palette.muted, tracking: 0.5)
        let cellStyle = TextStyle(size: 9.3, color: Palette.ink)
        func cellLayouts(_ row: Int) -> [TextLayout] {
            columns.enumerated().map { c, column in
                let text = column.cells[row]
                let style = c == 0 ? TextStyle(size: 9.3, bold: true, color: Palette.ink) : cellStyle
                if column.identifier {
                    return whole(text, style, width: columnWidths[c] - 2 * pad, lines: 1, minSize: 7)
                }
                return layout(text, style, width: columnWidths[c] - 2 * pad, maxLines: 4)
            }
        }
        /// One row of the table (the heading row or a record): `cells` side by side across the columns at
        /// `page.y`, on `background` when given; `page.y` moves below it.
        func drawRow(_ cells: [TextLayout], height: Double, background: RGB?) {
            if let background {
                page.canvas.fill(x: page.margin, y: page.y, width: page.width, height: height, color: background)
            }
            var x = page.margin
            for (c, cell) in cells.enumerated() {
                cell.draw(on: page.canvas, x: x + pad, y: page.y + pad)
                x += columnWidths[c]
            }
            page.y += height
        }
        func drawTitle(continued: Bool) {
            let heading = layout(
                continued ? "\(title), continued" : title, TextStyle(size: 12, bold: true, color: Palette.ink),
                width: page.width)
            heading.draw(on: page.canvas, x: page.margin, y: page.y)
            page.y += heading.height + mm(2)
            let heads = columns.enumerated().map { c, column in
                layout(column.heading.uppercased(), headingStyle, width: columnWidths[c] - 2 * pad)
            }
            drawRow(heads, height: (heads.map(\.height).max() ?? 0) + 2 * pad, background: Palette.tint)
            page.placed()
        }
        let titleHeight = layout(title, TextStyle(size: 12, bold: true), width: page.width).height + mm(2) + mm(8)
        var cells = cellLayouts(0)
        try page.reserve(titleHeight + (cells.map(\.height).max() ?? 0) + 2 * pad)
        drawTitle(continued: false)
        for row in 0..<rows {
            if row > 0 { cells = cellLayouts(row) }
            let height = (cells.map(\.height).max() ?? 0) + 2 * pad
            if height > page.remaining {
                try page.newPage()
                drawTitle(continued: true)
            }
            drawRow(cells, height: height, background: row % 2 == 1 ? Palette.zebra : nil)
            page.canvas.line(
                from: page.margin, page.y, to: page.margin + page.width, page.y, color: Palette.rule, width: 0.5)
            page.placed()
        }
        page.y += mm(6)
    }
}
