import Foundation
import Testing

@testable import HealthCards

/// Yearly key rotation: cards signed by a retired key keep verifying while its public key stays published.
@Suite struct RotationTests {
    @Test func cardsOfOldAndNewKeyVerifyAgainstOneKeySet() throws {
        let dir = try TestSupport.tempDir("rotation")
        let old = try SiteTestSupport.keygen("issuer-2025.pem", in: dir)
        let new = try SiteTestSupport.keygen("issuer-2026.pem", in: dir)
        #expect(old.kid != new.kid && old.kid.count == 43 && new.kid.count == 43)
        let outOld = dir.appendingPathComponent("out-2025")
        let outNew = dir.appendingPathComponent("out-2026")
        try SiteTestSupport.issueSample(key: old.path, out: outOld, nbf: "1700000000")
        try SiteTestSupport.issueSample(key: new.path, out: outNew, nbf: "1735700000")
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: outOld, id: "P-1001")) == old.kid)
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: outNew, id: "P-1001")) == new.kid)

        // One site publishing both keys: the current one and the retired one.
        let site = dir.appendingPathComponent("site")
        let run = try SiteTestSupport.cli(["site", "--out", site.path, new.path, old.path])
        #expect(run.stdout == "\(new.kid) crlVersion 1\n\(old.kid) crlVersion 1\n")
        let keySet = try JWKS(
            bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "jwks.json")
        #expect(keySet.keys.map(\.kid) == [new.kid, old.kid])

        let cards =
            try VerifyFixtures.files(in: outOld.appendingPathComponent("cards"), suffix: ".smart-health-card")
            + VerifyFixtures.files(in: outNew.appendingPathComponent("cards"), suffix: ".smart-health-card")
        #expect(cards.count >= 4)
        let check = try TestSupport.check(["--jwks", site.path, outOld.path, outNew.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.hasSuffix("\(cards.count) credentials checked, 0 errors, 0 warnings\n"), "\(check.stdout)")
    }

    /// Dropping a key from the key set (what one does when it is compromised) makes its cards fail, and
    /// `site` says so; the other key's cards still verify.
    @Test func droppingAKeyFailsItsCardsOnly() throws {
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
        #expect(
            again.stderr.contains(
                "warning: key \(old.kid) was published in \(site.path)/.well-known/jwks.json and is not any more"))

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
