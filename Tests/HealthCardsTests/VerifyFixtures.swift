import Foundation

/// Paths to the shared fixtures, found relative to this file: the repo root is three levels up from
/// Tests/HealthCardsTests/VerifyFixtures.swift, and shared/ sits beside the repo.
enum VerifyFixtures {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let shared = repoRoot.deletingLastPathComponent().appendingPathComponent("shared")
    static let data = shared.appendingPathComponent("data")
    static let specExamples = shared.appendingPathComponent("fixtures/spec-examples")

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    static func text(_ url: URL) throws -> String {
        try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The `code` column of a shared/data CSV (first field of each line after the header; codes never need quoting).
    static func codes(csv name: String) throws -> [String] {
        try text(data.appendingPathComponent(name)).split(separator: "\n").dropFirst()
            .map { String($0.split(separator: ",", maxSplits: 1)[0]) }
    }

    /// Files in `dir` whose names end with `suffix`, sorted by name.
    static func files(in dir: URL, suffix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(suffix) }.sorted()
            .map { dir.appendingPathComponent($0) }
    }
}
