import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
import HealthCardsTestSupport

/// What the printed card says, read back with two independent extractors (poppler's pdftotext and pypdf in
/// strict mode), qpdf and fontconfig: the text layer is what is drawn, a character no font has refuses the PDF,
/// a name is never cut, an identifier never gets a character it does not have, and a name in two scripts is
/// printed in both (docs/printing.md).
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintedTextTests {
    static let dose = [("2021-05-01", "208", "EW0182", "Clinic")]

    /// Issues one Bundle per `names` JSON (a `Patient.name` array's items) with `--pdf`; returns the output
    /// folder and the run.
    static func issue(names: [String], lot: String = "EW0182", extra: [String] = []) throws -> (
        out: URL, run: TestSupport.Run
    ) {
        try PDFTools.issue(
            names.map { PDFTools.bundle(name: $0, birthDate: "1980-02-29", doses: [("2021-05-01", "208", lot, "Clinic")]) },
            extra: extra)
    }

    /// The line after "NAME" on the first page, as an extractor gives it, without bidi marks.
    static func nameLines(_ text: String, count: Int = 1) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard let at = lines.firstIndex(of: "NAME") else { return [] }
        return Array(lines[(at + 1)...].prefix(count))
    }

    /// The words of a text, in Unicode compatibility form (NFKC: an Arabic presentation form or a Latin
    /// ligature as its letters), as a set.
    static func words(_ text: String) -> Set<String> {
        Set(text.precomposedStringWithCompatibilityMapping.split(whereSeparator: { $0.isWhitespace }).map(String.init))
    }

    /// Names in Arabic, Hebrew, Persian, Devanagari and CJK read back from the text layer as written.
    /// pdftotext (which orders by position) gives each name exactly; pypdf (which reads the content stream and
    /// reverses right-to-left runs) gives each word exactly, and now reads the whole text of the page (it read
    /// nothing at all from a page with a repeated resource key, and Arabic and Hebrew words backwards). What
    /// neither can read is in docs/printing.md: pypdf ignores ActualText, so a Devanagari vowel sign drawn before its
    /// consonant has no text for it. (An Arabic required ligature, لا or لى, reads back in order: its letters are in
    /// the PDF in visual order, checked here and in PrintedArabicLigatureTests.)
    @Test(.enabled(if: TestSupport.python != nil, "the test venv (pypdf) is made by `make test`"))
    func textLayerReadsBackWhatIsDrawn() throws {
        // pdftotext: the name exactly, or (false) with a space poppler's word heuristic puts after a Devanagari
        // vowel sign above its letter; pypdf: each word exactly, or (false) not read (a vowel sign drawn before
        // its letter).
        let names: [(json: String, shown: String, pdftotext: Bool, pypdf: Bool)] = [
            (#"{"text":"فاطمة المنصوري"}"#, "فاطمة المنصوري", true, true),
            (#"{"text":"דוד כהן"}"#, "דוד כהן", true, true),
            (#"{"text":"مهسا امینی"}"#, "مهسا امینی", true, true),
            (#"{"text":"सुनीता देवी"}"#, "सुनीता देवी", false, true),
            (#"{"text":"अनिल कुमार शर्मा"}"#, "अनिल कुमार शर्मा", true, false),
            (#"{"family":"王","given":["小明"]}"#, "王小明", true, true),
            (#"{"family":"山田","given":["太郎"]}"#, "山田太郎", true, true),
            (#"{"family":"김","given":["민준"]}"#, "김민준", true, true),
        ]
        let (out, run) = try Self.issue(names: names.map(\.json))
        #expect(run.status == 0, "\(run.stderr)")
        for (i, name) in names.enumerated() {
            let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-\(i + 1)") + ".pdf")
            let line = Self.nameLines(try PDFTools.text(pdf)).first ?? ""
            if name.pdftotext {
                #expect(line == name.shown, "pdftotext, \(name.shown)")
            } else {
                #expect(line.filter { $0 != " " } == name.shown.filter { $0 != " " }, "pdftotext, \(name.shown): \(line)")
            }
            let extracted = try #require(try PDFTools.pypdfText(pdf), "pypdf is not in the test venv")
            // The page's own words come through too (no ligature glyph: "Verifier", not "Veriﬁer").
            #expect(extracted.contains("SMART Health Card Verifier"), "pypdf, \(name.shown):\n\(extracted)")
            guard name.pypdf else { continue }
            #expect(
                extracted.split(separator: "\n").contains { Self.words(String($0)).isSuperset(of: Self.words(name.shown)) },
                "pypdf, \(name.shown):\n\(extracted)")
        }
        // Arabic with required ligatures: the glyph of لى stands for both letters in the PDF's text (ActualText),
        // in visual order like the glyphs around it (alef maksura, then lam), so that a reader reversing the run
        // reads them in order (PrintedArabicLigatureTests); the uncompressed PDF shows it.
        let (ligated, ligatedRun) = try Self.issue(names: [#"{"text":"ليلى حداد"}"#])
        #expect(ligatedRun.status == 0, "\(ligatedRun.stderr)")
        let pdf = ligated.appendingPathComponent("pdf/" + BatchTestSupport.fileName(ligated, id: "people-1") + ".pdf")
        let plain = ligated.appendingPathComponent("plain.pdf")
        _ = try TestSupport.run(PDFTools.qpdf, ["--qdf", "--object-streams=disable", pdf.path, plain.path])
        let stream = String(decoding: try VerifyFixtures.bytes(plain), as: UTF8.self)
        #expect(stream.contains("/ActualText <feff06490644>"), "alef maksura, then lam: visual order")
        let extracted = try #require(try PDFTools.pypdfText(pdf))
        #expect(extracted.contains("حداد"), "\(extracted)")
    }

    /// `qpdf --check` passes on a page with a code drawn twice (the card's and the wallet card's), on a card
    /// with its link (three codes), and on a chunked card: each code is drawn on the page itself. Cairo 1.16
    /// named a form drawn twice twice in the page's resources (`/x12 … /x12`).
    @Test func everyPageHasValidResources() throws {
        let (out, run) = try Self.issue(names: [#"{"family":"Testperson","given":["Ada"]}"#])
        #expect(run.status == 0, "\(run.stderr)")
        let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf")
        let check = try TestSupport.run(PDFTools.qpdf, ["--check", pdf.path])
        #expect(check.status == 0 && !(check.stdout + check.stderr).contains("duplicated key"), "\(check.stdout)")
        // Both codes still scan from the page.
        #expect(try QRDecoder().decode(try PDFTools.render(pdf, dpi: 150)).count == 2)
    }

    /// A name in a script no installed font has (Nag Mundari, Unicode 15; fontconfig is asked first) is not
    /// printed as empty boxes: that card gets no PDF and the report says why (the script, not the name), the
    /// card itself is issued, the other person's PDF is written, and the exit status is 1. `print` refuses it
    /// the same way.
    @Test func aCharacterNoFontHasRefusesThatCardsPDF() throws {
        let fonts = try TestSupport.run("/usr/bin/fc-list", [":charset=1e4d0", "family"])
        try #require(fonts.status == 0 && fonts.stdout.isEmpty, "a font for U+1E4D0 is installed: \(fonts.stdout)")
        let combined = try TestSupport.tempDir("glyphs").appendingPathComponent("all.pdf")
        let (out, run) = try Self.issue(
            names: [
                #"{"family":"\#u{1E4D0}\#u{1E4D1}\#u{1E4D2}","given":["\#u{1E4D3}\#u{1E4D4}"]}"#,
                #"{"family":"Testperson","given":["Ada"]}"#,
            ],
            extra: ["--pdf-combined", combined.path])
        #expect(run.status == 1, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains("1 card was issued without its printed PDF"), "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.map { $0["status"]?.stringValue } == ["issued", "issued"])
        #expect(report[0]["notPrinted"]?["code"]?.stringValue == "PDF_GLYPH_MISSING")
        let why = try #require(report[0]["notPrinted"]?["message"]?.stringValue)
        #expect(why.contains("no installed font has a glyph for 5 characters") && why.contains("Nagm"), "\(why)")
        #expect(!why.contains("\u{1E4D0}"), "the message names the script, not the name")
        #expect(report[0]["files"]?.arrayValue?.contains(.string("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf")) == false)
        #expect(report[1]["notPrinted"] == nil)
        #expect(FileManager.default.fileExists(atPath: BatchTestSupport.cardFile(out, id: "people-1").path))
        #expect(!FileManager.default.fileExists(atPath: out.path + "/pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf"))
        #expect(try PDFTools.text(out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-2") + ".pdf")).contains("Ada Testperson"))
        #expect(try PDFTools.info(combined).pages == 1)

        let printed = try TestSupport.tempDir("glyphs-print")
        let reprint = try TestSupport.cli(["print", "--out", printed.path, out.path])
        #expect(reprint.status == 1, "\(reprint.stderr)")
        #expect(reprint.stderr.contains("not printed: \(BatchTestSupport.cardFile(out, id: "people-1").path)"), "\(reprint.stderr)")
        #expect(reprint.stderr.contains("no installed font has a glyph"), "\(reprint.stderr)")
        #expect((try FileManager.default.contentsOfDirectory(atPath: printed.path)).filter { $0.hasSuffix(".pdf") } == [BatchTestSupport.fileName(out, id: "people-2") + ".pdf"])
    }

    /// The words of the wallet card (inside the cut-out, left of its QR code), in order, from pdftotext -bbox.
    static func walletWords(_ pdf: URL) throws -> [PDFTools.Word] {
        let page = try #require(try PDFTools.words(pdf).last)
        let caption = try #require(page.first { $0.text == "dashed" })
        let left = Points.mm(15)
        let right = left + Points.mm(CardPrinter.walletCard.width)
        let top = caption.yMax
        let bottom = top + Points.mm(CardPrinter.walletCard.height + 3)
        return page.filter { $0.xMin >= left && $0.xMax <= right && $0.yMin > top && $0.yMax < bottom }
    }

    /// A long name is printed whole on the wallet card (set smaller, then wrapped): every letter of it is in
    /// the cut-out, and no "…" anywhere (it was cut with "…" while the page's text layer held it whole). A name
    /// too long to fit whole even at the smallest size refuses the PDF rather than lose a letter.
    @Test func theWalletCardNeverCutsAName() throws {
        let family = "Wolfeschlegelsteinhausenbergerdorff-Vorschriftsmäßigkeitsprüfungsausschussvorsitzende"
        let given = ["Maximiliane", "Hildegard", "Theodora", "Friederike", "Adelheid"]
        let (out, run) = try Self.issue(
            names: [#"{"family":"\#(family)","given":["\#(given.joined(separator: #"",""#))"]}"#, #"{"family":"\#(String(repeating: "Verylongname", count: 120))"}"#])
        #expect(run.status == 1, "\(run.stderr)")
        let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf")
        let text = try PDFTools.text(pdf)
        #expect(!text.contains("…"), "\(text)")
        let wallet = try Self.walletWords(pdf).map(\.text).joined()
        let name = (given + [family]).joined()
        #expect(wallet.contains(name), "\(wallet)")
        #expect(try TestSupport.report(out)[1]["notPrinted"]?["code"]?.stringValue == "PDF_NAME_TOO_LONG")
        let why = try #require(TestSupport.report(out)[1]["notPrinted"]?["message"]?.stringValue)
        #expect(why.contains("does not fit whole on the wallet card"), "\(why)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/pdf/" + BatchTestSupport.fileName(out, id: "people-2") + ".pdf"))
    }

    /// A lot number is never given a hyphen it does not have: one that fits its column at a smaller size is set
    /// smaller on one line, a longer one is broken between characters, without a hyphen (`JDXYVFLVAP-` / `GR`).
    @Test func identifiersGetNoInsertedHyphens() throws {
        for lot in ["JDXYVFLVAPGR", "A1B2C3D4E5F6G7H8J9K0L1M2N3"] {
            let (out, run) = try Self.issue(names: [#"{"family":"Testperson","given":["Ada"]}"#], lot: lot)
            #expect(run.status == 0, "\(run.stderr)")
            let text = try PDFTools.text(out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf"))
            let lines = text.split(separator: "\n").map(String.init)
            // No piece of the lot ends in a hyphen it does not have, and together the pieces are the lot.
            for n in 2..<lot.count { #expect(!text.contains(String(lot.prefix(n)) + "-"), "\(text)") }
            #expect(text.replacingOccurrences(of: "\n", with: "").contains(lot), "\(text)")
            if lot.count == 12 { #expect(lines.contains { $0.contains(lot) }, "a 12-character lot fits one line: \(text)") }
        }
    }

    /// A person whose card gives the name in two scripts gets both, on the page and on the wallet card: two
    /// `HumanName`s: Japanese as parts and its Latin form, Arabic as text and its Latin form. (One name with both
    /// `text` and parts, which `issue` refuses by the IG's `vc-name-invariant`, is `otherScriptNameRule`'s.)
    @Test func aNameInTwoScriptsIsPrintedInBoth() throws {
        let (out, run) = try Self.issue(names: [
            #"{"family":"山田","given":["太郎"]},{"family":"Yamada","given":["Taro"]}"#,
            #"{"text":"ليلى حداد"},{"family":"Haddad","given":["Layla"]}"#,
            #"{"family":"Testperson","given":["Ada"]},{"family":"Testperson-Smith","given":["Ada"],"use":"old"}"#,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        for (index, names) in [(1, ["山田太郎", "Taro Yamada"]), (2, ["حداد", "Layla Haddad"])] {
            let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-\(index)") + ".pdf")
            let lines = Self.nameLines(try PDFTools.text(pdf), count: 2)
            #expect(lines.count == 2 && lines[0].contains(names[0]) && lines[1] == names[1], "\(lines)")
            let wallet = try Self.walletWords(pdf).map(\.text).joined(separator: " ")
            #expect(wallet.contains(names[1]), "\(wallet)")
        }
        // Two Latin forms (the other an old name) are not two scripts: one name.
        let single = Self.nameLines(try PDFTools.text(out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-3") + ".pdf")), count: 2)
        #expect(single == ["Ada Testperson", "DATE OF BIRTH"], "\(single)")
    }

    /// The other-script rule itself: which name is the other form (`CardSheet.otherScriptName`).
    @Test func otherScriptNameRule() throws {
        func other(_ json: String) throws -> String? {
            CardSheet.otherScriptName(try JSONParser.parse(Array(json.utf8)), shown: HumanName.display(try JSONParser.parse(Array(json.utf8)), today: "2024-01-01"), today: "2024-01-01")
        }
        #expect(try other(#"[{"text":"Иван Петров"},{"family":"Petrov","given":["Ivan"]}]"#) == "Ivan Petrov")
        #expect(try other(#"[{"family":"Petrov","given":["Ivan"]},{"text":"Иван Петров"}]"#) == "Иван Петров")
        #expect(try other(#"[{"text":"Ivan Petrov"},{"family":"Petrov","given":["Ivan"]}]"#) == nil)
        #expect(try other(#"[{"text":"王小明"},{"family":"Wang","given":["Xiaoming"],"use":"nickname"}]"#) == nil)
        #expect(try other(#"[{"text":"王小明"},{"family":"Wang","given":["X"],"period":{"end":"2020"}}]"#) == nil)
        #expect(try other(#"[{"text":"Zoë Núñez"}]"#) == nil)
        // A card of another issuer may give one name as text and parts.
        #expect(try other(#"[{"text":"ليلى حداد","family":"Haddad","given":["Layla"]}]"#) == "Layla Haddad")
    }
}
