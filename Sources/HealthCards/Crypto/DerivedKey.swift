import COpenSSL

/// Keys derived from a seed, for test material that must come out the same on every run (the fixture
/// catalogue's certificate authority, its unpublished and other-issuer keys). Never for real cards: anyone
/// who knows the seed knows the key.
public enum DerivedKey {
    /// A P-256 key pair whose private scalar is `1 + (SHA-256(material) mod (n − 1))`.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails.
    public static func p256(from material: [UInt8]) throws -> P256Key {
        let curve = try P256Curve()
        let d = try scalar(from: material, curve: curve)
        defer { BN_clear_free(d) }
        let (x, y) = try curve.publicPoint(d)
        let point: [UInt8] = [0x04] + x + y
        guard let builder = OSSL_PARAM_BLD_new() else { throw cryptoError("parameter builder") }
        defer { OSSL_PARAM_BLD_free(builder) }
        func cString(_ s: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        let built: UnsafeMutablePointer<OSSL_PARAM>? = point.withUnsafeBufferPointer { buffer in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString("group"), cString("prime256v1"), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, cString("pub"), buffer.baseAddress, 65) == 1,
                OSSL_PARAM_BLD_push_BN(builder, cString("priv"), d) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params = built else { throw cryptoError("building key parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw cryptoError("EC context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_fromdata_init(ctx) == 1,
            EVP_PKEY_fromdata(ctx, &pkey, COpenSSL_EVP_PKEY_KEYPAIR(), params) == 1, let pkey
        else { throw cryptoError("deriving a P-256 key") }
        return try P256Key(taking: pkey)
    }

    /// The public point of a key on P-384 derived like `p256(from:)`: 48-byte x and y. Only the public
    /// half is made: it is what a key set publishes (a fixture for a key on the wrong curve).
    public static func p384PublicPoint(from material: [UInt8]) throws -> (x: [UInt8], y: [UInt8]) {
        let curve = try P256Curve(nid: NID_secp384r1)
        let d = try scalar(from: material, curve: curve)
        defer { BN_clear_free(d) }
        return try curve.publicPoint(d)
    }

    /// The private scalar of `p256(from:)` as 32 bytes (a fixture publishes a derived key's `d` to show
    /// the leaked-private-key fault; never a caller's key).
    public static func p256PrivateScalar(from material: [UInt8]) throws -> [UInt8] {
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
