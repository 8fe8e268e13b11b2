import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// QR images as people really send them (issue 21): small, scaled, turned, mirrored, photographed, saved as
/// JPEG. Each is read, and the symbol's own checks (version, ECC level, the two segments) are still made, or a
/// warning says they were not; JPEGs are bounded as PNGs are. The decode rates of distorted renderings are
/// measured in `QRRobustnessTests`.
@Suite struct QRImagesTests {
    static let lowResolution = VerifyFixtures.cases.appendingPathComponent("qr-low-resolution")

    /// The reference validator's own valid low-resolution test image (health-cards-dev-tools #183): 137 × 137
    /// pixels, about 1.4 pixels per module, which zbar does not read. It is read (by zxing-cpp), and its symbol's
    /// checks are made: version 18, ECC L, two segments, no "not checked" warning.
    @Test func caseLowResolutionIsReadAndChecked() throws {
        let png = Self.lowResolution.appendingPathComponent("scaled-23-as-png.png").path
        let jwks = Self.lowResolution.appendingPathComponent("jwks-spec-issuer.json").path
        let run = try TestSupport.cli([
            "verify", "--jwks", "https://spec.smarthealth.cards/examples/issuer=\(jwks)", "--now", "1700000000", png,
        ])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("version 18, ECC L") && run.stdout.contains("signature verified"), "\(run.stdout)")
        #expect(!run.stdout.contains("QR_"), "\(run.stdout)")
        let verifier = try FileVerifier(keySets: ["https://spec.smarthealth.cards/examples/issuer=\(jwks)"], now: 1_700_000_000)
        let card = try #require(try verifier.verify([png]).first { $0.source == .qrImage })
        #expect(card.signature == .verified && card.isValid, "\(card.findings)")
        #expect(card.qrSymbols.count == 1 && card.qrSymbols[0].version == 18 && card.qrSymbols[0].errorCorrection == .L)
        #expect(!card.findings.contains { $0.code.rawValue.hasPrefix("QR_") }, "\(card.findings)")
        // zbar alone finds nothing in it; zxing-cpp reads it, and its codewords give the segments.
        let image = try GrayImage(png: VerifyFixtures.bytes(URL(fileURLWithPath: png)))
        #expect(image.width == 137 && image.height == 137)
        #expect(try QRDecoder().decode(image, decoders: [.zbar]).isEmpty)
        let found = try QRDecoder().decode(image)
        try #require(found.count == 1)
        #expect(found[0].readBy == .zxing && found[0].version == 18 && found[0].errorCorrection == .L)
        #expect(found[0].segments?.map(\.mode) == [.byte, .numeric])
        #expect(found[0].segments?.first?.data == Array("shc:/".utf8))
    }

    /// A module matrix turned `quarterTurns` times clockwise, then mirrored left to right when `mirrored`.
    static func turned(_ modules: [Bool], size: Int, quarterTurns: Int, mirrored: Bool) -> [Bool] {
        var m = modules
        for _ in 0..<(quarterTurns % 4) {
            // Clockwise: new (x, y) = old (y, size − 1 − x).
            m = (0..<(size * size)).map { i in
                let (x, y) = (i % size, i / size)
                return m[(size - 1 - x) * size + y]
            }
        }
        if mirrored { m = (0..<(size * size)).map { i in m[(i / size) * size + (size - 1 - i % size)] } }
        return m
    }

    /// A symbol turned a quarter, a half, three quarters, or mirrored, keeps every check: the sampled grid is the
    /// encoder's own matrix (turned back), version and ECC are read, and the segment layout is judged. A 90° turn
    /// used to lose them ("rotated or skewed?").
    @Test func turnedAndMirroredSymbolsKeepTheirChecks() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let text = Array(try QRNumeric.text(jws: jws).utf8)
        let good = try QRCode(jws: jws)
        let single = try #require(QRVersionProbe.encode([(.byte, text)], level: .L))
        let forced = try #require(QRVersionProbe.encode(QRVersionProbe.shcSegments(text), level: .L, version: 22))
        for (turns, mirrored) in [(1, false), (2, false), (3, false), (0, true), (1, true)] {
            let label = "\(turns * 90)°\(mirrored ? " mirrored" : "")"
            // The grid comes back as the encoder made it.
            let turnedGood = Self.turned(good.modules, size: good.size, quarterTurns: turns, mirrored: mirrored)
            let image = try GrayImage(png: QRImage(scale: 3).png(size: good.size, modules: turnedGood))
            let found = try QRDecoder().decode(image)
            try #require(found.count == 1, "\(label)")
            #expect(found[0].version == good.version && found[0].errorCorrection == .L, "\(label)")
            #expect(found[0].segments?.map(\.mode) == [.byte, .numeric], "\(label)")
            let grid = try #require(QRModuleGrid(image: image, corners: found[0].corners.map { (x: $0.x, y: $0.y) }), "\(label)")
            #expect(grid.modules == good.modules, "\(label)")

            let goodPath = try forge.png(size: good.size, modules: turnedGood, name: "good-\(turns)-\(mirrored).png")
            #expect(try forge.codes([goodPath]).isEmpty, "\(label)")
            let singlePath = try forge.png(size: single.size, modules: Self.turned(single.modules, size: single.size, quarterTurns: turns, mirrored: mirrored),
                                           name: "single-\(turns)-\(mirrored).png")
            // One byte segment for the whole text needs more than version 22 here: both errors, as upright.
            let singleCodes = try forge.codes([singlePath])
            #expect(single.version > 22 && singleCodes == ["QR_SINGLE_SEGMENT", "QR_VERSION_TOO_HIGH"], "\(label): \(singleCodes)")
            let forcedPath = try forge.png(size: forced.size, modules: Self.turned(forced.modules, size: forced.size, quarterTurns: turns, mirrored: mirrored),
                                           name: "forced-\(turns)-\(mirrored).png")
            #expect(try forge.codes([forcedPath]) == ["QR_VERSION_NOT_MINIMAL"], "\(label)")
        }
        // The reported case, turned: still the single-segment error, with its version.
        let caseImage = try GrayImage(png: VerifyFixtures.bytes(VerifyFixtures.cases.appendingPathComponent("qr-single-segment-v22/single-byte-segment-v22.png")))
        let caseFound = try QRDecoder().decode(caseImage)
        try #require(caseFound.count == 1)
        let caseGrid = try #require(QRModuleGrid(image: caseImage, corners: caseFound[0].corners.map { (x: $0.x, y: $0.y) }))
        let turnedCase = try forge.png(size: caseGrid.size, modules: Self.turned(caseGrid.modules, size: caseGrid.size, quarterTurns: 1, mirrored: false),
                                       name: "case-turned.png")
        let reports = try forge.verify([turnedCase]).filter { $0.source == .qrImage }
        #expect(reports.flatMap(\.findings).map(\.code).contains(.qrSingleSegment))
        #expect(reports.first?.qrSymbols.first?.version == 22)
    }

    /// Version information (ISO/IEC 18004:2015, Annex D, Table D.1): known codewords, and what libqrencode
    /// writes into every symbol of version 7 to 40 is read back, also with 3 bits wrong in each copy.
    @Test func versionInformationKnownAnswersAndLibqrencodeSymbols() throws {
        #expect(QRVersionInformation.codeword(7) == 0x07C94)
        #expect(QRVersionInformation.codeword(8) == 0x085BC)
        #expect(QRVersionInformation.codeword(22) == 0x168C9)
        #expect(QRVersionInformation.codeword(40) == 0x28C69)
        for version in 7...40 {
            let code = try #require(QRVersionProbe.encode([(.numeric, Array("1234".utf8))], level: .L, version: version))
            #expect(code.version == version)
            var modules = code.modules
            #expect(QRVersionInformation.read(size: code.size) { modules[$1 * code.size + $0] } == version)
            // Three errors in each copy: still read.
            for i in [0, 7, 17] {
                let (a, b) = (code.size - 11 + i % 3, i / 3)
                modules[b * code.size + a].toggle()
                modules[a * code.size + b].toggle()
            }
            #expect(QRVersionInformation.read(size: code.size) { modules[$1 * code.size + $0] } == version)
        }
    }

    /// The Reed–Solomon decoder against libqrencode's symbols: the error correction codewords it computes are
    /// libqrencode's; up to ⌊ecc/2⌋ wrong codewords anywhere in a block are corrected; more are never turned
    /// back into the original.
    @Test func reedSolomonMatchesLibqrencodeAndCorrects() throws {
        var generator = SystemRandomNumberGenerator()
        for (version, level) in [(1, QRErrorCorrection.L), (5, .Q), (10, .M), (18, .L), (22, .L), (40, .H)] {
            let digits = Array("31415926535".utf8)
            let code = try #require(QRVersionProbe.encode([(.byte, Array("shc:/".utf8)), (.numeric, digits)], level: level, version: version))
            #expect(code.version == version)
            let grid = try #require(QRModuleGrid(size: code.size, modules: code.modules))
            let format = try #require(grid.formatInfo)
            #expect(format.errorCorrection == level)
            let layout = try #require(QRSymbolLayout(version: version))
            // Codewords in symbol order, unmasked.
            var codewords: [UInt8] = []
            var current = 0, bits = 0
            for (x, y) in layout.placementOrder {
                current = current << 1 | (grid[x, y] != QRCode.maskInverts(format.mask, row: y, column: x) ? 1 : 0)
                bits += 1
                if bits == 8 {
                    codewords.append(UInt8(current))
                    (current, bits) = (0, 0)
                    if codewords.count == QRSymbolLayout.totalCodewords(version: version) { break }
                }
            }
            let (dataPerBlock, ecc) = QRSymbolLayout.blocks(version: version, level: level)
            let blocks = dataPerBlock.count
            let dataTotal = dataPerBlock.reduce(0, +)
            for b in 0..<blocks {
                var data: [UInt8] = []
                for i in 0..<dataPerBlock[b] {
                    // Interleaved: the i-th codeword of each block that has one, in block order.
                    let before = dataPerBlock.prefix(b).filter { $0 > i }.count
                    let index = dataPerBlock.reduce(0) { $0 + min($1, i) } + before
                    data.append(codewords[index])
                }
                let eccWords = (0..<ecc).map { codewords[dataTotal + $0 * blocks + b] }
                #expect(QRReedSolomon.eccCodewords(data, ecc: ecc) == eccWords, "v\(version) \(level) block \(b)")
                let block = data + eccWords
                #expect(QRReedSolomon.correct(block, ecc: ecc)?.codewords == block)
                for errors in [1, ecc / 2] {
                    var damaged = block
                    var positions = Set<Int>()
                    while positions.count < errors { positions.insert(Int.random(in: 0..<block.count, using: &generator)) }
                    for p in positions { damaged[p] ^= UInt8.random(in: 1...255, using: &generator) }
                    let fixed = QRReedSolomon.correct(damaged, ecc: ecc)
                    #expect(fixed?.codewords == block && fixed?.errors == errors, "v\(version) \(level) block \(b), \(errors) errors")
                }
                var tooMany = block
                for p in 0...(ecc / 2) { tooMany[p] ^= 0x5A }
                #expect(QRReedSolomon.correct(tooMany, ecc: ecc)?.codewords != block)
            }
            // And the whole symbol's data, through the layout.
            #expect(QRSymbolLayout.correctedData(codewords, version: version, level: level)?.corrected == 0)
        }
    }

    /// The message when nothing is found says what usually causes it and what to do, and what this image
    /// shows of it (too small, too little contrast).
    @Test func noSymbolSaysWhatUsuallyCausesIt() throws {
        let forge = try VerifyForge()
        let small = try forge.write(TestImages.whitePNG(side: 64), "small.png")
        let message = try #require(try forge.verify([small]).flatMap(\.findings).first { $0.code == .qrNoSymbol }?.message)
        for part in ["64 × 64 pixels", "too few pixels per module", "quiet zone", "glare", "blur", "What to do", "300 dpi"] {
            #expect(message.contains(part), "\(part): \(message)")
        }
        let gray = try #require(GrayImage(width: 400, height: 400, pixels: (0..<160_000).map { UInt8(120 + ($0 * 7919) % 11) }))
        let grayMessage = QRImageCheck.noSymbolMessage(gray)
        #expect(grayMessage.contains("little contrast") && !grayMessage.contains("only 400"), "\(grayMessage)")
        #expect(try QRDecoder().decode(gray).isEmpty)
    }

    /// Hand-made JPEG bytes (ITU-T T.81), so the budget tests need no encoder: a `side` × `side` gray image
    /// whose every block is mid-gray (DC difference 0), baseline (SOF0) or progressive (SOF2) with `scans`
    /// DC scans.
    /// - Parameter entropy: false writes one byte of entropy-coded data a scan (enough for a header to be read).
    static func jpeg(width: Int, height: Int, progressive: Bool = false, scans: Int = 1, entropy: Bool = true) -> [UInt8] {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var out: [UInt8] = [0xFF, 0xD8]
        out += segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))  // DQT: table 0, all ones
        out += segment(progressive ? 0xC2 : 0xC0, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF), 1, 1, 0x11, 0])
        // DHT: DC table 0 with one code of length 1 for category 0; AC table 0 with one code for EOB.
        out += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        out += segment(0xC4, [0x10, 1] + [UInt8](repeating: 0, count: 15) + [0])
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        // Each block: DC code '0' (and, baseline, AC EOB '0'): 1 or 2 bits, padded with ones.
        let bitsPerBlock = progressive ? 1 : 2
        let bytes = (blocks * bitsPerBlock + 7) / 8
        let entropy = !entropy ? [0x7F] : [UInt8](repeating: 0x00, count: max(0, bytes - 1)) + [UInt8(0xFF >> ((blocks * bitsPerBlock) % 8 == 0 ? 8 : (blocks * bitsPerBlock) % 8))]
        for _ in 0..<scans {
            out += segment(0xDA, progressive ? [1, 1, 0x00, 0, 0, 0x00] : [1, 1, 0x00, 0, 63, 0])
            out += entropy
        }
        return out + [0xFF, 0xD9]
    }

    /// JPEGs are held to the image budgets before their pixels are decoded (a 76 KB PNG that claimed 20000 ×
    /// 20000 pixels once took 795 MB): a header over `InputBudget.imagePixels` is refused from its size alone, a
    /// progressive JPEG of more than `InputBudget.jpegScans` scans stops, a cut-off or garbled one is read as
    /// far as it goes or refused with libjpeg's message. None traps.
    @Test func jpegHeaderSizeAndScansAreBounded() throws {
        // The hand-made JPEG decodes: mid-gray (128) everywhere.
        let plain = try GrayImage(jpeg: Self.jpeg(width: 16, height: 8))
        #expect(plain.width == 16 && plain.height == 8 && plain.pixels.allSatisfy { $0 == 128 }, "\(plain.pixels.prefix(8))")
        let progressive = try GrayImage(jpeg: Self.jpeg(width: 16, height: 16, progressive: true, scans: 3))
        #expect(progressive.pixels.allSatisfy { $0 == 128 })
        // 60000 × 60000 claimed in 150 bytes: refused from the header, naming the size.
        let huge = Self.jpeg(width: 60000, height: 60000, entropy: false)
        #expect(huge.count < 1000)
        let error = #expect(throws: HealthCardError.self) { try GrayImage(jpeg: huge) }
        #expect(error?.kind == .input && error?.message.contains("60000 × 60000") == true, "\(String(describing: error))")
        // Too many scans.
        let scans = Self.jpeg(width: 16, height: 16, progressive: true, scans: InputBudget.jpegScans + 10)
        let scanError = #expect(throws: HealthCardError.self) { try GrayImage(jpeg: scans) }
        #expect(scanError?.kind == .png && scanError?.message.contains("more than \(InputBudget.jpegScans) scans") == true,
                "\(String(describing: scanError))")
        _ = try GrayImage(jpeg: Self.jpeg(width: 16, height: 16, progressive: true, scans: InputBudget.jpegScans))
        // Cut anywhere, or one byte changed anywhere: an image or a HealthCardError, never a trap.
        let good = Self.jpeg(width: 24, height: 24)
        for cut in 0..<good.count {
            _ = try? GrayImage(jpeg: Array(good.prefix(cut)))
            var changed = good
            changed[cut] ^= 0xA5
            _ = try? GrayImage(jpeg: changed)
        }
        // Through verify: the huge one is FILE_TOO_LARGE, a garbled one QR_IMAGE_UNREADABLE, a PNG named .jpg is
        // read as the PNG it is.
        let forge = try VerifyForge()
        let hugePath = try forge.write(huge, "huge.jpg")
        #expect(try forge.codes([hugePath]) == ["FILE_TOO_LARGE"])
        let garbled = try forge.write([0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x03, 0x00], "garbled.jpeg")
        let garbledFindings = try forge.verify([garbled]).flatMap(\.findings)
        #expect(garbledFindings.map(\.code) == [.qrImageUnreadable], "\(garbledFindings)")
        #expect(garbledFindings.first?.message.contains("the JPEG cannot be read") == true, "\(garbledFindings)")
        let gray = try forge.write(Self.jpeg(width: 200, height: 200), "gray.JPG")
        #expect(try forge.codes([gray]) == ["QR_NO_SYMBOL"])
        let code = try QRCode(jws: try forge.jws(claims: VerifyForge.claims()))
        let misnamed = try forge.write(try QRImage().png(code), "really-a-png.jpg")
        let misnamedReports = try forge.verify([misnamed]).filter { $0.source == .qrImage }
        #expect(misnamedReports.first?.signature == .verified && misnamedReports.flatMap(\.findings).isEmpty)
    }

    /// JPEGs written by Pillow (libjpeg inside, as phones and scanners write them): baseline, progressive, CMYK,
    /// at qualities down to 20, turned; each read with every check, in a folder walk and as arguments
    /// (`.jpg`, `.jpeg`, any case).
    @Test(.enabled(if: TestSupport.python != nil, "no test Python at .build/test-venv (run `make test`); skipped"))
    func jpegsFromPillowAreReadWithTheirChecks() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let code = try QRCode(jws: jws)
        let png = try forge.write(try QRImage(scale: 4).png(code), "source.png")
        let folder = forge.dir.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = """
            import sys
            from PIL import Image
            src, out = sys.argv[1], sys.argv[2]
            im = Image.open(src).convert("L")
            im.save(out + "/baseline-q75.jpg", "JPEG", quality=75)
            im.save(out + "/progressive-q40.JPEG", "JPEG", quality=40, progressive=True)
            im.convert("RGB").save(out + "/rgb-q20.jpeg", "JPEG", quality=20)
            im.convert("CMYK").save(out + "/cmyk-q90.jpg", "JPEG", quality=90)
            im.rotate(90, expand=True).save(out + "/turned-q60.Jpg", "JPEG", quality=60)
            """
        let run = try TestSupport.run(TestSupport.python!, ["-c", script, png, folder.path])
        try #require(run.status == 0, "\(run.stderr)")
        let names = ["baseline-q75.jpg", "progressive-q40.JPEG", "rgb-q20.jpeg", "cmyk-q90.jpg", "turned-q60.Jpg"]
        for name in names {
            let bytes = try VerifyFixtures.bytes(folder.appendingPathComponent(name))
            #expect(QRImageFormat.sniff(bytes) == .jpeg)
            let found = try SHCQRCodeReader.read(image: bytes)
            try #require(found.count == 1, "\(name)")
            #expect(found[0].text == (try QRNumeric.text(jws: jws)), "\(name)")
            #expect(found[0].version == code.version && found[0].errorCorrection == .L, "\(name)")
            #expect(found[0].segments?.map(\.mode) == [.byte, .numeric], "\(name)")
        }
        // A folder of them, and each as an argument: every one a verified card with no finding.
        let walked = try forge.verify([folder.path]).filter { $0.source == .qrImage }
        #expect(walked.count == names.count, "\(walked.map(\.file))")
        #expect(walked.allSatisfy { $0.signature == .verified && $0.findings.isEmpty }, "\(walked.map { ($0.file, $0.findings) })")
        let given = try forge.verify(names.map { folder.appendingPathComponent($0).path }).filter { $0.source == .qrImage }
        #expect(given.count == names.count && given.allSatisfy { $0.signature == .verified && $0.findings.isEmpty })
        // The CLI too.
        let cli = try TestSupport.cli(["verify", "--jwks", try forge.writeKeySet(), "--now", String(VerifyForge.now), folder.path])
        #expect(cli.status == 0, "\(cli.stdout)\(cli.stderr)")
        #expect(cli.stdout.components(separatedBy: "qr-image ").count - 1 == names.count, "\(cli.stdout)")
    }
}
