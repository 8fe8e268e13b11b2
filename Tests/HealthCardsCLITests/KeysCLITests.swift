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

/// Key safety through the real CLI: exposed key files, unsupported keys made with `openssl`, JWKS that
/// refuse private members, and a scan of every output of a full run for the private key.
@Suite(.serialized) struct KeysCLITests {
    static let issuer = "https://issuer.example.org"
    static let expected = "expected an unencrypted ECDSA P-256 private key in PKCS#8 PEM"

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> TestSupport.Run {
        let run = try TestSupport.run("/usr/bin/env", ["openssl"] + arguments)
        #expect(run.status == 0, "openssl \(arguments): \(run.stderr)")
        return run
    }

    static func chmod(_ path: String, _ mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    /// A small Bundle input, so `issue` has something to sign.
    static func bundleInput(in dir: URL) throws -> String {
        let good = JSONWriter.minifiedString(
            try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json"))))
        return try TestSupport.write(good + "\n", to: "one.ndjson", in: dir)
    }

    /// A DER key given to sign with is named for what it is: a PKCS#8 DER private key gets the conversion to PEM
    /// (before, it was called "a DER public key"), and only a DER SubjectPublicKeyInfo is called a public key.
    @Test func derKeysAreDescribedAsWhatTheyAre() throws {
        let dir = try TestSupport.tempDir("keys-der")
        let pem = dir.appendingPathComponent("p256.pem").path
        let privateDER = dir.appendingPathComponent("private.der").path
        let publicDER = dir.appendingPathComponent("public.der").path
        try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", pem])
        try Self.openssl(["pkcs8", "-topk8", "-nocrypt", "-in", pem, "-outform", "DER", "-out", privateDER])
        try Self.openssl(["pkey", "-in", pem, "-pubout", "-outform", "DER", "-out", publicDER])
        try Self.chmod(privateDER, 0o600)
        let privateSays = Self.signingKeyMessage(privateDER)
        #expect(!privateSays.contains("is a DER public key"), "\(privateSays)")
        #expect(privateSays.contains("a DER private key is not read (convert it: `openssl pkey -inform DER"), "\(privateSays)")
        let publicSays = Self.signingKeyMessage(publicDER)
        #expect(publicSays.contains("is a DER public key; signing needs the private key"), "\(publicSays)")
    }

    /// What loading `path` as a signing key says (its error's text).
    static func signingKeyMessage(_ path: String) -> String {
        do {
            _ = try KeyFile.load(path: path, requirePrivate: true)
            return "loaded"
        } catch let error as HealthCardError {
            return error.text
        } catch {
            return "\(error)"
        }
    }

    /// The base64 body lines of a PEM file (everything but the BEGIN/END lines and headers).
    static func pemBodyLines(_ path: String) throws -> [String] {
        let text = String(decoding: try VerifyFixtures.bytes(URL(fileURLWithPath: path)), as: UTF8.self)
        return text.split(separator: "\n").map(String.init).filter {
            !$0.hasPrefix("-----") && !$0.contains(":") && $0.count >= 16
        }
    }

    /// The private scalar d of an EC key file, as 32 bytes, read with `openssl pkey -text`.
    static func privateScalar(_ path: String) throws -> [UInt8] {
        let text = try openssl(["pkey", "-in", path, "-noout", "-text"]).stdout
        var hex = ""
        var inPriv = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("priv:") {
                inPriv = true
                continue
            }
            if inPriv {
                guard line.hasPrefix(" ") else { break }
                hex += line.filter { $0.isHexDigit }
            }
        }
        var bytes = TestSupport.hex(hex)
        while bytes.count > 32, bytes.first == 0 { bytes.removeFirst() }
        while bytes.count < 32 { bytes.insert(0, at: 0) }
        return bytes
    }

    @Test func groupOrOtherReadableKeyIsRefusedWithTheChmod() throws {
        let dir = try TestSupport.tempDir("keys")
        let key = try TestSupport.demoKey(in: dir)
        let input = try Self.bundleInput(in: dir)
        let out = dir.appendingPathComponent("out")
        for mode in [0o640, 0o604, 0o644, 0o660] {
            try Self.chmod(key, mode)
            let issue = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, input])
            #expect(issue.status == 2, "mode \(String(mode, radix: 8))")
            #expect(
                issue.stderr.contains("can be read by group or others (mode \(String(mode, radix: 8)))"),
                "\(issue.stderr)")
            #expect(issue.stderr.contains("Run `chmod 600 \(key)` and try again"), "\(issue.stderr)")
            let jwks = try TestSupport.cli(["jwks", key, "--out", dir.appendingPathComponent("jwks.json").path])
            #expect(jwks.status == 2)
            #expect(jwks.stderr.contains("chmod 600 \(key)"))
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("jwks.json").path))
        try Self.chmod(key, 0o600)
        let ok = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, input])
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test func keygenWrites0600AndNeverOverwrites() throws {
        let dir = try TestSupport.tempDir("keys")
        let path = dir.appendingPathComponent("issuer.pem").path
        let first = try TestSupport.cli(["keygen", "--out", path])
        #expect(first.status == 0)
        #expect(try Self.mode(path) == 0o600)
        let before = try VerifyFixtures.bytes(URL(fileURLWithPath: path))
        let again = try TestSupport.cli(["keygen", "--out", path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("\(path) already exists and is a file; a private key is never overwritten"))
        #expect(try VerifyFixtures.bytes(URL(fileURLWithPath: path)) == before)
        // Even a file that is not a key is not overwritten.
        let other = try TestSupport.write("notes", to: "notes.txt", in: dir)
        #expect(try TestSupport.cli(["keygen", "--out", other]).status == 2)
        #expect(try String(contentsOfFile: other, encoding: .utf8) == "notes")
    }

    /// Keys `issue` cannot sign with, each made by `openssl`: the message names what was found and what is expected.
    @Test(arguments: [
        ("p384-pkcs8", "holds an EC key on P-384; ES256 needs P-256 (prime256v1)"),
        ("p384-sec1", "holds an EC key on P-384; ES256 needs P-256 (prime256v1)"),
        ("secp256k1", "holds an EC key on secp256k1"),
        ("rsa-pkcs8", "holds an RSA key; SMART Health Cards are signed ES256"),
        ("rsa-traditional", "holds an RSA key; SMART Health Cards are signed ES256"),
        ("ed25519", "holds an Ed25519 key; SMART Health Cards are signed ES256"),
        ("encrypted-pkcs8", "is an encrypted PKCS#8 key and no passphrase can be given"),
        ("encrypted-traditional", "is an encrypted PEM key; decrypt it with `openssl ec"),
        ("public", "holds a public key, but signing needs the private key"),
        ("corrupt", "OpenSSL cannot parse (corrupt or truncated PEM)"),
        ("truncated", "OpenSSL cannot parse (corrupt or truncated PEM)"),
        ("certificate", "holds an X.509 certificate, not a key"),
        ("jwk-json", "holds no PEM block"),
    ])
    func unsupportedKeysAreNamed(kind: String, says: String) throws {
        let dir = try TestSupport.tempDir("keys")
        let p256 = dir.appendingPathComponent("p256.pem").path
        try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", p256])
        let path = dir.appendingPathComponent("\(kind).pem").path
        switch kind {
        case "p384-pkcs8":
            try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", path])
        case "p384-sec1": try Self.openssl(["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", path])
        case "secp256k1":
            try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1", "-out", path])
        case "rsa-pkcs8":
            try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path])
        case "rsa-traditional": try Self.openssl(["genrsa", "-traditional", "-out", path, "2048"])
        case "ed25519": try Self.openssl(["genpkey", "-algorithm", "ED25519", "-out", path])
        case "encrypted-pkcs8":
            try Self.openssl([
                "pkcs8", "-topk8", "-in", p256, "-v2", "aes-256-cbc", "-passout", "pass:secret", "-out", path,
            ])
        case "encrypted-traditional":
            try Self.openssl(["ec", "-in", p256, "-aes256", "-passout", "pass:secret", "-out", path])
        case "public": try Self.openssl(["pkey", "-in", p256, "-pubout", "-out", path])
        case "corrupt":
            // One base64 character of the body changed: still PEM, no longer a key.
            var lines = try String(contentsOfFile: p256, encoding: .utf8).split(separator: "\n").map(String.init)
            lines[2] = String(lines[2].reversed())
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        case "truncated":
            let lines = try String(contentsOfFile: p256, encoding: .utf8).split(separator: "\n").map(String.init)
            try (lines.prefix(2).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        case "certificate":
            try Self.openssl([
                "req", "-x509", "-key", p256, "-subj", "/CN=issuer.example.org", "-days", "1", "-out", path,
            ])
        case "jwk-json":
            let jwk = JWK(
                key: try P256Key.load(
                    pem: try VerifyFixtures.bytes(URL(fileURLWithPath: p256)), source: "p256", requirePrivate: true))
            try JSONWriter.minifiedString(jwk.json).write(toFile: path, atomically: true, encoding: .utf8)
        default: Issue.record("unknown kind \(kind)")
        }
        try Self.chmod(path, 0o600)
        let input = try Self.bundleInput(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", path, "--out", out.path, input])
        #expect(run.status == 2, "\(kind): \(run.stderr)")
        #expect(run.stderr.contains("\(path) "), "\(kind): \(run.stderr)")
        #expect(run.stderr.contains(says), "\(kind): \(run.stderr)")
        #expect(run.stderr.contains(Self.expected), "\(kind): \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        for line in try Self.pemBodyLines(path) + Self.pemBodyLines(p256) {
            #expect(!run.stderr.contains(line) && !run.stdout.contains(line), "\(kind) leaks key text")
        }
    }

    /// P-256 keys as openssl writes them by the usual recipes all sign, and give the same kid as in jwks.
    @Test(arguments: ["genpkey", "ecparam-with-parameters", "ecparam-noout", "certificate-then-key"])
    func p256KeysFromOpenSSLRecipesSign(recipe: String) throws {
        let dir = try TestSupport.tempDir("keys")
        let path = dir.appendingPathComponent("\(recipe).pem").path
        switch recipe {
        case "genpkey":
            try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        case "ecparam-with-parameters": try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-out", path])
        case "ecparam-noout": try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path])
        default:
            let key = dir.appendingPathComponent("key.pem").path
            try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
            let cert = try Self.openssl(["req", "-x509", "-key", key, "-subj", "/CN=issuer.example.org", "-days", "1"])
                .stdout
            try (cert + (try String(contentsOfFile: key, encoding: .utf8))).write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        try Self.chmod(path, 0o600)
        let input = try Self.bundleInput(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", path, "--out", out.path, "--quiet", input,
        ])
        #expect(run.status == 0, "\(recipe): \(run.stderr)")
        let jwks = try TestSupport.cli(["jwks", path, "--out", dir.appendingPathComponent("jwks.json").path])
        #expect(jwks.status == 0)
        let card = try JSONParser.parse(
            try VerifyFixtures.bytes(BatchTestSupport.cardFile(out, id: "one-1")))
        let header = try JWS(compact: try #require(card["verifiableCredential"]?[0]?.stringValue)).parts().header
        #expect(try JSONParser.parse(header)["kid"]?.stringValue.map { $0 + "\n" } == jwks.stdout)
    }

    @Test func jwksRefusesAPrivateJWKEvenWhenAskedToPublishIt() throws {
        let dir = try TestSupport.tempDir("keys")
        let pem = dir.appendingPathComponent("p256.pem").path
        try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", pem])
        try Self.chmod(pem, 0o600)
        let key = try P256Key.load(
            pem: try VerifyFixtures.bytes(URL(fileURLWithPath: pem)), source: "p256", requirePrivate: true)
        let d = Base64URL.encode(try Self.privateScalar(pem))
        var privateJWK = try #require(JWK(key: key).json.objectValue)
        privateJWK["d"] = .string(d)
        let single = try TestSupport.write(
            JSONWriter.minifiedString(.object(privateJWK)), to: "private-jwk.json", in: dir)
        let set = try TestSupport.write(
            JSONWriter.minifiedString(.object(["keys": .array([JWK(key: key).json, .object(privateJWK)])])),
            to: "private-jwks.json", in: dir)
        let out = dir.appendingPathComponent("site/.well-known/jwks.json")
        for (file, says) in [
            (single, "\(single) carries private member(s) d"), (set, "\(set) keys[1] carries private member(s) d"),
        ] {
            let run = try TestSupport.cli(["jwks", file, "--out", out.path])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains(says), "\(run.stderr)")
            #expect(!run.stderr.contains(d) && !run.stdout.contains(d))
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
        // The public JWK (and a public JWK Set) are published as given, merged with PEM keys by kid.
        let publicJWK = try TestSupport.write(
            JSONWriter.minifiedString(JWK(key: key).json), to: "public-jwk.json", in: dir)
        let demo = try TestSupport.demoKey(in: dir)
        let run = try TestSupport.cli(["jwks", publicJWK, pem, demo, "--out", out.path, "--issuer", Self.issuer])
        #expect(run.status == 0, "\(run.stderr)")
        let keys = try #require(try JSONParser.parse(try VerifyFixtures.bytes(out))["keys"]?.arrayValue)
        #expect(keys.count == 2)
        #expect(keys.first?["kid"]?.stringValue == JWK(key: key).kid)
        #expect(keys.allSatisfy { $0.objectValue?.keys.contains("d") == false })
        // The library refuses as well.
        #expect(throws: HealthCardError.self) { try JWK(json: .object(privateJWK)) }
        #expect(throws: HealthCardError.self) {
            try JWKS.publicKeys(jsonFile: Array(JSONWriter.minifiedString(.object(privateJWK)).utf8), source: "x")
        }
    }

    /// A JWK file whose own kid is not the key's thumbprint: published under the thumbprint, with a warning
    /// that names both (the given kid was dropped without a word); a kid that is the thumbprint gives none.
    @Test func aGivenKidThatIsNotTheThumbprintIsNamed() throws {
        let dir = try TestSupport.tempDir("jwk-kid")
        let jwk = JWK(key: try P256Key.generate())
        var object = try #require(jwk.json.objectValue)
        let right = try TestSupport.write(JSONWriter.minifiedString(.object(object)), to: "right.json", in: dir)
        object["kid"] = .string("my-key-1")
        let wrong = try TestSupport.write(JSONWriter.minifiedString(.object(object)), to: "wrong.json", in: dir)
        let out = dir.appendingPathComponent("jwks.json").path
        let run = try TestSupport.cli(["jwks", wrong, "--out", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stderr.contains(
                "warning: \(wrong) says kid 'my-key-1', which is not its thumbprint; it is published as kid \(jwk.kid)"),
            "\(run.stderr)")
        #expect(try JWKS(bytes: try VerifyFixtures.bytes(URL(fileURLWithPath: out)), source: out).keys.map(\.kid) == [jwk.kid])
        let quiet = try TestSupport.cli(["jwks", right, "--out", out])
        #expect(quiet.status == 0 && !quiet.stderr.contains("warning"), "\(quiet.stderr)")
    }

    /// A JWK whose coordinates are not 32 bytes each is refused saying what each one holds.
    @Test func jwkCoordinatesOfTheWrongSizeAreNamed() throws {
        let key = try P256Key.generate()
        let good = JWK(key: key)
        let cases: [(x: JSONValue?, y: JSONValue?, found: String)] = [
            (.string(Base64URL.encode(Array(good.x.dropFirst()))), .string(Base64URL.encode(good.y)),
             "but x holds 31 bytes and y holds 32 bytes"),
            (nil, .integer(5), "but x is absent and y is not a string"),
            (.string("AA=="), .string(Base64URL.encode(good.y)),
             "but x is not base64url without padding (4 characters) and y holds 32 bytes"),
        ]
        for item in cases {
            var object: JSONObject = ["kty": .string("EC"), "crv": .string("P-256")]
            if let x = item.x { object["x"] = x }
            if let y = item.y { object["y"] = y }
            let error = try #require(throws: HealthCardError.self) { try JWK(json: .object(object), source: "k.json") }
            #expect(error.message == "k.json x and y must be base64url of 32 bytes each, \(item.found)", "\(error.message)")
        }
    }

    /// A full run (keygen, jwks, issue with good and bad records, error cases) never shows the private key:
    /// every output file, stdout and stderr is scanned for d (base64url, base64, hex) and the PEM body.
    @Test func noPrivateKeyMaterialInAnyOutput() throws {
        let dir = try TestSupport.tempDir("leak")
        let keys = dir.appendingPathComponent("keys")
        let key = keys.appendingPathComponent("issuer.pem").path
        var runs: [TestSupport.Run] = []
        func cli(_ arguments: [String]) throws -> TestSupport.Run {
            let run = try TestSupport.cli(arguments)
            runs.append(run)
            return run
        }
        #expect(try cli(["keygen", "--out", key]).status == 0)
        #expect(try cli(["keygen", "--out", key]).status == 2)
        let site = dir.appendingPathComponent("site")
        #expect(try cli(["jwks", key, "--out", site.appendingPathComponent(".well-known/jwks.json").path]).status == 0)
        let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        let csv = try TestSupport.write(
            [
                "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,vax_event_id",
                "P-1,Ada,Testperson,1960-04-12,2021-01-15,207,E1",
                "P-2,Bob,Bad,1970-01-01,2021-02-30,207,E2",
                "P-3,Cy,Short,1970-01-01",
                "P-4,Di,Code,1970-01-01,2021-01-15,XYZ,E4",
            ].joined(separator: "\n") + "\n", to: "in/batch.csv", in: dir)
        _ = try Self.bundleInput(in: dir)
        let ndjson = try TestSupport.write("{not json\n", to: "in/bad.ndjson", in: dir)
        let out = dir.appendingPathComponent("out")
        let issue = try cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", template, "--out", out.path,
            "--rid-secret", "/nonexistent/secret", csv, ndjson,
        ])
        #expect(issue.status != 0)
        let good = try cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", template, "--out", out.path, csv, ndjson,
            dir.appendingPathComponent("one.ndjson").path,
        ])
        #expect(good.status == 1, "\(good.stderr)")
        // Error cases around the key itself.
        let exposed = keys.appendingPathComponent("exposed.pem").path
        try FileManager.default.copyItem(atPath: key, toPath: exposed)
        try Self.chmod(exposed, 0o644)
        #expect(try cli(["issue", "--issuer", Self.issuer, "--key", exposed, "--out", out.path, csv]).status == 2)
        #expect(try cli(["jwks", exposed, "--out", dir.appendingPathComponent("x.json").path]).status == 2)
        let corrupt = keys.appendingPathComponent("corrupt.pem").path
        var lines = try String(contentsOfFile: key, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[1] = String(lines[1].reversed())
        try (lines.joined(separator: "\n") + "\n").write(toFile: corrupt, atomically: true, encoding: .utf8)
        try Self.chmod(corrupt, 0o600)
        #expect(try cli(["issue", "--issuer", Self.issuer, "--key", corrupt, "--out", out.path, csv]).status == 2)
        #expect(try cli(["jwks", corrupt, "--out", dir.appendingPathComponent("x.json").path]).status == 2)
        let d = try Self.privateScalar(key)
        let privateJWK = keys.appendingPathComponent("private.json").path
        var jwk = try #require(
            JWK(
                key: try P256Key.load(
                    pem: try VerifyFixtures.bytes(URL(fileURLWithPath: key)), source: "k",
                    requirePrivate: true)
            ).json.objectValue)
        jwk["d"] = .string(Base64URL.encode(d))
        try JSONWriter.minifiedString(.object(jwk)).write(toFile: privateJWK, atomically: true, encoding: .utf8)
        #expect(try cli(["jwks", privateJWK, "--out", dir.appendingPathComponent("x.json").path]).status == 2)
        #expect(try cli(["issue", "--issuer", Self.issuer, "--key", privateJWK, "--out", out.path, csv]).status == 2)
        #expect(
            try cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, "--frobnicate", csv]).status
                == 2)

        // What must never appear.
        let hex = d.map { String(format: "%02x", $0) }.joined()
        var secrets = [
            Base64URL.encode(d), Data(d).base64EncodedString(), hex, hex.uppercased(),
            d.map { String(format: "%02x", $0) }.joined(separator: ":"),
        ]
        secrets += try Self.pemBodyLines(key)
        #expect(secrets.count >= 7)
        #expect(d.count == 32 && d.contains { $0 != 0 })
        // Positive control: the scan finds d in the private JWK made on purpose.
        #expect(try String(contentsOfFile: privateJWK, encoding: .utf8).contains(secrets[0]))
        // Every file the runs wrote (the key files made on purpose are the only exceptions), and all stdout/stderr.
        var scanned = 0
        let enumerator = try #require(FileManager.default.enumerator(atPath: dir.path))
        while let relative = enumerator.nextObject() as? String {
            let path = dir.appendingPathComponent(relative).path
            guard !FileIO.isDirectory(path), !relative.hasPrefix("keys/") else { continue }
            let text = String(decoding: try VerifyFixtures.bytes(URL(fileURLWithPath: path)), as: UTF8.self)
            let latin = String(
                decoding: try VerifyFixtures.bytes(URL(fileURLWithPath: path)).map { $0 < 0x80 ? $0 : 0x20 },
                as: UTF8.self)
            for secret in secrets {
                #expect(!text.contains(secret) && !latin.contains(secret), "\(relative) contains key material")
            }
            scanned += 1
        }
        #expect(scanned >= 4)  // jwks.json, report.ndjson, a card, a QR image (and the inputs)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("cards/P-1.smart-health-card").path))
        for run in runs {
            for secret in secrets { #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret)) }
        }
        #expect(runs.count == 12)
    }
}
