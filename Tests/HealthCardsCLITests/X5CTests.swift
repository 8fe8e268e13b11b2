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

/// `x5c`: X.509 chains (standard base64 DER, leaf first) whose leaf certifies the signing key.
@Suite struct X5CTests {
    @Test func jwksWritesTheChainLeafFirst() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let made = try SiteTestSupport.makeChain(forKey: key.path, in: dir)
        let site = dir.appendingPathComponent("site")
        let keySetPath = site.path + "/.well-known/jwks.json"
        let run = try SiteTestSupport.cli(["jwks", key.path, "--x5c", made.chain, "--out", keySetPath])
        #expect(run.stdout == key.kid + "\n")

        let keySet = try SiteTestSupport.json(keySetPath)
        let entry = try #require(keySet["keys"]?[0])
        let x5c = try #require(entry["x5c"]?.arrayValue?.compactMap { $0.stringValue })
        // Leaf first, then the CA; each is the certificate's DER in standard base64, as openssl encodes it.
        #expect(
            x5c == [
                try SiteTestSupport.derBase64(ofCertificate: made.leaf, in: dir),
                try SiteTestSupport.derBase64(ofCertificate: made.ca, in: dir),
            ])
        #expect(x5c.allSatisfy { !$0.contains("-") && !$0.contains("_") && $0.count % 4 == 0 })
        #expect(entry["kid"]?.stringValue == key.kid)

        // The library reads the same chain back from x5c.
        let chain = try X509Chain(x5c: x5c, source: "jwks.json")
        #expect(chain.leafSubjectAltNameURIs == [SiteTestSupport.issuer])
        #expect(chain.leafJWK.kid == key.kid)
        #expect(chain.certificates.count == 2)
    }

    /// Cards verified against a key set whose key carries an x5c chain: the independent checker accepts both.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func checkerAcceptsTheChainAndTheCards() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let made = try SiteTestSupport.makeChain(forKey: key.path, in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["jwks", key.path, "--x5c", made.chain, "--out", site.path + "/.well-known/jwks.json"])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key.path, out: out)
        let check = try TestSupport.check(["--jwks", site.path, out.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains(" 0 errors, 0 warnings"), "\(check.stdout)")
    }

    @Test func chainForAnotherKeyIsRefused() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let other = try SiteTestSupport.keygen("other.pem", in: dir)
        let made = try SiteTestSupport.makeChain(forKey: other.path, in: dir)
        let out = dir.appendingPathComponent("jwks.json").path
        let run = try SiteTestSupport.cli(["jwks", key.path, "--x5c", made.chain, "--out", out], expect: 2)
        #expect(
            run.stderr.contains("holds the key with kid \(other.kid), which is not among the keys given (\(key.kid))"))
        #expect(run.stderr.contains("x5c must certify the signing key itself"))
        #expect(!FileManager.default.fileExists(atPath: out))
        // The site command refuses it the same way and writes nothing.
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key.path, "--x5c", made.chain], expect: 2)
        #expect(!FileManager.default.fileExists(atPath: site.path))
    }

    @Test func chainOutOfOrderOrWithPrivateKeyIsRefused() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let made = try SiteTestSupport.makeChain(forKey: key.path, in: dir)
        let leaf = try String(contentsOf: URL(fileURLWithPath: made.leaf), encoding: .utf8)
        let ca = try String(contentsOf: URL(fileURLWithPath: made.ca), encoding: .utf8)
        let reversed = try TestSupport.write(ca + leaf, to: "reversed.pem", in: dir)
        let out = dir.appendingPathComponent("jwks.json").path
        let run = try SiteTestSupport.cli(["jwks", key.path, "--x5c", reversed, "--out", out], expect: 2)
        #expect(
            run.stderr.contains(
                "certificate 2 (/CN=Example SHC Issuer) did not issue certificate 1 (/CN=Example SHC Issuer CA)"))
        let withKey = try TestSupport.write(
            leaf + String(decoding: try SiteTestSupport.bytes(key.path), as: UTF8.self),
            to: "with-key.pem", in: dir)
        let leak = try SiteTestSupport.cli(["jwks", key.path, "--x5c", withKey, "--out", out], expect: 2)
        #expect(leak.stderr.contains("contains a private key"))
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func siteWarnsWhenTheLeafDoesNotNameTheIssuer() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let made = try SiteTestSupport.makeChain(forKey: key.path, in: dir, san: "https://elsewhere.example")
        let site = dir.appendingPathComponent("site")
        let run = try SiteTestSupport.cli([
            "site", "--out", site.path, key.path, "--x5c", made.chain,
            "--issuer", SiteTestSupport.issuer,
        ])
        #expect(
            run.stderr.contains(
                "has subjectAltName URI(s) https://elsewhere.example; verifiers expect URI:\(SiteTestSupport.issuer)"))
        let quiet = try SiteTestSupport.makeChain(forKey: key.path, in: dir, name: "good")
        let ok = try SiteTestSupport.cli([
            "site", "--out", site.path, key.path, "--x5c", quiet.chain, "--issuer", SiteTestSupport.issuer,
        ])
        #expect(ok.stderr.isEmpty, "\(ok.stderr)")
    }

    /// Two chains for one key: two entries, identical except x5c (digest section 7).
    @Test func twoChainsForOneKeyGiveTwoEntries() throws {
        let dir = try TestSupport.tempDir("x5c")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let first = try SiteTestSupport.makeChain(forKey: key.path, in: dir, name: "first")
        let second = try SiteTestSupport.makeChain(forKey: key.path, in: dir, name: "second")
        let out = dir.appendingPathComponent("jwks.json").path
        let run = try SiteTestSupport.cli(["jwks", key.path, "--x5c", first.chain, "--x5c", second.chain, "--out", out])
        #expect(run.stdout == key.kid + "\n")
        let written = try SiteTestSupport.json(out)
        let keys = try #require(written["keys"]?.arrayValue?.compactMap { $0.objectValue })
        #expect(keys.count == 2)
        #expect(keys[0]["x5c"] != keys[1]["x5c"])
        var a = keys[0]
        var b = keys[1]
        a["x5c"] = nil
        b["x5c"] = nil
        #expect(a == b)
    }

    /// The spec's example key EBKOr72… carries a 3-certificate chain (P-256 leaf, P-384 CA, P-521 root).
    @Test func specExampleChainCertifiesItsKey() throws {
        let url = TestSupport.spec("issuer/.well-known/jwks.json")
        let json = try JSONParser.parse(try VerifyFixtures.bytes(url))
        let entry = try #require(json["keys"]?.arrayValue?.first { $0["x5c"] != nil })
        #expect(entry["kid"]?.stringValue == "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw")
        let x5c = try #require(entry["x5c"]?.arrayValue?.compactMap { $0.stringValue })
        let chain = try X509Chain(x5c: x5c, source: url.path)
        #expect(chain.certificates.count == 3)
        #expect(Base64URL.encode(chain.leafJWK.x) == entry["x"]?.stringValue)
        #expect(Base64URL.encode(chain.leafJWK.y) == entry["y"]?.stringValue)
        #expect(chain.leafJWK.kid == "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw")
        #expect(chain.leafSubjectAltNameURIs == ["https://spec.smarthealth.cards/examples/issuer"])
        #expect(chain.leafSubject == "/CN=SMART Health Card Example Issuer")
        #expect(chain.x5c == x5c)
        // The other spec key is not certified by this chain.
        let jwks = try JWKS(bytes: try VerifyFixtures.bytes(url), source: url.path)
        #expect(!chain.certifies(try #require(jwks.key(kid: "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"))))
        #expect(chain.certifies(try #require(jwks.key(kid: "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw"))))

        // base64url is not x5c's alphabet: the same chain written that way is refused.
        let urlSafe = x5c.map { $0.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
        #expect(urlSafe != x5c)
        let error = try #require(throws: HealthCardError.self) { try X509Chain(x5c: urlSafe, source: "bad") }
        #expect(error.message.contains("is not standard base64"))
        // Leaf and root swapped: refused as out of order.
        #expect(throws: HealthCardError.self) { try X509Chain(x5c: [x5c[1], x5c[0], x5c[2]], source: "swapped") }
    }
}
