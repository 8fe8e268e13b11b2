import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// An Arabic name printed right came out of the PDF's text layer with two letters swapped: Noto Sans Arabic draws
/// lam with alef maksura (`لى`) and lam-alef (`لا`) as one glyph each (ligatures the script requires), and both
/// poppler's pdftotext read `ليلى` as `ليىل`. The text layer now carries the name as given: pdftotext reads the
/// name's line exactly; pypdf, which ignores ActualText and reads each glyph's ToUnicode entry, reads each word with
/// the ligature as its Arabic presentation form (U+FC86 for `لى`, Cairo maps a glyph from the font's own cmap),
/// which is the name's letters in Unicode compatibility form (NFKC), in order, and the words of the line in visual
/// order (as for every right-to-left line).
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintedArabicLigatureTests {
    static let names = ["ليلى حداد", "صلاح الدين", "علاء سلامة", "لُبنى خليل"]

    @Test(.enabled(if: TestSupport.python != nil, "the test venv (pypdf) is made by `make test-deps`"))
    func arabicNamesWithRequiredLigaturesReadBackAsGiven() throws {
        let (out, run) = try PrintedTextTests.issue(names: Self.names.map { #"{"text":"\#($0)"}"# })
        #expect(run.status == 0, "\(run.stderr)")
        for (i, name) in Self.names.enumerated() {
            let pdf = out.appendingPathComponent("pdf/\(BatchTestSupport.fileName(out, id: "people-\(i + 1)")).pdf")
            let line = PrintedTextTests.nameLines(try PDFTools.text(pdf)).first ?? ""
            #expect(line == name, "pdftotext: \(line) for \(name)")
            let extracted = try #require(try PDFTools.pypdfText(pdf), "pypdf is not in the test venv")
            let lines = extracted.split(separator: "\n").map { String($0).precomposedStringWithCompatibilityMapping }
            let words = Set(name.split(separator: " ").map(String.init))
            #expect(
                lines.contains { Set($0.split(separator: " ").map(String.init)).isSuperset(of: words) },
                "pypdf, \(name):\n\(extracted)")
        }
    }
}
