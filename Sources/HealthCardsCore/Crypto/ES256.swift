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

/// ES256 with a key held in memory by OpenSSL. One instance per thread: it reuses one `EVP_MD_CTX`.
public struct ES256Signer: JWSSigner {
    private let key: P256Key
    private let context: DigestContext

    /// A signer for `key`, in memory or in a PKCS#11 token.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL cannot make a digest context.
    public init(key: P256PrivateKey) throws {
        try self.init(key: key.storage)
    }

    /// - Throws: `HealthCardError(.key)` when `key` has no private part.
    package init(key: P256Key) throws {
        guard key.hasPrivateKey else { throw HealthCardError(.key, "signing needs a private key") }
        self.key = key
        context = try DigestContext()
    }

    public var publicKey: P256PublicKey { P256PublicKey(storage: key) }

    public mutating func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
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

    /// Converts a 64-byte `R‖S` signature to ASN.1 DER.
    public static func derSignature(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count == 64 else {
            throw HealthCardError(.crypto, "an ES256 signature is 64 bytes R‖S, found \(raw.count) bytes")
        }
        guard let sig = ECDSA_SIG_new() else { throw cryptoError("signature allocation") }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + 32 }, 32, nil) }
        // ECDSA_SIG_set0 takes ownership of r and s when it succeeds; on every other path they are ours to free.
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw cryptoError("signature conversion")
        }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(sig, &out)
        guard length > 0, let out else { throw cryptoError("DER encoding") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
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
