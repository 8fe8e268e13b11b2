import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
import HealthCardsTestSupport

/// `healthcards print` on cards already issued, the print options, logos, paper, and what a card's
/// sheet says (`CardSheet`).
@Suite(.serialized) struct PrintCommandTests {
    static let templates = VerifyFixtures.repoRoot.appendingPathComponent("templates")

    /// Issues a sample CSV without PDFs and writes its issuer's key set; returns (out, site).
    static func issued(_ template: String) throws -> (out: URL, site: URL, dir: URL) {
        let dir = try TestSupport.tempDir("print")
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        #expect(
            try TestSupport.cli([
                "jwks", key, "--issuer", "https://issuer.example.org", "--out",
                site.appendingPathComponent(".well-known/jwks.json").path,
            ])
            .status == 0)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template",
            templates.appendingPathComponent("\(template).json").path,
            "--out", out.path, "--nbf", "1700000000", templates.appendingPathComponent("\(template).sample.csv").path,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        return (out, site, dir)
    }

    @Test(.enabled(if: PDFTools.available, PDFTools.missing))
    func printsIssuedCardsAndRefusesABrokenOne() throws {
        let (out, site, dir) = try Self.issued("lab-result")
        let pdfs = dir.appendingPathComponent("pdfs")
        // A card whose payload was changed after signing.
        let good = try VerifyFixtures.text(out.appendingPathComponent("cards/L-2001.smart-health-card"))
        let jws = try #require(try JSONParser.parse(Array(good.utf8))["verifiableCredential"]?[0]?.stringValue)
        let parts = jws.split(separator: ".")
        let tampered = "\(parts[0]).\(parts[1]).\(parts[2].reversed().map(String.init).joined())"
        let broken = try TestSupport.write(
            #"{"verifiableCredential":["\#(tampered)"]}"#, to: "broken.smart-health-card", in: dir)
        let run = try TestSupport.cli([
            "print", "--jwks", site.path, "--out", pdfs.path, "--paper", "letter", out.path, broken,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("not printed: \(broken)"))
        #expect(FileManager.default.fileExists(atPath: pdfs.appendingPathComponent("broken.pdf").path) == false)
        for id in ["L-2001", "L-2002"] {
            let pdf = pdfs.appendingPathComponent("\(id).pdf")
            #expect(FileIO.mode(pdf.path) == 0o600)
            let info = try PDFTools.info(pdf)
            #expect(info.width == 612 && info.height == 792, "US Letter is 612 × 792 points")
        }
        // The lab card: test name from the IG's LOINC list, the result in words, date and time, in date order.
        let text = try PDFTools.text(pdfs.appendingPathComponent("L-2001.pdf"))
        for expected in [
            "Erin Labperson", "1990-05-17", "Laboratory test results", "2021-02-17 09:30", "2021-08-02 14:05",
            "Not detected",
            "LOINC 94558-4", "SARS-CoV-2 Ag Resp Ql IA.rapid", "City Lab",
        ] {
            #expect(text.contains(expected), "\(expected) not in:\n\(text)")
        }
        let symbols = try QRDecoder().decode(try PDFTools.render(pdfs.appendingPathComponent("L-2001.pdf"), dpi: 150))
        #expect(symbols.count == 2)
        #expect(
            symbols.allSatisfy {
                $0.text
                    == (try? PDFTools.qrTexts(card: out.appendingPathComponent("cards/L-2001.smart-health-card")))?
                    .first
            })

        let usage = try TestSupport.cli(["print", out.path])
        #expect(usage.status == 2 && usage.stderr.contains("needs --out DIR or --pdf-combined"))
        let paper = try TestSupport.cli(["print", "--out", pdfs.path, "--paper", "a3", out.path])
        #expect(paper.status == 2 && paper.stderr.contains("--paper 'a3' is not known; expected a4 or letter"))
        let needsPDF = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", "k", "--out", "o", "--no-lot", "x.json",
        ])
        #expect(needsPDF.status == 2 && needsPDF.stderr.contains("need --pdf or --pdf-combined"))
    }

    /// A PNG or SVG logo is drawn at the top left (where the page is otherwise blank); a file that is
    /// neither is refused with the reason.
    /// Two cards of one file name from two folders: the second is not printed over the first's PDF (it was, while
    /// the summary said both were printed); the same file given twice is printed once.
    @Test(.enabled(if: PDFTools.available, PDFTools.missing))
    func cardsOfOneFileNameAreNotPrintedOverEachOther() throws {
        let (out, site, dir) = try Self.issued("lab-result")
        let first = dir.appendingPathComponent("a/X.smart-health-card")
        let second = dir.appendingPathComponent("b/X.smart-health-card")
        for (source, copy) in [("L-2001", first), ("L-2002", second)] {
            try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: out.appendingPathComponent("cards/\(source).smart-health-card"), to: copy)
        }
        let pdfs = dir.appendingPathComponent("pdfs")
        let run = try TestSupport.cli(["print", "--jwks", site.path, "--out", pdfs.path, first.path, second.path, first.path])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(
            run.stderr.contains(
                "not printed: \(second.path): its PDF would be \(pdfs.path)/X.pdf, which this run has already printed "
                    + "\(first.path) to"), "\(run.stderr)")
        #expect(run.stderr.contains("print: 1 card(s) printed"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: pdfs.path) == ["X.pdf"])
        let text = try PDFTools.text(pdfs.appendingPathComponent("X.pdf"))
        #expect(text.contains("Erin Labperson"), "the first card's PDF stays: \(text)")
        #expect(!text.contains("Farid"), "\(text)")
    }

    @Test(.enabled(if: PDFTools.available, PDFTools.missing))
    func logos() throws {
        let (out, _, dir) = try Self.issued("covid19-vaccination")
        let svg = try TestSupport.write(
            """
            <svg xmlns="http://www.w3.org/2000/svg" width="200" height="60" viewBox="0 0 200 60">
            <rect width="200" height="60" rx="8" fill="#0b5d6b"/><text x="12" y="40" font-family="Noto Sans" font-size="26" fill="white">Acme Clinic</text></svg>
            """, to: "logo.svg", in: dir)
        let card = out.appendingPathComponent("cards/P-1002.smart-health-card").path
        // A QR image is a PNG.
        let png = out.appendingPathComponent("qr/P-1001.png").path
        for (name, logo) in [("none", nil), ("svg", svg), ("png", png)] {
            let run = try TestSupport.cli(
                ["print", "--out", dir.appendingPathComponent(name).path] + (logo.map { ["--logo", $0] } ?? []) + [card]
            )
            #expect(run.status == 0, "\(run.stderr)")
            let pdf = dir.appendingPathComponent("\(name)/P-1002.pdf")
            // The issuer's name starts at the left margin (15 mm = 42.5 pt), or right of the logo.
            let issuer = try #require(try PDFTools.words(pdf)[0].first { $0.text == "issuer.example.org" })
            if logo == nil {
                #expect(abs(issuer.xMin - 42.5) < 1)
            } else {
                #expect(issuer.xMin > 42.5 + Points.mm(20), "\(name): \(issuer.xMin)")
                // 50 dpi: the logo box starts at 15 mm, 13 mm (30, 26 px); it is drawn there.
                let page = try PDFTools.render(pdf, dpi: 50)
                let box = (28..<40).flatMap { y in (31..<50).map { x in page.pixels[y * page.width + x] } }
                #expect(box.contains { $0 < 128 }, "\(name): the logo is drawn at the top left")
            }
        }
        // Not an image (the user trial gave /etc/passwd): what it is and what is expected, not libxml's
        // "Start tag expected, '<' not found", and never a line of the file.
        let expected = "expected an SVG file (XML, starting with <svg or <?xml) or a PNG file"
        for (name, bytes, found) in [
            ("passwd", Array("root:x:0:0:root:/root:/bin/bash\n".utf8), "text that is not XML (it does not start with '<')"),
            ("logo.jpg", [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8), "a JPEG image (convert it to PNG)"),
            ("empty.svg", [], "an empty file"),
        ] as [(String, [UInt8], String)] {
            let bad = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: bad))
            let refused = try TestSupport.cli([
                "print", "--out", dir.appendingPathComponent("bad").path, "--logo", bad, card,
            ])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("--logo: \(bad) is not a logo image: it is \(found); \(expected)"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("root:x") && !refused.stderr.contains("Start tag"), "\(refused.stderr)")
        }
        // XML that librsvg cannot read: its reason, and what is expected.
        let broken = try TestSupport.write("<svg xmlns=\"http://www.w3.org/2000/svg\"", to: "broken.svg", in: dir)
        let refused = try TestSupport.cli(["print", "--out", dir.appendingPathComponent("bad").path, "--logo", broken, card])
        #expect(refused.status == 2)
        #expect(
            refused.stderr.contains("--logo: \(broken) starts like XML but is not an SVG image that can be read (librsvg: ")
                && refused.stderr.contains("); expected an SVG file or a PNG file"), "\(refused.stderr)")
    }

    /// A logo librsvg reads but refuses to draw (over its 500,000 referenced elements: 2^19 nested `<use>`)
    /// is refused before the batch: exit 2 and nothing written (it stopped the run at the first PDF, after
    /// the QR images were written). A logo file over 4 MiB is refused by its size.
    @Test func aLogoThatCannotBeDrawnStopsTheRunBeforeAnythingIsWritten() throws {
        let dir = try TestSupport.tempDir("print")
        let key = try TestSupport.demoKey(in: dir)
        var svg = ##"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" "##
            + ##"width="10" height="10"><defs><rect id="a0" width="1" height="1"/>"##
        for level in 1...19 {
            let use = ##"<use xlink:href="#a\##(level - 1)"/>"##
            svg += ##"<g id="a\##(level)">"## + use + use + "</g>"
        }
        svg += ##"</defs><use xlink:href="#a19"/></svg>"##
        let laughs = try TestSupport.write(svg, to: "logo.svg", in: dir)
        let large = try TestSupport.write(String(repeating: " ", count: Logo.maxBytes + 1), to: "large.svg", in: dir)
        for (logo, reason) in [
            (laughs, "is an SVG image librsvg cannot draw: exceeded more than 500000 referenced elements"),
            (large, "\(Logo.maxBytes + 1) bytes"),
        ] {
            let out = dir.appendingPathComponent("out")
            let run = try TestSupport.cli([
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template",
                Self.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--pdf",
                "--logo", logo, Self.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
            ])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("--logo: \(logo)") && run.stderr.contains(reason), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path), "nothing written")
        }
    }

    /// The QR PNGs say how large they print: `pHYs` in pixels per metre, so the symbol is 40 mm wide.
    @Test func qrImagesCarryTheirPrintSize() throws {
        let code = try QRCode(jws: "abc.def.ghi")
        let png = try QRImage().png(code)
        // Chunks after the 8-byte signature: length, type, data, CRC.
        var offset = 8
        var phys: [UInt8]?
        while offset + 8 <= png.count {
            let length = png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            if type == "pHYs" { phys = Array(png[offset + 8..<offset + 8 + length]) }
            offset += 12 + length
        }
        let data = try #require(phys)
        #expect(data.count == 9 && data[8] == 1, "unit: metre")
        let x = data[0..<4].reduce(0) { $0 << 8 | Int($1) }
        let y = data[4..<8].reduce(0) { $0 << 8 | Int($1) }
        #expect(x == y)
        let symbolMillimetres = Double(code.size * QRImage.defaultScale) / Double(x) * 1000
        #expect(abs(symbolMillimetres - 40) < 0.01)
        var none = QRImage()
        none.printMillimetres = nil
        #expect(none.pixelsPerMetre(modules: code.size) == 0)
    }

    @Test func paperFromTheLocale() {
        #expect(Paper.fromLocale([:]) == .a4)
        #expect(Paper.fromLocale(["LANG": "en_US.UTF-8"]) == .letter)
        #expect(Paper.fromLocale(["LANG": "en_GB.UTF-8"]) == .a4)
        #expect(Paper.fromLocale(["LANG": "fr_CA.UTF-8"]) == .letter)
        #expect(Paper.fromLocale(["LANG": "de_DE@euro"]) == .a4)
        #expect(Paper.fromLocale(["LANG": "C.UTF-8"]) == .a4)
        // LC_ALL over LC_PAPER over LANG; an empty value does not count.
        #expect(Paper.fromLocale(["LC_ALL": "", "LC_PAPER": "es_MX.UTF-8", "LANG": "en_GB.UTF-8"]) == .letter)
        #expect(Paper.fromLocale(["LC_ALL": "en_AU.UTF-8", "LC_PAPER": "en_US.UTF-8"]) == .a4)
        #expect(Paper.a4.millimetres == (210, 297) && Paper.letter.millimetres == (215.9, 279.4))
    }

    /// What a sheet says: the person by the HumanName rule, doses in date order with CVX names, codes
    /// of other systems shown as codes, lab values in words.
    @Test func sheetReadsThePayload() throws {
        let payload = try JSONParser.parse(
            Array(
                #"""
                {"iss":"https://issuer.example.org","nbf":1700000000,"vc":{"credentialSubject":{"fhirBundle":{"entry":[
                {"resource":{"resourceType":"Patient","name":[{"use":"old","family":"Old","given":["A"]},{"family":"New","given":["A"]}],"birthDate":"1990"}},
                {"resource":{"resourceType":"Immunization","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"208"}]},"occurrenceDateTime":"2021-05-01","lotNumber":"L2"}},
                {"resource":{"resourceType":"Immunization","vaccineCode":{"coding":[{"system":"http://snomed.info/sct","code":"28571000087109"}]},"occurrenceDateTime":"2021-02","performer":[{"actor":{"display":"Clinic"}}]}},
                {"resource":{"resourceType":"Immunization","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"03"}]},"occurrenceDateTime":"2021-02-01"}}
                ]}}}}
                """#.utf8))
        let sheet = CardSheet(payload: payload, today: "2024-01-01")
        #expect(sheet.name == "A New" && sheet.birthDate == "1990" && sheet.issuedAt == 1_700_000_000)
        #expect(sheet.doses.map(\.date) == ["2021-02", "2021-02-01", "2021-05-01"])
        #expect(sheet.doses.map(\.code) == ["SNOMED CT 28571000087109", "CVX 03", "CVX 208"])
        #expect(sheet.doses.map(\.vaccine) == [nil, "MMR", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose"])
        #expect(sheet.doses[0].performer == "Clinic" && sheet.doses[2].lot == "L2")
        #expect(sheet.kind == .vaccination && sheet.title == "Vaccination record")
        #expect(CardSheet.withoutSemanticTag("Not detected (qualifier value)") == "Not detected")
        #expect(CardSheet.printable(date: "2021-02-17T09:30:00-05:00") == "2021-02-17 09:30")
        #expect(CardSheet.printable(date: "2021-02") == "2021-02")
        // An empty payload prints as what is there: nothing.
        let empty = CardSheet(payload: .object([:]), today: "2024-01-01")
        #expect(empty.name == nil && empty.doses.isEmpty && empty.kind == .other)
    }
}
