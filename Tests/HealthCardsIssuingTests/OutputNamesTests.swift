import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// `OutputNames.safe`: when a record's file name gets the hash suffix, checked against the examples in
/// docs/batch.md and docs/pipeline.md, so the two pages and the code say the same thing.
@Suite struct OutputNamesTests {
    /// `-` and the first 8 hex digits of the SHA-256 of the id.
    static func suffix(_ id: String) -> String {
        "-" + Digest.sha256(Array(id.utf8)).prefix(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func safeIdsKeepTheirNameAndOthersGetTheHashSuffix() {
        for id in ["P-1001", "a.b_c-D9", String(repeating: "x", count: 100)] {
            #expect(OutputNames.safe(id) == id)
        }
        #expect(OutputNames.safe("a b") == "a_b" + Self.suffix("a b"))
        #expect(OutputNames.safe(".hidden") == "_hidden" + Self.suffix(".hidden"))
        #expect(OutputNames.safe("") == Self.suffix(""))
        let long = String(repeating: "y", count: 101)
        #expect(OutputNames.safe(long) == String(repeating: "y", count: 100) + Self.suffix(long))
        // Replacing alone could make two ids one name; the suffix keeps them apart.
        #expect(OutputNames.safe("a/b") != OutputNames.safe("a\\b") && OutputNames.safe("a/b") != "a_b")
    }

    /// The `| `id` | `cards/NAME.smart-health-card` |` rows of docs/batch.md and the `` `a/b` → `NAME` ``
    /// example of docs/pipeline.md are what the code makes.
    @Test func docsExamplesAreWhatTheCodeMakes() throws {
        let docs = VerifyFixtures.repoRoot.appendingPathComponent("docs")
        let batch = try String(contentsOf: docs.appendingPathComponent("batch.md"), encoding: .utf8)
        let row = try Regex(#"^\| `([^`]*)` \| `cards/([^`]*)\.smart-health-card` \|$"#)
        var examples: [(String, String)] = batch.split(separator: "\n").compactMap { line in
            guard let match = try? row.wholeMatch(in: String(line)) else { return nil }
            return (String(match.output[1].substring!), String(match.output[2].substring!))
        }
        #expect(examples.count >= 3 && examples.contains { $0.0 == "P-1001" && $0.1 == "P-1001" })
        let pipeline = try String(contentsOf: docs.appendingPathComponent("pipeline.md"), encoding: .utf8)
        let arrow = try #require(try Regex(#"`([^`]+)` → `([^`]+)`"#).firstMatch(in: pipeline))
        examples.append((String(arrow.output[1].substring!), String(arrow.output[2].substring!)))
        for (id, name) in examples {
            #expect(OutputNames.safe(id) == name, "\(id)")
        }
    }
}
