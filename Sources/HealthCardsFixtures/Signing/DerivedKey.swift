internal import COpenSSL
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// Keys derived from a seed, for test material that must come out the same on every run (the fixture
/// catalogue's certificate authority, its unpublished and other-issuer keys). Never for real cards: anyone
/// who knows the seed knows the key.
package enum DerivedKey {
    /// A P-256 key pair whose private scalar is `1 + (SHA-256(material) mod (n − 1))`.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails.
    package static func p256(from material: [UInt8]) throws -> P256Key {
        let curve = try P256Curve()
        let d = try scalar(from: material, curve: curve)
        defer { BN_clear_free(d) }
        let (x, y) = try curve.publicPoint(d)
        let pkey = try P256Key.fromPoint(x: x, y: y, privateScalar: d)
        return try P256Key(taking: pkey)
    }

    /// The public point of a key on P-384 derived like `p256(from:)`: 48-byte x and y. Only the public
    /// half is made: it is what a key set publishes (a fixture for a key on the wrong curve).
    package static func p384PublicPoint(from material: [UInt8]) throws -> (x: [UInt8], y: [UInt8]) {
        let curve = try P256Curve(nid: NID_secp384r1)
        let d = try scalar(from: material, curve: curve)
        defer { BN_clear_free(d) }
        return try curve.publicPoint(d)
    }

    /// The private scalar of `p256(from:)` as 32 bytes (a fixture publishes a derived key's `d` to show
    /// the leaked-private-key fault; never a caller's key).
    package static func p256PrivateScalar(from material: [UInt8]) throws -> [UInt8] {
        let curve = try P256Curve()
        let d = try scalar(from: material, curve: curve)
        defer { BN_clear_free(d) }
        return try curve.bytes(d)
    }

    /// `1 + (H mod (n − 1))`, H the SHA-256 of `material` (stretched with a counter to the order's size).
    private static func scalar(from material: [UInt8], curve: P256Curve) throws -> OpaquePointer {
        var stream: [UInt8] = []
        var counter: UInt8 = 0
        while stream.count < curve.orderBytes + 16 {
            stream += Digest.sha256(material + [counter])
            counter &+= 1
        }
        let d = try curve.bignum()
        let limit = try curve.bignum()
        defer { BN_free(limit) }
        guard stream.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), d) }) != nil,
            BN_copy(limit, curve.order) != nil, BN_sub_word(limit, 1) == 1,
            BN_nnmod(d, d, limit, curve.ctx) == 1, BN_add_word(d, 1) == 1
        else {
            BN_clear_free(d)
            throw cryptoError("deriving a scalar")
        }
        return d
    }
}
