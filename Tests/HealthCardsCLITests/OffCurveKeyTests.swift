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

/// `jwks` and `site` refuse a public key whose point is not on P-256, in every form a public key comes in: no one
/// holds its private key, so a key set publishing it verifies nothing. Through the CLI.
@Suite struct OffCurveKeyTests {
    /// The DER SubjectPublicKeyInfo of a P-256 key with this encoded point (04‖x‖y, or 02/03‖x).
    static func spki(point: [UInt8]) -> [UInt8] {
        let algorithm: [UInt8] = [
            0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D,
            0x03, 0x01, 0x07,
        ]
        let bitString: [UInt8] = [0x03, UInt8(point.count + 1), 0x00] + point
        return [0x30, UInt8(algorithm.count + bitString.count)] + algorithm + bitString
    }

    static func pem(_ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(base64)\n-----END PUBLIC KEY-----\n"
    }

    @Test func jwksAndSiteRefuseAnOffCurveKeyInEveryForm() throws {
        let dir = try TestSupport.tempDir("offcurve")
        let good = try SiteTestSupport.keygen("good.pem", in: dir)
        let goodKey = try P256Key.load(pem: try SiteTestSupport.bytes(good.path), source: "good", requirePrivate: true)
        let zero = Base64URL.encode([UInt8](repeating: 0, count: 32))
        var yPlusOne = goodKey.y
        yPlusOne[31] &+= 1
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let files: [(name: String, bytes: [UInt8])] = [
            // The tester's JWK: x = y = 0.
            ("zero.json", Array(#"{"kty":"EC","crv":"P-256","x":"\#(zero)","y":"\#(zero)"}"#.utf8)),
            // A real key's x with y + 1, in a JWK Set after a good key.
            ("set.json", JWKS(keys: [JWK(key: goodKey), try JWK(x: goodKey.x, y: yPlusOne)]).fileBytes),
            // The same point as SPKI DER and PEM, and a compressed point whose x (1) has no y on the curve.
            ("off.der", Self.spki(point: [0x04] + goodKey.x + yPlusOne)),
            ("off.pem", Array(Self.pem(Self.spki(point: [0x04] + goodKey.x + yPlusOne)).utf8)),
            ("compressed.pem", Array(Self.pem(Self.spki(point: [0x02] + one)).utf8)),
        ]
        for (name, bytes) in files {
            let path = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let jwksOut = dir.appendingPathComponent("\(name).jwks.json").path
            let jwks = try SiteTestSupport.cli(["jwks", good.path, path, "--out", jwksOut], expect: 2)
            #expect(jwks.stderr.contains(path), "\(name): \(jwks.stderr)")
            #expect(
                jwks.stderr.contains("not a point on P-256") || jwks.stderr.contains("not on the curve"),
                "\(name): \(jwks.stderr)")
            #expect(!FileManager.default.fileExists(atPath: jwksOut), "\(name)")
            let site = dir.appendingPathComponent("\(name).site").path
            let run = try SiteTestSupport.cli(["site", "--out", site, good.path, path], expect: 2)
            #expect(run.stderr == jwks.stderr, "\(name)")
            #expect(!FileManager.default.fileExists(atPath: site), "\(name)")
        }
        // The good key's own public forms are accepted (the refusals above are about the point).
        let publicPEM = try TestSupport.write(
            String(decoding: try goodKey.publicPEM(), as: UTF8.self), to: "pub.pem", in: dir)
        let derPath = dir.appendingPathComponent("pub.der").path
        try Data(Self.spki(point: [0x04] + goodKey.x + goodKey.y)).write(to: URL(fileURLWithPath: derPath))
        let jsonPath = try TestSupport.write(
            String(decoding: JSONWriter.minified(JWK(key: goodKey).json), as: UTF8.self), to: "pub.json", in: dir)
        for path in [publicPEM, derPath, jsonPath] {
            let run = try SiteTestSupport.cli(["jwks", path, "--out", "-"])
            #expect(try JWKS(bytes: Array(run.stdout.utf8), source: path).keys.map(\.kid) == [good.kid])
        }
    }
}
