import Foundation

/// Paths to the test fixtures, found relative to this file: the repo root is three levels up from
/// Tests/HealthCardsTestSupport/VerifyFixtures.swift. The spec examples, SHL example, cases and terminology
/// data are copied into `Tests/Fixtures/` (README there), so a plain clone runs the tests; only the
/// independent checker is read from `../shared` beside the repository (`TestSupport.checker`).
package enum VerifyFixtures {
    package static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// `../shared` beside the repository: CI always has it, a plain clone may not.
    package static let shared = repoRoot.deletingLastPathComponent().appendingPathComponent("shared")
    package static let fixtures = repoRoot.appendingPathComponent("Tests/Fixtures")
    package static let data = fixtures.appendingPathComponent("data")
    package static let specExamples = fixtures.appendingPathComponent("spec-examples")
    /// `Tests/Fixtures/cases/<name>`: inputs from publicly reported problems (README there).
    package static let cases = fixtures.appendingPathComponent("cases")
    /// `Tests/Fixtures/shl/`: the SMART Health Links IG's encryption example.
    package static let shl = fixtures.appendingPathComponent("shl")

    package static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    package static func text(_ url: URL) throws -> String {
        try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The `code` column of a shared/data CSV (first field of each line after the header; codes never need quoting).
    package static func codes(csv name: String) throws -> [String] {
        try text(data.appendingPathComponent(name)).split(separator: "\n").dropFirst()
            .map { String($0.split(separator: ",", maxSplits: 1)[0]) }
    }

    /// Files in `dir` whose names end with `suffix`, sorted by name.
    package static func files(in dir: URL, suffix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(suffix) }.sorted()
            .map { dir.appendingPathComponent($0) }
    }
}
