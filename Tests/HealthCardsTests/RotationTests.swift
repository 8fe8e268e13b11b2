import Foundation
import Testing

@testable import HealthCards

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
        #expect(f.siteRun.stdout == "\(new.kid) crlVersion 1\n\(old.kid) crlVersion 1\n")
        let keySet = try JWKS(
            bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "jwks.json")
        #expect(keySet.keys.map(\.kid) == [new.kid, old.kid])
        #expect(f.cards.count >= 4)
        let verify = try SiteTestSupport.cli(["verify", "--jwks", site.path, f.outOld.path, f.outNew.path])
        #expect(
            verify.stdout.hasSuffix("verify: \(f.cards.count) credential(s) checked, 0 error(s), 0 warning(s)\n"),
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

    /// Two keys' cards and a site that published both, then only the new one.
    static func droppedKey() throws
        -> (old: (path: String, kid: String), site: URL, outOld: URL, outNew: URL, again: TestSupport.Run)
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
        let again = try SiteTestSupport.cli(["site", "--out", site.path, new.path])
        return (old, site, outOld, outNew, again)
    }

    /// Dropping a key from the key set (what one does when it is compromised) makes its cards fail, and
    /// `site` says so; the other key's cards still verify.
    @Test func droppingAKeyFailsItsCardsOnly() throws {
        let (old, site, outOld, outNew, again) = try Self.droppedKey()
        #expect(
            again.stderr.contains(
                "warning: key \(old.kid) was published in \(site.path)/.well-known/jwks.json and is not any more"))
        let oldVerify = try SiteTestSupport.cli(["verify", "--json", "--jwks", site.path, outOld.path], expect: 1)
        #expect(oldVerify.stdout.contains("\"KID_UNKNOWN\""), "\(oldVerify.stdout)")
        try SiteTestSupport.cli(["verify", "--jwks", site.path, outNew.path])
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func droppedKeyIsJudgedSoByIndependentChecker() throws {
        let (old, site, outOld, outNew, _) = try Self.droppedKey()
        let oldCheck = try TestSupport.check(["--jwks", site.path, outOld.path])
        #expect(oldCheck.status == 1)
        #expect(oldCheck.stdout.contains("no key with kid '\(old.kid)' in the key set"), "\(oldCheck.stdout)")
        let newCheck = try TestSupport.check(["--jwks", site.path, outNew.path])
        #expect(newCheck.status == 0, "\(newCheck.stdout)")
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
