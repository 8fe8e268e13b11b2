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
        #expect(verify.stdout.contains(" 0 error(s), 0 warning(s)"), "\(verify.stdout)")
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

    /// Runs `healthcards` with this process's environment changed: `set` added, `unset` removed.
    static func cli(_ arguments: [String], set: [String: String] = [:], unset: [String] = []) throws -> TestSupport.Run {
        try TestSupport.run(TestSupport.healthcards, arguments, environment: set, unset: unset)
    }

    /// A PIN is read only from a file (mode 0600) or the environment, never from the command line, where
    /// `ps` shows it; it never appears in output, reports or errors.
    @Test func pinComesFromAPrivateFileOrTheEnvironmentOnly() throws {
        let fixture = try SoftHSMFixture.require()
        let tokenKid = JWK(key: try fixture.tokenPublicKey()).kid
        let dir = try TestSupport.tempDir("hsm")
        let out = dir.appendingPathComponent("out")
        let issue = { (key: String, environment: [String: String], status: Int32) throws -> TestSupport.Run in
            let run = try Self.cli([
                "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template",
                SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
                "--no-qr", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
            ], set: environment)
            #expect(run.status == status, "\(run.stderr)")
            return run
        }
        // pin-value on the command line: refused, the PIN redacted, nothing written.
        let onCommandLine =
            "pkcs11:token=issuer;object=shc-2026?module-path=\(SoftHSMFixture.module)&pin-value=\(SoftHSMFixture.pin)"
        let refused = try issue(onCommandLine, [:], 2)
        #expect(refused.stderr.contains("pin-value=REDACTED gives the PIN as pin-value"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))

        // A PIN file group or others can read: refused like a key file, with the chmod to run.
        let exposed = dir.appendingPathComponent("exposed.pin").path
        try Data((SoftHSMFixture.pin + "\n").utf8).write(to: URL(fileURLWithPath: exposed))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: exposed)
        let exposedRun = try issue(fixture.uri.replacingOccurrences(of: fixture.pinFile, with: exposed), [:], 2)
        #expect(exposedRun.stderr.contains("PIN file \(exposed) can be read by group or others (mode 640)"))
        #expect(exposedRun.stderr.contains("chmod 600 \(exposed)"))
        #expect(!FileManager.default.fileExists(atPath: out.path))

        // From the environment: no pin-source in the URI.
        let noPIN = "pkcs11:token=issuer;object=shc-2026?module-path=\(SoftHSMFixture.module)"
        let fromEnvironment = try issue(noPIN, ["HEALTHCARDS_PKCS11_PIN": SoftHSMFixture.pin], 0)
        #expect(fromEnvironment.stderr.contains("kid \(tokenKid)"))
        let written = try FileManager.default.subpathsOfDirectory(atPath: out.path).filter {
            !FileIO.isDirectory(out.path + "/" + $0)
        }
        #expect(!written.isEmpty)
        for file in written {
            #expect(!String(decoding: try SiteTestSupport.bytes(out.path + "/" + file), as: UTF8.self).contains(SoftHSMFixture.pin))
        }
        // A wrong object: the error names it, never the PIN.
        let wrong = fixture.uri.replacingOccurrences(of: "object=shc-2026", with: "object=missing")
        let failed = try Self.cli(["jwks", wrong, "--out", dir.appendingPathComponent("j.json").path])
        #expect(failed.status == 2)
        #expect(failed.stderr.contains("object 'missing'"))
        for text in [refused.stderr, exposedRun.stderr, fromEnvironment.stdout, fromEnvironment.stderr, failed.stderr] {
            #expect(!text.contains(SoftHSMFixture.pin))
        }
    }

    /// The causes a new user hits, each named: a library that is not a PKCS#11 module, a typo in a URI
    /// attribute, SoftHSM2 without SOFTHSM2_CONF (or with one naming a missing file).
    @Test func pkcs11MistakesAreNamed() throws {
        let fixture = try SoftHSMFixture.require()
        let dir = try TestSupport.tempDir("hsm")
        let out = dir.appendingPathComponent("j.json").path
        let libz = ["/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/aarch64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"]
            .first { FileManager.default.fileExists(atPath: $0) }
        if let libz {
            let notModule = try Self.cli(["jwks", fixture.uri.replacingOccurrences(of: SoftHSMFixture.module, with: libz), "--out", out])
            #expect(notModule.status == 2)
            #expect(notModule.stderr.contains("\(libz) (from module-path) is a shared library but not a PKCS#11 module: it has no C_GetFunctionList"), "\(notModule.stderr)")
        }
        let notLibrary = try Self.cli(["jwks", fixture.uri.replacingOccurrences(of: SoftHSMFixture.module, with: fixture.pinFile), "--out", out])
        #expect(notLibrary.status == 2)
        #expect(notLibrary.stderr.contains("cannot load PKCS#11 module \(fixture.pinFile) (from module-path)"), "\(notLibrary.stderr)")

        let typo = try Self.cli(["jwks", fixture.uri.replacingOccurrences(of: "object=", with: "objct="), "--out", out])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("path attribute 'objct' is not an RFC 7512 attribute; did you mean 'object'?"), "\(typo.stderr)")

        let unset = try Self.cli(["jwks", fixture.uri, "--out", out], unset: ["SOFTHSM2_CONF"])
        #expect(unset.status == 2)
        #expect(unset.stderr.contains("token 'issuer' not found in module \(SoftHSMFixture.module): SOFTHSM2_CONF is not set"), "\(unset.stderr)")
        let missing = dir.appendingPathComponent("nowhere/softhsm2.conf").path
        let wrongConf = try Self.cli(["jwks", fixture.uri, "--out", out], set: ["SOFTHSM2_CONF": missing])
        #expect(wrongConf.status == 2)
        #expect(wrongConf.stderr.contains("SOFTHSM2_CONF is \(missing), which does not exist"), "\(wrongConf.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A retired HSM key is published from its public half: a `type=public` URI (no PIN needed) or the
    /// DER SubjectPublicKeyInfo that `pkcs11-tool --read-object --type pubkey` writes, in `jwks` and `site`.
    /// A public key cannot sign: `issue` refuses both.
    @Test func publicHalvesOfTokenKeysArePublished() throws {
        let fixture = try SoftHSMFixture.require()
        let tokenKid = JWK(key: try fixture.tokenPublicKey()).kid
        let dir = try TestSupport.tempDir("hsm")
        let publicURI = "pkcs11:token=issuer;object=shc-2026;type=public?module-path=\(SoftHSMFixture.module)"
        let der = fixture.directory + "/shc-2026.pub.der"
        let jwks = try SiteTestSupport.cli(["jwks", publicURI, der, "--out", "-"])
        #expect(jwks.stderr.contains(tokenKid))
        #expect(try JWKS(bytes: Array(jwks.stdout.utf8), source: "jwks").keys.map(\.kid) == [tokenKid])
        let current = try SiteTestSupport.keygen("current.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        let layout = try SiteTestSupport.cli(["site", "--out", site.path, current.path, der])
        #expect(layout.stdout == "\(current.kid) (no CRL)\n\(tokenKid) (no CRL)\n")
        try SiteTestSupport.cli(["site", "--out", site.path, current.path, publicURI])
        for key in [publicURI, der] {
            let run = try SiteTestSupport.issueSample(key: key, out: dir.appendingPathComponent("out"), expect: 2)
            #expect(run.stderr.contains("signing needs the private key"), "\(run.stderr)")
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
        let layout = try SiteTestSupport.cli(
            ["site", "--out", site.path, fixture.uri, retired, "--issuer", SiteTestSupport.issuer, "--crl"])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: fixture.uri, out: out, extra: ["--rid-secret", secret])
        let payload = try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: "P-1002"))
        let rid = try #require(payload["vc"]?["rid"]?.stringValue)
        let revoke = try SiteTestSupport.cli([
            "revoke", "--site", site.path, "--key", fixture.uri, "--rid-secret", secret,
            "--id", "P-1002", "--report", out.path + "/report.ndjson",
        ])
        return RevokedSite(site: site, out: out, layout: layout, revoke: revoke, rid: rid)
    }

    @Test func siteAndRevokeWithATokenKey() throws {
        let tokenKid = JWK(key: try SoftHSMFixture.require().tokenPublicKey()).kid
        let f = try Self.siteAndRevoke()
        let (site, layout, revoke, rid) = (f.site, f.layout, f.revoke, f.rid)
        #expect(layout.stdout.hasPrefix("\(tokenKid) crlVersion 1\n"))
        #expect(revoke.stdout.hasPrefix("revoked \(rid) (patient P-1002)\n"))
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
