#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// `healthcards-bench worst`: the largest input of each kind that `verify` and `issue` accept (each at its
/// budget, `InputBudget`; docs/verify.md, "Budgets"), and the inputs that used to cost without bound (a PNG
/// claiming 20000 × 20000 pixels, an object of 100,000 members), each given to the real program as a child
/// process: wall time, peak resident memory (`VmHWM`) and exit status.
enum WorstCases {
    struct Case {
        var name: String
        var what: String
        var arguments: [String]
        var inputBytes: Int
    }

    static func run(_ options: Options) throws {
        let work =
            options["work"] ?? ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/healthcards-bench-worst")
        let jsonPath = options["json"] ?? "bench-worst.json"
        let selfDir = FileIO.parent(of: (try? Bench.readLink("/proc/self/exe")) ?? CommandLine.arguments[0])
        let healthcards = options["healthcards"] ?? "\(selfDir)/healthcards"
        let templatePath = options["template"] ?? "templates/covid19-vaccination.json"
        let quick = options.flags.contains("quick")
        _ = try ChildRun.run("/bin/rm", ["-rf", work])
        try FileIO.createDirectories(work)
        let keyPath = "\(work)/key.pem"
        let keygen = try ChildRun.run(healthcards, ["keygen", "--out", keyPath])
        guard keygen.status == 0 else { throw BenchError("keygen failed: \(keygen.stderr)") }
        let key = try KeyFile.load(path: keyPath, requirePrivate: true)
        let site = "\(work)/site"
        try FileIO.writeAtomically(JWKS(keys: [JWK(key: key)]).fileBytes, to: "\(site)/.well-known/jwks.json")
        var cases: [Case] = []
        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = "\(work)/\(name)"
            try FileIO.writeAtomically(bytes, to: path, sync: false)
            return path
        }
        func verify(_ name: String, _ what: String, _ path: String) {
            cases.append(
                Case(
                    name: name, what: what, arguments: ["verify", "--jwks", site, "--now", "1700000000", path],
                    inputBytes: FileIO.size(path) ?? 0))
        }

        // The largest payload a card may carry (RawInflate.maxOutput), as many Immunizations as fit.
        let payload = largestPayload(limit: RawInflate.maxOutput, quick: quick)
        let jws = try sign(payload, key: key)
        // A .smart-health-card file of that card repeated while the file stays within its budget and the
        // credential budget: the most JSON one card file can make verify read.
        let count = max(1, min(InputBudget.credentialsPerFile, (InputBudget.cardFileBytes - 64) / (jws.utf8.count + 3)))
        let cardFile = JSONWriter.minified(
            .object(["verifiableCredential": .array(Array(repeating: .string(jws), count: count))]))
        verify(
            "card file",
            "\(count) credentials, each inflating to \(payload.count) bytes (\(cardFile.count) bytes of file)",
            try file("largest.smart-health-card", cardFile))
        verify("JWS file", "one JWS inflating to \(payload.count) bytes", try file("largest.jws", Array(jws.utf8)))
        // A QR text file at the file budget: shc:/ and the digits (two a character) of a JWS whose payload
        // hardly compresses (random text), so the JWS is as long as the file allows.
        var randomLength = quick ? 20_000 : InputBudget.cardFileBytes / 2
        var qrText: [UInt8] = []
        repeat {
            randomLength -= 4096
            qrText =
                Array("shc:/".utf8) + (try QRNumeric.digits(try sign(randomPayload(length: randomLength), key: key)))
        } while qrText.count > InputBudget.cardFileBytes
        verify("QR text file", "shc:/ and \(qrText.count - 5) digits", try file("largest-qr.txt", qrText))
        // A card file of the budget whose object has as many members as fit (100,000 took 8.7 s before
        // objects indexed their keys).
        var members = "{\"verifiableCredential\":[\"\(jws.prefix(64))\"]"
        var n = 0
        while members.utf8.count < InputBudget.cardFileBytes - 32 {
            members += ",\"m\(n)\":\(n)"
            n += 1
        }
        verify(
            "object members", "a card file whose object has \(n + 1) members",
            try file("members.smart-health-card", Array((members + "}").utf8)))
        // The largest QR image: version 22, 64 px a module (the most `issue --qr-scale` writes), a quiet zone
        // of 11 modules: 8128 × 8128 pixels, under the 8192 × 8192 budget.
        let chunk = String(repeating: "A", count: QRNumeric.maxSingleJWSCharacters)
        let code = try QRCode(jws: chunk)
        let scale = quick ? 4 : 64
        let png = try QRImage(scale: scale, quietZone: 11).png(code)
        let side = (code.size + 22) * scale
        verify("PNG", "version \(code.version) QR, \(side) × \(side) pixels", try file("largest.png", png))
        // The reported PNG that claims 20000 × 20000 pixels: refused from its header.
        verify(
            "PNG over budget", "a small PNG that claims 20000 × 20000 pixels",
            try file("huge.png", tinyPNG(width: 20000, height: 20000)))
        // An image that holds no symbol makes verify try every decoder and pass (docs/verify.md, "QR images as
        // people send them"): the largest such PNG, busy (random modules, 46 pixels each: 8142 × 8142).
        var generator = SeededRandom(state: 21)
        let busySide = quick ? 400 : 177 * 46
        let busy = try QRImage(scale: quick ? 4 : 46, quietZone: 0).png(
            size: quick ? 100 : 177, modules: (0..<(quick ? 10_000 : 177 * 177)).map { _ in generator.next() & 1 == 1 })
        verify("PNG, no symbol", "random modules, \(busySide) × \(busySide) pixels (every decoder pass runs)", try file("busy.png", busy))
        // JPEGs: the largest accepted (8192 × 8192, no symbol), a progressive one at the scan limit, and one that
        // claims 60000 × 60000 pixels in a few hundred bytes.
        let jpegSide = quick ? 512 : 8192
        verify("JPEG", "baseline, gray, \(jpegSide) × \(jpegSide) pixels, no symbol", try file("largest.jpg", jpeg(width: jpegSide, height: jpegSide)))
        verify(
            "JPEG, most scans", "progressive, \(InputBudget.jpegScans) scans, \(jpegSide) × \(jpegSide) pixels",
            try file("scans.jpg", jpeg(width: jpegSide, height: jpegSide, progressive: true, scans: InputBudget.jpegScans)))
        verify(
            "JPEG over budget", "a small JPEG that claims 60000 × 60000 pixels",
            try file("huge.jpg", jpeg(width: 60000, height: 60000, entropy: false)))
        // A key set at the file budget: as many keys as fit.
        var keys = [JWK(key: try P256Key.generate()), JWK(key: try P256Key.generate())]
        let perKey = JWKS(keys: keys).fileBytes.count - JWKS(keys: [keys[0]]).fileBytes.count
        let keyCount = quick ? 20 : (InputBudget.cardFileBytes - 64) / perKey
        while keys.count < keyCount { keys.append(JWK(key: try P256Key.generate())) }
        var keySet = JWKS(keys: keys).fileBytes
        while keySet.count > InputBudget.cardFileBytes {
            keys.removeLast()
            keySet = JWKS(keys: keys).fileBytes
        }
        verify("key set", "\(keys.count) keys", try file("large-site/.well-known/jwks.json", keySet))
        // A revocation list at its budget, beside the key set that uses it.
        let kid = JWK(key: key).kid
        let crlSite = "\(work)/crl-site"
        var crlVersionSet = JWK(key: key)
        crlVersionSet.crlVersion = 1
        try FileIO.writeAtomically(
            JWKS(keys: [crlVersionSet]).fileBytes, to: "\(crlSite)/.well-known/jwks.json", sync: false)
        var rids: [String] = []
        var size = 128
        while size < (quick ? 100_000 : InputBudget.crlFileBytes - 64) {
            let rid = Base64URL.encode(
                [UInt8(truncatingIfNeeded: rids.count)]
                    + withUnsafeBytes(of: UInt64(rids.count).bigEndian) { Array($0) })
            rids.append(rid)
            size += rid.utf8.count + 8  // four spaces, two quotes, a comma, a newline
        }
        var crl = CRL(kid: kid, ctr: 1, entries: rids.map { CRL.Entry(rid: $0) })
        while crl.fileBytes.count > InputBudget.crlFileBytes { crl.entries.removeLast(1000) }
        try FileIO.writeAtomically(crl.fileBytes, to: "\(crlSite)/.well-known/crl/\(kid).json", sync: false)
        let smallCard = try sign(smallPayload(), key: key)
        let smallPath = try file(
            "small.smart-health-card", JSONWriter.minified(.object(["verifiableCredential": [.string(smallCard)]])))
        cases.append(
            Case(
                name: "CRL", what: "\(crl.entries.count) rids (\(crl.fileBytes.count) bytes), applied to one card",
                arguments: ["verify", "--jwks", crlSite, "--now", "1700000000", smallPath],
                inputBytes: crl.fileBytes.count))

        // issue: a .json Bundle at its budget, an .ndjson line at its budget, a CSV record at its budget.
        let bigBundle = largestBundle(limit: InputBudget.bundleBytes - 1, quick: quick)
        let bundlePath = try file("largest.json", bigBundle)
        cases.append(
            Case(
                name: "issue .json", what: "one Bundle of \(bigBundle.count) bytes",
                arguments: issueArguments(key: keyPath, out: "\(work)/out-json", input: bundlePath),
                inputBytes: bigBundle.count))
        let ndjsonPath = try file("largest.ndjson", bigBundle + [0x0A] + bigBundle + [0x0A])
        cases.append(
            Case(
                name: "issue .ndjson", what: "two lines of \(bigBundle.count) bytes",
                arguments:
                    issueArguments(key: keyPath, out: "\(work)/out-ndjson", input: ndjsonPath),
                inputBytes: bigBundle.count * 2 + 2))
        let template = try Template(bytes: try FileIO.read(templatePath), source: templatePath)
        let columns = template.columns.map(\.name)
        var csv = columns.joined(separator: ",") + "\n"
        let filler = String(repeating: "x", count: InputBudget.csvRecordBytes - 400)
        csv +=
            columns.map { name -> String in
                switch name {
                case "recip_id": return "P-1"
                case "recip_first_name": return "Ada"
                case "recip_last_name": return "Testperson"
                case "recip_dob": return "1960-01-01"
                case "admin_date": return "2021-01-15"
                case "cvx": return "207"
                case "admin_name": return filler
                default: return ""
                }
            }.joined(separator: ",") + "\n"
        let csvPath = try file("largest-record.csv", Array(csv.utf8))
        cases.append(
            Case(
                name: "issue CSV record", what: "one record of \(csv.utf8.count) bytes",
                arguments: issueArguments(key: keyPath, out: "\(work)/out-csv", input: csvPath) + [
                    "--template", templatePath,
                ],
                inputBytes: csv.utf8.count))

        log("worst cases: the largest input of each kind, each a `healthcards` child process")
        var results: [JSONValue] = []
        for c in cases {
            let run = try ChildRun.run(healthcards, c.arguments)
            log(
                "  \(c.name.padding(18)) \(fmt(run.seconds, 2).padding(7)) s  peak RSS \(fmt(Double(run.peakRSS) / 1_048_576, 1).padding(7)) MB  exit \(run.status)  \(c.what)"
            )
            results.append(
                .object([
                    "name": .string(c.name), "what": .string(c.what), "inputBytes": .integer(Int64(c.inputBytes)),
                    "seconds": Bench.num(run.seconds, 3), "peakRSSMB": Bench.num(Double(run.peakRSS) / 1_048_576, 1),
                    "exitStatus": .integer(Int64(run.status)),
                ]))
        }
        try FileIO.writeAtomically(
            JSONWriter.pretty(.object(["date": .string(Clock.describe(Clock.nowSeconds())), "cases": .array(results)]))
                + [0x0A],
            to: jsonPath)
        log("figures written to \(jsonPath)")
    }

    static func issueArguments(key: String, out: String, input: String) -> [String] {
        [
            "issue", "--issuer", Bench.issuer, "--key", key, "--out", out, "--nbf", "1690000000", "--no-qr", "--quiet",
            "--jobs", "1", input,
        ]
    }

    static let patient =
        #"{"fullUrl":"resource:0","resource":{"resourceType":"Patient","name":[{"family":"Testperson","given":["Ada"]}],"birthDate":"1960-01-01"}}"#

    static func immunization(_ i: Int) -> String {
        #"{"fullUrl":"resource:\#(i)","resource":{"resourceType":"Immunization","status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"207"}]},"patient":{"reference":"resource:0"},"occurrenceDateTime":"2021-01-15","performer":[{"actor":{"display":"ABC General Hospital"}}],"lotNumber":"0000001"}}"#
    }

    /// A Bundle of a Patient and as many Immunizations as fit in `limit` bytes.
    static func largestBundle(limit: Int, quick: Bool) -> [UInt8] {
        var text = #"{"resourceType":"Bundle","type":"collection","entry":["# + patient
        var i = 1
        while true {
            let entry = "," + immunization(i)
            if text.utf8.count + entry.utf8.count + 2 > (quick ? min(limit, 50_000) : limit) { break }
            text += entry
            i += 1
        }
        return Array((text + "]}").utf8)
    }

    /// A payload whose minified JSON is at most `limit` bytes: claims around the largest Bundle that fits.
    static func largestPayload(limit: Int, quick: Bool) -> [UInt8] {
        let head =
            #"{"iss":"https://issuer.example.org","nbf":1690000000,"vc":{"type":["https://smarthealth.cards#health-card"],"credentialSubject":{"fhirVersion":"4.0.1","fhirBundle":"#
        let tail = "}}}"
        let bundle = largestBundle(limit: limit - head.utf8.count - tail.utf8.count, quick: quick)
        return Array(head.utf8) + bundle + Array(tail.utf8)
    }

    /// A payload with a string of `length` random base64url characters, which DEFLATE hardly shortens.
    static func randomPayload(length: Int) -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(length)
        for _ in 0..<length {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            text.append(alphabet[Int(state & 63)])
        }
        let head =
            #"{"iss":"https://issuer.example.org","nbf":1690000000,"vc":{"type":["https://smarthealth.cards#health-card"],"rid":""#
        return Array(head.utf8) + text + Array(#""}}"#.utf8)
    }

    static func smallPayload() -> [UInt8] {
        let head =
            #"{"iss":"https://issuer.example.org","nbf":1690000000,"vc":{"type":["https://smarthealth.cards#health-card"],"credentialSubject":{"fhirVersion":"4.0.1","fhirBundle":"#
        return Array(
            (head + #"{"resourceType":"Bundle","type":"collection","entry":["# + patient + "," + immunization(1)
                + "]}}}}").utf8)
    }

    static func sign(_ payload: [UInt8], key: P256Key) throws -> String {
        var signer = try ES256Signer(key: key)
        return try JWS.sign(
            deflatedPayload: try RawDeflater().deflate(payload), kid: JWK(key: key).kid, signer: &signer
        ).compact
    }

    /// A minimal PNG whose header claims `width` × `height` 8-bit gray pixels and whose data is one empty
    /// stored zlib block (what libpng reads first is the header).
    static func tinyPNG(width: UInt32, height: UInt32) -> [UInt8] {
        func be32(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return be32(UInt32(data.count)) + body + be32(crc32(body))
        }
        let header = be32(width) + be32(height) + [8, 0, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header)
            + chunk("IDAT", [0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
    }

    /// Hand-made JPEG bytes (ITU-T T.81, as QRImagesTests makes them): a gray image whose every block is
    /// mid-gray, baseline or progressive with `scans` DC scans; without `entropy`, one byte of data a scan.
    static func jpeg(width: Int, height: Int, progressive: Bool = false, scans: Int = 1, entropy: Bool = true) -> [UInt8] {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var out: [UInt8] = [0xFF, 0xD8]
        out += segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))
        out += segment(progressive ? 0xC2 : 0xC0, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF), 1, 1, 0x11, 0])
        out += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        out += segment(0xC4, [0x10, 1] + [UInt8](repeating: 0, count: 15) + [0])
        let bits = ((width + 7) / 8) * ((height + 7) / 8) * (progressive ? 1 : 2)
        let data: [UInt8] = entropy ? [UInt8](repeating: 0, count: (bits + 7) / 8 - 1) + [UInt8(0xFF >> (bits % 8 == 0 ? 8 : bits % 8))] : [0x7F]
        for _ in 0..<scans {
            out += segment(0xDA, progressive ? [1, 1, 0x00, 0, 0, 0x00] : [1, 1, 0x00, 0, 63, 0])
            out += data
        }
        return out + [0xFF, 0xD9]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
