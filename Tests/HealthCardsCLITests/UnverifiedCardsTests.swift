import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsVerify
import HealthCardsFixtures
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsTestSupport

/// Issue 33, point 4: a store that serves cards takes no card it could not verify unless the operator says so.
/// `cards import` without `--site` is refused (exit 2, nothing written) unless `--accept-unverified-cards`; `link
/// update --jwks` verifies the cards as `link create --jwks` does. And (point 12) `cards import` counts the people
/// the report marks revoked, and their stored card as revoked rather than replaced. Through the real CLI.
@Suite struct UnverifiedCardsTests {
    @Test func cardsImportWithoutAKeySourceIsRefusedUnlessAccepted() throws {
        let batch = try HealthCardsIssueTests.batch()
        let dbFile = batch.dir.appendingPathComponent("unchecked.db").path
        let refused = try TestSupport.cli(["cards", "import", "--db", "sqlite:" + dbFile, batch.vax.path])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("--site SITE") && refused.stderr.contains("--accept-unverified-cards"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dbFile), "nothing was written")
        let accepted = try TestSupport.cli(["cards", "import", "--db", "sqlite:" + dbFile, "--accept-unverified-cards", batch.vax.path])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stderr.contains("warning: the cards' signatures are not checked"), "\(accepted.stderr)")
        let help = try TestSupport.cli(["cards", "import", "--help"])
        #expect(help.stdout.contains("--accept-unverified-cards"))
    }

    @Test func linkUpdateWithKeysRefusesAnAlteredCard() throws {
        let dir = try TestSupport.tempDir("link-update-jwks")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let base = LinkCommandTests.base
        let link = try ServerTestSupport.makeLink("long", db: db, base: base, in: dir, ["--long-term"])
        let stored = try LinkCommandTests.links(db)
        // The spec's card with its family name changed after signing.
        let file = try #require(try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))).objectValue)
        let parts = try #require(file["verifiableCredential"]?.arrayValue?.first?.stringValue).split(separator: ".").map(String.init)
        let payload = String(decoding: try RawInflate.inflate(try #require(Base64URL.decode(parts[1]))), as: UTF8.self)
        let altered = payload.replacingOccurrences(of: "\"family\":\"", with: "\"family\":\"X")
        let forged = parts[0] + "." + Base64URL.encode(try RawDeflater().deflate(Array(altered.utf8))) + "." + parts[2]
        let card = try TestSupport.write(
            JSONWriter.minifiedString(.object(["verifiableCredential": .array([.string(forged)])])), to: "forged.smart-health-card",
            in: dir)
        let refused = try ServerTestSupport.link(
            "update", db: db, base: base, ["--link", link.file, "--jwks", ServerTestSupport.specJWKS, card], expect: 2)
        #expect(refused.stderr.contains("SIG_INVALID") && refused.stderr.contains("The link was not updated"), "\(refused.stderr)")
        #expect(try LinkCommandTests.links(db) == stored, "nothing changed")
        try ServerTestSupport.link(
            "update", db: db, base: base, ["--link", link.file, "--jwks", ServerTestSupport.specJWKS, ServerTestSupport.card])
        let help = try TestSupport.cli(["link", "update", "--help"])
        #expect(help.stdout.contains("--jwks KEYS"))
    }

    /// The rotation scenario: a person imported, then revoked and refused by the re-run under a new key. The
    /// re-import removes their stored card and says so (before: "4 replaced, 0 revoked left out or removed").
    @Test func aPersonTheReportMarksRevokedIsCountedAsRevoked() throws {
        let f = try RotationRevocationTests.issuer()
        let db = "sqlite:" + f.dir.appendingPathComponent("cards.db").path
        let first = try SiteTestSupport.cli(["cards", "import", "--db", db, "--site", f.site.path, f.out.path])
        #expect(first.stdout.contains("4 card(s) of 4 person(s) loaded"), "\(first.stdout)")
        try f.revoke(key: f.old.path, ["--id", "P-1001"])
        try SiteTestSupport.cli(["site", "--out", f.site.path, f.new.path, f.old.path])
        try f.issue(key: f.new.path, expect: 1)
        // The report is newer than the first import's (its modification time, whole seconds).
        var times = [timespec(tv_sec: time(nil) + 5, tv_nsec: 0), timespec(tv_sec: time(nil) + 5, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, f.out.path + "/report.ndjson", &times, 0) == 0)
        let again = try SiteTestSupport.cli(["cards", "import", "--db", db, "--site", f.site.path, f.out.path])
        #expect(again.stdout.contains("3 card(s) of 4 person(s) loaded, 3 replaced, 1 revoked card(s) left out or removed, 1 person(s) the report marks revoked"), "\(again.stdout)")
        let store = DatabaseCardStore(database: try Database(url: try DatabaseURL(db), role: .operatorCommand, create: false, maxConnections: 1, now: Clock.nowSeconds()))
        #expect(try store.cards(patient: "P-1001")?.isEmpty == true)
    }
}
