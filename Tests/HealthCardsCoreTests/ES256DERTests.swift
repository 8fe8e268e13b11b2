import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// `ES256.derSignature(fromRaw:)` writes the DER of `R‖S` itself (X.690 section 8.3: an INTEGER in the
/// fewest two's-complement bytes): known answers worked out by those rules, and OpenSSL reading each back.
@Suite struct ES256DERTests {
    static func half(_ first: [UInt8]) -> [UInt8] { first + [UInt8](repeating: 0, count: 32 - first.count) }

    @Test func edgeValuesHaveTheirShortestDER() throws {
        // r = 1 (31 leading zero bytes dropped), s = 2^255 (first byte 0x80: a 0x00 put before it).
        let one = [UInt8](repeating: 0, count: 31) + [0x01]
        let top = Self.half([0x80])
        let der = try ES256.derSignature(fromRaw: one + top)
        #expect(der == [0x30, 0x26, 0x02, 0x01, 0x01, 0x02, 0x21, 0x00] + top)
        // r = 0 is one zero byte; s = 0x7F… keeps its 32 bytes without padding.
        let zero = [UInt8](repeating: 0, count: 32)
        let high = Self.half([0x7F, 0xFF])
        #expect(try ES256.derSignature(fromRaw: zero + high) == [0x30, 0x25, 0x02, 0x01, 0x00, 0x02, 0x20] + high)
        // A leading zero byte followed by 0x80: dropped, then one 0x00 put back (33 → 32 + 1 bytes).
        let padded = [0x00, 0x80] + [UInt8](repeating: 0x11, count: 30)
        #expect(try ES256.derSignature(fromRaw: padded + padded)
            == [0x30, 0x44] + ([0x02, 0x20, 0x00, 0x80] + [UInt8](repeating: 0x11, count: 30)) + ([0x02, 0x20, 0x00, 0x80] + [UInt8](repeating: 0x11, count: 30)))
        #expect(throws: HealthCardError.self) { try ES256.derSignature(fromRaw: one) }
    }

    @Test func openSSLReadsBackWhatIsWritten() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            var raw = (0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Leading zero bytes and high first bytes, in turn, on both halves.
            if round % 3 == 0 { raw[0] = 0; raw[32] = 0 }
            if round % 3 == 1 { raw[0] |= 0x80; raw[32] |= 0x80 }
            if round % 5 == 0 { raw.replaceSubrange(0..<4, with: [0, 0, 0, 0x80]) }
            #expect(try ES256.rawSignature(fromDER: ES256.derSignature(fromRaw: raw)) == raw)
        }
    }

    /// A signature the signer made with its one reused context verifies with the verifier's, and one bit
    /// changed anywhere (signature or message) does not.
    @Test func reusedContextsSignAndVerify() throws {
        let key = try P256Key.generate()
        var signer = try ES256Signer(key: key)
        let verifier = try ES256Verifier(key: signer.publicKey)
        for n in 0..<5 {
            let message = Array("header.payload-\(n)".utf8)
            let signature = try signer.sign(message)
            #expect(signature.count == 64)
            #expect(verifier.verify(signature: signature, message: message))
            #expect(ES256.verify(signature: signature, message: message, key: key))
            var flipped = signature
            flipped[n * 7] ^= 0x01
            #expect(!verifier.verify(signature: flipped, message: message))
            #expect(!verifier.verify(signature: signature, message: message + [0x2E]))
        }
    }
}
