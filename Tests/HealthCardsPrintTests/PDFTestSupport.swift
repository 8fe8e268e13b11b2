import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsTestSupport

/// Reading printed cards back as a person would: poppler's `pdftoppm` renders pages to PNG, zbar
/// decodes the QR codes from them, `pdftotext` reads the text; qpdf checks each PDF's structure before any of
/// them reads it (`checkStructure`), and pypdf (strict) is a second text extractor. `make test` installs
/// poppler-utils and qpdf, and pypdf into the test venv.
enum PDFTools {
    static let pdftoppm = "/usr/bin/pdftoppm"
    static let pdftotext = "/usr/bin/pdftotext"
    static let pdfinfo = "/usr/bin/pdfinfo"
    static let qpdf = "/usr/bin/qpdf"

    static let available = [pdftoppm, pdftotext, pdfinfo, qpdf].allSatisfy {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let missing: Comment =
        "poppler-utils (pdftoppm, pdftotext) or qpdf is not installed; `make test` installs them"

    /// `qpdf --check` finds the PDF valid, with no warning (a repeated key in a resource dictionary, which
    /// strict readers refuse and some print filters drop pages for, is a warning). Every PDF a test reads goes
    /// through it first.
    static func checkStructure(_ pdf: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try TestSupport.run(qpdf, ["--check", pdf.path])
        #expect(run.status == 0, "qpdf --check \(pdf.path): \(run.stdout)\(run.stderr)", sourceLocation: sourceLocation)
        #expect(
            !(run.stdout + run.stderr).contains("WARNING"), "qpdf --check \(pdf.path): \(run.stdout)\(run.stderr)",
            sourceLocation: sourceLocation)
    }

    /// Checks every `.pdf` under `folder` (`checkStructure`); returns how many there were.
    @discardableResult
    static func checkEveryPDF(under folder: URL, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        var count = 0
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".pdf") else { continue }
            try checkStructure(folder.appendingPathComponent(path), sourceLocation: sourceLocation)
            count += 1
        }
        return count
    }

    /// The text of page `page` (1-based) as pypdf extracts it in strict mode, with the text layer read by a
    /// second, independent extractor; nil when the test venv has no pypdf (`make test` installs it).
    static func pypdfText(_ pdf: URL, page: Int = 1) throws -> String? {
        guard let python = TestSupport.python else { return nil }
        let script = "import sys, pypdf\n"
            + "r = pypdf.PdfReader(sys.argv[1], strict=True)\n"
            + "sys.stdout.write(r.pages[int(sys.argv[2]) - 1].extract_text())\n"
        let run = try TestSupport.run(python, ["-c", script, pdf.path, String(page)])
        if run.stderr.contains("No module named 'pypdf'") { return nil }
        #expect(run.status == 0, "pypdf: \(run.stderr)")
        #expect(!run.stderr.contains("Impossible to decode"), "pypdf: \(run.stderr)")
        return run.stdout
    }

    /// Renders page `page` (1-based) of a PDF at `dpi` to a gray raster.
    static func render(_ pdf: URL, page: Int = 1, dpi: Int) throws -> GrayImage {
        try checkStructure(pdf)
        let dir = try TestSupport.tempDir("render")
        let prefix = dir.appendingPathComponent("page").path
        let run = try TestSupport.run(
            pdftoppm,
            ["-r", String(dpi), "-f", String(page), "-l", String(page), "-png", "-singlefile", pdf.path, prefix])
        #expect(run.status == 0, "\(run.stderr)")
        return try GrayImage(png: try VerifyFixtures.bytes(URL(fileURLWithPath: prefix + ".png")))
    }

    /// The text of a PDF (or of one page), with the Unicode bidi embedding marks pdftotext puts around
    /// right-to-left runs removed.
    static func text(_ pdf: URL, page: Int? = nil) throws -> String {
        try checkStructure(pdf)
        var arguments = [pdf.path, "-"]
        if let page { arguments = ["-f", String(page), "-l", String(page)] + arguments }
        let run = try TestSupport.run(pdftotext, arguments)
        #expect(run.status == 0, "\(run.stderr)")
        return String(
            String.UnicodeScalarView(run.stdout.unicodeScalars.filter { !(0x202A...0x202E).contains($0.value) }))
    }

    /// A word pdftotext finds, with its box in points from the page's top-left corner.
    struct Word {
        var text: String
        var xMin: Double, yMin: Double, xMax: Double, yMax: Double
    }

    /// Every word of every page with its box (`pdftotext -bbox`), pages in order.
    static func words(_ pdf: URL) throws -> [[Word]] {
        try checkStructure(pdf)
        let run = try TestSupport.run(pdftotext, ["-bbox", pdf.path, "-"])
        #expect(run.status == 0, "\(run.stderr)")
        var pages: [[Word]] = []
        for line in run.stdout.split(separator: "\n") {
            if line.contains("<page ") { pages.append([]) }
            guard line.contains("<word "), let open = line.firstIndex(of: ">"), let close = line.range(of: "</word>")
            else { continue }
            func attribute(_ name: String) -> Double {
                guard let start = line.range(of: "\(name)=\"") else { return .nan }
                return Double(line[start.upperBound...].prefix { $0 != "\"" }) ?? .nan
            }
            let text = String(line[line.index(after: open)..<close.lowerBound])
            pages[pages.count - 1].append(
                Word(
                    text: text, xMin: attribute("xMin"), yMin: attribute("yMin"), xMax: attribute("xMax"),
                    yMax: attribute("yMax")))
        }
        return pages
    }

    /// Page count and the first page's size in points (`pdfinfo`).
    static func info(_ pdf: URL) throws -> (pages: Int, width: Double, height: Double) {
        try checkStructure(pdf)
        let run = try TestSupport.run(pdfinfo, [pdf.path])
        var pages = 0
        var width = 0.0
        var height = 0.0
        for line in run.stdout.split(separator: "\n") {
            if line.hasPrefix("Pages:") { pages = Int(line.split(separator: " ").last ?? "") ?? 0 }
            if line.hasPrefix("Page size:") {
                let parts = line.split(separator: " ")
                width = Double(parts[2]) ?? 0
                height = Double(parts[4]) ?? 0
            }
        }
        return (pages, width, height)
    }

    /// The width of a decoded symbol on paper, in millimetres, from zbar's corner points.
    static func widthMillimetres(_ symbol: DecodedQR, dpi: Int) -> Double {
        let xs = symbol.corners.map(\.x)
        guard let low = xs.min(), let high = xs.max() else { return 0 }
        return Double(high - low + 1) / Double(dpi) * 25.4
    }

    /// The `shc:/` texts of a card file's QR codes, as the card's JWS gives them (one per chunk).
    static func qrTexts(card: URL) throws -> [String] {
        let file = try JSONParser.parse(try VerifyFixtures.bytes(card))
        let jws = try #require(file["verifiableCredential"]?[0]?.stringValue)
        let chunks = QRNumeric.chunks(jws)
        return try chunks.enumerated().map { i, chunk in
            try QRNumeric.text(jws: String(chunk), chunk: i + 1, of: chunks.count)
        }
    }

    /// A vaccination Bundle as one NDJSON line.
    static func bundle(
        name: String, birthDate: String, doses: [(date: String, cvx: String, lot: String, performer: String)]
    ) -> String {
        var entries = [
            #"{"fullUrl":"urn:uuid:p","resource":{"resourceType":"Patient","name":[\#(name)],"birthDate":"\#(birthDate)"}}"#
        ]
        for (i, dose) in doses.enumerated() {
            entries.append(
                #"{"fullUrl":"urn:uuid:i\#(i)","resource":{"resourceType":"Immunization","status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"\#(dose.cvx)"}]},"patient":{"reference":"urn:uuid:p"},"occurrenceDateTime":"\#(dose.date)","lotNumber":"\#(dose.lot)","performer":[{"actor":{"display":"\#(dose.performer)"}}]}}"#
            )
        }
        return #"{"resourceType":"Bundle","type":"collection","entry":[\#(entries.joined(separator: ","))]}"#
    }

    /// Issues NDJSON lines with `--pdf` (and `extra` options) into a new folder; returns it.
    static func issue(_ lines: [String], extra: [String] = [], file: String = "people.ndjson") throws -> (
        out: URL, run: TestSupport.Run
    ) {
        let dir = try TestSupport.tempDir("pdf")
        let key = try TestSupport.demoKey(in: dir)
        let input = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: file, in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(
            [
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--out", out.path, "--nbf",
                "1700000000",
                "--pdf", "--paper", "a4",
            ] + extra + [input])
        try checkEveryPDF(under: out)
        return (out, run)
    }
}
