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

/// The committed demo key signs nothing real: `issue`, `jwks` and `site` refuse it for any issuer that
/// is not an example host, whatever the file is called. Through the real CLI.
@Suite struct DemoKeyTests {
    /// The kid the code recognises is the committed file's (computed from it here, and by openssl).
    @Test func kidIsTheCommittedKeysThumbprint() throws {
        let key = try P256Key.load(
            pem: try VerifyFixtures.bytes(TestSupport.demoKeySource), source: "demo", requirePrivate: true)
        #expect(JWK(key: key).kid == DemoKey.kid)
        // Independently: the RFC 7638 thumbprint of the public point that openssl reads from the file.
        let dir = try TestSupport.tempDir("demo")
        let der = dir.appendingPathComponent("pub.der").path
        try SiteTestSupport.openssl(
            ["pkey", "-in", TestSupport.demoKeySource.path, "-pubout", "-outform", "DER", "-out", der], in: dir)
        let spki = try SiteTestSupport.bytes(der)
        let point = Array(spki.suffix(64))
        let thumbprintInput =
            #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(point.prefix(32)))","y":"\#(Base64URL.encode(point.suffix(32)))"}"#
        #expect(Base64URL.encode(Digest.sha256(Array(thumbprintInput.utf8))) == DemoKey.kid)
    }

    @Test func exampleHosts() {
        for issuer in [
            "https://issuer.example.org", "https://example.com", "https://a.b.example.net/shc",
            "https://localhost:8443",
            "https://issuer.example", "https://cards.test.localhost",
        ] {
            #expect(DemoKey.isExampleIssuer(issuer), "\(issuer)")
        }
        for issuer in [
            "https://clinic.org", "https://example.org.evil.com", "https://notexample.org", "https://example.co",
            "https://examples.com", "https://localhost.clinic.org",
        ] {
            #expect(!DemoKey.isExampleIssuer(issuer), "\(issuer)")
        }
    }

    /// Refused for a real issuer by issue, jwks and site, under any file name and as its public half;
    /// nothing is written. Accepted for example issuers (what `make demo` and the tests use).
    @Test func refusedForRealIssuersEverywhere() throws {
        let dir = try TestSupport.tempDir("demo")
        let demo = try TestSupport.demoKey(in: dir)
        let renamed = dir.appendingPathComponent("clinic-2026.pem").path
        try FileManager.default.copyItem(atPath: demo, toPath: renamed)
        let publicHalf = dir.appendingPathComponent("clinic.pub.pem").path
        try SiteTestSupport.openssl(["pkey", "-in", demo, "-pubout", "-out", publicHalf], in: dir)
        let real = "https://vaccines.clinic.org"
        let template = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path
        let csv = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path
        let out = dir.appendingPathComponent("out")
        let site = dir.appendingPathComponent("site")
        let jwks = dir.appendingPathComponent("jwks.json").path
        let runs: [[String]] = [
            ["issue", "--issuer", real, "--key", renamed, "--template", template, "--out", out.path, csv],
            ["jwks", renamed, "--out", jwks, "--issuer", real],
            ["jwks", publicHalf, "--out", jwks],
            ["site", "--out", site.path, publicHalf, "--issuer", real],
            ["site", "--out", site.path, renamed],
        ]
        for arguments in runs {
            let run = try SiteTestSupport.cli(arguments, expect: 2)
            #expect(run.stderr.contains("key \(DemoKey.kid) is the public demo key"), "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("healthcards keygen --out"))
            #expect(
                run.stderr.contains(
                    arguments.contains("--issuer") ? "the issuer \(real) is not one" : "no issuer was given"))
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(!FileManager.default.fileExists(atPath: site.path))
        #expect(!FileManager.default.fileExists(atPath: jwks))

        // Example issuers: fine.
        try SiteTestSupport.cli(["jwks", renamed, "--out", jwks, "--issuer", "https://issuer.example.org"])
        try SiteTestSupport.cli(["site", "--out", site.path, publicHalf, "--issuer", "https://localhost"])
        try SiteTestSupport.issueSample(key: renamed, out: out)
    }

    /// Issuer URLs with an IPv4 literal (or something shaped like one) are refused like IPv6 ones.
    @Test func ipv4IssuersAreRefused() throws {
        let dir = try TestSupport.tempDir("demo")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        for issuer in ["https://10.0.0.5", "https://999.999.999.999", "https://192.168.1.1:8443/shc", "https://[::1]"] {
            let run = try SiteTestSupport.cli(
                ["issue", "--issuer", issuer, "--key", key.path, "--out", dir.path + "/out", "x.csv"], expect: 2)
            #expect(run.stderr.contains("has an IP address as host"), "\(issuer): \(run.stderr)")
        }
        #expect(throws: Never.self) { try Payload.validateIssuer("https://shc.clinic2.org") }
        #expect(throws: Never.self) { try Payload.validateIssuer("https://123.clinic.org") }
    }
}
