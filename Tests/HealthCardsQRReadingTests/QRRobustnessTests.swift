import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
import HealthCardsTestSupport

/// How often `verify` reads a QR image as people really send it: distorted renderings of our own and the spec's
/// QR images (scale, rotation, perspective, blur, JPEG quality, contrast, uneven light, noise, photographs),
/// made by Pillow (`Tests/qr-distortions.py`, independent of the toolkit's image code), read by `verify`'s own
/// image check, and compared with what the zxing-cpp Python package (a mainstream decoder) reads from each.
/// The table it prints is the one in docs/verify.md ("QR images as people send them").
@Suite struct QRRobustnessTests {
    static let script = VerifyFixtures.repoRoot.appendingPathComponent("Tests/qr-distortions.py").path

    struct Rendering: Decodable {
        let file: String
        let source: String
        let distortion: String
        let level: String
        let zxingcpp: String?
    }

    struct Outcome {
        let rendering: Rendering
        /// verify read the source's text from the image.
        let read: Bool
        /// ... and made every check of the symbol (version, ECC level, segments) without a "not checked" warning.
        let checked: Bool
        let findings: [Finding]
        let readBy: DecodedQR.Decoder?
        /// zbar alone (what verify read with before zxing-cpp and the other passes) read the source's text.
        let zbarAlone: Bool
    }

    /// The sources: (name, PNG, modules across with the quiet zone, the symbol's text).
    static func sources(in dir: URL) throws -> [(String, URL, Int, String)] {
        let examples = VerifyFixtures.specExamples
        var out: [(String, URL, Int, String)] = []
        // Ours: the spec's example 00 card through our encoder at 4 px per module (version 18), and the largest
        // single QR a card can have (version 22, 1195 JWS characters' worth of digits).
        let jws = try VerifyFixtures.text(examples.appendingPathComponent("example-00-d-jws.txt"))
        let ours = try QRCode(jws: jws)
        let oursPath = dir.appendingPathComponent("source-ours-v\(ours.version).png")
        try Data(try QRImage().png(ours)).write(to: oursPath)
        out.append(("ours-v\(ours.version)", oursPath, ours.size + 8, try QRNumeric.text(jws: jws)))
        let digits = (0..<1195).map { String(format: "%02d", ($0 * 37 + 11) % 78) }.joined()
        let big = try QRCode(byteSegment: Array("shc:/".utf8), numericSegment: Array(digits.utf8))
        #expect(big.version == 22)
        let bigPath = dir.appendingPathComponent("source-ours-v22.png")
        try Data(try QRImage().png(big)).write(to: bigPath)
        out.append(("ours-v22", bigPath, big.size + 8, "shc:/" + digits))
        // The spec's: its own example 00 QR (version 18, 6 px per module), and the vaccination IG's scenario 1 QR
        // (version 18, 2 px per module).
        for (name, png, txt, modules) in [
            ("spec-00", "derived/qr-png/example-00-g-qr-code-0.png", "example-00-f-qr-code-numeric-value-0.txt", 97),
            ("ig-1", "ig-vaccination-examples/Scenario1Bundle-qr-code-0.png", "ig-vaccination-examples/Scenario1Bundle-qr-code-numeric-value-0.txt", 97),
        ] {
            out.append((name, examples.appendingPathComponent(png), modules, try VerifyFixtures.text(examples.appendingPathComponent(txt))))
        }
        return out
    }

    /// - Parameter only: the names of the sources to render (all when nil).
    static func outcomes(only: Set<String>? = nil) throws -> [Outcome] {
        let dir = try TestSupport.tempDir("qr-robust")
        let sources = try sources(in: dir).filter { only?.contains($0.0) ?? true }
        let job: [String: Any] = [
            "out": dir.path,
            "sources": sources.map { ["name": $0.0, "path": $0.1.path, "modules": $0.2] },
        ]
        let jobPath = dir.appendingPathComponent("job.json")
        try JSONSerialization.data(withJSONObject: job).write(to: jobPath)
        let run = try TestSupport.run(TestSupport.python!, [script, jobPath.path])
        try #require(run.status == 0, "\(run.stderr)")
        let manifest = try JSONDecoder().decode([Rendering].self, from: Data(contentsOf: dir.appendingPathComponent("manifest.json")))
        let texts = Dictionary(uniqueKeysWithValues: sources.map { ($0.0, $0.3) })
        return try manifest.map { rendering in
            let bytes = try VerifyFixtures.bytes(dir.appendingPathComponent(rendering.file))
            // What verify's image check does: decode (zbar, zxing-cpp, zbar enlarged), then check each symbol.
            let symbols = (try? SHCQRCodeReader.read(image: bytes)) ?? []
            let symbol = symbols.first { $0.text == texts[rendering.source]! }
            let findings = symbol.map { QRImageCheck.symbolFindings($0, file: rendering.file, chunk: nil) } ?? []
            let unchecked: Set<RuleCode> = [.qrGridUnreadable, .qrSegmentsUnreadable]
            let checked = symbol != nil && symbol!.fullyRead && !findings.contains { unchecked.contains($0.code) }
            let image = try? GrayImage(imageBytes: bytes)
            let zbarAlone = try image.map { try QRDecoder().decode($0, decoders: [.zbar]).contains { $0.text == texts[rendering.source]! } } ?? false
            return Outcome(rendering: rendering, read: symbol != nil, checked: checked, findings: findings, readBy: symbol?.readBy,
                           zbarAlone: zbarAlone)
        }
    }

    /// The decode rates per distortion, as the Markdown table in docs/verify.md.
    static func table(_ outcomes: [Outcome]) -> String {
        var rows: [String] = [
            "| distortion | level | images | read by verify | all checks made | zbar alone | zxing-cpp 2 (Python) |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        var seen: [String] = []
        for o in outcomes where !seen.contains(o.rendering.distortion + "\u{0}" + o.rendering.level) {
            seen.append(o.rendering.distortion + "\u{0}" + o.rendering.level)
        }
        for key in seen {
            let group = outcomes.filter { $0.rendering.distortion + "\u{0}" + $0.rendering.level == key }
            let parts = key.split(separator: "\u{0}")
            rows.append("| \(parts[0]) | \(parts[1]) | \(group.count) | \(group.filter(\.read).count) | \(group.filter(\.checked).count) | "
                + "\(group.filter(\.zbarAlone).count) | \(group.filter { $0.rendering.zxingcpp != nil }.count) |")
        }
        let all = outcomes.count
        rows.append("| **all** | | \(all) | \(outcomes.filter(\.read).count) | \(outcomes.filter(\.checked).count) | "
            + "\(outcomes.filter(\.zbarAlone).count) | \(outcomes.filter { $0.rendering.zxingcpp != nil }.count) |")
        return rows.joined(separator: "\n")
    }

    /// True under `make sanitize` (ASan or TSan), where the suite runs many times slower: the renderings of one
    /// source are decoded instead of five (the same code paths; the rates are measured in the plain run).
    static let sanitized = TestSupport.threadSanitizer || dlsym(nil, "__asan_init") != nil

    @Test(.enabled(if: TestSupport.python != nil, "no test Python at .build/test-venv (run `make test`); skipped"))
    func distortedRenderingsAreReadAndChecked() throws {
        let outcomes = try Self.outcomes(only: Self.sanitized ? ["spec-00"] : nil)
        let table = Self.table(outcomes)
        print(table)
        try? table.write(toFile: VerifyFixtures.repoRoot.appendingPathComponent(".build/qr-robustness.md").path, atomically: true, encoding: .utf8)
        func rate(_ distortion: String, _ level: String? = nil) -> (read: Int, checked: Int, total: Int) {
            let group = outcomes.filter { $0.rendering.distortion == distortion && (level == nil || $0.rendering.level == level) }
            return (group.filter(\.read).count, group.filter(\.checked).count, group.count)
        }
        // What a mainstream decoder reads, verify reads (allowing for one image in fifty: the zxing-cpp Python
        // package is newer than Debian's library and may improve).
        let mainstream = outcomes.filter { $0.rendering.zxingcpp != nil }
        let missed = mainstream.filter { !$0.read }
        #expect(missed.count * 50 <= mainstream.count, "read by zxing-cpp but not by verify: \(missed.map(\.rendering.file))")
        // Never a silent OK: a symbol read but not fully checked carries the warning that says so.
        let unchecked: Set<RuleCode> = [.qrGridUnreadable, .qrSegmentsUnreadable]
        for o in outcomes where o.read && !o.checked {
            #expect(o.findings.contains { unchecked.contains($0.code) }, "\(o.rendering.file): \(o.findings.map(\.code))")
        }
        #expect(outcomes.filter(\.checked).count * 20 >= outcomes.filter(\.read).count * 19, "\(table)")
        // Floors, from the measurement in docs/verify.md: every turn, JPEG quality, contrast, light, noise and
        // photo rendering, and every scale from 1.5 pixels per module, is read with every check.
        for family in ["rotation", "jpeg", "contrast", "light", "noise", "photo"] {
            let r = rate(family)
            #expect(r.checked == r.total, "\(family): \(r)\n\(table)")
        }
        for level in ["1.5 px/module", "2 px/module", "3 px/module"] {
            let r = rate("scale", level)
            #expect(r.checked == r.total, "scale \(level): \(r)")
        }
        let perspective = rate("perspective")
        #expect(perspective.checked * 10 >= perspective.total * 9, "perspective: \(perspective)")
        // The limits: a blur of half a module or more, or 1.25 pixels per module, defeats the mainstream
        // decoder too (what the docs say verify cannot read).
        for (family, level) in [("blur", "σ 0.75 module"), ("scale", "1.25 px/module")] {
            let group = outcomes.filter { $0.rendering.distortion == family && $0.rendering.level == level }
            #expect(group.allSatisfy { $0.rendering.zxingcpp == nil }, "\(family) \(level)")
        }
    }
}
