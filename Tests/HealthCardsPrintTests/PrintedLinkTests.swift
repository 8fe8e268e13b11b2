import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// A card printed with its SMART Health Link (`issue --pdf --shl`, `print` with a link), read back as a person
/// would: the page rendered with pdftoppm at 150 dpi, every QR code on it decoded with zbar and measured, the
/// text read with pdftotext.
@Suite(.serialized, .enabled(if: PDFTools.available, PDFTools.missing)) struct PrintedLinkTests {
    static let issuerName = "Springfield Clinic"

    /// Issues a template's sample (or `csv`) with `--pdf --shl` into a new folder; returns it and the site.
    static func issue(csv: String? = nil, extra: [String] = [], in dir: URL) throws -> (out: URL, site: String) {
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", csv: csv, key: key, site: site, out: out,
            extra: ["--pdf", "--paper", "a4", "--issuer-name", issuerName] + extra)
        return (out, site)
    }

    /// Every QR symbol on every page of `pdf`, rendered at `dpi`.
    static func symbols(_ pdf: URL, dpi: Int = 150) throws -> [DecodedQR] {
        let pages = try PDFTools.info(pdf).pages
        let decoder = try QRDecoder()
        return try (1...max(1, pages)).flatMap { try decoder.decode(try PDFTools.render(pdf, page: $0, dpi: dpi)) }
    }

    /// The card's QR code and the link's scan from one rendered page: the card's (on the page and on the wallet
    /// card) to exactly its `shc:/` text, the link's to exactly the `shlink:/` text in `shl/<id>.txt`, at error
    /// correction M; printed at 60, 42 and 40 mm. The caption says what a link is; the link's text (its key) is
    /// not printed as text.
    @Test func cardAndLinkScanFromOnePage() throws {
        let dir = try TestSupport.tempDir("pdf-shl")
        let (out, _) = try Self.issue(in: dir)
        let card = try PDFTools.qrTexts(card: out.appendingPathComponent("cards/P-1001.smart-health-card"))
        let link = try SHLTestSupport.linkText(out, id: "P-1001")
        let pdf = out.appendingPathComponent("pdf/P-1001.pdf")
        #expect(try PDFTools.info(pdf).pages == 1)
        let symbols = try Self.symbols(pdf)
        #expect(symbols.count == 3, "\(symbols.map(\.text))")
        let cardSymbols = symbols.filter { $0.text == card[0] }
        let linkSymbols = symbols.filter { $0.text == link }
        #expect(cardSymbols.count == 2 && linkSymbols.count == 1)
        #expect(linkSymbols.first?.errorCorrection == .M)
        let cardWidths = cardSymbols.map { PDFTools.widthMillimetres($0, dpi: 150) }.sorted()
        #expect(cardWidths.count == 2 && abs(cardWidths[0] - CardPrinter.walletQRMillimetres) < 1.5, "\(cardWidths)")
        #expect(abs(cardWidths[1] - CardPrinter.qrMillimetres) < 1.5, "\(cardWidths)")
        // The link's code is sized by its modules: 0.65 mm each (at a fixed 40 mm they were 0.58–0.62 mm).
        let linkWidth = try #require(linkSymbols.first.map { PDFTools.widthMillimetres($0, dpi: 150) })
        let modules = Double(try QRCode(link: link).size)
        #expect(linkWidth / modules >= 0.64 && abs(linkWidth - modules * 0.65) < 1.5, "\(linkWidth) mm, \(modules) modules")

        let text = try PDFTools.text(pdf)
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        for expected in [
            "SMART HEALTH LINK", "SMART HEALTH CARD", "A link to this same card", "withdraw the link",
            "keep it private", "Ada M. Testperson", "2022-09-05", "Apple Health",
            // Which code needs the network, in plain words.
            "Opening it needs an internet connection", "Works without an internet connection",
        ] {
            #expect(flat.contains(expected), "\(expected) not in:\n\(text)")
        }
        let key = try SHLinkText.parse(link).key
        #expect(!text.contains("shlink:/") && !text.contains(key))
        // The report lists the PDF and the link, by file name.
        let line = try TestSupport.report(out)[0]
        #expect(
            line["files"]
                == [
                    "cards/P-1001.smart-health-card", "qr/P-1001.png", "pdf/P-1001.pdf", "shl/P-1001.txt",
                    "shl/P-1001.png",
                ])
    }

    /// A card too large for one QR code prints its link in place of chunked codes, also with `--chunk` (the
    /// chunks still go to qr/, but not on paper): no `shc:/` symbol anywhere in the PDF, the link's code on the
    /// page (40 mm) and on the wallet card (42 mm), and a note that says why.
    @Test(arguments: [false, true])
    func oversizedCardPrintsItsLinkNotChunks(chunk: Bool) throws {
        let dir = try TestSupport.tempDir("pdf-shl-big")
        let csv = try SHLTestSupport.manyDosesCSV(doses: 24, in: dir)
        let (out, _) = try Self.issue(csv: csv, extra: chunk ? ["--chunk"] : [], in: dir)
        let chunks = try PDFTools.qrTexts(card: out.appendingPathComponent("cards/P-9001.smart-health-card"))
        #expect(chunks.count > 1, "the test card must need more than one QR code")
        #expect(FileManager.default.fileExists(atPath: out.path + "/qr/P-9001-1.png") == chunk)
        let link = try SHLTestSupport.linkText(out, id: "P-9001")
        let pdf = out.appendingPathComponent("pdf/P-9001.pdf")
        let symbols = try Self.symbols(pdf)
        #expect(!symbols.contains { $0.text.hasPrefix("shc:/") }, "\(symbols.map(\.text))")
        #expect(symbols.map(\.text) == [link, link])
        let widths = symbols.map { PDFTools.widthMillimetres($0, dpi: 150) }
        let modules = Double(try QRCode(link: link).size)
        // On the page 0.65 mm a module; on the wallet card as large as its 54 mm height allows, and never
        // smaller than the card code's 42 mm.
        #expect(widths[0] / modules >= 0.64 && abs(widths[0] - modules * 0.65) < 1.5, "\(widths), \(modules) modules")
        #expect(widths[1] >= CardPrinter.walletQRMillimetres - 1.5 && widths[1] / modules >= 0.6, "\(widths)")
        #expect(widths[1] * (modules + 8) / modules <= CardPrinter.walletCard.height, "\(widths)")
        let flat = try PDFTools.text(pdf).replacingOccurrences(of: "\n", with: " ")
        #expect(flat.contains("too much to fit in one QR code") && flat.contains("instead of several codes"), "\(flat)")
        #expect(flat.contains("Opening the link needs an internet connection"), "\(flat)")
        #expect(!flat.contains("Works without an internet connection"), "no code of this page works offline: \(flat)")
        #expect(!flat.contains("Code 1 of"))
    }

    /// `print` finds the link `issue --shl` wrote beside the card (and checks with --shl-site that it opens the
    /// card), prints it on Letter on one page, and leaves it out with --no-link; `--link FILE` gives one for a
    /// card elsewhere; a link that opens another card is refused, and so is --link with several cards.
    @Test func printFindsTheLinkBesideOrGiven() throws {
        let dir = try TestSupport.tempDir("print-shl")
        let (out, site) = try Self.issue(in: dir)
        let cardFile = out.appendingPathComponent("cards/P-1001.smart-health-card")
        let card = try PDFTools.qrTexts(card: cardFile)[0]
        let link = try SHLTestSupport.linkText(out, id: "P-1001")
        let printed = dir.appendingPathComponent("printed")
        let beside = try TestSupport.cli([
            "print", "--out", printed.path, "--paper", "letter", "--jwks", site, "--shl-site", site, cardFile.path,
        ])
        #expect(beside.status == 0, "\(beside.stderr)")
        #expect(!beside.stderr.contains("warning"), "\(beside.stderr)")
        let pdf = printed.appendingPathComponent("P-1001.pdf")
        #expect(try PDFTools.info(pdf).pages == 1, "a three-dose card with its link fits one Letter page")
        #expect(Set(try Self.symbols(pdf).map(\.text)) == [card, link])

        let bare = try TestSupport.cli(["print", "--out", printed.path, "--no-link", cardFile.path])
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(Set(try Self.symbols(pdf).map(\.text)) == [card])
        // A folder (`OUT/cards/`, trailing slash and all): each card's link is found beside it.
        let folder = try TestSupport.cli(["print", "--out", printed.path, "--shl-site", site, out.path + "/cards/"])
        #expect(folder.status == 0, "\(folder.stderr)")
        #expect(try PDFTools.text(printed.appendingPathComponent("P-1004.pdf")).contains("SMART HEALTH LINK"))

        // A copy elsewhere has nothing beside it; --link gives its link, opened from the site the link was
        // made into (OUT/shl/.healthcards-links.json) without --shl-site.
        let copy = try TestSupport.write(
            String(decoding: try VerifyFixtures.bytes(cardFile), as: UTF8.self), to: "ada.smart-health-card", in: dir)
        let linkFile = out.path + "/shl/P-1001.txt"
        let given = try TestSupport.cli(["print", "--out", printed.path, "--link", linkFile, copy])
        #expect(given.status == 0 && !given.stderr.contains("link"), "\(given.stderr)")
        #expect(Set(try Self.symbols(printed.appendingPathComponent("ada.pdf")).map(\.text)) == [card, link])

        // Another person's link is refused, with --shl-site or by the recorded site (it was printed with a warning).
        for siteOption in [["--shl-site", site], []] {
            let other = try TestSupport.cli(
                ["print", "--out", printed.path] + siteOption + ["--link", out.path + "/shl/P-1002.txt", copy])
            #expect(other.status == 1 && other.stderr.contains("opens another card than this one"), "\(other.stderr)")
        }
        // With the recorded site moved away the link cannot be opened: printed, and a warning says so.
        try FileManager.default.moveItem(atPath: site, toPath: site + "-moved")
        let unopened = try TestSupport.cli(["print", "--out", printed.path, "--link", linkFile, copy])
        #expect(unopened.status == 0 && unopened.stderr.contains("give the issuer's site folder that holds the link's file"), "\(unopened.stderr)")
        try FileManager.default.moveItem(atPath: site + "-moved", toPath: site)
        let several = try TestSupport.cli(["print", "--out", printed.path, "--link", linkFile, out.path])
        #expect(several.status == 2 && several.stderr.contains("--link FILE is the link of one card"))
    }

    /// A run that finds its cards already issued but makes them a link now (`issue --pdf`, then `issue --pdf
    /// --shl`) prints their PDFs again, so the page shows the link; a run that keeps the link keeps the PDF.
    @Test func resumedRunReprintsWhenTheLinkIsNew() throws {
        let dir = try TestSupport.tempDir("pdf-shl-resume")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        let templates = SiteTestSupport.templates
        let first = try TestSupport.cli([
            "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--template",
            templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf", "1700000000",
            "--quiet", "--pdf", templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(first.status == 0, "\(first.stderr)")
        let pdf = out.appendingPathComponent("pdf/P-1001.pdf")
        #expect(!(try PDFTools.text(pdf)).contains("SMART HEALTH LINK"))
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--pdf"])
        #expect(try TestSupport.report(out).allSatisfy { $0["alreadyIssued"] == true })
        #expect((try PDFTools.text(pdf)).contains("SMART HEALTH LINK"))
        let link = try SHLTestSupport.linkText(out, id: "P-1001")
        #expect(try Self.symbols(pdf).contains { $0.text == link })
        let printedAgain = try VerifyFixtures.bytes(pdf)
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--pdf"])
        #expect(try VerifyFixtures.bytes(pdf) == printedAgain, "the link was kept, so the PDF is too")
    }

    /// After `revoke --link`, a run again (`issue --pdf --shl`, cards already issued) prints the card's PDF again
    /// without the dead link's code (its page had it), says so in the report, and leaves it alone on the next run;
    /// `print` refuses the withdrawn link saying it was withdrawn and what to do (not only that its file is missing).
    @Test func withdrawnLinkLeavesNoPDFThatShowsIt() throws {
        let dir = try TestSupport.tempDir("pdf-shl-withdrawn")
        let (out, site) = try Self.issue(in: dir)
        let key = dir.appendingPathComponent("issuer.pem").path
        let card = try PDFTools.qrTexts(card: out.appendingPathComponent("cards/P-1001.smart-health-card"))[0]
        let link = try SHLTestSupport.linkText(out, id: "P-1001")
        let pdf = out.appendingPathComponent("pdf/P-1001.pdf")
        #expect(Set(try Self.symbols(pdf).map(\.text)) == [card, link])
        let other = try VerifyFixtures.bytes(out.appendingPathComponent("pdf/P-1002.pdf"))
        try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])

        let extra = ["--pdf", "--paper", "a4", "--issuer-name", Self.issuerName]
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: extra)
        #expect(Set(try Self.symbols(pdf).map(\.text)) == [card], "the withdrawn link's code is gone from the page")
        #expect(!(try PDFTools.text(pdf)).contains("SMART HEALTH LINK"))
        let line = try #require(try TestSupport.report(out).first { $0["id"] == "P-1001" })
        let codes = line["warnings"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? []
        #expect(codes.contains("PDF_REPRINTED_WITHOUT_LINK"), "\(line)")
        #expect(try VerifyFixtures.bytes(out.appendingPathComponent("pdf/P-1002.pdf")) == other, "a live link's PDF is kept")
        let reprinted = try VerifyFixtures.bytes(pdf)
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: extra)
        #expect(try VerifyFixtures.bytes(pdf) == reprinted, "printed once: the page without the link is kept")
        let again = try #require(try TestSupport.report(out).first { $0["id"] == "P-1001" })
        #expect(!(again["warnings"]?.arrayValue ?? []).contains { $0["code"] == "PDF_REPRINTED_WITHOUT_LINK" }, "\(again)")

        let printed = dir.appendingPathComponent("printed")
        let refused = try TestSupport.cli(
            ["print", "--out", printed.path, "--jwks", site, out.path + "/cards/P-1001.smart-health-card"])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("the link \(out.path)/shl/P-1001.txt was withdrawn on "), "\(refused.stderr)")
        #expect(refused.stderr.contains("--no-link") && refused.stderr.contains("make the person P-1001 a new link")
            && refused.stderr.contains("healthcards shl --renew ID"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: printed.path + "/P-1001.pdf"))
    }

    /// `print` of a card whose link's `exp` has passed (the same link, key and file, its exp set to a day before
    /// now): the link still opens the card, so it is printed with it, exit 0, and a warning SHL_EXPIRED names the
    /// link and its exp (a receiver may take the link as stale, and staff should know before handing it out).
    @Test func printOfACardWhoseLinkExpiredWarns() throws {
        let dir = try TestSupport.tempDir("print-shl-expired")
        let (out, site) = try Self.issue(in: dir)
        let linkFile = out.appendingPathComponent("shl/P-1001.txt")
        var link = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001"))
        let exp = Int64(Date().timeIntervalSince1970) - 86_400
        link.exp = exp
        try (link.text + "\n").write(to: linkFile, atomically: true, encoding: .utf8)
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card")
        let printed = dir.appendingPathComponent("printed")
        let run = try TestSupport.cli(["print", "--out", printed.path, "--jwks", site, "--shl-site", site, card.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stderr.contains("warning SHL_EXPIRED at \(linkFile.path) exp: exp \(exp) (\(Clock.describe(exp))) is before now"),
            "\(run.stderr)")
        let symbols = try Self.symbols(printed.appendingPathComponent("P-1001.pdf")).map(\.text)
        #expect(Set(symbols) == [try PDFTools.qrTexts(card: card)[0], link.text], "the link that opens the card is on the page")
    }
}
