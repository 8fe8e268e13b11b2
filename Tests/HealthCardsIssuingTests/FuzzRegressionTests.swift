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

/// Replays the fuzz seeds (`Fuzz/seeds/<target>/`) and every input the fuzzers found
/// (`Fixtures/fuzz-regressions/<target>/`) through the same properties the libFuzzer targets check
/// (`Fuzz/targets/*.swift`), plus hostile inputs written by hand with known outcomes.
@Suite struct FuzzRegressionTests {
    static let regressions = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fuzz-regressions")
    static let seeds = VerifyFixtures.repoRoot.appendingPathComponent("Fuzz/seeds")

    /// Every stored input of a target.
    static func inputs(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        var out: [(String, [UInt8])] = []
        for root in [seeds, regressions] {
            let dir = root.appendingPathComponent(target)
            guard FileManager.default.fileExists(atPath: dir.path) else { continue }
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where name != ".gitkeep"
            {
                out.append(
                    (
                        "\(root.lastPathComponent)/\(target)/\(name)",
                        try VerifyFixtures.bytes(dir.appendingPathComponent(name))
                    ))
            }
        }
        return out
    }

    // MARK: properties (the same as the fuzz targets)

    /// CSV: reads or throws `.input`; each record read again from its offset has the same fields.
    static func csvRecords(_ bytes: [UInt8]) throws -> [CSVReader.Record]? {
        let dir = try TestSupport.tempDir("fuzz-csv")
        let path = dir.appendingPathComponent("in.csv").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try CSVReader(path: path)
        var records: [CSVReader.Record] = []
        do {
            while let record = try reader.next() { records.append(record) }
        } catch let error as HealthCardError {
            #expect(error.kind == .input)
            return nil
        }
        for record in records {
            let again = try #require(try CSVReader(path: path, offset: record.offset, line: record.line).next())
            #expect(again.fields == record.fields && again.line == record.line)
        }
        return records
    }

    static func jsonRoundTrip(_ bytes: [UInt8]) -> JSONValue? {
        guard let value = try? JSONParser.parse(bytes) else { return nil }
        let written = JSONWriter.minified(value)
        #expect((try? JSONParser.parse(written)) == value)
        #expect((try? JSONParser.parse(written)).map(JSONWriter.minified) == written)
        return value
    }

    @Test func storedCSVInputs() throws {
        let inputs = try Self.inputs("csv")
        #expect(inputs.count >= 3)
        for input in inputs { _ = try Self.csvRecords(input.bytes) }
    }

    @Test func storedJSONInputs() throws {
        let inputs = try Self.inputs("json")
        #expect(inputs.count >= 3)
        for input in inputs {
            _ = Self.jsonRoundTrip(input.bytes)
            if let keys = try? JWKS.publicKeys(jsonFile: input.bytes, source: input.name) {
                let published = try JSONParser.parse(JWKS(keys: keys).fileBytes)
                #expect(published["keys"]?.arrayValue?.allSatisfy { $0["d"] == nil } == true)
            }
        }
    }

    @Test func storedPEMInputs() throws {
        let inputs = try Self.inputs("pem")
        #expect(inputs.count >= 3)
        for input in inputs {
            for requirePrivate in [false, true] {
                do {
                    let key = try P256Key.load(pem: input.bytes, source: input.name, requirePrivate: requirePrivate)
                    #expect(key.x.count == 32 && key.y.count == 32)
                } catch let error as HealthCardError {
                    #expect(error.kind == .key, "\(input.name): \(error)")
                }
            }
        }
    }

    @Test func storedTemplateInputs() throws {
        let inputs = try Self.inputs("template")
        #expect(inputs.count >= 3)
        for input in inputs {
            let text = String(decoding: input.bytes, as: UTF8.self)
            if let pieces = try? Placeholder.pieces(of: text) {
                for case .text(let t) in pieces { #expect(!t.contains("{{")) }
            }
            for type in Placeholder.ValueType.allCases { _ = try? Template.typedValue(text, as: type) }
            if let template = try? Template(bytes: input.bytes, source: input.name) {
                let values = Dictionary(uniqueKeysWithValues: template.columns.map { ($0.name, "1") })
                _ = template.render(rows: [TemplateRow(values: values, source: "fuzz:1")], now: Clock.nowSeconds())
            }
        }
    }

    @Test func storedJWSAndQRInputs() throws {
        for input in try Self.inputs("jws") {
            let text = String(decoding: input.bytes, as: UTF8.self)
            if let parts = try? JWS(compact: text).parts() {
                #expect(
                    Base64URL.encode(parts.header) + "." + Base64URL.encode(parts.payload) + "."
                        + Base64URL.encode(parts.signature) == text)
            }
        }
        for input in try Self.inputs("qrnumeric") {
            if let jws = try? QRNumeric.jws(fromDigits: Substring(String(decoding: input.bytes, as: UTF8.self)).utf8) {
                #expect(try QRNumeric.digits(jws) == input.bytes)
            }
        }
    }

    /// QR images (the `image` target's property): PNG and JPEG seeds, and what the fuzzer found, decode within
    /// the budget; each symbol's version is 1…40 or none and its segments are its bytes or none. The seeds are
    /// QR images and are read.
    @Test func storedImageInputs() throws {
        let inputs = try Self.inputs("image")
        #expect(inputs.count >= 5)
        for input in inputs {
            guard let image = try? GrayImage(imageBytes: input.bytes, maxPixels: 1 << 18) else {
                #expect(!input.name.hasPrefix("seeds/"), "\(input.name) does not decode")
                continue
            }
            #expect(image.pixels.count == image.width * image.height && image.pixels.count <= 1 << 18)
            let symbols = try QRDecoder().decode(image)
            if input.name.hasPrefix("seeds/") { #expect(symbols.count == 1, "\(input.name)") }
            for symbol in symbols {
                #expect(symbol.version.map { (1...40).contains($0) } ?? true)
                #expect(symbol.segments.map { $0.flatMap(\.data) == symbol.bytes } ?? true)
                _ = QRImageCheck.symbolFindings(symbol, file: input.name, chunk: nil)
            }
        }
    }

    /// What `shl audit` and `verify` read for static links (the `accesslog` target's properties): log lines,
    /// gzip, FHIR content.
    @Test func storedAccessLogInputs() throws {
        let inputs = try Self.inputs("accesslog")
        #expect(inputs.count >= 3)
        var parsedLines = 0
        for input in inputs {
            var audit = SHLAudit(issuer: "https://clinic.example.org/shc", maxAccesses: 64)
            var bytes = input.bytes
            if bytes.starts(with: [0x1F, 0x8B]) {
                var inflated: [UInt8] = []
                try GzipStream().feed(bytes) { inflated += $0 }
                bytes = inflated
            }
            let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
            for line in lines {
                if let parsed = AccessLogLine.parse(line) {
                    parsedLines += 1
                    #expect(!parsed.path.contains("?") && (100...599).contains(parsed.status) && parsed.bytes >= 0)
                }
                audit.add(line: line)
            }
            #expect(audit.lines == lines.count)
            #expect(!SharedBundleCheck.check(input.bytes).summary.isEmpty)
        }
        #expect(parsedLines >= 3, "the seeds' log lines parse")
        let bundle = try #require(inputs.first { $0.name.hasSuffix("shared-bundle.json") })
        #expect(SharedBundleCheck.check(bundle.bytes).problems == [])
    }

    /// What `verify` reads: .smart-health-card files, bare JWS, shc:/ QR texts, jwks.json.
    @Test func storedVerifyInputs() throws {
        let inputs = try Self.inputs("verify")
        #expect(inputs.count >= 4)
        let checker = JWSCheck(now: 1_700_000_000)
        for input in inputs {
            _ = CardFile.check(input.bytes, file: input.name, checker: checker)
            var report = CredentialReport(source: .jws, file: input.name)
            checker.check(CardFile.cleanText(input.bytes, file: input.name, findings: &report.findings), into: &report)
            let pieces = input.bytes.split(separator: 0x0A).prefix(8).map { QRPiece(text: Array($0), file: input.name) }
            for piece in pieces {
                if let jws = piece.jws { #expect(try QRNumeric.digits(jws).count == jws.utf8.count * 2) }
            }
            _ = QRAssembly.assemble(pieces)
            _ = KeySetCheck.check(bytes: input.bytes, file: input.name, now: Clock.nowSeconds())
        }
        // The spec's three chunks assemble into one JWS.
        let chunks = try #require(inputs.first { $0.name.hasSuffix("spec-02-chunks.txt") })
        let pieces = chunks.bytes.split(separator: 0x0A).map { QRPiece(text: Array($0), file: "chunks") }
        #expect(pieces.map { $0.chunk?.total } == [3, 3, 3])
        #expect(QRAssembly.assemble(pieces).count == 1)
    }

    /// The structure-aware targets (`card`, `issue`, `row`, `batch`): every stored input, and the empty
    /// input (the unbent shape, which must give a card with no error), through the same properties
    /// (`FuzzShapes`).
    @Test(arguments: ["card", "issue", "row", "batch"])
    func storedStructuredInputs(target: String) throws {
        let templatePath = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        let template = try Template(bytes: try FileIO.read(templatePath), source: templatePath)
        let inputs = [(name: "empty input", bytes: [UInt8]())] + (try Self.inputs(target))
        #expect(inputs.count >= 2, "no stored input for \(target)")
        for input in inputs {
            let problems: [String]
            switch target {
            case "card": problems = FuzzShapes.checkCard(input.bytes)
            case "issue": problems = FuzzShapes.checkIssue(input.bytes)
            case "row": problems = FuzzShapes.checkRow(input.bytes, template: template)
            default: problems = FuzzShapes.checkBatch(input.bytes, templatePath: templatePath)
            }
            #expect(problems.isEmpty, "\(input.name): \(problems)")
        }
    }

    /// The unbent shapes are what they claim: a card with no error, issued by every issuing path.
    @Test func unbentShapesAreGoodCards() throws {
        var f = FuzzBytes([])
        let bundle = FuzzShapes.bundle(&f)
        #expect(BundleValidator.validate(bundle, now: FuzzShapes.now).errors.isEmpty)
        let key = try #require(FuzzShapes.key)
        let issuer = try CardIssuer(signer: try ES256Signer(key: key), settings: IssueSettings(issuer: FuzzShapes.issuer, notBefore: 1_690_000_000), clock: SystemWallClock())
        let card = try issuer.issue(bundle: bundle, patientID: "p")
        #expect(FuzzShapes.checkIssued(card, name: "unbent").isEmpty)
    }

    // MARK: hostile inputs with known outcomes

    @Test func csvEdgeCases() throws {
        #expect(try Self.csvRecords([0xEF, 0xBB, 0xBF])?.isEmpty == true)
        #expect(try Self.csvRecords(Array("\r\r\n\n".utf8))?.isEmpty == true)
        #expect(try Self.csvRecords(Array("a\rb\r".utf8))?.map(\.fields) == [["a"], ["b"]])
        #expect(try Self.csvRecords(Array("a\rb\r".utf8))?.map(\.line) == [1, 2])
        // Records whose fields are all empty (Excel's `,,,,` rows) are skipped like blank lines.
        #expect(try Self.csvRecords(Array(",\n\"\"".utf8))?.isEmpty == true)
        #expect(try Self.csvRecords(Array(",\n\"\",x\n , \n".utf8))?.map(\.fields) == [["", "x"]])
        #expect(try Self.csvRecords(Array("\"a\"\"".utf8)) == nil)  // a quote that never closes
        #expect(try Self.csvRecords(Array("\"a\"b".utf8)) == nil)  // text after a closing quote
        // A truncated UTF-8 sequence at the very end of the file.
        #expect(try Self.csvRecords([0x61, 0x2C, 0xC3]) == nil)
        // A field longer than the 64 KiB read block, and a record spanning block boundaries.
        let long = String(repeating: "x", count: 200_000)
        #expect(
            try Self.csvRecords(Array("a,\"\(long)\"\nb".utf8))?.map { $0.fields.map(\.count) } == [[1, 200_000], [1]])
    }

    @Test func jsonEdgeCases() throws {
        // Deep nesting is refused with a message, not a stack overflow.
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: HealthCardError.self) { try JSONParser.parse(deep) }
        #expect(Self.jsonRoundTrip(Array(#"{"a":"\ud800"}"#.utf8)) == nil)  // lone surrogate
        #expect(Self.jsonRoundTrip([0x22, 0xFF, 0x22]) == nil)  // not UTF-8
        #expect(Self.jsonRoundTrip(Array(#"{"a":1,"a":2}"#.utf8)) == nil)  // duplicate member
        #expect(Self.jsonRoundTrip(Array("-0.0E+00".utf8)) == .number("-0.0E+00"))
        #expect(Self.jsonRoundTrip(Array(#""\u0000\ud83d\ude00/""#.utf8)) == .string("\u{0}😀/"))
        for bad in ["01", "1.", ".5", "+1", "1e", "--1", "[1,]", "{\"a\"}", "tru", "\"\t\""] {
            #expect(Self.jsonRoundTrip(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test func pemEdgeCases() throws {
        let cases: [(String, String)] = [
            ("", "holds no PEM block"),
            ("-----BEGIN PRIVATE KEY-----\n", "OpenSSL cannot parse"),
            ("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", "OpenSSL cannot parse"),
            ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "OpenSSL cannot parse"),
            ("-----BEGIN X-----\n", "holds a PEM block 'X'"),
        ]
        for (pem, says) in cases {
            do {
                _ = try P256Key.load(pem: Array(pem.utf8), source: "k.pem", requirePrivate: false)
                Issue.record("\(pem) loaded")
            } catch let error as HealthCardError {
                #expect(error.kind == .key)
                #expect(error.message.contains(says), "\(error.message)")
            }
        }
    }

    @Test func placeholderEdgeCases() throws {
        #expect(throws: HealthCardError.self) { try Placeholder.pieces(of: "{{a") }
        #expect(throws: HealthCardError.self) { try Placeholder.pieces(of: "{{}}") }
        #expect(throws: HealthCardError.self) { try Placeholder.pieces(of: "{{a|b|c}}") }
        #expect(throws: HealthCardError.self) { try Placeholder.pieces(of: "{{a|uuid}}") }
        #expect(
            try Placeholder.pieces(of: "x{{ a | date }}y") == [
                .text("x"), .placeholder(Placeholder(column: "a", type: .date)), .text("y"),
            ])
        #expect(
            try Placeholder.pieces(of: "}}{{b}}") == [
                .text("}}"), .placeholder(Placeholder(column: "b", type: .string)),
            ])
        // A combining mark after the braces does not split a character.
        #expect(
            try Placeholder.pieces(of: "é{{c}}\u{301}") == [
                .text("é"), .placeholder(Placeholder(column: "c", type: .string)), .text("\u{301}"),
            ])
    }

    @Test func qrAndJWSEdgeCases() throws {
        #expect(throws: HealthCardError.self) { try QRNumeric.jws(fromDigits: Substring("123").utf8) }
        #expect(throws: HealthCardError.self) { try QRNumeric.jws(fromDigits: Substring("78").utf8) }
        #expect(throws: HealthCardError.self) { try QRNumeric.jws(fromDigits: Substring("1٣").utf8) }
        #expect(try QRNumeric.jws(fromDigits: Substring("0001").utf8) == "-.")
        #expect(throws: HealthCardError.self) { try JWS(compact: "a.b.c.d").parts() }
        #expect(throws: HealthCardError.self) { try JWS(compact: "ab.cd.e").parts() }  // 1 character is no base64url
        #expect(throws: HealthCardError.self) { try JWS(compact: "AB.AA.AA").parts() }  // non-zero trailing bits
        #expect(try JWS(compact: "..").parts().header.isEmpty)
    }
}
