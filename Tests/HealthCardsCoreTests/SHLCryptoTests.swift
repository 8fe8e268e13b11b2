import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// AES-256-GCM and the compact JWE of SMART Health Link files, against outside known answers.
@Suite struct SHLCryptoTests {
    /// The IG's own example ("Example Encryption" / "Example Decryption"): the key, the header and the
    /// SHA-256 of the plaintext, a .smart-health-card file.
    @Test func igExampleDecrypts() throws {
        let facts = try JSONParser.parse(
            try VerifyFixtures.bytes(VerifyFixtures.shl.appendingPathComponent("ig-example-decryption.json")))
        let compact = try VerifyFixtures.text(VerifyFixtures.shl.appendingPathComponent("ig-example-file.jwe"))
        let keyText = try #require(facts["key"]?.stringValue)
        let key = try #require(AES256Key.decode(base64url: keyText))
        let (parts, plaintext) = try JWE(compact: compact).decrypt(key: key)
        #expect(parts.header == facts["header"])
        #expect(parts.contentType == "application/smart-health-card")
        #expect(parts.iv.count == 12 && parts.tag.count == 16)
        #expect(String(plaintext.count) == facts["plaintext_bytes"]?.numberLexeme)
        #expect(
            Digest.sha256(plaintext).map { String(format: "%02x", $0) }.joined()
                == facts["plaintext_sha256"]?.stringValue)
        let card = try JSONParser.parse(plaintext)
        #expect(
            card["verifiableCredential"]?[0]?.stringValue?.hasPrefix("eyJ6aXAiOiJERUYiLCJhbGciOiJFUzI1NiIs") == true)
        // Our header bytes for the same content type are the IG's, byte for byte (the AAD).
        #expect(
            Base64URL.encode(JWE.headerBytes(contentType: JWE.smartHealthCard, deflated: false))
                == String(compact.prefix { $0 != "." }))
    }

    /// AES-256-GCM Test Case 16 of the GCM specification (McGrew and Viega; NIST SP 800-38D validation):
    /// key, 96-bit IV, AAD and plaintext give exactly this ciphertext and tag, and open back.
    @Test func aesGCMKnownAnswer() throws {
        let keyBytes = TestSupport.hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let key = try #require(AES256Key.decode(base64url: Base64URL.encode(keyBytes)))
        let iv = TestSupport.hex("cafebabefacedbaddecaf888")
        let aad = TestSupport.hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let plaintext = TestSupport.hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        )
        let sealed = try AESGCM.seal(plaintext, key: key, iv: iv, aad: aad)
        #expect(
            sealed.ciphertext
                == TestSupport.hex(
                    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                ))
        #expect(sealed.tag == TestSupport.hex("76fc6ece0f4e1768cddf8853bb2d551b"))
        #expect(try AESGCM.open(sealed.ciphertext, tag: sealed.tag, key: key, iv: iv, aad: aad) == plaintext)
        var badAAD = aad
        badAAD[0] ^= 1
        #expect(try AESGCM.open(sealed.ciphertext, tag: sealed.tag, key: key, iv: iv, aad: badAAD) == nil)
        #expect(throws: HealthCardError.self) { try AESGCM.seal(plaintext, key: key, iv: [0, 1, 2], aad: []) }
    }

    /// Every encryption takes a fresh IV; altering any part, or another key, fails the tag.
    @Test func jweRoundTripFreshIVAndTampering() throws {
        let key = try AES256Key.random()
        let plaintext = Array(#"{"verifiableCredential":["a.b.c"]}"#.utf8)
        let a = try JWE.encrypt(plaintext, key: key)
        let b = try JWE.encrypt(plaintext, key: key)
        #expect(try a.parts().iv != b.parts().iv)
        #expect(try a.parts().ciphertext != b.parts().ciphertext)
        #expect(try a.decrypt(key: key).plaintext == plaintext)
        #expect(a.compact.split(separator: ".", omittingEmptySubsequences: false).count == 5)
        #expect(a.compact.contains(".."))

        func failure(_ jwe: JWE, _ key: AES256Key) -> JWE.Failure? {
            do {
                _ = try jwe.decryptFailing(key: key)
                return nil
            } catch let failure as JWE.Failure { return failure } catch { return .form("\(error)") }
        }
        #expect(failure(a, try AES256Key.random()) == .authentication)
        var parts = a.compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var ciphertext = try #require(Base64URL.decode(parts[3]))
        ciphertext[0] ^= 0x01
        parts[3] = Base64URL.encode(ciphertext)
        #expect(failure(JWE(compact: parts.joined(separator: ".")), key) == .authentication)
        // The header is the AAD: another cty (same alg, enc) no longer opens.
        var headerSwapped = a.compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        headerSwapped[0] = Base64URL.encode(JWE.headerBytes(contentType: "application/fhir+json", deflated: false))
        #expect(failure(JWE(compact: headerSwapped.joined(separator: ".")), key) == .authentication)
        // Form and header problems are told apart from a failed tag.
        if case .form? = failure(JWE(compact: "a.b.c"), key) {} else { Issue.record("3 parts must be a form failure") }
        let rsa = Base64URL.encode(Array(#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#.utf8))
        if case .header? = failure(JWE(compact: rsa + ".." + parts[2] + "." + parts[3] + "." + parts[4]), key) {
        } else {
            Issue.record("alg RSA-OAEP must be a header failure")
        }
    }

    /// `zip` `DEF`: raw DEFLATE before encryption, inflated after.
    @Test func jweDeflated() throws {
        let key = try AES256Key.random()
        let plaintext = Array(String(repeating: #"{"verifiableCredential":["eyJ"]}"#, count: 20).utf8)
        let jwe = try JWE.encrypt(plaintext, key: key, deflate: true)
        let (parts, back) = try jwe.decrypt(key: key)
        #expect(parts.deflated && parts.header["zip"] == "DEF")
        #expect(parts.ciphertext.count < plaintext.count)
        #expect(back == plaintext)
    }

    @Test func keyDecodingIsStrict() throws {
        let key = try AES256Key.random()
        #expect(key.base64url.count == 43)
        #expect(AES256Key.decode(base64url: key.base64url)?.fingerprint == key.fingerprint)
        #expect(AES256Key.decode(base64url: String(key.base64url.dropLast())) == nil)
        #expect(AES256Key.decode(base64url: Base64URL.encode([UInt8](repeating: 1, count: 31))) == nil)
        #expect(AES256Key.decode(base64url: String(repeating: "*", count: 43)) == nil)
        #expect(try AES256Key.random().fingerprint != key.fingerprint)
    }
}
