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
    @Test func issueJwksAndCheckWithATokenKey() throws {
        let fixture = try SoftHSMFixture.require()
        let tokenKid = JWK(key: try fixture.tokenPublicKey()).kid
        let dir = try TestSupport.tempDir("hsm")
        let out = dir.appendingPathComponent("out")
        let issue = try SiteTestSupport.issueSample(key: fixture.uri, out: out)
        #expect(try SiteTestSupport.kid(of: try SiteTestSupport.jws(in: out, id: "P-1001")) == tokenKid)
        #expect(try TestSupport.report(out).allSatisfy { $0["status"]?.stringValue == "issued" })

        let site = dir.appendingPathComponent("site")
        let jwks = try SiteTestSupport.cli(["jwks", fixture.uri, "--out", site.path + "/.well-known/jwks.json"])
        #expect(jwks.stdout == tokenKid + "\n")
        let check = try TestSupport.check(["--jwks", site.path, out.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains(" 0 errors, 0 warnings"), "\(check.stdout)")
        for text in [issue.stdout, issue.stderr, jwks.stdout, jwks.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
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

    @Test func siteAndRevokeWithATokenKey() throws {
        let fixture = try SoftHSMFixture.require()
        let tokenKid = JWK(key: try fixture.tokenPublicKey()).kid
        let dir = try TestSupport.tempDir("hsm")
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let retired = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        let layout = try SiteTestSupport.cli(["site", "--out", site.path, fixture.uri, retired])
        #expect(layout.stdout.hasPrefix("\(tokenKid) crlVersion 1\n"))
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: fixture.uri, out: out, extra: ["--rid-secret", secret])
        let payload = try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "P-1002"))
        let rid = try #require(payload["vc"]?["rid"]?.stringValue)

        let revoke = try SiteTestSupport.cli([
            "revoke", "--site", site.path, "--key", fixture.uri, "--rid-secret", secret,
            "--id", "P-1002",
        ])
        #expect(revoke.stdout.hasPrefix("revoked \(rid)\n"))
        let crlPath = site.path + "/.well-known/crl/\(tokenKid).json"
        let crl = try CRL(bytes: try SiteTestSupport.bytes(crlPath), source: crlPath)
        #expect(crl == CRL(kid: tokenKid, ctr: 2, entries: [.init(rid: rid)]))
        let keySet = try JWKS(bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "jwks")
        #expect(keySet.key(kid: tokenKid)?.crlVersion == 2)
        #expect(keySet.keys.count == 2)
        let check = try TestSupport.check(["--jwks", site.path, site.path, out.path])
        #expect(check.status == 0, "\(check.stdout)")
        for text in [layout.stdout, layout.stderr, revoke.stdout, revoke.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
    }
}
