import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// PEM files as real machines write them: CRLF line ends, a byte order mark, several blocks.
@Suite struct KeyPEMFormTests {
    func demoPEM() throws -> [UInt8] { try VerifyFixtures.bytes(TestSupport.demoKeySource) }

    @Test func crlfAndBOMCopiesLoadAsTheSameKey() throws {
        let pem = try demoPEM()
        let key = try P256Key.load(pem: pem, source: "lf", requirePrivate: true)
        var crlf: [UInt8] = []
        for byte in pem {
            if byte == 0x0A { crlf.append(0x0D) }
            crlf.append(byte)
        }
        #expect(crlf.count > pem.count)
        let fromCRLF = try P256Key.load(pem: crlf, source: "crlf", requirePrivate: true)
        let fromBOM = try P256Key.load(pem: [0xEF, 0xBB, 0xBF] + crlf, source: "bom", requirePrivate: true)
        #expect(fromCRLF.hasSamePublicKey(as: key))
        #expect(fromBOM.hasSamePublicKey(as: key))
        // The CRLF copy is the same private key: written out again, it is the LF file's PKCS#8 PEM byte for byte.
        #expect(try fromCRLF.pkcs8PEM() == key.pkcs8PEM())
    }

    @Test func twoKeysInOneFileAreRefused() throws {
        let other = try P256Key.generate().pkcs8PEM()
        let error = try #require(throws: HealthCardError.self) {
            try P256Key.load(pem: try demoPEM() + other, source: "two.pem", requirePrivate: true)
        }
        #expect(error.message.hasPrefix("two.pem holds 2 keys"))
        #expect(!error.message.contains("BEGIN"))
    }

    @Test func publicKeyMessageForJWKSSaysAPublicKeyIsFine() throws {
        let error = try #require(throws: HealthCardError.self) {
            try P256Key.load(pem: Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), source: "c.pem", requirePrivate: false)
        }
        #expect(error.message.contains("or a public key in SPKI PEM"))
    }
}
