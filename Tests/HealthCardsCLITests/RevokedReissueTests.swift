import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures
import HealthCardsTestSupport

/// `issue --site` never signs a card that the site's revocation list already revokes, says how to reissue, and
/// `revoke --before --narrow` lets the corrected card through while the old one stays revoked. Through the CLI.
@Suite struct RevokedReissueTests {
    @Test func aRevokedPersonGetsNoRevokedCardAndNarrowingLetsTheCorrectionThrough() throws {
        let f = try RevokeTests.fixture()
        let rid = try f.rid(of: "P-1001")
        let cardPath = f.out.path + "/cards/P-1001.smart-health-card"
        let oldCard = try SiteTestSupport.bytes(cardPath)
        try f.revoke(["--id", "P-1001"])

        // Reissuing P-1001 (the tester's case: it was signed, reported "issued", and every verifier said REVOKED).
        let siteArguments = ["--rid-secret", f.secret, "--site", f.site.path]
        try SiteTestSupport.issueSample(key: f.key, out: f.out, extra: siteArguments + ["--force"], expect: 1)
        let line = try #require(try TestSupport.report(f.out).first { $0["id"] == "P-1001" })
        #expect(line["status"] == "rejected" && line["revoked"] == .bool(true))
        #expect(line["rid"]?.stringValue == rid && line["ridFrom"] == "P-1001")
        // The code says RID_REVOKED; the message does not repeat it as a "REVOKED:" prefix.
        #expect(line["errors"]?[0]?["code"] == "RID_REVOKED")
        let error = try #require(line["errors"]?[0]?["message"]?.stringValue)
        #expect(
            error.hasPrefix("vc.rid \(rid) (of id 'P-1001') is revoked by the entry '\(rid)' in \(f.crlPath)"),
            "\(error)")
        #expect(error.contains("to the cards of id 'P-1001' issued before ") && error.contains(" --narrow`"), "\(error)")
        // Not re-signed, and the revoked card left the hand-out folder (issue 33): it is in withdrawn/.
        #expect(!FileIO.exists(cardPath))
        #expect(try SiteTestSupport.bytes(f.out.path + "/withdrawn/cards/P-1001.smart-health-card") == oldCard)
        // The others were issued.
        #expect(try TestSupport.report(f.out).filter { $0["status"] == "issued" }.count == 3)

        // --before alone cannot narrow the plain entry: nothing changes, and a note says --narrow.
        let now = Clock.nowSeconds()
        let before = now - 5
        let plain = try f.revoke(["--id", "P-1001", "--before", String(before)])
        #expect(plain.stdout.hasPrefix("already revoked \(rid).\(before) (patient P-1001; by \(rid))\n"))
        #expect(plain.stderr.contains("run this again with --narrow"), "\(plain.stderr)")
        #expect(try f.crl().entries.first { $0.rid == rid } == CRL.Entry(rid: rid))
        // With --narrow (checked against the report of the refused run, whose line keeps the rid), it becomes rid.T.
        let narrowed = try f.revoke(["--id", "P-1001", "--before", String(before), "--narrow"])
        #expect(
            narrowed.stdout.hasPrefix(
                "narrowed \(rid) to \(rid).\(before) (patient P-1001): cards issued from \(before) on verify again\n"),
            "\(narrowed.stdout)")
        #expect(try f.crl().entries.first { $0.rid == rid } == CRL.Entry(rid: rid, before: before))

        // Now the corrected card is issued in place of the revoked one, and verifies; the old one is still revoked.
        try SiteTestSupport.issueSample(key: f.key, out: f.out, nbf: String(now), extra: siteArguments)
        let reissued = try #require(try TestSupport.report(f.out).first { $0["id"] == "P-1001" })
        #expect(reissued["status"] == "issued" && reissued["alreadyIssued"] == .bool(false))
        // The revoked card was withdrawn by the refused run, so nothing of it is left in cards/ to replace.
        #expect(reissued["warnings"]?.arrayValue?.isEmpty == true, "\(reissued)")
        let verify = try SiteTestSupport.cli(["verify", "--jwks", f.site.path, cardPath])
        #expect(verify.stdout.contains(" 0 error(s)"), "\(verify.stdout)")
        let old = try TestSupport.write(
            String(decoding: oldCard, as: UTF8.self), to: "old.smart-health-card", in: f.dir)
        let verifyOld = try SiteTestSupport.cli(["verify", "--jwks", f.site.path, old], expect: 1)
        #expect(verifyOld.stdout.contains("REVOKED"), "\(verifyOld.stdout)")
    }

    /// A list entry with a timestamp still to come revokes a card issued now: refused, saying from when it can be.
    @Test func aCardBeforeAFutureTimestampIsRefusedUntilThen() throws {
        let f = try RevokeTests.fixture()
        let rid = try f.rid(of: "P-1002")
        let until = Clock.nowSeconds() + 3_600
        try f.revoke(["--id", "P-1002", "--before", String(until)])
        try SiteTestSupport.issueSample(
            key: f.key, out: f.out, nbf: String(Clock.nowSeconds()),
            extra: ["--rid-secret", f.secret, "--site", f.site.path], expect: 1)
        let line = try #require(try TestSupport.report(f.out).first { $0["id"] == "P-1002" })
        let error = try #require(line["errors"]?[0]?["message"]?.stringValue)
        #expect(error.contains("is revoked for cards issued before \(until)"), "\(error)")
        #expect(
            error.contains("by the entry '\(rid).\(until)'")
                && error.contains("To issue it, run this again from then on ("), "\(error)")
    }

    /// The lookup `issue --site` makes for every record (indexed by rid) finds the list's first entry that revokes
    /// the card, as a scan of the list would, when a hand-edited list names a rid more than once.
    @Test func theIndexedLookupFindsTheFirstEntryThatRevokes() {
        let entries = [
            CRL.Entry(rid: "aaa", before: 100), CRL.Entry(rid: "bbb"), CRL.Entry(rid: "aaa", before: 300),
            CRL.Entry(rid: "aaa"), CRL.Entry(rid: "ccc", before: 50),
        ]
        let list = IndexedRevocationList(crl: CRL(kid: "k", entries: entries), location: "crl.json")
        #expect(list.entry(revoking: "aaa", nbf: 99) == CRL.Entry(rid: "aaa", before: 100))
        #expect(list.entry(revoking: "aaa", nbf: 100) == CRL.Entry(rid: "aaa", before: 300))
        #expect(list.entry(revoking: "aaa", nbf: 300) == CRL.Entry(rid: "aaa"))
        #expect(list.entry(revoking: "bbb", nbf: 1_700_000_000) == CRL.Entry(rid: "bbb"))
        #expect(list.entry(revoking: "ccc", nbf: 49) == CRL.Entry(rid: "ccc", before: 50))
        #expect(list.entry(revoking: "ccc", nbf: 50) == nil)
        #expect(list.entry(revoking: "ddd", nbf: 0) == nil)
        for rid in ["aaa", "bbb", "ccc", "ddd"] {
            for nbf: Int64 in [0, 49, 50, 99, 100, 299, 300] {
                #expect((list.entry(revoking: rid, nbf: nbf) != nil) == list.crl.revokes(rid: rid, nbf: Double(nbf)))
            }
        }
    }

    /// The one predicate, for a card's JSON nbf (a Double) and for whole seconds (Int64): `nbf < T` exactly. A
    /// timestamp above 2^53 is not rounded to a Double (2^53 + 1 as a Double is 2^53, which made a card at 2^53
    /// look not revoked), a fraction counts (T - 0.5 is before T), and hostile values (NaN, infinities, 1e300) do
    /// not trap.
    @Test func theRevocationPredicateIsExactForBothNBFForms() {
        let big: Int64 = (1 << 53) + 1
        let crl = CRL(kid: "k", entries: [CRL.Entry(rid: "aaa", before: big), CRL.Entry(rid: "bbb", before: 100), CRL.Entry(rid: "ccc")])
        #expect(crl.revokes(rid: "aaa", nbf: Double(big - 1)))
        #expect(crl.revokes(rid: "aaa", nbfSeconds: big - 1))
        #expect(!crl.revokes(rid: "aaa", nbfSeconds: big))
        #expect(crl.revokes(rid: "bbb", nbf: 99.5) && crl.revokes(rid: "bbb", nbf: 99.999))
        #expect(!crl.revokes(rid: "bbb", nbf: 100) && !crl.revokes(rid: "bbb", nbf: 100.5))
        #expect(crl.entry(revoking: "bbb", nbf: 99.5) == CRL.Entry(rid: "bbb", before: 100))
        #expect(crl.revokes(rid: "bbb", nbf: -.infinity) && crl.revokes(rid: "bbb", nbf: -1e300))
        #expect(!crl.revokes(rid: "bbb", nbf: .infinity) && !crl.revokes(rid: "bbb", nbf: 1e300))
        #expect(!crl.revokes(rid: "bbb", nbf: .nan) && !crl.revokes(rid: "bbb", nbfSeconds: .max))
        #expect(crl.revokes(rid: "bbb", nbfSeconds: .min))
        for nbf in [Double.nan, .infinity, -.infinity, 1e300, 0, 1_700_000_000.25] {
            #expect(crl.revokes(rid: "ccc", nbf: nbf))
            #expect(!crl.revokes(rid: "ddd", nbf: nbf))
        }
    }
}
