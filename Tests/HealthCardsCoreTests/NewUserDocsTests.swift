import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// What a new user reads first says what they need before they run anything: the README's prerequisites stand
/// right before the two quick-start commands (they were twenty lines after them), with how long the first build
/// takes; the library's docs say what `now` is.
@Suite struct NewUserDocsTests {
    static func read(_ name: String) throws -> String {
        try String(contentsOf: VerifyFixtures.repoRoot.appendingPathComponent(name), encoding: .utf8)
    }

    @Test func theReadmeSaysWhatTheQuickStartNeedsBeforeIt() throws {
        let readme = try Self.read("README.md")
        let section = try #require(readme.range(of: "## Quick start\n"))
        let block = try #require(readme.range(of: "```\nmake demo\nmake test\n```\n", range: section.upperBound..<readme.endIndex))
        let before = readme[section.upperBound..<block.lowerBound]
        // Nothing but prose between the heading and the two commands, and all of it prerequisites.
        #expect(!before.contains("```") && !before.contains("##"), "\(before)")
        for needed in ["Debian 12", "Swift 6", "apt-get", "as root", "10–25 minutes", "2 cores"] {
            #expect(before.contains(needed), "\(needed) is not before the quick start: \(before)")
        }
        #expect(readme.components(separatedBy: "Debian 12 with the Swift 6 toolchain").count == 2, "said once")
    }

    @Test func theLibraryDocsSayNowIsInt64Seconds() throws {
        let library = try Self.read("docs/library.md")
        #expect(library.contains("`now: Int64`, whole seconds since 1970"), "docs/library.md")
        #expect(library.contains("Int64(Date().timeIntervalSince1970)"))
    }
}
