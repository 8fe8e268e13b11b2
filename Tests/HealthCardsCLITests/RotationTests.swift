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

/// Yearly key rotation: cards signed by a retired key keep verifying while its public key stays published.
@Suite struct RotationTests {
    /// Cards of a key retired in 2025 and of its 2026 successor, and one site publishing both keys.
    struct TwoYears {
        var old: (path: String, kid: String)
        var new: (path: String, kid: String)
        var outOld: URL
        var outNew: URL
        var site: URL
        var siteRun: TestSupport.Run
        var cards: [URL]
    }

    static func twoYears() throws -> TwoYears {
        let dir = try TestSupport.tempDir("rotation")
        let old = try SiteTestSupport.keygen("issuer-2025.pem", in: dir)
        let new = try SiteTestSupport.keygen("issuer-2026.pem", in: dir)
        let outOld = dir.appendingPathComponent("out-2025")
        let outNew = dir.appendingPathComponent("out-2026")
        try SiteTestSupport.issueSample(key: old.path, out: outOld, nbf: "1700000000")
        try SiteTestSupport.issueSample(key: new.path, out: outNew, nbf: "1735700000")
        let site = dir.appendingPathComponent("site")
        let run = try SiteTestSupport.cli(["site", "--out", site.path, new.path, old.path])
        let cards =
            try VerifyFixtures.files(in: outOld.appendingPathComponent("cards"), suffix: ".smart-health-card")
            + VerifyFixtures.files(in: outNew.appendingPathComponent("cards"), suffix: ".smart-health-card")
        return TwoYears(old: old, new: new, outOld: outOld, outNew: outNew, site: site, siteRun: run, cards: cards)
    }

    @Test func cardsOfOldAndNewKeyVerifyAgainstOneKeySet() throws {
        let f = try Self.twoYears()
        let (old, new, site) = (f.old, f.new, f.site)
        #expect(old.kid != new.kid && old.kid.count == 43 && new.kid.count == 43)
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: f.outOld, id: "P-1001")) == old.kid)
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: f.outNew, id: "P-1001")) == new.kid)
        // One site publishing both keys: the current one and the retired one.
        #expect(f.siteRun.stdout == "\(new.kid) (no CRL)\n\(old.kid) (no CRL)\n")
        let keySet = try JWKS(
            bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "jwks.json")
        #expect(keySet.keys.map(\.kid) == [new.kid, old.kid])
        #expect(f.cards.count >= 4)
        let verify = try SiteTestSupport.cli(["verify", "--jwks", site.path, f.outOld.path, f.outNew.path])
        #expect(
            verify.stdout.contains("\(f.cards.count) credential(s) checked, 0 error(s), 0 warning(s)"),
            "\(verify.stdout)")
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func cardsOfOldAndNewKeyPassIndependentChecker() throws {
        let f = try Self.twoYears()
        #expect(f.cards.count >= 4)
        let check = try TestSupport.check(["--jwks", f.site.path, f.outOld.path, f.outNew.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(
            check.stdout.hasSuffix("\(f.cards.count) credentials checked, 0 errors, 0 warnings\n"), "\(check.stdout)")
    }

    /// Leaving a published key out is refused (every card it signed would stop verifying), naming the kid
    /// and how many cards the reports say it signed; dropping it on purpose (a compromised key) takes
    /// --drop-kid, and then its cards fail and the other key's still verify.
    /// Two keys' cards and a site that published both.
    static func twoKeysPublished() throws
        -> (old: (path: String, kid: String), new: (path: String, kid: String), site: URL, outOld: URL, outNew: URL)
    {
        let dir = try TestSupport.tempDir("rotation")
        let old = try SiteTestSupport.keygen("old.pem", in: dir)
        let new = try SiteTestSupport.keygen("new.pem", in: dir)
        let outOld = dir.appendingPathComponent("out-old")
        let outNew = dir.appendingPathComponent("out-new")
        try SiteTestSupport.issueSample(key: old.path, out: outOld)
        try SiteTestSupport.issueSample(key: new.path, out: outNew)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, old.path, new.path])
        return (old, new, site, outOld, outNew)
    }

    @Test func droppingAKeyTakesItsKidAndFailsItsCardsOnly() throws {
        let (old, new, site, outOld, outNew) = try Self.twoKeysPublished()
        let keySet = site.path + "/.well-known/jwks.json"
        let published = try SiteTestSupport.bytes(keySet)
        let report = outOld.path + "/report.ndjson"
        let refused = try SiteTestSupport.cli(["site", "--out", site.path, new.path, "--report", report], expect: 2)
        #expect(refused.stderr.contains("key \(old.kid) is published in \(keySet) and is not among the keys given"))
        // The report and the issuance log beside it (which keeps every run's lines): 4 distinct cards, not 8.
        let log = outOld.path + "/issuance-log.ndjson"
        #expect(refused.stderr.contains("the reports (\(report), \(log)) say it signed 4 cards"), "\(refused.stderr)")
        #expect(refused.stderr.contains("drop it on purpose by naming \(old.kid) among the keys to drop"))
        let unCounted = try SiteTestSupport.cli(["site", "--out", site.path, new.path], expect: 2)
        #expect(unCounted.stderr.contains("give the issue runs' reports (OUT/report.ndjson) to count the cards it signed"))
        // jwks onto the published key set: the same rule.
        let jwksRefused = try SiteTestSupport.cli(["jwks", new.path, "--out", keySet], expect: 2)
        #expect(jwksRefused.stderr.contains("key \(old.kid) is published in \(keySet)"))
        #expect(try SiteTestSupport.bytes(keySet) == published)

        let both = try SiteTestSupport.cli(["site", "--out", site.path, new.path, old.path, "--drop-kid", old.kid], expect: 2)
        #expect(both.stderr.contains("is both given and to be dropped"))
        let again = try SiteTestSupport.cli(["site", "--out", site.path, new.path, "--drop-kid", old.kid])
        #expect(again.stderr.contains("key \(old.kid) was dropped from \(keySet) (--drop-kid)"), "\(again.stderr)")
        #expect(try JWKS(bytes: try SiteTestSupport.bytes(keySet), source: "jwks").keys.map(\.kid) == [new.kid])
        let nothing = try SiteTestSupport.cli(["site", "--out", site.path, new.path, "--drop-kid", old.kid])
        #expect(nothing.stderr.contains("key to drop \(old.kid): no such key is published"))

        let oldVerify = try SiteTestSupport.cli(["verify", "--json", "--jwks", site.path, outOld.path], expect: 1)
        #expect(oldVerify.stdout.contains("\"KID_UNKNOWN\""), "\(oldVerify.stdout)")
        try SiteTestSupport.cli(["verify", "--jwks", site.path, outNew.path])
    }

    /// After --drop-kid, the independent checker fails the dropped key's cards and passes the other key's.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func droppedKeyIsJudgedSoByIndependentChecker() throws {
        let (old, new, site, outOld, outNew) = try Self.twoKeysPublished()
        try SiteTestSupport.cli(["site", "--out", site.path, new.path, "--drop-kid", old.kid])
        let oldCheck = try TestSupport.check(["--jwks", site.path, outOld.path])
        #expect(oldCheck.status == 1)
        #expect(oldCheck.stdout.contains("no key with kid '\(old.kid)' in the key set"), "\(oldCheck.stdout)")
        let newCheck = try TestSupport.check(["--jwks", site.path, outNew.path])
        #expect(newCheck.status == 0, "\(newCheck.stdout)")
    }

    /// A batch re-run after a key rotation reissues every card (the old key signed them) and says why
    /// once, in the summary.
    @Test func rerunAfterRotationSaysWhyCardsAreReissued() throws {
        let dir = try TestSupport.tempDir("rotation")
        let old = try SiteTestSupport.keygen("old.pem", in: dir)
        let new = try SiteTestSupport.keygen("new.pem", in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: old.path, out: out)
        let summaryArguments = [
            "issue", "--issuer", SiteTestSupport.issuer, "--key", new.path, "--template",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
            "--nbf", "1700000000", "--no-qr", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ]
        let rerun = try SiteTestSupport.cli(summaryArguments)
        let reason = "4 cards were reissued because key \(old.kid) had signed them and this run signs with key \(new.kid) (a new key)"
        #expect(rerun.stderr.contains(reason), "\(rerun.stderr)")
        #expect(rerun.stderr.components(separatedBy: "reissued because").count == 2)
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: out, id: "P-1001")) == new.kid)
        #expect(try TestSupport.report(out).allSatisfy { $0["kid"]?.stringValue == new.kid })
        // Run again with the new key: nothing to reissue, nothing said.
        let third = try SiteTestSupport.cli(summaryArguments)
        #expect(!third.stderr.contains("reissued because"))
    }

    /// `jwks` with the same key twice writes it once; with two keys, both.
    @Test func jwksListsEachKeyOnce() throws {
        let dir = try TestSupport.tempDir("rotation")
        let a = try SiteTestSupport.keygen("a.pem", in: dir)
        let b = try SiteTestSupport.keygen("b.pem", in: dir)
        let out = dir.appendingPathComponent("jwks.json").path
        let run = try SiteTestSupport.cli(["jwks", a.path, b.path, a.path, "--out", out])
        #expect(run.stdout == "\(a.kid)\n\(b.kid)\n")
        let keySet = try JWKS(bytes: try SiteTestSupport.bytes(out), source: out)
        #expect(keySet.keys.map(\.kid) == [a.kid, b.kid])
        #expect(keySet.keys.allSatisfy { $0.crlVersion == nil && $0.x5c == nil })
    }
}
