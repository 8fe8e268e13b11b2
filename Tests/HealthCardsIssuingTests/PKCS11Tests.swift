import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// A SoftHSM2 store made once per test process by scripts/softhsm-setup.sh.
///
/// SoftHSM2 reads SOFTHSM2_CONF once per process, so every test shares this store:
/// token `issuer` holds the P-256 key `shc-2026` (and a P-384 key `p384`); token `spare` holds a key
/// that no test logs in to with the right PIN, so its wrong-PIN test is not masked by an earlier login.
struct SoftHSMFixture: Sendable {
    static let pin = "4242-issuer-pin"
    static let module = "/usr/lib/softhsm/libsofthsm2.so"
    let directory: String
    let pinFile: String
    /// The URI printed by the script for `issuer`/`shc-2026`.
    let uri: String
    /// The token's public key for `shc-2026`, read with pkcs11-tool (SPKI DER).
    let publicKeyDER: [UInt8]

    enum Outcome: Sendable {
        case ready(SoftHSMFixture)
        case packagesUnavailable(String)
        case failed(String)
    }

    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let shared: Outcome = make()

    static var packagesAvailable: Bool {
        if case .packagesUnavailable = shared { return false }
        return true
    }

    static func require() throws -> SoftHSMFixture {
        switch shared {
        case .ready(let fixture): return fixture
        case .packagesUnavailable(let why): throw HealthCardError(.io, "SoftHSM2 unavailable: \(why)")
        case .failed(let why):
            Issue.record("softhsm-setup.sh failed: \(why)")
            throw HealthCardError(.io, why)
        }
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, out: Data, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, outData, String(decoding: errData, as: UTF8.self))
    }

    static var directoryForThisProcess: String {
        FileManager.default.temporaryDirectory.appendingPathComponent("healthcards-softhsm-\(getpid())").path
    }

    private static func make() -> Outcome {
        do {
            let directory = directoryForThisProcess
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            atexit { try? FileManager.default.removeItem(atPath: SoftHSMFixture.directoryForThisProcess) }
            let pinFile = directory + "/user.pin"
            try Data((pin + "\n").utf8).write(to: URL(fileURLWithPath: pinFile))
            // A PIN file must be private to its owner, like a key file (PKCS11PIN).
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: pinFile)
            let script = repoRoot.appendingPathComponent("scripts/softhsm-setup.sh").path
            let store = directory + "/store"
            let first = try run("/bin/bash", [script, store, "issuer", pinFile, "shc-2026", "01"])
            if first.status == 2 { return .packagesUnavailable(first.err) }
            guard first.status == 0 else { return .failed("exit \(first.status): \(first.err)") }
            let uri = String(decoding: first.out, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            let second = try run("/bin/bash", [script, store, "spare", pinFile, "spare-key", "02"])
            guard second.status == 0 else { return .failed("spare token: exit \(second.status): \(second.err)") }
            // Everything in this process now talks to this store.
            setenv("SOFTHSM2_CONF", store + "/softhsm2.conf", 1)
            let p384 = try run("/usr/bin/pkcs11-tool", ["--module", module, "--token-label", "issuer", "--login",
                "--pin", pin, "--keypairgen", "--key-type", "EC:secp384r1", "--label", "p384", "--id", "03"])
            guard p384.status == 0 else { return .failed("P-384 key: \(p384.err)") }
            let pubFile = directory + "/shc-2026.pub.der"
            let read = try run("/usr/bin/pkcs11-tool", ["--module", module, "--token-label", "issuer",
                "--read-object", "--type", "pubkey", "--label", "shc-2026", "--output-file", pubFile])
            guard read.status == 0 else { return .failed("reading the public key: \(read.err)") }
            let der = try Data(contentsOf: URL(fileURLWithPath: pubFile))
            return .ready(SoftHSMFixture(directory: directory, pinFile: pinFile, uri: uri, publicKeyDER: Array(der)))
        } catch {
            return .failed("\(error)")
        }
    }

    /// The token's public key as a `P256Key`, through PEM.
    func tokenPublicKey() throws -> P256Key {
        let base64 = Data(publicKeyDER).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        let pem = "-----BEGIN PUBLIC KEY-----\n\(base64)\n-----END PUBLIC KEY-----\n"
        return try P256Key.load(pem: Array(pem.utf8), source: "token public key", requirePrivate: false)
    }
}

@Suite(
    "PKCS#11 keys in SoftHSM2", .serialized,
    .enabled(if: SoftHSMFixture.packagesAvailable,
        "scripts/softhsm-setup.sh could not install softhsm2, opensc and libengine-pkcs11-openssl")
)
struct PKCS11Tests {
    let message = Array("eyJ6aXAiOiJERUYiLCJhbGciOiJFUzI1NiJ9.payload".utf8)

    /// Signs with `key` and checks the signature with a public key rebuilt from x/y only.
    func assertSignsAndVerifies(_ key: P256Key) throws {
        #expect(key.hasPrivateKey)
        var signer = try ES256Signer(key: key)
        let signature = try signer.sign(message)
        #expect(signature.count == 64)
        let publicKey = try P256Key.publicKey(x: key.x, y: key.y)
        #expect(!publicKey.hasPrivateKey)
        #expect(ES256.verify(signature: signature, message: message, key: publicKey))
        #expect(!ES256.verify(signature: signature, message: message + [0x2E], key: publicKey))
        // ECDSA is randomised: a second signature differs but verifies too.
        let again = try signer.sign(message)
        #expect(again != signature)
        #expect(ES256.verify(signature: again, message: message, key: publicKey))
    }

    @Test func scriptPrintsURIWithModuleAndPinSource() throws {
        let fixture = try SoftHSMFixture.require()
        #expect(fixture.uri == "pkcs11:token=issuer;object=shc-2026;id=%01;type=private?module-path="
            + SoftHSMFixture.module + "&pin-source=file:" + fixture.pinFile)
        // Idempotent: a second run keeps the token and the key and prints the same URI.
        let script = SoftHSMFixture.repoRoot.appendingPathComponent("scripts/softhsm-setup.sh").path
        let again = try SoftHSMFixture.run("/bin/bash", [script, fixture.directory + "/store", "issuer", fixture.pinFile,
            "shc-2026", "01"])
        #expect(again.status == 0)
        #expect(String(decoding: again.out, as: UTF8.self) == fixture.uri + "\n")
        #expect(again.err.contains("already exists"))
    }

    @Test func loadsByURIWithPinSourceAndSigns() throws {
        let fixture = try SoftHSMFixture.require()
        let key = try P256Key.load(pkcs11URI: fixture.uri)
        #expect(key.x.count == 32 && key.y.count == 32)
        let tokenKey = try fixture.tokenPublicKey()
        #expect(key.x == tokenKey.x)
        #expect(key.y == tokenKey.y)
        try assertSignsAndVerifies(key)
        // The token's own public key (read by pkcs11-tool) verifies what the token signed.
        var signer = try ES256Signer(key: key)
        #expect(ES256.verify(signature: try signer.sign(message), message: message, key: tokenKey))
        // The private scalar is not exportable.
        let export = #expect(throws: HealthCardError.self) { try key.pkcs8PEM() }
        #expect(export?.message == "the private key is held in a PKCS#11 token and cannot be exported")
        #expect(try key.publicPEM() == (try tokenKey.publicPEM()))
    }

    /// A key in a token is used by one thread at a time in the library itself (`P256Key.withPKey`), not only
    /// because the CLI runs one job: a batch of three workers sharing the token key signs every card, and
    /// every card verifies.
    @Test func aTokenKeySignsForSeveralWorkers() throws {
        let fixture = try SoftHSMFixture.require()
        let key = try P256Key.load(pkcs11URI: fixture.uri)
        #expect(key.isTokenKey)
        let dir = try TestSupport.tempDir("token-jobs")
        let line = JSONWriter.minifiedString(VerifyForge.bundle(doses: 1))
        let input = try TestSupport.write(Array(repeating: line, count: 24).joined(separator: "\n"), to: "in.ndjson", in: dir)
        let settings = IssueSettings(issuer: "https://issuer.example.org", notBefore: 1_690_000_000)
        let out = dir.appendingPathComponent("out").path
        let batch = BatchIssuer(outDir: out, jobs: 3) { try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock()) }
        batch.qr = QRSettings(makeQR: false)
        let summary = try batch.run([.bundles(path: input)])
        #expect(summary.issued == 24 && summary.rejected == 0)
        let keySet = try TestSupport.write(JWKSFileText(key), to: "jwks.json", in: dir)
        let reports = try FileVerifier(keySets: [keySet], now: 1_700_000_000).verify([out + "/cards"])
        #expect(reports.filter { $0.source == .smartHealthCard }.count == 24)
        #expect(reports.allSatisfy { $0.signature == .verified || $0.source == .keySet })
    }

    private func JWKSFileText(_ key: P256Key) -> String {
        String(decoding: JWKS(keys: [JWK(key: key)]).fileBytes, as: UTF8.self)
    }

    /// A PIN is never taken from the URI (pin-value): a URI given on the command line shows in `ps`.
    @Test func pinValueIsRefusedWithoutShowingIt() throws {
        _ = try SoftHSMFixture.require()
        let uri = "pkcs11:token=issuer;object=shc%2D2026?module-path=\(SoftHSMFixture.module)&pin-value=\(SoftHSMFixture.pin)"
        let error = try #require(throws: HealthCardError.self) { try P256Key.load(pkcs11URI: uri) }
        #expect(error.kind == .key)
        #expect(error.message.contains("gives the PIN as pin-value: a PIN on the command line can be read by every user"))
        #expect(error.message.contains("pin-source=file:/path/to/pin-file, or set HEALTHCARDS_PKCS11_PIN"))
        #expect(!error.description.contains(SoftHSMFixture.pin))
    }

    /// A percent-encoded object name selects the key as the plain one does.
    @Test func loadsByPercentEncodedURI() throws {
        let fixture = try SoftHSMFixture.require()
        let uri = "pkcs11:token=issuer;object=shc%2D2026?module-path=\(SoftHSMFixture.module)&pin-source=file:\(fixture.pinFile)"
        let key = try P256Key.load(pkcs11URI: uri)
        #expect(key.hasSamePublicKey(as: try fixture.tokenPublicKey()))
        try assertSignsAndVerifies(key)
    }

    @Test func loadsWithModuleFromEnvironment() throws {
        let fixture = try SoftHSMFixture.require()
        setenv("PKCS11_MODULE_PATH", SoftHSMFixture.module, 1)
        defer { unsetenv("PKCS11_MODULE_PATH") }
        let key = try P256Key.load(pkcs11URI: "pkcs11:token=issuer;id=%01?pin-source=file://\(fixture.pinFile)")
        #expect(key.hasSamePublicKey(as: try fixture.tokenPublicKey()))
        try assertSignsAndVerifies(key)
    }

    @Test func keySourcePicksPKCS11OrPEM() throws {
        let fixture = try SoftHSMFixture.require()
        let hsmKey = try KeySource.load(fixture.uri, requirePrivate: true)
        #expect(hsmKey.hasSamePublicKey(as: try fixture.tokenPublicKey()))
        try assertSignsAndVerifies(hsmKey)

        let pemPath = try TestSupport.demoKey(in: try TestSupport.tempDir())
        let fileKey = try KeySource.load(pemPath, requirePrivate: true)
        let direct = try P256Key.load(pem: Array(try Data(contentsOf: URL(fileURLWithPath: pemPath))), source: pemPath,
            requirePrivate: true)
        #expect(fileKey.hasSamePublicKey(as: direct))
        #expect(!fileKey.hasSamePublicKey(as: hsmKey))
        #expect(String(decoding: try fileKey.pkcs8PEM(), as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        try assertSignsAndVerifies(fileKey)

        let missing = fixture.directory + "/no-such.pem"
        let error = try #require(throws: HealthCardError.self) { try KeySource.load(missing, requirePrivate: true) }
        #expect(error.kind == .key)
        #expect(error.message.contains(missing))
        // A private key file readable by others is refused, whatever route loads it.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pemPath)
        let exposed = try #require(throws: HealthCardError.self) { try KeySource.load(pemPath, requirePrivate: true) }
        #expect(exposed.message.contains("chmod 600 \(pemPath)"))
    }

    @Test func wrongPINIsRefusedWithoutShowingIt() throws {
        let fixture = try SoftHSMFixture.require()
        let wrong = "31415926"
        let wrongFile = fixture.directory + "/wrong.pin"
        try Data((wrong + "\n").utf8).write(to: URL(fileURLWithPath: wrongFile))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: wrongFile)
        let fromFile = try #require(throws: HealthCardError.self) {
            try P256Key.load(pkcs11URI: "pkcs11:token=spare;object=spare-key?module-path=\(SoftHSMFixture.module)"
                + "&pin-source=file:\(wrongFile)")
        }
        #expect(fromFile.message == "wrong PIN for PKCS#11 token 'spare' (the PIN from \(wrongFile) was refused)")
        #expect(!fromFile.description.contains(wrong))
    }

    @Test func missingObjectIsNamed() throws {
        _ = try SoftHSMFixture.require()
        let uri = "pkcs11:token=issuer;object=no-such-key?module-path=\(SoftHSMFixture.module)&pin-source=file:\(try SoftHSMFixture.require().pinFile)"
        let error = try #require(throws: HealthCardError.self) { try P256Key.load(pkcs11URI: uri) }
        #expect(error.kind == .key)
        #expect(error.message.hasPrefix("PKCS#11 token 'issuer' has no private key with object 'no-such-key'"))
        #expect(!error.description.contains(SoftHSMFixture.pin))
    }

    @Test func missingTokenIsNamed() throws {
        _ = try SoftHSMFixture.require()
        let uri = "pkcs11:token=no-such-token;object=shc-2026?module-path=\(SoftHSMFixture.module)&pin-source=file:\(try SoftHSMFixture.require().pinFile)"
        let error = try #require(throws: HealthCardError.self) { try P256Key.load(pkcs11URI: uri) }
        #expect(error.kind == .key)
        #expect(error.message.hasPrefix("PKCS#11 token 'no-such-token' not found in module \(SoftHSMFixture.module)"))
        #expect(!error.description.contains(SoftHSMFixture.pin))
    }

    @Test func missingModuleIsNamed() throws {
        let uri = "pkcs11:token=issuer;object=shc-2026?module-path=/nonexistent/libnothing.so&pin-value=1234"
        let error = try #require(throws: HealthCardError.self) { try P256Key.load(pkcs11URI: uri) }
        #expect(error.kind == .key)
        #expect(error.message.hasPrefix("PKCS#11 module not found: /nonexistent/libnothing.so (from module-path)"))

        unsetenv("PKCS11_MODULE_PATH")
        let noModule = try #require(throws: HealthCardError.self) {
            try P256Key.load(pkcs11URI: "pkcs11:token=issuer;object=shc-2026?pin-value=1234")
        }
        #expect(noModule.message.contains("names no module"))
        #expect(!noModule.message.contains("1234"))
        #expect(noModule.message.contains("pin-value=REDACTED"))
    }

    @Test func nonP256KeyIsRefused() throws {
        _ = try SoftHSMFixture.require()
        let uri = "pkcs11:token=issuer;object=p384?module-path=\(SoftHSMFixture.module)&pin-source=file:\(try SoftHSMFixture.require().pinFile)"
        let error = try #require(throws: HealthCardError.self) { try P256Key.load(pkcs11URI: uri) }
        #expect(error.kind == .key)
        #expect(error.message == "PKCS#11 object 'p384' on token 'issuer' is an EC key on P-384; ES256 needs P-256 (prime256v1)")
    }

    @Test func missingPINIsExplained() throws {
        let error = try #require(throws: HealthCardError.self) {
            try P256Key.load(pkcs11URI: "pkcs11:token=issuer;object=shc-2026?module-path=\(SoftHSMFixture.module)")
        }
        #expect(error.message.hasPrefix("PKCS#11 URI pkcs11:token=issuer;object=shc-2026?module-path="
            + "\(SoftHSMFixture.module) gives no PIN for token 'issuer'"))
        #expect(error.message.contains("or set HEALTHCARDS_PKCS11_PIN"))
        let noFile = try #require(throws: HealthCardError.self) {
            try P256Key.load(pkcs11URI: "pkcs11:token=issuer?module-path=\(SoftHSMFixture.module)&pin-source=file:/nonexistent/pin")
        }
        #expect(noFile.kind == .key)
        #expect(noFile.message == "PIN file /nonexistent/pin does not exist; give the file holding the PIN (mode 0600)")
    }
}

@Suite("RFC 7512 PKCS#11 URI parsing")
struct PKCS11URITests {
    @Test func decodesPathAndQuery() throws {
        let uri = try PKCS11URI("pkcs11:token=My%20Token;object=shc%2D2026;id=%01?module-path=/usr/lib/x.so&pin-value=12%2634")
        #expect(uri.path("token") == "My Token")
        #expect(uri.path("object") == "shc-2026")
        #expect(uri.path("id") == "\u{01}")
        #expect(uri.modulePath == "/usr/lib/x.so")
        #expect(uri.query("pin-value") == "12&34")
        #expect(uri.description == "pkcs11:token=My%20Token;object=shc%2D2026;id=%01?module-path=/usr/lib/x.so&pin-value=REDACTED")
        #expect(uri.engineURI == "pkcs11:token=My%20Token;object=shc%2D2026;id=%01")
        #expect(uri.tokenOnlyEngineURI == "pkcs11:token=My%20Token;type=private")
    }

    @Test func rejectsMalformedURIs() {
        let notPKCS11 = #expect(throws: HealthCardError.self) { try PKCS11URI("file:/tmp/key.pem") }
        #expect(notPKCS11?.message == "a PKCS#11 URI starts with 'pkcs11:' (RFC 7512)")
        let badPercent = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:object=a?pin-value=12%zz") }
        #expect(badPercent?.message == "PKCS#11 URI attribute 'pin-value' has a '%' not followed by two hex digits")
        let noEquals = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:token") }
        #expect(noEquals?.message == "PKCS#11 URI path attribute 'token' has no '=' (expected name=value)")
        let twice = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:object=a;object=b") }
        #expect(twice?.message == "PKCS#11 URI path attribute 'object' appears twice (RFC 7512 forbids it)")
    }

    /// A typo in an attribute name is named with the closest RFC 7512 name, not passed on to end as
    /// "not found"; vendor attributes (x-…) pass.
    @Test func attributeTyposAreNamed() throws {
        let typo = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:token=t;objekt=k") }
        #expect(typo?.message.hasPrefix("PKCS#11 URI path attribute 'objekt' is not an RFC 7512 attribute; did you mean 'object'?") == true)
        let query = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:token=t?pin-sourse=file:/p") }
        #expect(query?.message.contains("did you mean 'pin-source'?") == true)
        let misplaced = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:token=t;module-path=/m.so") }
        #expect(misplaced?.message.hasPrefix("PKCS#11 URI attribute 'module-path' belongs in the query (after '?')") == true)
        let type = #expect(throws: HealthCardError.self) { try PKCS11URI("pkcs11:token=t;type=privat") }
        #expect(type?.message.contains("did you mean type=private?") == true)
        #expect(throws: Never.self) { try PKCS11URI("pkcs11:token=t;x-vendor=1;type=public?module-path=/m.so") }
        #expect(PKCS11PIN.distance("objekt", "object") == 1 && PKCS11PIN.distance("", "abc") == 3)
    }
}
