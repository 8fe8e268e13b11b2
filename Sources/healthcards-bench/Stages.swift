import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// The pipeline's stages timed one by one in this process, one thread, over the same calls the
/// `issue` command makes (CSVTemplateInput, Template.render with its CheckedBundle, CardIssuer.payload,
/// BundleValidator, RawDeflater, JWS.sign, the read-back check, QRCode, QRImage.png, FileIO).
struct StageTimes {
    static let names = ["csvRead", "templateMinimize", "validate", "payloadJSON", "deflate", "sign", "selfCheck", "qr", "png", "fileWrite"]
    var seconds: [String: Double] = [:]
    var cards = 0
    var pngBytes = 0
    var cardBytes = 0
    var codes: [QRCode] = []
    /// The first cards' JWS, for the PDF figures.
    var cardsJWS: [JWS] = []

    /// Microseconds per card for a stage.
    func micros(_ name: String) -> Double { cards > 0 ? (seconds[name] ?? 0) / Double(cards) * 1e6 : 0 }
    var totalMicros: Double { Self.names.reduce(0) { $0 + micros($1) } }

    static func measure(csv: String, template: Template, key: P256Key, issuer iss: String, outDir: String, limit: Int) throws -> StageTimes {
        var t = StageTimes()
        var last: Double = 0  // seconds of the latest timed call
        func time<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
            let start = monotonic()
            defer {
                last = monotonic() - start
                t.seconds[name, default: 0] += last
            }
            return try body()
        }
        let now = Clock.nowSeconds()
        let settings = IssueSettings(issuer: iss, notBefore: now)
        let issuer = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock())
        var signer = try ES256Signer(key: key)
        let deflater = try RawDeflater(level: settings.deflateLevel)
        let header = JWS.headerBytes(kid: issuer.kid)
        let input = try time("csvRead") { try CSVTemplateInput(path: csv, template: template) }
        let cursor = input.cursor()
        while t.cards < limit, let rows = try time("csvRead", { try cursor.next() }) {
            // Template input is minimized and checked at render time (so row errors name the CSV row and
            // column), and the issuer signs from that CheckedBundle. `validate` times the same validation
            // on its own, and is subtracted from templateMinimize to avoid counting it twice;
            // `payloadJSON` is the issuer's payload (claims and their bytes).
            let checked = time("templateMinimize") { () -> CheckedBundle? in
                let record = rows.render(template, now: now)
                return record.errors.isEmpty ? record.checked : nil
            }
            let renderSeconds = last
            guard let checked else { continue }
            let findings = time("validate") { BundleValidator.validate(checked.bundle, now: now) }
            // At most the render's own time: a validate call preempted for longer than the render that
            // contains the same validation (a busy machine) made templateMinimize negative.
            t.seconds["templateMinimize", default: 0] -= min(last, renderSeconds)
            guard findings.errors.isEmpty, checked.isAcceptable else { continue }
            let card = time("payloadJSON") { issuer.payload(for: checked, patientID: rows.id) }
            guard card.errors.isEmpty else { continue }
            let bytes = card.bytes
            let deflated = try time("deflate") { try deflater.deflate(bytes) }
            let jws = try time("sign") { try JWS.sign(deflatedPayload: deflated, kid: issuer.kid, signer: &signer) }
            let ok = try time("selfCheck") { () -> Bool in
                let parts = try jws.parts()
                guard parts.header == header, (try? RawInflate.inflate(parts.payload)) == bytes else { return false }
                return ES256.verify(signature: parts.signature, message: parts.signingInput, key: key)
            }
            guard ok, jws.compact.utf8.count <= 1195 else { continue }
            let code = try time("qr") { try QRCode(jws: jws.compact) }
            let png = try time("png") { try QRSettings().qrImage.png(code) }
            let name = OutputNames.safe(record(rows))
            try time("fileWrite") {
                let card = JSONWriter.minified(.object(["verifiableCredential": .array([.string(jws.compact)])]))
                try FileIO.writeAtomically(png, to: "\(outDir)/qr/\(name).png", sync: false)
                try FileIO.writeAtomically(card, to: "\(outDir)/cards/\(name).smart-health-card", sync: false)
                t.cardBytes += card.count
            }
            t.pngBytes += png.count
            if t.codes.count < 300 { t.codes.append(code) }
            if t.cardsJWS.count < 300 { t.cardsJWS.append(jws) }
            t.cards += 1
        }
        return t
    }

    private static func record(_ rows: CSVTemplateInput.PatientRows) -> String { rows.id ?? "unknown" }
}

/// PNG settings compared on the same QR symbols: zlib level and row filter.
struct PNGSetting {
    var level: Int32
    var filter: Int32
    var bytes: Double = 0
    var micros: Double = 0

    static let filterNames: [Int32: String] = [0: "none", 1: "all (adaptive)", 2: "libpng default"]

    static func compare(_ codes: [QRCode], scale: Int) throws -> [PNGSetting] {
        var out: [PNGSetting] = []
        for (level, filter) in [(9, 0), (6, 0), (3, 0), (1, 0), (9, 1), (6, 1), (1, 1), (6, 2), (1, 2), (0, 0)] as [(Int32, Int32)] {
            let image = QRImage(scale: scale, quietZone: 4, compressionLevel: level, filter: filter)
            var setting = PNGSetting(level: level, filter: filter)
            var total = 0
            let start = monotonic()
            for code in codes { total += try image.png(code).count }
            setting.micros = (monotonic() - start) / Double(max(1, codes.count)) * 1e6
            setting.bytes = Double(total) / Double(max(1, codes.count))
            out.append(setting)
        }
        return out
    }
}

/// Printed cards timed in this process, one thread: reading the card back (`PDFStage.sheet`, QR
/// symbols), laying out its pages (`CardPrinter.print`: Pango, Cairo recording) and writing its PDF
/// (`PrintedCard.pdf`: Cairo's PDF surface, font subsets).
struct PDFTimes {
    var cards = 0
    var pages = 0
    var readSeconds = 0.0
    var layoutSeconds = 0.0
    var writeSeconds = 0.0
    var bytes = 0

    var microsPerCard: (read: Double, layout: Double, write: Double) {
        let n = Double(max(cards, 1))
        return (readSeconds / n * 1e6, layoutSeconds / n * 1e6, writeSeconds / n * 1e6)
    }
    /// Pages per second on one core, everything counted.
    var pagesPerSecond: Double { Double(pages) / max(readSeconds + layoutSeconds + writeSeconds, 1e-9) }

    static func measure(_ cards: [JWS]) throws -> PDFTimes {
        var t = PDFTimes()
        let printer = try CardPrinter(settings: PrintSettings(paper: .a4, issuerName: "Bench Issuer", today: Clock.todayUTC(Clock.nowSeconds())))
        // The first card loads fonts; it is not timed.
        if let first = cards.first { _ = try printer.print(try PDFStage.sheet(first, today: "2024-01-01"), codes: try PDFStage.codes(first)).pdf() }
        for jws in cards {
            var start = monotonic()
            let sheet = try PDFStage.sheet(jws, today: "2024-01-01")
            let codes = try PDFStage.codes(jws)
            t.readSeconds += monotonic() - start
            start = monotonic()
            let printed = try printer.print(sheet, codes: codes)
            t.layoutSeconds += monotonic() - start
            start = monotonic()
            t.bytes += try printed.pdf().count
            t.writeSeconds += monotonic() - start
            t.pages += printed.pageCount
            t.cards += 1
        }
        return t
    }
}
