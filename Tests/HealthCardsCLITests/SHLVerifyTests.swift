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

#if canImport(Glibc)
    import Glibc
#endif

/// `verify` on SMART Health Links: each broken link or file has its code; the key is never printed.
@Suite struct SHLVerifyTests {
    /// A site with a key, one issued card (P-1001, no QR) and the card's file bytes.
    struct Fixture {
        var dir: URL
        var site: String
        var card: [UInt8]

        init() throws {
            dir = try TestSupport.tempDir("shl-verify")
            let made = try SHLTestSupport.site(in: dir)
            site = made.site
            let out = dir.appendingPathComponent("out")
            try SiteTestSupport.issueSample(key: made.key, out: out)
            card = try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")
        }

        /// Encrypts `plaintext` into `SITE/shl/<new name>` (with `iv` when given: for the reuse test) and
        /// writes `link` (defaults: flag U, that URL, that key; `edit` changes the payload, and is the one a
        /// trailing closure gives) to a text file; returns its path.
        /// - Parameters:
        ///   - contentType: the JWE's `cty`; `header` edits the protected header further (a kid, a crit).
        ///   - fileName: the file's name in `SITE/shl/` (default: 32 random bytes, as `shl` names them).
        ///   - trailer: written after the compact JWE in the file (a final newline).
        ///   - text: rewrites the link text before it is written (padding, a viewer prefix).
        func link(
            _ name: String, iv: [UInt8]? = nil, key: AES256Key? = nil, plaintext: [UInt8]? = nil,
            edit: (inout JSONObject) -> Void = { _ in }, contentType: String = JWE.smartHealthCard,
            header: ((inout JSONObject) -> Void)? = nil, fileName: String? = nil, trailer: String = "",
            text: (String) -> String = { $0 }
        ) throws -> String {
            let key = try key ?? AES256Key.random()
            let fileName = try fileName ?? SHLDestination.newFileName()
            let compact: String
            if iv != nil || header != nil || contentType != JWE.smartHealthCard {
                var object = try JSONParser.parse(JWE.headerBytes(contentType: contentType, deflated: false)).objectValue!
                header?(&object)
                let protected = Base64URL.encodeBytes(JSONWriter.minified(.object(object)))
                let iv = try iv ?? AESGCM.randomIV()
                let sealed = try AESGCM.seal(plaintext ?? card, key: key, iv: iv, aad: protected)
                compact =
                    String(decoding: protected, as: UTF8.self) + ".." + Base64URL.encode(iv) + "."
                    + Base64URL.encode(sealed.ciphertext)
                    + "." + Base64URL.encode(sealed.tag)
            } else {
                compact = try JWE.encrypt(plaintext ?? card, key: key).compact
            }
            try TestSupport.write(compact + trailer, to: "shl/\(fileName)", in: URL(fileURLWithPath: site))
            var payload = SHLink(url: SHLTestSupport.base + "/" + fileName, key: key.base64url, flag: "U").payload
                .objectValue!
            edit(&payload)
            let linkText = text(SHLink.scheme + Base64URL.encode(JSONWriter.minified(.object(payload))))
            return try TestSupport.write(linkText + "\n", to: "\(name).txt", in: dir)
        }

        func verify(_ paths: [String], now: Int64 = 1_800_000_000, sites: [String]? = nil) throws -> [CredentialReport]
        {
            try FileVerifier(keySets: [site], now: now, linkSites: sites ?? [site]).verify(paths)
        }
    }

    static func codes(_ reports: [CredentialReport]) -> [String] {
        reports.flatMap(\.findings).map(\.code.rawValue)
    }

    @Test func aGoodLinkOpensAndItsCardVerifies() throws {
        let f = try Fixture()
        let reports = try f.verify([try f.link("good")])
        #expect(reports.map(\.source) == [.shlink, .smartHealthCard])
        #expect(Self.codes(reports) == [])
        #expect(reports[1].signature == .verified)
        #expect(reports[0].payload?["key"] == "(not shown)")
        // Without --shl-site the payload is checked and the file is not: a warning says so.
        let offline = try f.verify([try f.link("good2")], sites: [])
        #expect(Self.codes(offline) == ["SHL_NOT_RESOLVED"])
        #expect(offline[0].isValid)
    }

    @Test func wrongKeyAndAlteredCiphertext() throws {
        let f = try Fixture()
        let otherKey = try AES256Key.random().base64url
        let wrongKey = try f.link("wrong") { $0["key"] = .string(otherKey) }
        #expect(Self.codes(try f.verify([wrongKey])) == ["SHL_DECRYPT_FAILED"])

        let altered = try f.link("altered")
        let file = try SHLTestSupport.siteFile(of: try VerifyFixtures.text(URL(fileURLWithPath: altered)), site: f.site)
        var parts = try VerifyFixtures.text(URL(fileURLWithPath: file)).split(
            separator: ".", omittingEmptySubsequences: false
        ).map(String.init)
        var ciphertext = try #require(Base64URL.decode(parts[3]))
        ciphertext[ciphertext.count / 2] ^= 0x20
        parts[3] = Base64URL.encode(ciphertext)
        try TestSupport.write(
            parts.joined(separator: "."), to: FileIO.basename(file), in: URL(fileURLWithPath: FileIO.parent(of: file)))
        let reports = try f.verify([altered])
        #expect(Self.codes(reports) == ["SHL_DECRYPT_FAILED"])
        #expect(reports.count == 1, "nothing of an unauthenticated plaintext is checked or shown")

        // A file that is no JWE, and one whose header says another algorithm.
        let notJWE = try f.link("not-jwe")
        try TestSupport.write(
            "eyJ.abc",
            to: FileIO.basename(
                try SHLTestSupport.siteFile(of: try VerifyFixtures.text(URL(fileURLWithPath: notJWE)), site: f.site)),
            in: URL(fileURLWithPath: f.site + "/shl"))
        #expect(Self.codes(try f.verify([notJWE])) == ["SHL_JWE_FORM"])
    }

    /// A link whose file in the site is a FIFO or a folder: it is there, so "not in the site … withdrawn" was
    /// wrong; the finding says what it is (the FIFO is never opened).
    @Test func aLinkFileThatIsNoRegularFileIsNamed() throws {
        let f = try Fixture()
        for (name, make) in [("fifo", { (path: String) in #expect(mkfifo(path, 0o644) == 0) }), ("folder", { (path: String) in
            #expect(mkdir(path, 0o755) == 0)
        })] {
            let link = try f.link(name)
            let file = try SHLTestSupport.siteFile(of: try VerifyFixtures.text(URL(fileURLWithPath: link)), site: f.site)
            #expect(unlink(file) == 0)
            make(file)
            let findings = try f.verify([link]).flatMap(\.findings)
            #expect(findings.map(\.code.rawValue) == ["SHL_FILE_MISSING"])
            let phrase = name == "fifo" ? "is a FIFO (named pipe)" : "is a folder"
            #expect(
                findings.first?.message
                    == "the link's file \(file) \(phrase), not a regular file: a web server would not serve it as the link's "
                    + "file. Put back the file written when the link was made, or withdraw the link")
        }
    }

    /// Two files of one run with the same IV: under one key (GCM broken) and under two keys (IVs not random).
    @Test func reusedIVBetweenTwoFiles() throws {
        let f = try Fixture()
        let key = try AES256Key.random()
        let iv = try AESGCM.randomIV()
        let a = try f.link("a", iv: iv, key: key)
        let b = try f.link("b", iv: iv, key: key, plaintext: Array(#"{"verifiableCredential":["x.y.z"]}"#.utf8))
        let reports = try f.verify([a, b])
        let reuse = reports.flatMap(\.findings).filter { $0.code == .shlIVReused }
        #expect(reuse.count == 1)
        #expect(reuse.first?.location.file == b && reuse.first?.message.contains("under the same key") == true)
        // One IV under two different keys is no weakness (GCM's nonce rule is per key): not a finding.
        let c = try f.link("c", iv: iv)
        let other = try f.verify([a, c]).flatMap(\.findings).filter { $0.code == .shlIVReused }
        #expect(other.isEmpty, "\(other)")
        // The same file reached by two links (its text and its QR, say) is not a reuse.
        let copy = try TestSupport.write(try VerifyFixtures.text(URL(fileURLWithPath: a)), to: "a-copy.txt", in: f.dir)
        #expect(try f.verify([a, copy]).flatMap(\.findings).filter { $0.code == .shlIVReused }.isEmpty)
    }

    @Test func payloadFindings() throws {
        let f = try Fixture()
        func codes(_ edit: @escaping (inout JSONObject) -> Void) throws -> [String] {
            Self.codes(try f.verify([try f.link(UUID().uuidString, edit: edit)]))
        }
        #expect(try codes { $0["flag"] = "PU" } == ["SHL_FLAG_U_WITH_P"])
        #expect(try codes { $0["flag"] = "UL" } == ["SHL_FLAG_INVALID"])
        #expect(try codes { $0["v"] = .integer(2) } == ["SHL_VERSION_UNKNOWN"])
        #expect(try codes { $0["v"] = .integer(1) } == [])
        #expect(try codes { $0["label"] = .string(String(repeating: "a", count: 81)) } == ["SHL_LABEL_INVALID"])
        #expect(try codes { $0["exp"] = .integer(1_700_000_000) } == ["SHL_EXPIRED"])
        #expect(try codes { $0["exp"] = .integer(1_900_000_000_000) } == ["SHL_EXP_INVALID"])
        #expect(try codes { $0["key"] = "short" } == ["SHL_KEY_INVALID"])
        #expect(try codes { $0.removeValue(forKey: "url") } == ["SHL_URL_MISSING"])
        #expect(try codes { $0["flag"] = "L" } == ["SHL_MANIFEST_NOT_CHECKED"])
        #expect(try codes { $0["_x"] = "receivers ignore unknown members" } == [])
        // A URL over 128 characters (its query is ignored when mapping it to the file, which opens fine).
        #expect(
            try codes { $0["url"] = .string($0["url"]!.stringValue! + "?" + String(repeating: "a", count: 60)) } == [
                "SHL_URL_TOO_LONG"
            ])
        #expect(
            try codes { $0["url"] = .string(SHLTestSupport.base + "/short") } == [
                "SHL_URL_ENTROPY", "SHL_FILE_MISSING",
            ])
        // Text that is no link, and a payload that is not base64url JSON.
        let notLink = try TestSupport.write("shlink:/%%%", to: "bad.txt", in: f.dir)
        #expect(Self.codes(try f.verify([notLink])) == ["SHL_PAYLOAD_ENCODING"])
        let array = try TestSupport.write("shlink:/" + Base64URL.encode(Array("[]".utf8)), to: "array.txt", in: f.dir)
        #expect(Self.codes(try f.verify([array])) == ["SHL_PAYLOAD_NOT_JSON"])
    }

    /// The IG's own manifest link (flags L and P): a valid payload whose manifest is not checked offline.
    @Test func igManifestLink() throws {
        let f = try Fixture()
        let viewer = "https://viewer.example.org#" + SHLinkTests.igBare
        let reports = try f.verify([SHLinkTests.igBare, viewer])
        #expect(Self.codes(reports) == ["SHL_MANIFEST_NOT_CHECKED", "SHL_MANIFEST_NOT_CHECKED"])
        #expect(reports.map(\.file) == ["argument 1", "argument 2"])
        #expect(reports.allSatisfy { $0.isValid })
    }

    /// A link QR image: read back, its file opened; ECC other than M is a warning.
    @Test func linkQRImages() throws {
        let f = try Fixture()
        let text = try VerifyFixtures.text(URL(fileURLWithPath: try f.link("qr")))
        let m = try TestSupport.write("", to: "m.png", in: f.dir)
        try Data(try QRImage().png(try QRCode(link: text))).write(to: URL(fileURLWithPath: m))
        let good = try f.verify([m])
        #expect(good.map(\.source) == [.shlink, .smartHealthCard] && Self.codes(good) == [])
        let l = try TestSupport.write("", to: "l.png", in: f.dir)
        try Data(try QRImage().png(try QRCode(segments: [(.byte, Array(text.utf8))], level: .L))).write(
            to: URL(fileURLWithPath: l))
        #expect(Self.codes(try f.verify([l])) == ["SHL_QR_ECC"])
    }

    /// The CLI never prints the key, in text or JSON, and counts links apart from credentials.
    @Test func cliNeverPrintsTheKey() throws {
        let f = try Fixture()
        let path = try f.link("cli")
        let key = try SHLinkText.parse(try VerifyFixtures.text(URL(fileURLWithPath: path))).key
        for extra in [[], ["--json"]] {
            let run = try TestSupport.cli(["verify", "--jwks", f.site, "--shl-site", f.site] + extra + [path])
            #expect(run.status == 0, "\(run.stdout)")
            #expect(!run.stdout.contains(key) && !run.stderr.contains(key))
        }
        let text = try TestSupport.cli(["verify", "--jwks", f.site, "--shl-site", f.site, path])
        #expect(
            text.stdout.hasSuffix("verify: 1 credential(s), 1 link(s) checked, 0 error(s), 0 warning(s)\n"),
            "\(text.stdout)")
        let notSite = try TestSupport.cli(["verify", "--shl-site", f.dir.path, path])
        #expect(notSite.status == 2 && notSite.stderr.contains("--shl-site"), "\(notSite.stderr)")
    }
}
