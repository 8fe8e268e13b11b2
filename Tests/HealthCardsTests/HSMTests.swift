import Foundation
import Testing

@testable import HealthCards

/// The key lifecycle through the CLI with the signing key in SoftHSM2 (a PKCS#11 token): issue, jwks,
/// site and revoke all take the `pkcs11:` URI, and the PIN never shows.
@Suite(
    "HSM round trip through the CLI", .serialized,
    .enabled(
        if: SoftHSMFixture.packagesAvailable,
        "scripts/softhsm-setup.sh could not install softhsm2, opensc and libengine-pkcs11-openssl")
)
struct HSMTests {
    /// The sample issued with the token key, and the token key's key set.
    static func issueAndPublish() throws -> (site: URL, out: URL, issue: TestSupport.Run, jwks: TestSupport.Run) {
        let fixture = try SoftHSMFixture.require()
        let dir = try TestSupport.tempDir("hsm")
        let out = dir.appendingPathComponent("out")
        let issue = try SiteTestSupport.issueSample(key: fixture.uri, out: out)
        let site = dir.appendingPathComponent("site")
        let jwks = try SiteTestSupport.cli(["jwks", fixture.uri, "--out", site.path + "/.well-known/jwks.json"])
        return (site, out, issue, jwks)
    }

    @Test func issueAndJwksWithATokenKey() throws {
        let tokenKid = JWK(key: try SoftHSMFixture.require().tokenPublicKey()).kid
        let (site, out, issue, jwks) = try Self.issueAndPublish()
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: out, id: "P-1001")) == tokenKid)
        #expect(try TestSupport.report(out).allSatisfy { $0["status"]?.stringValue == "issued" })
        #expect(jwks.stdout == tokenKid + "\n")
        let verify = try SiteTestSupport.cli(["verify", "--jwks", site.path, out.path])
        #expect(verify.stdout.hasSuffix(" 0 error(s), 0 warning(s)\n"), "\(verify.stdout)")
        for text in [issue.stdout, issue.stderr, jwks.stdout, jwks.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func tokenKeyCardsPassIndependentChecker() throws {
        let (site, out, _, _) = try Self.issueAndPublish()
        let check = try TestSupport.check(["--jwks", site.path, out.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains(" 0 errors, 0 warnings"), "\(check.stdout)")
    }

    @Test func pinValueNeverShowsInOutputReportsOrErrors() throws {
        let fixture = try SoftHSMFixture.require()
        let uri =
            "pkcs11:token=issuer;object=shc-2026?module-path=\(SoftHSMFixture.module)&pin-value=\(SoftHSMFixture.pin)"
        let dir = try TestSupport.tempDir("hsm")
        let out = dir.appendingPathComponent("out")
        let issue = try SiteTestSupport.cli([
            "issue", "--issuer", SiteTestSupport.issuer, "--key", uri, "--template",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
            "--no-qr",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(issue.stderr.contains("kid \(JWK(key: try fixture.tokenPublicKey()).kid)"))
        let written = try FileManager.default.subpathsOfDirectory(atPath: out.path).filter {
            !FileIO.isDirectory(out.path + "/" + $0)
        }
        #expect(!written.isEmpty)
        for file in written {
            #expect(
                !String(decoding: try SiteTestSupport.bytes(out.path + "/" + file), as: UTF8.self).contains(
                    SoftHSMFixture.pin))
        }
        // A wrong object: the error names the URI with the PIN redacted.
        let wrong = uri.replacingOccurrences(of: "object=shc-2026", with: "object=missing")
        let failed = try SiteTestSupport.cli(
            ["jwks", wrong, "--out", dir.appendingPathComponent("j.json").path], expect: 2)
        #expect(failed.stderr.contains("object 'missing'"))
        for text in [issue.stdout, issue.stderr, failed.stdout, failed.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
    }

    /// A site for the token key and a retired file key, the sample issued with a rid secret, and P-1002 revoked.
    struct RevokedSite {
        var site: URL
        var out: URL
        var layout: TestSupport.Run
        var revoke: TestSupport.Run
        var rid: String
    }

    static func siteAndRevoke() throws -> RevokedSite {
        let fixture = try SoftHSMFixture.require()
        let dir = try TestSupport.tempDir("hsm")
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let retired = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        let layout = try SiteTestSupport.cli(["site", "--out", site.path, fixture.uri, retired])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: fixture.uri, out: out, extra: ["--rid-secret", secret])
        let payload = try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "P-1002"))
        let rid = try #require(payload["vc"]?["rid"]?.stringValue)
        let revoke = try SiteTestSupport.cli([
            "revoke", "--site", site.path, "--key", fixture.uri, "--rid-secret", secret,
            "--id", "P-1002",
        ])
        return RevokedSite(site: site, out: out, layout: layout, revoke: revoke, rid: rid)
    }

    @Test func siteAndRevokeWithATokenKey() throws {
        let tokenKid = JWK(key: try SoftHSMFixture.require().tokenPublicKey()).kid
        let f = try Self.siteAndRevoke()
        let (site, layout, revoke, rid) = (f.site, f.layout, f.revoke, f.rid)
        #expect(layout.stdout.hasPrefix("\(tokenKid) crlVersion 1\n"))
        #expect(revoke.stdout.hasPrefix("revoked \(rid)\n"))
        let crlPath = site.path + "/.well-known/crl/\(tokenKid).json"
        let crl = try CRL(bytes: try SiteTestSupport.bytes(crlPath), source: crlPath)
        #expect(crl == CRL(kid: tokenKid, ctr: 2, entries: [.init(rid: rid)]))
        let keySet = try JWKS(bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "jwks")
        #expect(keySet.key(kid: tokenKid)?.crlVersion == 2)
        #expect(keySet.keys.count == 2)
        for text in [layout.stdout, layout.stderr, revoke.stdout, revoke.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func tokenKeySiteAndRevocationPassIndependentChecker() throws {
        let f = try Self.siteAndRevoke()
        let check = try TestSupport.check(["--jwks", f.site.path, f.site.path, f.out.path])
        #expect(check.status == 0, "\(check.stdout)")
    }
}
