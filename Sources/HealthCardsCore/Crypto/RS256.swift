internal import COpenSSL

/// An RSA public key from JWK members `n` and `e` (RFC 7518 section 6.3.1), held as an OpenSSL `EVP_PKEY`, for
/// checking RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 section 3.3) of access tokens an
/// authorization server signed. No signing: this toolkit never signs with RSA.
public final class RSAPublicKey: @unchecked Sendable {
    // Immutable after init; OpenSSL's verify calls take the key read-only.
    private let pkey: OpaquePointer
    /// The modulus's size in bits.
    public let bits: Int

    /// The least modulus size accepted, in bits (RFC 7518 section 3.3: "2048 bits or larger").
    public static let minimumBits = 2048
    /// The largest accepted, in bits (a bigger key only costs the verifier time).
    public static let maximumBits = 8192

    /// - Parameters:
    ///   - n: the modulus, big-endian unsigned bytes.
    ///   - e: the public exponent, big-endian unsigned bytes.
    /// - Throws: `HealthCardError(.key)` for a modulus outside `minimumBits...maximumBits` or a key OpenSSL refuses.
    public init(n: [UInt8], e: [UInt8]) throws {
        let modulus = Array(n.drop { $0 == 0 })
        let exponent = Array(e.drop { $0 == 0 })
        let bits = modulus.isEmpty ? 0 : (modulus.count - 1) * 8 + (8 - modulus[0].leadingZeroBitCount)
        guard (Self.minimumBits...Self.maximumBits).contains(bits) else {
            throw HealthCardError(
                .key, "an RSA key's modulus is \(bits) bits; \(Self.minimumBits) to \(Self.maximumBits) are accepted")
        }
        // e = 1 would make every signature valid; e is odd and at least 3 (FIPS 186-5 asks at least 65537).
        guard !exponent.isEmpty, exponent.count <= 8, exponent.last! & 1 == 1, exponent.count > 1 || exponent[0] >= 3 else {
            throw HealthCardError(.key, "an RSA key's exponent e is not an odd number from 3 to 2^64 - 1")
        }
        guard let nBN = modulus.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }),
            let eBN = exponent.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) })
        else { throw cryptoError("reading an RSA key") }
        defer {
            BN_free(nBN)
            BN_free(eBN)
        }
        guard let builder = OSSL_PARAM_BLD_new() else { throw cryptoError("parameter builder") }
        defer { OSSL_PARAM_BLD_free(builder) }
        func cString(_ s: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        guard OSSL_PARAM_BLD_push_BN(builder, cString("n"), nBN) == 1,
            OSSL_PARAM_BLD_push_BN(builder, cString("e"), eBN) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { throw cryptoError("building RSA key parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw cryptoError("RSA context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_fromdata_init(ctx) == 1,
            EVP_PKEY_fromdata(ctx, &key, COpenSSL_EVP_PKEY_PUBLIC_KEY(), params) == 1, let key
        else {
            ERR_clear_error()
            throw HealthCardError(.key, "OpenSSL refused the RSA key (n, e)")
        }
        pkey = key
        self.bits = bits
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Verifies an RS256 signature (RSASSA-PKCS1-v1_5, SHA-256) over `message`.
    /// - Returns: true when valid; false for a wrong signature, or one whose length is not the modulus's.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard signature.count == (bits + 7) / 8 else { return false }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = message.withUnsafeBufferPointer { m in
            signature.withUnsafeBufferPointer { s in
                EVP_DigestVerify(ctx, s.baseAddress, s.count, m.baseAddress, m.count) == 1
            }
        }
        ERR_clear_error()
        return ok
    }
}
