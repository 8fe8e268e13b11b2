import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// The link QR on the page of a card too large for one QR code was sized by its modules alone, 0.65 mm each:
/// the link `issue --shl` makes with its default label is 242 characters, version 11 at ECC M (61 modules), so it
/// came out at 39.65 mm, under the 40 mm the printed-card rules set (docs/printing.md). Rendered at 600 dpi and
/// measured from the decoded symbol, it is now 40 mm.
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintedLinkMinimumSizeTests {
    @Test func anOversizedCardsLinkCodeIsNeverUnder40mm() throws {
        let dir = try TestSupport.tempDir("pdf-shl-40mm")
        let csv = try SHLTestSupport.manyDosesCSV(doses: 24, in: dir)
        let (out, _) = try PrintedLinkTests.issue(csv: csv, in: dir)
        let link = try SHLTestSupport.linkText(out, id: "P-9001")
        let modules = try QRCode(link: link).size
        // The case that gave 39.65 mm: 61 modules at 0.65 mm.
        try #require(modules == 61, "the link is \(link.count) characters, \(modules) modules")
        let pdf = out.appendingPathComponent("pdf/P-9001.pdf")
        // Each page rendered at 600 dpi: every link code on it, decoded and measured.
        var widths: [Double] = []
        for page in 1...max(1, try PDFTools.info(pdf).pages) {
            let symbols = try QRDecoder().decode(try PDFTools.render(pdf, page: page, dpi: 600))
            #expect(symbols.allSatisfy { $0.text == link })
            widths += symbols.map { PDFTools.widthMillimetres($0, dpi: 600) }
        }
        widths.sort()
        #expect(!widths.isEmpty)
        // The page's code is the smallest (the wallet card's is at least 42 mm).
        #expect((widths.first ?? 0) >= 39.9 && (widths.first ?? 0) <= 40.4, "\(widths) mm")
    }
}
