internal import COpenSSL

/// Something that makes ES256 signatures for a JWS: a key file, an HSM, a cloud KMS.
/// The pipeline asks only for the signature and the public key (for the kid).
public protocol JWSSigner {
    /// The public half of the signing key (its kid goes into the JWS header).
    var publicKey: P256PublicKey { get }
    /// Signs `signingInput` (ASCII of `header.payload`) with ECDSA P-256 / SHA-256.
    /// - Returns: the raw `R‖S` signature, exactly 64 bytes (RFC 7518 section 3.4), never DER.
    /// - Throws: `HealthCardError(.crypto)`.
    mutating func sign(_ signingInput: [UInt8]) throws -> [UInt8]
}

/// ES256 with a key held in memory by OpenSSL. One instance per thread: it reuses one OpenSSL context.
///
/// A key in memory signs the SHA-256 of the signing input with one `EVP_PKEY_CTX` made when the signer is
/// made (`EVP_PKEY_sign`, the same ECDSA as `EVP_DigestSign` without setting up a digest context for every
/// card); a key in a PKCS#11 token signs through `EVP_DigestSign` under the engine's lock, as its engine needs.
public struct ES256Signer: JWSSigner {
    private let key: P256Key
    private let context: DigestContext
    private let signing: ECDSAContext?

    /// A signer for `key`, in memory or in a PKCS#11 token.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL cannot make a signing context.
    public init(key: P256PrivateKey) throws {
        try self.init(key: key.storage)
    }

    /// - Throws: `HealthCardError(.key)` when `key` has no private part.
    package init(key: P256Key) throws {
        guard key.hasPrivateKey else { throw HealthCardError(.key, "signing needs a private key") }
        self.key = key
        context = try DigestContext()
        signing = key.isTokenKey ? nil : try ECDSAContext(key: key, purpose: .sign)
    }

    public var publicKey: P256PublicKey { P256PublicKey(storage: key) }

    public mutating func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        if let signing { return try ES256.rawSignature(fromDER: try signing.sign(digest: ES256.digest(signingInput))) }
        let ctx = context.ctx
        // A key in a PKCS#11 token signs for one thread at a time (`P256Key.withPKey`).
        let der: [UInt8] = try key.withPKey { pkey in
            guard EVP_MD_CTX_reset(ctx) == 1, EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
                throw cryptoError("ES256 signing setup")
            }
            var der = [UInt8](repeating: 0, count: 80)
            var length = der.count
            let ok = signingInput.withUnsafeBufferPointer { input in
                EVP_DigestSign(ctx, &der, &length, input.baseAddress, input.count)
            }
            // The context keeps a reference to the key: drop it before the lock is released.
            EVP_MD_CTX_reset(ctx)
            guard ok == 1, length <= der.count else { throw cryptoError("ES256 signing") }
            return Array(der.prefix(length))
        }
        return try ES256.rawSignature(fromDER: der)
    }
}

/// One `EVP_PKEY_CTX` for ECDSA over a SHA-256 digest with one P-256 key in memory, set up once
/// (`EVP_PKEY_sign_init` or `EVP_PKEY_verify_init`, SHA-256 as the signature digest) and used for any
/// number of signatures. One thread at a time; the context holds its own reference to the key.
final class ECDSAContext {
    enum Purpose { case sign, verify }
    private let ctx: OpaquePointer

    /// - Throws: `HealthCardError(.crypto)` when OpenSSL cannot set the context up; `.key` for a key in a
    ///   PKCS#11 token (it signs through its engine, `ES256Signer`).
    init(key: P256Key, purpose: Purpose) throws {
        guard !key.isTokenKey else { throw HealthCardError(.key, "a key in a PKCS#11 token signs through its engine") }
        var made: OpaquePointer? = nil
        key.withPKey { made = EVP_PKEY_CTX_new_from_pkey(nil, $0, nil) }
        guard let ctx = made else { throw cryptoError("ECDSA context") }
        let ready = purpose == .sign ? EVP_PKEY_sign_init(ctx) : EVP_PKEY_verify_init(ctx)
        guard ready == 1, EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 else {
            EVP_PKEY_CTX_free(ctx)
            throw cryptoError(purpose == .sign ? "ES256 signing setup" : "ES256 verification setup")
        }
        self.ctx = ctx
    }

    deinit { EVP_PKEY_CTX_free(ctx) }

    /// The DER `ECDSA-Sig-Value` over a 32-byte SHA-256 digest.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL cannot sign.
    func sign(digest: [UInt8]) throws -> [UInt8] {
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        let ok = digest.withUnsafeBufferPointer { d in EVP_PKEY_sign(ctx, &der, &length, d.baseAddress, d.count) }
        guard ok == 1, length <= der.count else { throw cryptoError("ES256 signing") }
        der.removeLast(der.count - length)
        return der
    }

    /// True when the DER signature `der` is valid over the 32-byte SHA-256 `digest`.
    func verify(der: [UInt8], digest: [UInt8]) -> Bool {
        let result = der.withUnsafeBufferPointer { s in
            digest.withUnsafeBufferPointer { d in EVP_PKEY_verify(ctx, s.baseAddress, s.count, d.baseAddress, d.count) }
        }
        ERR_clear_error()
        return result == 1
    }
}

/// Verifies ES256 signatures with one public key over and over (the issuer's own read-back of every card
/// it signs): one OpenSSL context made once, for one thread at a time. The key is rebuilt in memory from
/// its coordinates, so a key in a PKCS#11 token is checked without asking the token.
package final class ES256Verifier {
    private let context: ECDSAContext

    /// - Throws: `HealthCardError(.key)` for a point not on P-256, `.crypto` when OpenSSL fails.
    package init(key: P256PublicKey) throws {
        let inMemory = key.storage.isTokenKey || key.storage.hasPrivateKey
            ? try P256Key.publicKey(x: key.x, y: key.y) : key.storage
        context = try ECDSAContext(key: inMemory, purpose: .verify)
    }

    /// True when `signature` (64 bytes, `R‖S`) is valid over `message` (RFC 7518 section 3.4); false for a
    /// wrong signature or size.
    package func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == 64, let der = try? ES256.derSignature(fromRaw: signature) else { return false }
        return context.verify(der: der, digest: ES256.digest(message))
    }
}

/// Owner of one `EVP_MD_CTX`.
final class DigestContext {
    let ctx: OpaquePointer
    init() throws {
        guard let ctx = EVP_MD_CTX_new() else { throw cryptoError("digest context") }
        self.ctx = ctx
    }
    deinit { EVP_MD_CTX_free(ctx) }
}

/// ES256 signature conversions and verification (RFC 7518 section 3.4; digest section 1).
public enum ES256 {
    /// Converts an ASN.1 DER `ECDSA-Sig-Value` into the 64-byte JWS form `R‖S` (each 32 bytes, padded).
    /// - Throws: `HealthCardError(.crypto)` when `der` is not a DER ECDSA signature.
    public static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &pointer, buffer.count)
        }
        guard let sig else { throw cryptoError("reading a DER signature") }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(r, buffer.baseAddress, 32) == 32 && BN_bn2binpad(s, buffer.baseAddress.map { $0 + 32 }, 32) == 32
        }
        guard ok else { throw HealthCardError(.crypto, "signature component longer than 32 bytes") }
        return out
    }

    /// Converts a 64-byte `R‖S` signature to ASN.1 DER: `SEQUENCE { INTEGER r, INTEGER s }`, each the
    /// shortest two's-complement form of its unsigned 32 bytes (leading zero bytes dropped, one 0x00 put
    /// back before a first byte of 0x80 or more), as OpenSSL's `i2d_ECDSA_SIG` writes it.
    /// - Throws: `HealthCardError(.crypto)` when `raw` is not 64 bytes.
    public static func derSignature(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count == 64 else {
            throw HealthCardError(.crypto, "an ES256 signature is 64 bytes R‖S, found \(raw.count) bytes")
        }
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var start = half.startIndex
            while start < half.endIndex - 1, half[start] == 0 { start += 1 }
            let body = half[start...]
            let pad = body.first! >= 0x80
            return [0x02, UInt8(body.count + (pad ? 1 : 0))] + (pad ? [0x00] : []) + body
        }
        let r = integer(raw[0..<32]), s = integer(raw[32..<64])
        // At most 2 × (2 + 33) = 70 bytes of content: the short form of a DER length.
        return [0x30, UInt8(r.count + s.count)] + r + s
    }

    /// SHA-256 of an ES256 signing input: the digest ECDSA signs (RFC 7518 section 3.4).
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        message.withUnsafeBufferPointer { m in _ = SHA256(m.baseAddress, m.count, &out) }
        return out
    }

    /// Verifies a 64-byte `R‖S` ES256 signature over `message` with `key` (RFC 7518 section 3.4).
    /// - Returns: true when the signature is valid; false for a wrong signature or wrong size.
    public static func verify(signature: [UInt8], message: [UInt8], key: P256PublicKey) -> Bool {
        verify(signature: signature, message: message, key: key.storage)
    }

    package static func verify(signature: [UInt8], message: [UInt8], key: P256Key) -> Bool {
        guard signature.count == 64, let der = try? derSignature(fromRaw: signature) else { return false }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        return key.withPKey { pkey in
            guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
                ERR_clear_error()
                return false
            }
            let result = der.withUnsafeBufferPointer { d in
                message.withUnsafeBufferPointer { m in EVP_DigestVerify(ctx, d.baseAddress, d.count, m.baseAddress, m.count) }
            }
            EVP_MD_CTX_reset(ctx)
            ERR_clear_error()
            return result == 1
        }
    }
}
