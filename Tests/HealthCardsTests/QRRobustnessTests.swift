import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

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
        // The spec's: its own example 00 QR (version 18, 6 px per module) and a chunk of example 02 (version 21),
        // and the vaccination IG's scenario 1 QR (version 18, 2 px per module).
        for (name, png, txt, modules) in [
            ("spec-00", "derived/qr-png/example-00-g-qr-code-0.png", "example-00-f-qr-code-numeric-value-0.txt", 97),
            ("spec-02", "derived/qr-png/example-02-g-qr-code-0.png", "example-02-f-qr-code-numeric-value-0.txt", 109),
            ("ig-1", "ig-vaccination-examples/Scenario1Bundle-qr-code-0.png", "ig-vaccination-examples/Scenario1Bundle-qr-code-numeric-value-0.txt", 97),
        ] {
            out.append((name, examples.appendingPathComponent(png), modules, try VerifyFixtures.text(examples.appendingPathComponent(txt))))
        }
        return out
    }

    static func outcomes() throws -> [Outcome] {
        let dir = try TestSupport.tempDir("qr-robust")
        let sources = try sources(in: dir)
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
            return Outcome(rendering: rendering, read: symbol != nil, checked: checked, findings: findings, readBy: symbol?.readBy)
        }
    }

    /// The decode rates per distortion, as the Markdown table in docs/verify.md.
    static func table(_ outcomes: [Outcome]) -> String {
        var rows: [String] = ["| distortion | level | images | read by verify | all checks made | read by zxing-cpp (Python) |", "|---|---|---:|---:|---:|---:|"]
        var seen: [String] = []
        for o in outcomes where !seen.contains(o.rendering.distortion + "\u{0}" + o.rendering.level) {
            seen.append(o.rendering.distortion + "\u{0}" + o.rendering.level)
        }
        for key in seen {
            let group = outcomes.filter { $0.rendering.distortion + "\u{0}" + $0.rendering.level == key }
            let parts = key.split(separator: "\u{0}")
            rows.append("| \(parts[0]) | \(parts[1]) | \(group.count) | \(group.filter(\.read).count) | \(group.filter(\.checked).count) | "
                + "\(group.filter { $0.rendering.zxingcpp != nil }.count) |")
        }
        let all = outcomes.count
        rows.append("| **all** | | \(all) | \(outcomes.filter(\.read).count) | \(outcomes.filter(\.checked).count) | "
            + "\(outcomes.filter { $0.rendering.zxingcpp != nil }.count) |")
        return rows.joined(separator: "\n")
    }

    @Test(.enabled(if: TestSupport.python != nil, "no test Python at .build/test-venv (run `make test`); skipped"))
    func distortedRenderingsAreReadAndChecked() throws {
        let outcomes = try Self.outcomes()
        let table = Self.table(outcomes)
        print(table)
        try? table.write(toFile: VerifyFixtures.repoRoot.appendingPathComponent(".build/qr-robustness.md").path, atomically: true, encoding: .utf8)
        for o in outcomes {
            print(o.rendering.file, o.read, o.checked, o.readBy?.rawValue ?? "-", o.rendering.zxingcpp != nil, o.findings.map(\.code.rawValue))
        }
    }
}
