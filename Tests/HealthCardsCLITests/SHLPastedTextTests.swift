import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsTestSupport

/// Link texts as people paste them, checked by the real `verify` with the link's site (`--shl-site`), so that a
/// link read is also opened and its card verified:
/// - spaces, tabs and line ends around an otherwise good `shlink:/…` or viewer URL are trimmed with a warning
///   (they were an error: SHL_PREFIX for an argument, FILE_TRAILING_CHARACTERS for a file); a break inside stays
///   an error that says where it is;
/// - a viewer URL with no `#` before `shlink:/` says the `#` is missing (it was "nothing to check");
/// - a viewer-prefixed link names its viewer in the text and in `--json`;
/// - a label within 80 code points but over 80 UTF-16 code units (as JavaScript counts) is warned;
/// - an `http:` link URL whose host publishes the site at `https:` is still opened from that site, with the warning.
@Suite struct SHLPastedTextTests {
    typealias Fixture = SHLVerifyTests.Fixture

    /// `verify --json --jwks SITE --shl-site SITE ARGS`: the status, the link's report and its card's.
    static func verify(_ f: Fixture, _ args: [String]) throws -> (status: Int32, link: JSONValue?, card: JSONValue?, text: String) {
        let run = try TestSupport.cli(["verify", "--json", "--jwks", f.site, "--shl-site", f.site, "--now", "1800000000"] + args)
        let json = try JSONParser.parse(run.stdout)
        let text = try TestSupport.cli(["verify", "--jwks", f.site, "--shl-site", f.site, "--now", "1800000000"] + args)
        return (run.status, json["links"]?[0], json["credentials"]?[0], text.stdout)
    }

    static func codes(_ report: JSONValue?) -> [String] {
        (report?["findings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
    }

    @Test func whitespaceAroundAPastedLinkIsTrimmedWithAWarning() throws {
        let f = try Fixture()
        let link = try VerifyFixtures.text(URL(fileURLWithPath: try f.link("good")))
        // As an argument (a shell keeps what is quoted) and as a file.
        let file = try TestSupport.write("  \t" + link + "  \r\n\r\n", to: "pasted.txt", in: f.dir)
        for given in ["  " + link + "\t\n", "\n" + link, file] {
            let (status, report, card, text) = try Self.verify(f, [given])
            #expect(status == 0, "\(text)")
            #expect(Self.codes(report) == ["SHL_TEXT_WHITESPACE"], "\(text)")
            let finding = report?["findings"]?[0]
            #expect(finding?["severity"] == "warning", "\(text)")
            #expect(finding?["message"]?.stringValue?.contains("trimmed") == true)
            #expect(card?["verified"] == .bool(true), "the link was opened and its card verified: \(text)")
        }
        // A break inside the link stays an error, which says where it is.
        let half = link.index(link.startIndex, offsetBy: 60)
        for inside in ["\n", " ", "\r\n"] {
            let broken = String(link[..<half]) + inside + String(link[half...])
            let (status, report, _, text) = try Self.verify(f, [broken])
            #expect(status == 1, "\(text)")
            #expect(Self.codes(report) == ["SHL_PAYLOAD_ENCODING"], "\(text)")
            #expect(report?["findings"]?[0]?["message"]?.stringValue?.contains("at character 52") == true, "\(text)")
        }
    }

    @Test func aViewerURLWithoutItsHashSaysTheHashIsMissing() throws {
        let f = try Fixture()
        let link = try VerifyFixtures.text(URL(fileURLWithPath: try f.link("good")))
        let viewerless = "https://viewer.example.org/view" + link
        let file = try TestSupport.write(viewerless + "\n", to: "nohash.txt", in: f.dir)
        for given in [viewerless, file] {
            let (status, report, _, text) = try Self.verify(f, [given])
            #expect(status == 1, "\(text)")
            #expect(!text.contains("NOTHING_TO_CHECK") && !text.contains("FILE_UNKNOWN_TYPE"), "\(text)")
            let finding = try #require(report?["findings"]?.arrayValue?.first { $0["code"] == "SHL_VIEWER_URL" }, "\(text)")
            #expect(finding["severity"] == "error")
            #expect(finding["message"]?.stringValue?.contains("the '#' is missing") == true, "\(finding)")
            #expect(Self.codes(report).filter { $0 == "SHL_VIEWER_URL" || $0 == "SHL_PREFIX" }.count == 1, "\(text)")
        }
        // In a folder walk too: the file is a link, not something skipped.
        let folder = f.dir.appendingPathComponent("walk")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: file), to: folder.appendingPathComponent("nohash.txt"))
        let walked = try Self.verify(f, [folder.path])
        #expect(Self.codes(walked.link).contains("SHL_VIEWER_URL"), "\(walked.text)")
    }

    @Test func aViewerPrefixedLinkReportsItsViewer() throws {
        let f = try Fixture()
        let viewer = "https://viewer.example.org/open#"
        let path = try f.link("viewer", text: { viewer + $0 })
        let (status, report, card, text) = try Self.verify(f, [path])
        #expect(status == 0 && card?["verified"] == .bool(true), "\(text)")
        #expect(report?["notes"]?.arrayValue?.contains(.string("viewer \(viewer)")) == true, "\(report ?? .null)")
        #expect(text.contains("  note     viewer \(viewer)\n"), "\(text)")
        // A bare link names none.
        let bare = try Self.verify(f, [try f.link("bare")])
        #expect(!bare.text.contains("note     viewer"), "\(bare.text)")
    }

    @Test func aLabelIsAlsoJudgedInUTF16Units() throws {
        let f = try Fixture()
        // 45 emoji: 45 code points (within the IG's 80), 90 UTF-16 code units (over 80 for label.length in JS).
        let emoji = String(repeating: "🩺", count: 45)
        let (status, report, _, text) = try Self.verify(f, [try f.link("emoji") { $0["label"] = .string(emoji) }])
        #expect(status == 0, "a warning: \(text)")
        let finding = try #require(report?["findings"]?.arrayValue?.first { $0["code"] == "SHL_LABEL_UTF16" }, "\(text)")
        #expect(finding["severity"] == "warning")
        #expect(finding["message"]?.stringValue?.contains("45 Unicode characters") == true)
        #expect(finding["message"]?.stringValue?.contains("90 UTF-16 code units") == true)
        let plain = try Self.verify(f, [try f.link("plain") { $0["label"] = .string(String(repeating: "é", count: 80)) }])
        #expect(Self.codes(plain.link) == [], "\(plain.text)")
        // What the toolkit writes stays within both counts.
        #expect(throws: HealthCardError.self) { try SHLLabel(template: emoji) }
    }

    @Test func anHTTPLinkURLIsCheckedAgainstTheHTTPSSite() throws {
        let f = try Fixture()
        let path = try f.link("http") { payload in
            payload["url"] = .string(payload["url"]!.stringValue!.replacingOccurrences(of: "https://", with: "http://"))
        }
        let (status, report, card, text) = try Self.verify(f, [path])
        #expect(Self.codes(report) == ["SHL_URL_NOT_HTTPS"], "\(text)")
        #expect(report?["findings"]?[0]?["severity"] == "warning")
        #expect(card?["verified"] == .bool(true), "the file was found in the https site and its card verified: \(text)")
        #expect(status == 0, "\(text)")
    }
}
