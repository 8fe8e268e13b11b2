internal import COpenSSL
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// Deterministic ECDSA on P-256 with SHA-256 (RFC 6979): the nonce `k` is derived from the private key
/// and the message with HMAC-SHA-256 (section 3.2), so the same key and message always give the same
/// signature. Only the section 3.2 procedure is ours: HMAC, big numbers and the curve are OpenSSL's
/// (OpenSSL 3.0, Debian 12's, has no deterministic-nonce parameter; 3.2 adds one).
///
/// Its loop over the HMAC_DRBG output compares and reduces big numbers with OpenSSL calls that are not
/// constant-time, so it signs only with keys whose private half is public (`PublicTestKey`): the demo key, the
/// spec's example keys, keys derived from a seed. A real key signs with `ES256Signer` (OpenSSL, random nonces).
///
/// The signature is the ordinary ECDSA one for that `k`: `r = (k·G).x mod n`,
/// `s = k⁻¹ (e + r·d) mod n`, with `s` not normalized (RFC 6979 section 3.4 and its appendix A.2.5
/// vectors, and the PyPI `ecdsa` package's `sign_deterministic`, give this `s`).
package enum RFC6979 {
    /// One deterministic signature with the nonce it used (for tests against the RFC's vectors).
    package struct Signature: Sendable, Equatable {
        /// The nonce, 32 bytes big-endian.
        package var k: [UInt8]
        /// `r` and `s`, 32 bytes big-endian each.
        package var r: [UInt8]
        package var s: [UInt8]
        /// The JWS form `R‖S` (64 bytes).
        package var raw: [UInt8] { r + s }
    }

    /// Signs `message` (SHA-256 is applied here) with the test key's private scalar.
    /// - Parameter extra: RFC 6979 section 3.6 additional data `k'`, mixed into the HMAC_DRBG seed; empty
    ///   for the standard procedure. Different `extra` gives another valid, still deterministic signature.
    /// - Throws: `HealthCardError(.key)` when the key's private scalar cannot be read (a public key, or a key
    ///   held in an HSM: a PKCS#11 token never hands out the scalar RFC 6979 needs); `.crypto` when OpenSSL fails.
    package static func sign(_ message: [UInt8], key testKey: PublicTestKey, extra: [UInt8] = []) throws -> Signature {
        let scalar = try PrivateScalar(testKey.key)
        let curve = try P256Curve()
        return try curve.sign(digest: Digest.sha256(message), scalar: scalar.bn, extra: extra)
    }

    /// As `sign(_:key:extra:)` with the private scalar given as 32 bytes (tests: RFC 6979 appendix A.2.5).
    static func sign(_ message: [UInt8], privateKey: [UInt8], extra: [UInt8] = []) throws -> Signature {
        guard let d = privateKey.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw cryptoError("private scalar")
        }
        defer { BN_clear_free(d) }
        return try P256Curve().sign(digest: Digest.sha256(message), scalar: d, extra: extra)
    }
}

/// The private scalar of a key, read from OpenSSL and cleared when dropped.
final class PrivateScalar {
    let bn: OpaquePointer

    /// - Throws: `HealthCardError(.key)` when `key` has no readable private scalar.
    init(_ key: P256Key) throws {
        var d: OpaquePointer? = nil
        guard key.hasPrivateKey, !key.isTokenKey, key.withPKey({ EVP_PKEY_get_bn_param($0, "priv", &d) }) == 1, let d,
            BN_is_zero(d) == 0
        else {
            if let d { BN_clear_free(d) }
            ERR_clear_error()
            throw HealthCardError(
                .key,
                "deterministic signing (RFC 6979) derives each nonce from the private key itself, and this key's "
                    + "private scalar cannot be read (a public key, or a key held in a PKCS#11 token, which never "
                    + "hands it out). Sign with random nonces (not deterministically), or use a PEM key file")
        }
        BN_set_flags(d, BN_FLG_CONSTTIME)
        bn = d
    }

    deinit { BN_clear_free(bn) }
}

/// P-256 with its order, for RFC 6979 signing and for deriving keys. Owns an `EC_GROUP` and a `BN_CTX`.
final class P256Curve {
    let group: OpaquePointer
    let ctx: OpaquePointer
    /// The group order n (owned by `group`).
    let order: OpaquePointer

    init(nid: Int32 = NID_X9_62_prime256v1) throws {
        guard let group = EC_GROUP_new_by_curve_name(nid) else { throw cryptoError("EC group") }
        guard let ctx = BN_CTX_new() else {
            EC_GROUP_free(group)
            throw cryptoError("BN context")
        }
        guard let order = EC_GROUP_get0_order(group) else {
            EC_GROUP_free(group)
            BN_CTX_free(ctx)
            throw cryptoError("EC group order")
        }
        self.group = group
        self.ctx = ctx
        self.order = order
    }

    deinit {
        BN_CTX_free(ctx)
        EC_GROUP_free(group)
    }

    /// Bytes of the order: 32 for P-256.
    var orderBytes: Int { Int((BN_num_bits(order) + 7) / 8) }

    /// A new BIGNUM; freed (cleared) by the caller.
    func bignum() throws -> OpaquePointer {
        guard let bn = BN_secure_new() ?? BN_new() else { throw cryptoError("BIGNUM") }
        return bn
    }

    /// `value` as `orderBytes` big-endian bytes, left-padded.
    func bytes(_ value: OpaquePointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: orderBytes)
        guard BN_bn2binpad(value, &out, Int32(out.count)) == Int32(out.count) else { throw cryptoError("BN_bn2binpad") }
        return out
    }

    /// The affine coordinates of `scalar`·G, each `orderBytes` long (the field and the order have the same
    /// size on the NIST prime curves).
    func publicPoint(_ scalar: OpaquePointer) throws -> (x: [UInt8], y: [UInt8]) {
        guard let point = EC_POINT_new(group) else { throw cryptoError("EC point") }
        defer { EC_POINT_free(point) }
        let x = try bignum()
        let y = try bignum()
        defer {
            BN_free(x)
            BN_free(y)
        }
        guard EC_POINT_mul(group, point, scalar, nil, nil, ctx) == 1,
            EC_POINT_get_affine_coordinates(group, point, x, y, ctx) == 1
        else { throw cryptoError("EC point multiplication") }
        return (try bytes(x), try bytes(y))
    }

    /// RFC 6979 section 3.2 for P-256 / SHA-256 (qlen = hlen = 256 bits), then the ECDSA signature with that
    /// nonce. `digest` is h1 = SHA-256(message); `scalar` the private key x.
    func sign(digest h1: [UInt8], scalar x: OpaquePointer, extra: [UInt8]) throws -> RFC6979.Signature {
        precondition(h1.count == 32 && orderBytes == 32, "RFC6979 here is P-256 with SHA-256")
        // e = bits2int(h1) (qlen = hlen, so the whole hash), and bits2octets(h1) = int2octets(e mod q).
        let e = try bignum()
        defer { BN_clear_free(e) }
        guard h1.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 32, e) }) != nil,
            BN_nnmod(e, e, order, ctx) == 1
        else { throw cryptoError("hash reduction") }
        let hashOctets = try bytes(e)
        // The private scalar's octets and the HMAC-DRBG state (from which the nonce comes, and so the key)
        // are wiped once used: every buffer that held them is overwritten before it is released.
        var keyOctets = try bytes(x)
        defer { keyOctets.wipe() }
        // Steps b to g: V = 0x01…, K = 0x00…, two rounds seeded with x, h1 and the additional data.
        var v = [UInt8](repeating: 0x01, count: 32)
        var k = [UInt8](repeating: 0x00, count: 32)
        defer {
            v.wipe()
            k.wipe()
        }
        /// HMAC_key(parts…), the concatenated message wiped after use.
        func mac(_ key: [UInt8], _ parts: [UInt8]...) throws -> [UInt8] {
            var message = parts.flatMap { $0 }
            defer { message.wipe() }
            return try Digest.hmacSHA256(key: key, message: message)
        }
        /// `value = new`, the old buffer wiped first.
        func replace(_ value: inout [UInt8], _ new: [UInt8]) {
            value.wipe()
            value = new
        }
        replace(&k, try mac(k, v, [0x00], keyOctets, hashOctets, extra))
        replace(&v, try mac(k, v))
        replace(&k, try mac(k, v, [0x01], keyOctets, hashOctets, extra))
        replace(&v, try mac(k, v))
        let candidate = try bignum()
        defer { BN_clear_free(candidate) }
        BN_set_flags(candidate, BN_FLG_CONSTTIME)
        // Step h: T = V = HMAC_K(V) (hlen = qlen, one block), k = bits2int(T); retry while k is out of
        // [1, q-1] or the signature comes out zero.
        for _ in 0..<64 {
            replace(&v, try mac(k, v))
            guard v.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 32, candidate) }) != nil else {
                throw cryptoError("nonce")
            }
            if BN_is_zero(candidate) == 0, BN_cmp(candidate, order) < 0,
                let signature = try signature(nonce: candidate, e: e, scalar: x)
            {
                return RFC6979.Signature(k: v, r: signature.r, s: signature.s)
            }
            replace(&k, try mac(k, v, [0x00]))
            replace(&v, try mac(k, v))
        }
        throw HealthCardError(.crypto, "RFC 6979 found no usable nonce in 64 rounds")
    }

    /// The ECDSA signature (r, s) with nonce `k`, or nil when r or s is zero (then the next nonce is used).
    /// k⁻¹ is computed as k^(n−2) mod n with OpenSSL's constant-time modular exponentiation.
    private func signature(nonce k: OpaquePointer, e: OpaquePointer, scalar d: OpaquePointer) throws -> (
        r: [UInt8], s: [UInt8]
    )? {
        guard let point = EC_POINT_new(group) else { throw cryptoError("EC point") }
        defer { EC_POINT_free(point) }
        let r = try bignum()
        let s = try bignum()
        let inverse = try bignum()
        let exponent = try bignum()
        let product = try bignum()
        defer {
            for value in [r, s, inverse, exponent, product] { BN_clear_free(value) }
        }
        guard EC_POINT_mul(group, point, k, nil, nil, ctx) == 1,
            EC_POINT_get_affine_coordinates(group, point, r, nil, ctx) == 1,
            BN_nnmod(r, r, order, ctx) == 1
        else { throw cryptoError("ECDSA r") }
        if BN_is_zero(r) == 1 { return nil }
        guard BN_copy(exponent, order) != nil, BN_sub_word(exponent, 2) == 1,
            BN_mod_exp_mont_consttime(inverse, k, exponent, order, ctx, nil) == 1,
            BN_mod_mul(product, r, d, order, ctx) == 1,
            BN_mod_add(product, product, e, order, ctx) == 1,
            BN_mod_mul(s, inverse, product, order, ctx) == 1
        else { throw cryptoError("ECDSA s") }
        if BN_is_zero(s) == 1 { return nil }
        return (try bytes(r), try bytes(s))
    }

    /// `n − s` for a 32-byte `s`: the other valid `s` of the same signature (ECDSA accepts both).
    func negated(_ s: [UInt8]) throws -> [UInt8] {
        let value = try bignum()
        defer { BN_free(value) }
        guard s.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), value) }) != nil,
            BN_sub(value, order, value) == 1
        else { throw cryptoError("n - s") }
        return try bytes(value)
    }
}

/// ES256 with deterministic nonces (RFC 6979): the same key and signing input always give the same
/// 64-byte `R‖S`, so a batch or a fixture catalogue made twice is byte-identical. Only used when asked
/// for (`issue --deterministic`, `fixtures`), and only with a public test key (`PublicTestKey`: the signer's
/// arithmetic is not constant-time): `ES256Signer` (random nonces) stays the default and signs real keys.
package struct DeterministicES256Signer: JWSSigner {
    private let key: P256Key
    private let scalar: PrivateScalar
    private let curve: P256Curve

    package var publicKey: P256PublicKey { P256PublicKey(storage: key) }

    /// - Throws: `HealthCardError(.key)` for a key whose private scalar cannot be read (a public key, or an
    ///   HSM key: the message says to sign with random nonces instead).
    package init(key testKey: PublicTestKey) throws {
        self.key = testKey.key
        scalar = try PrivateScalar(testKey.key)
        curve = try P256Curve()
    }

    package mutating func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        try curve.sign(digest: Digest.sha256(signingInput), scalar: scalar.bn, extra: []).raw
    }

    /// A deterministic signature whose `r` and `s` have their top bit set or clear as asked: RFC 6979 with
    /// additional data 0, 1, 2… (section 3.6) until `r` matches, then `s` or `n − s` (both valid). Used to
    /// make DER signatures whose INTEGERs need a leading zero byte (fixtures).
    /// - Returns: the 64-byte `R‖S`.
    package func sign(_ signingInput: [UInt8], highBitR: Bool, highBitS: Bool) throws -> [UInt8] {
        let digest = Digest.sha256(signingInput)
        for counter in 0..<4096 {
            let extra = (0..<4).map { UInt8(truncatingIfNeeded: counter >> (24 - 8 * $0)) }
            let signature = try curve.sign(digest: digest, scalar: scalar.bn, extra: extra)
            guard (signature.r[0] >= 0x80) == highBitR else { continue }
            if (signature.s[0] >= 0x80) == highBitS { return signature.raw }
            let other = try curve.negated(signature.s)
            if (other[0] >= 0x80) == highBitS { return signature.r + other }
        }
        throw HealthCardError(.crypto, "no deterministic signature with the asked top bits of r and s in 4096 tries")
    }
}
