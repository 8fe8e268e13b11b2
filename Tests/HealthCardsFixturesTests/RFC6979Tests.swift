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

/// Deterministic ECDSA nonces (RFC 6979, HMAC-SHA-256) for ES256: the RFC's own P-256 vectors, and the
/// PyPI `ecdsa` package as an independent implementation.
@Suite struct RFC6979Tests {
    /// RFC 6979 appendix A.2.5: the P-256 key x and, for SHA-256, k, r and s for "sample" and "test".
    static let privateKey = TestSupport.hex("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")

    @Test(arguments: [
        (
            "sample", "A6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60",
            "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
            "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"
        ),
        (
            "test", "D16B6AE827F17175E040871A1C7EC3500192C4C92677336EC2537ACAEE0008E0",
            "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367",
            "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"
        ),
    ])
    func rfcVectors(message: String, k: String, r: String, s: String) throws {
        let signature = try RFC6979.sign(Array(message.utf8), privateKey: Self.privateKey)
        #expect(signature.k == TestSupport.hex(k))
        #expect(signature.r == TestSupport.hex(r))
        #expect(signature.s == TestSupport.hex(s))
    }

    /// The vector key as a P256Key (PKCS#8 built by OpenSSL from the scalar) signs the same bytes through
    /// the JWS signer, and the signature verifies with OpenSSL.
    @Test func signerMatchesVectorAndVerifies() throws {
        let key = try Self.vectorKey()
        var signer = try DeterministicES256Signer(key: try PublicTestKey(key))
        let message = Array("sample".utf8)
        let raw = try signer.sign(message)
        #expect(
            raw == TestSupport.hex("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716")
                + TestSupport.hex("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"))
        #expect(try signer.sign(message) == raw)
        #expect(ES256.verify(signature: raw, message: message, key: key))
        #expect(!ES256.verify(signature: raw, message: Array("Sample".utf8), key: key))
    }

    /// The vector key as PKCS#8 PEM, made by OpenSSL's command line from the SEC 1 DER of the scalar.
    static func vectorKey() throws -> P256Key {
        // SEC 1 ECPrivateKey: version 1, the scalar, the P-256 OID; OpenSSL derives the public point.
        let der: [UInt8] =
            [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + privateKey
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let base64 = Data(der).base64EncodedString()
        let pem = "-----BEGIN EC PRIVATE KEY-----\n\(base64)\n-----END EC PRIVATE KEY-----\n"
        return try P256Key.load(pem: Array(pem.utf8), source: "RFC 6979 A.2.5 key", requirePrivate: true)
    }

    /// Different additional data (section 3.6) gives other valid signatures; the top-bit search finds each
    /// of the four DER shapes, all verifying.
    @Test func highBitVariants() throws {
        let key = try Self.vectorKey()
        let signer = try DeterministicES256Signer(key: try PublicTestKey(key))
        let message = Array("eyJ6aXAiOiJERUYifQ.payload".utf8)
        for (highR, highS) in [(false, false), (true, false), (false, true), (true, true)] {
            let raw = try signer.sign(message, highBitR: highR, highBitS: highS)
            #expect((raw[0] >= 0x80) == highR)
            #expect((raw[32] >= 0x80) == highS)
            #expect(ES256.verify(signature: raw, message: message, key: key))
            let der = try ES256.derSignature(fromRaw: raw)
            // INTEGER r is 33 bytes (leading 0x00) exactly when its top bit is set.
            #expect((der[3] == 33) == highR)
            #expect(try signer.sign(message, highBitR: highR, highBitS: highS) == raw)
        }
    }

    /// A key held in an HSM (here: a public key, which has no scalar either) is refused with a sentence
    /// that says what to do.
    @Test func refusesKeyWithoutScalar() throws {
        let key = try Self.vectorKey()
        let publicOnly = try P256Key.publicKey(x: key.x, y: key.y)
        #expect {
            _ = try DeterministicES256Signer(key: try PublicTestKey(publicOnly))
        } throws: { error in
            "\(error)".contains("random nonces") && "\(error)".contains("PKCS#11")
        }
    }

    /// The PyPI `ecdsa` package (`SigningKey.sign_deterministic`, RFC 6979 with SHA-256) signs the same
    /// messages with fresh keys to the same R‖S bytes.
    @Test(.enabled(if: TestSupport.python != nil, "no test Python at .build/test-venv (run `make test`); skipped"))
    func agreesWithPythonEcdsa() throws {
        let messages = ["", "sample", "eyJ6aXAiOiJERUYiLCJhbGciOiJFUzI1NiJ9.abc", String(repeating: "x", count: 1000)]
        var lines: [String] = []
        var expected: [String] = []
        for i in 0..<8 {
            let key = try DerivedKey.testKey(from: Array("rfc6979-test-\(i)".utf8))
            let scalar = try DerivedKey.p256PrivateScalar(from: Array("rfc6979-test-\(i)".utf8))
            var signer = try DeterministicES256Signer(key: key)
            for message in messages {
                let hexKey = scalar.map { String(format: "%02x", $0) }.joined()
                let hexMessage = Array(message.utf8).map { String(format: "%02x", $0) }.joined()
                lines.append("\(hexKey) \(hexMessage)")
                expected.append(try signer.sign(Array(message.utf8)).map { String(format: "%02x", $0) }.joined())
            }
        }
        let script = """
            import sys, hashlib
            from ecdsa import SigningKey, NIST256p
            for line in open(sys.argv[1]).read().splitlines():
                key, message = line.split(' ')
                sk = SigningKey.from_string(bytes.fromhex(key), curve=NIST256p, hashfunc=hashlib.sha256)
                print(sk.sign_deterministic(bytes.fromhex(message), hashfunc=hashlib.sha256).hex())
            """
        let dir = try TestSupport.tempDir("rfc6979")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "input.txt", in: dir)
        let run = try TestSupport.run(TestSupport.python!, ["-c", script, input])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").map(String.init) == expected)
    }
}
