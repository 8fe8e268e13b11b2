import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// Printed cards read back as a person would: rendered with pdftoppm, the QR decoded with zbar from the
/// page, measured on it, and the text read with pdftotext (docs/printing.md).
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintedCardTests {
    static let templates = VerifyFixtures.repoRoot.appendingPathComponent("templates")

    /// Issues the vaccination sample with `--pdf` (and `extra`).
    static func issueSample(_ extra: [String] = []) throws -> URL {
        let dir = try TestSupport.tempDir("pdf")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(
            [
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template",
                templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf",
                "1700000000", "--pdf",
                "--paper", "a4", "--issuer-name", "Springfield Clinic",
            ] + extra + [templates.appendingPathComponent("covid19-vaccination.sample.csv").path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try PDFTools.checkEveryPDF(under: out) == 4)
        return out
    }

    /// The printed QR codes scan from the rendered page, at 150 dpi (an office printer's draft) and 300
    /// dpi, give exactly the card's `shc:/` text, and are at least 40 mm wide on paper.
    @Test(arguments: [150, 300])
    func qrScansFromTheRenderedPage(dpi: Int) throws {
        let out = try Self.issueSample()
        let expected = try PDFTools.qrTexts(card: out.appendingPathComponent("cards/P-1001.smart-health-card"))
        #expect(expected.count == 1)
        let page = try PDFTools.render(out.appendingPathComponent("pdf/P-1001.pdf"), dpi: dpi)
        let symbols = try QRDecoder().decode(page)
        // The main code and the wallet card's code.
        #expect(symbols.count == 2)
        for symbol in symbols {
            #expect(symbol.text == expected[0])
            #expect(PDFTools.widthMillimetres(symbol, dpi: dpi) >= 40)
        }
        let widths = symbols.map { PDFTools.widthMillimetres($0, dpi: dpi) }.sorted()
        // 42 mm on the wallet card, 60 mm on the page (to a pixel or two).
        #expect(abs(widths[0] - CardPrinter.walletQRMillimetres) < 1.5, "\(widths)")
        #expect(abs(widths[1] - CardPrinter.qrMillimetres) < 1.5, "\(widths)")
    }

    /// pdftotext finds the name (as the HumanName rule writes it), the birth date, every dose with its
    /// date, vaccine name, code, lot and performer; the privacy options leave lot and performer out.
    @Test func textHasThePersonAndEveryDose() throws {
        let out = try Self.issueSample()
        let text = try PDFTools.text(out.appendingPathComponent("pdf/P-1001.pdf"))
        for expected in [
            "Ada M. Testperson", "1960-04-12", "2021-01-15", "2021-02-12", "2022-09-05", "CVX 207", "CVX 229",
            "011J20A", "ABC General Hospital", "Springfield Clinic", "https://issuer.example.org", "Page 1 of 1",
        ] {
            #expect(text.contains(expected), "\(expected) not in:\n\(text)")
        }
        // The vaccine's name comes from the CVX table; the note says where the code works (wrapping may
        // break both over lines).
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        #expect(flat.contains("COVID-19, mRNA, LNP-S, PF"))
        #expect(flat.contains("Apple Health") && flat.contains("Android") && flat.contains("verifier app"))
        // Doses in date order.
        let positions = ["2021-01-15", "2021-02-12", "2022-09-05"].compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions == positions.sorted())
        #expect(text.contains("Chloé") == false)
        let chloe = try PDFTools.text(out.appendingPathComponent("pdf/P-1003.pdf"))
        #expect(chloe.contains("Chloé Exampledóttir"))

        let redactedOut = try Self.issueSample(["--no-lot", "--no-performer"])
        let redacted = try PDFTools.text(redactedOut.appendingPathComponent("pdf/P-1001.pdf"))
        #expect(redacted.contains("2021-01-15") && redacted.contains("Ada M. Testperson"))
        #expect(!redacted.contains("011J20A") && !redacted.contains("ABC General Hospital"))
    }

    /// Files are health data: mode 0600; the report lists each PDF; `--pdf-combined` holds one person
    /// per page in input order.
    @Test func combinedPDFInInputOrderAndPrivateFiles() throws {
        let combined = try TestSupport.tempDir("combined").appendingPathComponent("all/cards.pdf")
        let out = try Self.issueSample(["--pdf-combined", combined.path])
        let report = try TestSupport.report(out)
        let ids = report.compactMap { $0["id"]?.stringValue }
        #expect(ids == ["P-1001", "P-1002", "P-1003", "P-1004"])
        for line in report {
            let id = try #require(line["id"]?.stringValue)
            #expect(line["files"]?.arrayValue?.contains(.string("pdf/\(id).pdf")) == true)
            #expect(FileIO.mode(out.appendingPathComponent("pdf/\(id).pdf").path) == 0o600)
        }
        #expect(FileIO.mode(combined.path) == 0o600)
        let info = try PDFTools.info(combined)
        #expect(info.pages == 4)
        let names = ["Ada M. Testperson", "Bob Sampleton", "Chloé Exampledóttir", "Dmitri K O'Fakename"]
        for (page, name) in names.enumerated() {
            let text = try PDFTools.text(combined, page: page + 1)
            #expect(text.contains(name), "page \(page + 1): \(text)")
        }
        // The combined file's QR codes are the cards' own.
        let symbols = try QRDecoder().decode(try PDFTools.render(combined, page: 2, dpi: 150))
        #expect(
            Set(symbols.map(\.text))
                == Set(try PDFTools.qrTexts(card: out.appendingPathComponent("cards/P-1002.smart-health-card"))))
    }

    /// Names in every script: the text layer holds the name as written, and right-to-left names run right
    /// to left on the page (the first letter is drawn to the right of the last).
    @Test func namesInEveryScript() throws {
        let names: [(json: String, shown: String)] = [
            (#"{"family":"Παπαδοπούλου","given":["Ελένη"]}"#, "Ελένη Παπαδοπούλου"),
            (#"{"family":"Иванова","given":["Анна","Сергеевна"]}"#, "Анна Сергеевна Иванова"),
            (#"{"family":"المنصوري","given":["فاطمة"]}"#, "فاطمة المنصوري"),
            (#"{"family":"כהן","given":["דוד"]}"#, "דוד כהן"),
            (#"{"family":"王","given":["小明"]}"#, "王小明"),
            (#"{"family":"山田","given":["太郎"]}"#, "山田太郎"),
            (#"{"family":"김","given":["민준"]}"#, "김민준"),
            (#"{"family":"Núñez-Żółć","given":["Zoë","Øyvind"]}"#, "Zoë Øyvind Núñez-Żółć"),
        ]
        let doses = [("2021-05-01", "208", "EW0182", "Clinic"), ("2021-05-22", "208", "EW0199", "Clinic")]
        let (out, run) = try PDFTools.issue(
            names.map {
                PDFTools.bundle(name: $0.json, birthDate: "1980-02-29", doses: doses.map { ($0.0, $0.1, $0.2, $0.3) })
            })
        #expect(run.status == 0, "\(run.stderr)")
        for (i, name) in names.enumerated() {
            let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-\(i + 1)") + ".pdf")
            let text = try PDFTools.text(pdf)
            #expect(text.contains(name.shown), "\(name.shown) not in:\n\(text)")
            #expect(text.contains("1980-02-29") && text.contains("2021-05-01") && text.contains("2021-05-22"))
        }
        // Right to left: in the big name line, the first word lies right of the last (pdftotext -bbox gives each
        // word's letters in visual order, left to right: reversed, they are the word as written).
        for (index, first, last) in [(3, "דוד", "כהן"), (2, "فاطمة", "المنصوري")] {
            let words = try PDFTools.words(out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-\(index + 1)") + ".pdf"))[0]
            let label = try #require(words.first { $0.text == "NAME" })
            let line = words.filter { $0.yMin > label.yMax && $0.yMin < label.yMax + 20 }
            let a = try #require(line.first { String($0.text.reversed()) == first }, "\(line.map(\.text))")
            let b = try #require(line.first { String($0.text.reversed()) == last }, "\(line.map(\.text))")
            #expect(a.xMin > b.xMax, "\(first) at \(a.xMin), \(last) at \(b.xMin)")
            #expect(b.xMin < label.xMin + 5, "the name starts at the left margin like the rest of the page")
        }
    }

    /// A name far too long for its line is set smaller and wrapped, and nothing leaves the page; a card
    /// with 10 doses fits on two pages at most, every dose listed in date order, and still scans.
    @Test func longNameAndTenDosesStayOnThePage() throws {
        let long =
            String(repeating: "Wolfeschlegelsteinhausenbergerdorff ", count: 6) + String(repeating: "X", count: 150)
        // All before the run's nbf (2023-11-14).
        let dates = [
            "2021-01-04", "2021-01-25", "2021-09-30", "2022-01-10", "2022-05-15", "2022-09-15", "2023-02-01",
            "2023-05-20",
            "2023-08-01", "2023-10-05",
        ]
        // Given out of order: the page lists them by date.
        let shuffled = [
            dates[4], dates[0], dates[9], dates[2], dates[7], dates[1], dates[8], dates[3], dates[6], dates[5],
        ]
        let doses = shuffled.map { ($0, "208", "LOT-\($0.suffix(5))", "Springfield Community Vaccination Centre") }
        let (out, run) = try PDFTools.issue([
            PDFTools.bundle(
                name: #"{"family":"\#(long)","given":["Hubert","Blaine"]}"#, birthDate: "1950-07-01", doses: doses)
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf")
        let info = try PDFTools.info(pdf)
        #expect((1...2).contains(info.pages))
        for page in try PDFTools.words(pdf) {
            for word in page {
                #expect(
                    word.xMin >= 0 && word.xMax <= info.width && word.yMin >= 0 && word.yMax <= info.height,
                    "\(word.text) leaves the page")
                // Inside the margins (15 mm = 42.5 pt), with a point to spare for glyph overhang.
                #expect(word.xMin >= 41 && word.xMax <= info.width - 41, "\(word.text) at \(word.xMin)...\(word.xMax)")
            }
        }
        let text = try PDFTools.text(pdf)
        let positions = dates.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == dates.count && positions == positions.sorted(), "\(text)")
        #expect(text.contains("Wolfeschlegelsteinhausenbergerdorff"))
        let expected = try PDFTools.qrTexts(card: BatchTestSupport.cardFile(out, id: "people-1"))
        var found: [String] = []
        for page in 1...info.pages {
            found += try QRDecoder().decode(try PDFTools.render(pdf, page: page, dpi: 150)).map(\.text)
        }
        #expect(!found.isEmpty && found.allSatisfy { expected.contains($0) })
    }

    /// A chunked card (`--chunk`) prints every chunk's code labelled "Code C of N"; each scans from the
    /// page at 150 dpi, and together they give the card's chunks.
    @Test func chunkedCardLabelsEveryChunk() throws {
        // Lot numbers that do not compress push the JWS past 1195 characters.
        var seed: UInt64 = 42
        func lot() -> String {
            String(
                (0..<18).map { _ in
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    return Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")[Int(seed >> 59)]
                })
        }
        let doses = (0..<30).map {
            ("20\(21 + $0 / 12)-\(String(format: "%02d", $0 % 12 + 1))-01", "208", lot(), "Site \($0)")
        }
        let (out, run) = try PDFTools.issue(
            [PDFTools.bundle(name: #"{"family":"Chunk","given":["Charlie"]}"#, birthDate: "1970-01-01", doses: doses)],
            extra: ["--chunk"])
        #expect(run.status == 0, "\(run.stderr)")
        let expected = try PDFTools.qrTexts(card: BatchTestSupport.cardFile(out, id: "people-1"))
        #expect(expected.count > 1)
        let pdf = out.appendingPathComponent("pdf/" + BatchTestSupport.fileName(out, id: "people-1") + ".pdf")
        let text = try PDFTools.text(pdf)
        for c in 1...expected.count { #expect(text.contains("Code \(c) of \(expected.count)"), "\(text)") }
        var found: Set<String> = []
        for page in 1...(try PDFTools.info(pdf)).pages {
            found.formUnion(try QRDecoder().decode(try PDFTools.render(pdf, page: page, dpi: 150)).map(\.text))
        }
        #expect(found == Set(expected))
    }
}
