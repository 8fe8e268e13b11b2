import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite

/// Helpers for the SMART Health Link tests: a site, `issue --shl`, and an independent decryption in Python.
package enum SHLTestSupport {
    package static let issuer = SiteTestSupport.issuer
    package static let base = issuer + "/shl"

    /// A key (from `keygen`) and a site folder laid out for it with `--issuer`.
    package static func site(in dir: URL, issuer: String = issuer) throws -> (site: String, key: String, kid: String) {
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--issuer", issuer])
        return (site, key.path, key.kid)
    }

    /// Runs `issue` for a template's sample CSV (or `csv`) with `--site SITE --shl BASE` and `extra`.
    @discardableResult
    package static func issue(
        template: String, csv: String? = nil, key: String, site: String, out: URL, extra: [String] = [],
        nbf: String = "1700000000", expect status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> TestSupport.Run {
        let templates = SiteTestSupport.templates
        return try SiteTestSupport.cli(
            [
                "issue", "--issuer", issuer, "--key", key, "--site", site, "--shl", base, "--template",
                templates.appendingPathComponent("\(template).json").path, "--out", out.path, "--nbf", nbf,
                "--quiet",
            ] + extra + [csv ?? templates.appendingPathComponent("\(template).sample.csv").path],
            expect: status, sourceLocation: sourceLocation)
    }

    /// The link text in `out/shl/<id>.txt` (without its final newline).
    package static func linkText(_ out: URL, id: String) throws -> String {
        try VerifyFixtures.text(out.appendingPathComponent("shl/\(id).txt"))
    }

    /// The site file a link of this toolkit names: the URL after the issuer, under the site folder.
    package static func siteFile(of link: String, site: String) throws -> String {
        let url = try SHLinkText.parse(link).url
        #expect(url.hasPrefix(issuer + "/"))
        return site + String(url.dropFirst(issuer.count))
    }

    /// Whether the test Python has pyca/cryptography (`Tests/requirements.txt`, installed by `make test`).
    package static let pythonCryptoAvailable: Bool = {
        guard let python = TestSupport.python else { return false }
        return (try? TestSupport.run(python, ["-c", "import cryptography.hazmat.primitives.ciphers.aead"]))?.status == 0
    }()
    package static let pythonCryptoMissing: Comment =
        "no test Python with pyca/cryptography at .build/test-venv (run `make test`); skipped"

    /// An independent reader of a link, in Python with pyca/cryptography's `AESGCM`: parses the link text
    /// (viewer prefix, base64url, JSON), maps its `url` into the site folder by string, splits the compact JWE,
    /// decrypts with the header's ASCII as AAD (and raw-inflates for zip DEF), and writes the plaintext to `out`.
    package static let decryptScript = """
        import base64, json, sys, zlib
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        def b64(s):
            return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        link, site, issuer, out = sys.argv[1:5]
        text = open(link).read().strip()
        payload = json.loads(b64(text.split("shlink:/", 1)[1]))
        assert payload["url"].startswith(issuer + "/")
        jwe = open(site + payload["url"][len(issuer):]).read()
        header, encrypted_key, iv, ciphertext, tag = jwe.split(".")
        assert encrypted_key == ""
        protected = json.loads(b64(header))
        plaintext = AESGCM(b64(payload["key"])).decrypt(b64(iv), b64(ciphertext) + b64(tag), header.encode("ascii"))
        if protected.get("zip") == "DEF":
            plaintext = zlib.decompress(plaintext, -15)
        open(out, "wb").write(plaintext)
        print(json.dumps({"header": protected, "payload": payload, "iv": iv}))
        """

    /// Decrypts the link in `linkFile` with the Python reader; returns the plaintext and what it printed.
    package static func pythonDecrypt(linkFile: String, site: String, in dir: URL) throws -> (
        plaintext: [UInt8], info: JSONValue
    ) {
        let python = try #require(TestSupport.python)
        let out = dir.appendingPathComponent(UUID().uuidString + ".plain").path
        let run = try TestSupport.run(python, ["-c", decryptScript, linkFile, site, issuer, out])
        #expect(run.status == 0, "python decrypt \(linkFile): \(run.stderr)")
        return (try SiteTestSupport.bytes(out), try JSONParser.parse(Array(run.stdout.utf8)))
    }

    /// A CSV for the vaccination template: one patient with `doses` doses at different places, with different
    /// lot numbers and vaccines, so the card compresses poorly (24 doses make a JWS over 1,500 characters).
    package static func manyDosesCSV(doses: Int, in dir: URL) throws -> String {
        let header = try String(
            contentsOf: SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv"),
            encoding: .utf8
        ).split(separator: "\n")[0]
        let vaccines = ["207", "208", "212", "213", "217", "218", "219", "221", "229", "300"]
        let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ0123456789")
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var lines = [String(header)]
        for i in 0..<doses {
            var lot = ""
            for _ in 0..<12 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                lot.append(alphabet[Int(state >> 33) % alphabet.count])
            }
            let date =
                "\(2021 + i / 12)-\(String(format: "%02d", i % 12 + 1))-\(String(format: "%02d", i * 7 % 27 + 1))"
            lines.append(
                "EV-9\(i),1,P-9001,Many,,Doses,1950-01-01,F,Springfield,IL,Clinic number \(i) of the county health department,"
                    + "999999,\(date),\(vaccines[i % vaccines.count]),80777-0273-10,MOD,\(lot),2021-07-01,LA,C28161,\(i + 1)"
            )
        }
        return try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "many-doses.csv", in: dir)
    }

    /// Permission bits of a file.
    package static func mode(_ path: String) -> mode_t? { FileIO.mode(path) }
}
