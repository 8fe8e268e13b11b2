import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsFixtures
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsVerify
import HealthCardsTestSupport

/// Issue 33, point 2: after a revocation and a key rotation, the re-run refuses the revoked person, and the card an
/// earlier run left in `cards/` (a card `verify --jwks SITE` calls REVOKED) is moved with its QR image to
/// `withdrawn/`, said in the summary and coded `CARD_WITHDRAWN` (not `INPUT_UNREADABLE`). Through the real CLI.
@Suite struct WithdrawnCardTests {
    @Test func aRevokedPersonsCardLeavesTheHandOutFoldersAfterARotation() throws {
        let f = try RotationRevocationTests.issuer()
        func issue(key: String, expect status: Int32) throws -> TestSupport.Run {
            try SiteTestSupport.cli(
                [
                    "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--rid-secret", f.secret, "--site", f.site.path,
                    "--template", RotationRevocationTests.templates.appendingPathComponent("covid19-vaccination.json").path,
                    "--out", f.out.path,
                    RotationRevocationTests.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
                ], expect: status)
        }
        // The first run of the fixture wrote no QR images: this one (same key) adds them beside the cards.
        _ = try issue(key: f.old.path, expect: 0)
        let oldCard = try SiteTestSupport.bytes(f.out.path + "/cards/P-1001.smart-health-card")
        #expect(FileIO.exists(f.out.path + "/qr/P-1001.png"))
        try f.revoke(key: f.old.path, ["--id", "P-1001"])
        try SiteTestSupport.cli(["site", "--out", f.site.path, f.new.path, f.old.path])

        let run = try issue(key: f.new.path, expect: 1)
        #expect(run.stderr.contains("1 card of revoked people"), "\(run.stderr)")
        #expect(run.stderr.contains("withdrawn/"), "\(run.stderr)")
        let line = try #require(try TestSupport.report(f.out).first { $0["id"] == "P-1001" })
        let codes = (line["warnings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
        #expect(codes.contains("CARD_WITHDRAWN") && !codes.contains("INPUT_UNREADABLE"), "\(line)")

        // Nothing in cards/ is called REVOKED by the Verify layer with the site's keys and lists; withdrawn/ holds it.
        let cards = try SiteTestSupport.cli(["verify", "--jwks", f.site.path, f.out.path + "/cards"])
        #expect(!cards.stdout.contains("REVOKED"), "\(cards.stdout)")
        #expect(!FileIO.exists(f.out.path + "/cards/P-1001.smart-health-card"))
        #expect(!FileIO.exists(f.out.path + "/qr/P-1001.png"))
        let withdrawn = f.out.path + "/withdrawn/cards/P-1001.smart-health-card"
        #expect(try SiteTestSupport.bytes(withdrawn) == oldCard)
        #expect(FileIO.mode(withdrawn) == 0o600 && FileIO.mode(f.out.path + "/withdrawn") == 0o700)
        #expect(FileIO.exists(f.out.path + "/withdrawn/qr/P-1001.png"))
        let verifyWithdrawn = try SiteTestSupport.cli(["verify", "--jwks", f.site.path, withdrawn], expect: 1)
        #expect(verifyWithdrawn.stdout.contains("REVOKED"), "\(verifyWithdrawn.stdout)")

        // Run again: nothing more to move, and the withdrawn card stays where it is.
        let again = try issue(key: f.new.path, expect: 1)
        #expect(!again.stderr.contains("withdrawn/"), "\(again.stderr)")
        #expect(try SiteTestSupport.bytes(withdrawn) == oldCard)
    }

    /// A name already taken in withdrawn/ is never overwritten, and a symbolic link is never moved.
    @Test func aMoveNeverOverwritesAndLeavesLinks() throws {
        let dir = try TestSupport.tempDir("withdrawn")
        let out = dir.path
        try FileIO.createDirectories(out + "/cards")
        try FileIO.createDirectories(out + "/withdrawn/cards")
        try FileIO.writeAtomically(Array("new".utf8), to: out + "/cards/X.smart-health-card", access: .ownerOnly)
        try FileIO.writeAtomically(Array("old".utf8), to: out + "/withdrawn/cards/X.smart-health-card", access: .ownerOnly)
        try FileIO.createDirectories(out + "/pdf")
        #expect(symlink(out + "/elsewhere.pdf", out + "/pdf/X.pdf") == 0)
        let files = CardWithdrawal.files(name: "X", outDir: out)
        #expect(files == ["cards/X.smart-health-card", "pdf/X.pdf"])
        let (moved, left) = try CardWithdrawal.move(files, outDir: out)
        #expect(moved.map(\.to) == ["withdrawn/cards/X.2.smart-health-card"] && left == ["pdf/X.pdf"])
        #expect(try FileIO.read(out + "/withdrawn/cards/X.smart-health-card") == Array("old".utf8))
        #expect(try FileIO.read(out + "/withdrawn/cards/X.2.smart-health-card") == Array("new".utf8))
        #expect(!FileIO.exists(out + "/cards/X.smart-health-card") && FileIO.linkTarget(out + "/pdf/X.pdf") != nil)
    }
}
