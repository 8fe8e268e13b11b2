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

/// QR segments read to the bit (`QRSymbolLayout`, `QRBitStream`): the layout agrees with libqrencode for
/// every version and level, segments come back exactly as encoded, and `verify` judges the segment layout
/// of an image from its bit stream (case `qr-single-segment-v22/`), never from its version.
@Suite struct QRSegmentTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("qr-single-segment-v22")
    static let specJWKS = TestSupport.spec("issuer/.well-known/jwks.json").path

    /// Digits of a given length (0-9 repeating), for numeric segments.
    static func digits(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(0x30 + ($0 * 7 + 3) % 10) } }

    @Test func functionModulesMatchLibqrencodeForEveryVersion() throws {
        for version in 1...40 {
            let code = try QRCode(segments: [(.byte, Array("shc:/".utf8))], level: .L, minimumVersion: version)
            #expect(code.version == version)
            let layout = try #require(QRSymbolLayout(version: version))
            #expect(layout.size == code.size)
            #expect(layout.isFunction == code.functionModules, "version \(version)")
            // Placement order covers every data module once, and holds the symbol's codewords (plus 0 to 7
            // remainder bits).
            let order = layout.placementOrder
            #expect(order.count == code.functionModules.filter { !$0 }.count)
            #expect(Set(order.map { $0.y * layout.size + $0.x }).count == order.count)
            let remainder = order.count - 8 * QRSymbolLayout.totalCodewords(version: version)
            #expect((0...7).contains(remainder), "version \(version): \(remainder) remainder bits")
        }
        // Known answers from ISO/IEC 18004 Table 9: V1-L 19 data codewords, V22-L 1,006 (the spec's 8,048
        // bits), V40-H 1,276 in 81 blocks.
        #expect(QRSymbolLayout.dataCodewords(version: 1, level: .L) == 19)
        #expect(QRSymbolLayout.dataCodewords(version: 22, level: .L) * 8 == 8048)
        #expect(QRSymbolLayout.dataCodewords(version: 40, level: .H) == 1276)
        #expect(QRSymbolLayout.blocks(version: 40, level: .H).dataPerBlock.count == 81)
        #expect(QRSymbolLayout.alignmentCentres(version: 32) == [6, 34, 60, 86, 112, 138])
    }

    /// Every version and level: the segments libqrencode wrote are read back exactly from the modules.
    @Test func segmentsRoundTripThroughEveryVersionAndLevel() throws {
        for level in QRErrorCorrection.allCases {
            for version in 1...40 {
                // Fill about half the symbol so the data runs through many blocks.
                let capacity = QRSymbolLayout.dataCodewords(version: version, level: level) * 8
                let count = max(1, (capacity / 2 - 60) * 3 / 10)
                let segments: [(QRCode.SegmentMode, [UInt8])] = [
                    (.byte, Array("shc:/".utf8)), (.numeric, Self.digits(count)),
                ]
                let code = try QRCode(segments: segments, level: level, minimumVersion: version)
                try #require(code.version == version, "\(level) \(version)")
                let grid = try #require(QRModuleGrid(size: code.size, modules: code.modules))
                let format = try #require(grid.formatInfo)
                #expect(format.errorCorrection == level)
                let read = QRBitStream.segments(grid: grid, format: format)
                #expect(
                    read == [
                        QRSegment(mode: .byte, data: Array("shc:/".utf8)),
                        QRSegment(mode: .numeric, data: Self.digits(count)),
                    ],
                    "\(level) version \(version)")
            }
        }
    }

    @Test func otherLayoutsReadBackAsWritten() throws {
        let layouts: [[(QRCode.SegmentMode, [UInt8])]] = [
            [(.byte, Array("shc:/5676290952432060346029243740446031222959532654603460292540".utf8))],
            [(.byte, Array("shc:/".utf8)), (.numeric, Self.digits(301)), (.numeric, Self.digits(2))],
            [(.numeric, Self.digits(10)), (.byte, Array("shc:/".utf8))],
            [(.byte, Array("shc:/1/2/".utf8)), (.numeric, Self.digits(1))],
            [(.byte, [0x00, 0xFF, 0x80])],
        ]
        for segments in layouts {
            let code = try QRCode(segments: segments, level: .M)
            let grid = try #require(QRModuleGrid(size: code.size, modules: code.modules))
            let format = try #require(grid.formatInfo)
            let read = try #require(QRBitStream.segments(grid: grid, format: format))
            #expect(read.map(\.mode) == segments.map { $0.0 == .byte ? .byte : .numeric })
            #expect(read.map(\.data) == segments.map(\.1))
        }
        // Modes zbar never sees from our encoder parse too: alphanumeric "AC-42" (ISO/IEC 18004 7.4.5), ECI.
        var bits = "0010" + "000000101" + "00111001110" + "11100111001" + "000010"  // AC, -4, 2
        bits = "0111" + "00011010" + bits + "0000"  // ECI 26 (UTF-8) first
        while bits.count % 8 != 0 { bits += "0" }
        let bytes = stride(from: 0, to: bits.count, by: 8).map { i -> UInt8 in
            let start = bits.index(bits.startIndex, offsetBy: i)
            return UInt8(bits[start..<bits.index(start, offsetBy: 8)], radix: 2)!
        }
        #expect(
            QRBitStream.parse(bytes, version: 1) == [
                QRSegment(mode: .eci, data: []), QRSegment(mode: .alphanumeric, data: Array("AC-42".utf8)),
            ])
        // A count running past the data, or an unknown mode, is no layout at all.
        #expect(QRBitStream.parse([0x40, 0xFF, 0x41], version: 1) == nil)
        #expect(QRBitStream.parse([0xF0], version: 1) == nil)
    }

    /// Hostile bits never trap the reader: random data codewords and random module grids of every version
    /// parse to segments or to nil, and segments never hold more data than the bits carried.
    @Test func randomBitsAndGridsNeverTrap() throws {
        var generator = SeededRandom(state: 2024)
        for round in 0..<3000 {
            let version = 1 + round % 40
            let count = Int.random(in: 0...200, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let segments = QRBitStream.parse(bytes, version: version) {
                #expect(segments.reduce(0) { $0 + $1.data.count } <= max(1, count * 8 / 4) * 3)
            }
        }
        for version in 1...40 {
            let size = 17 + 4 * version
            let modules = (0..<(size * size)).map { _ in Bool.random(using: &generator) }
            let grid = try #require(QRModuleGrid(size: size, modules: modules))
            for mask in 0..<8 {
                _ = QRBitStream.segments(grid: grid, format: QRFormatInfo(errorCorrection: .L, mask: mask))
            }
        }
    }

    /// The reported case: one byte segment holding the whole text at version 22 used to pass as merely
    /// "not minimal". Read from the bit stream it is an error, as its control at version 21 is.
    @Test(arguments: ["single-byte-segment-v22.png", "single-byte-segment-minimal.png"])
    func caseSingleByteSegmentIsAnError(name: String) throws {
        let png = Self.caseDir.appendingPathComponent(name).path
        let symbols = try SHCQRCodeReader.read(png: try VerifyFixtures.bytes(URL(fileURLWithPath: png)))
        let symbol = try #require(symbols.first)
        let segments = try #require(symbol.segments)
        #expect(segments.map(\.mode) == [.byte])
        #expect(
            segments[0].data == Array(try VerifyFixtures.text(Self.caseDir.appendingPathComponent("qr-text.txt")).utf8))
        let run = try TestSupport.cli(["verify", "--jwks", Self.specJWKS, "--now", "1700000100", "--json", png])
        #expect(run.status == 1, "\(run.stdout)")
        let report = try #require(try JSONParser.parse(run.stdout)["credentials"]?.arrayValue?.last)
        let codes = report["findings"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? []
        #expect(codes.contains("QR_SINGLE_SEGMENT") && !codes.contains("QR_VERSION_NOT_MINIMAL"), "\(codes)")
        #expect(report["valid"] == .bool(false))
        #expect(report["signature"]?.stringValue == "verified")
    }

    /// The spec's own images and our encoder's are two segments, read as such.
    @Test func specAndOwnImagesHaveTwoSegments() throws {
        let pngs = try VerifyFixtures.files(in: TestSupport.spec("derived/qr-png"), suffix: ".png")
        for png in pngs {
            let symbol = try #require(try SHCQRCodeReader.read(png: try VerifyFixtures.bytes(png)).first)
            let segments = try #require(symbol.segments, "\(png.lastPathComponent)")
            #expect(segments.map(\.mode) == [.byte, .numeric])
            #expect(segments[0].data.starts(with: Array("shc:/".utf8)) && segments[0].data.last == 0x2F)
        }
    }

    /// Symbols of each wrong layout, drawn from libqrencode's modules: each is judged by its segments.
    @Test func forgedLayoutsGetTheirCodes() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let text = Array(try QRNumeric.text(jws: jws).utf8)
        let digits = Array(text.dropFirst(5))
        func codes(_ name: String, _ segments: [(QRCode.SegmentMode, [UInt8])], version: Int = 0) throws -> Set<String>
        {
            let symbol = try #require(QRVersionProbe.encode(segments, level: .L, version: version))
            return try forge.codes([try forge.png(size: symbol.size, modules: symbol.modules, name: name)])
        }
        let cases: [(String, [(QRCode.SegmentMode, [UInt8])], Int, String)] = [
            ("single.png", [(.byte, text)], 0, "QR_SINGLE_SEGMENT"),
            ("single-v22.png", [(.byte, text)], 22, "QR_SINGLE_SEGMENT"),
            (
                "three.png",
                [
                    (.byte, Array("shc:/".utf8)), (.numeric, Array(digits.prefix(600))),
                    (.numeric, Array(digits.dropFirst(600))),
                ], 0, "QR_SEGMENTS"
            ),
            (
                "digits-in-byte.png", [(.byte, Array(text.prefix(9))), (.numeric, Array(text.dropFirst(9)))], 0,
                "QR_SEGMENTS"
            ),
            ("numeric-first.png", [(.numeric, digits), (.byte, Array("shc:/".utf8))], 0, "QR_PREFIX"),
        ]
        for (name, segments, version, code) in cases {
            let found = try codes(name, segments, version: version)
            #expect(found.contains(code), "\(name): \(found.sorted())")
            #expect(!found.contains("QR_VERSION_NOT_MINIMAL"), "\(name): \(found.sorted())")
            #expect(!found.contains("QR_SEGMENTS_UNREADABLE"), "\(name): \(found.sorted())")
        }
        // Two right segments at a forced version: only "not minimal", a warning.
        let forced = try codes("forced.png", [(.byte, Array("shc:/".utf8)), (.numeric, digits)], version: 22)
        #expect(forced == ["QR_VERSION_NOT_MINIMAL"], "\(forced)")
        let good = try codes("good.png", [(.byte, Array("shc:/".utf8)), (.numeric, digits)])
        #expect(good.isEmpty, "\(good)")
    }

    /// A module sampled wrongly is corrected (Reed–Solomon, as the decoders do), so the layout is still read
    /// and checked; a block with more wrong codewords than it can correct gives no segments, never a guess.
    @Test func aDamagedModuleIsCorrectedTooManyAreUnreadNotGuessed() throws {
        let forge = try VerifyForge()
        let code = try QRCode(jws: try forge.jws(claims: VerifyForge.claims()))
        let layout = try #require(QRSymbolLayout(version: code.version))
        var modules = code.modules
        let (x, y) = layout.placementOrder[40]  // a data module early in the stream
        modules[y * code.size + x].toggle()
        let png = try forge.png(size: code.size, modules: modules, name: "damaged.png")
        let reports = try forge.verify([png]).filter { $0.source == .qrImage }
        let findings = reports.flatMap(\.findings)
        #expect(findings.isEmpty, "\(findings)")
        #expect(reports.first?.signature == .verified)
        #expect(reports.first?.qrSymbols.first?.version == code.version)

        // The first block's first ⌊ecc/2⌋ + 1 codewords each with a bit flipped: beyond what it corrects.
        let grid = try #require(QRModuleGrid(size: code.size, modules: code.modules))
        let format = try #require(grid.formatInfo)
        let (dataPerBlock, ecc) = QRSymbolLayout.blocks(version: code.version, level: format.errorCorrection)
        var broken = code.modules
        for k in 0...(ecc / 2) {
            // Codeword k·blocks (block 0's k-th data codeword), its first bit.
            let (bx, by) = layout.placementOrder[8 * k * dataPerBlock.count]
            broken[by * code.size + bx].toggle()
        }
        let brokenGrid = try #require(QRModuleGrid(size: code.size, modules: broken))
        #expect(QRBitStream.segments(grid: grid, format: format) != nil)
        #expect(QRBitStream.segments(grid: brokenGrid, format: format) == nil)
        // A symbol whose segments were not read is a warning saying what was not checked, never silence.
        let unread = DecodedQR(bytes: Array("shc:/00".utf8), corners: [], version: code.version, errorCorrection: .L, mask: 0,
                               segments: nil, readBy: .zbar)
        let warned = QRImageCheck.symbolFindings(unread, file: "f.png", chunk: nil)
        #expect(warned.map(\.code) == [.qrSegmentsUnreadable] && warned.first?.severity == .warning)
        #expect(warned.first?.message.contains("were not checked") == true)
        let ungridded = DecodedQR(bytes: Array("shc:/00".utf8), corners: [], version: nil, errorCorrection: nil, mask: nil,
                                  segments: nil, readBy: .zbar)
        let warnedGrid = QRImageCheck.symbolFindings(ungridded, file: "f.png", chunk: nil)
        #expect(warnedGrid.map(\.code) == [.qrGridUnreadable] && warnedGrid.first?.severity == .warning)
        #expect(warnedGrid.first?.message.contains("were not checked") == true)
    }
}
