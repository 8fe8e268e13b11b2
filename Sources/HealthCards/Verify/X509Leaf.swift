import COpenSSL

/// Reads the public key of an X.509 certificate from a JWK's `x5c` (digest section 7), with OpenSSL's
/// `d2i_X509` and `X509_get_pubkey`.
enum X509Leaf {
    /// The EC public key of a DER certificate.
    /// - Returns: the key's 32-byte x and y.
    /// - Throws: `HealthCardError(.key)` when the bytes are not a DER certificate or its key is not EC P-256.
    static func publicKey(der: [UInt8]) throws -> P256Key {
        let cert: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &pointer, buffer.count)
        }
        guard let cert else {
            ERR_clear_error()
            throw HealthCardError(.key, "not a DER X.509 certificate")
        }
        defer { X509_free(cert) }
        // X509_get_pubkey returns a new reference, which P256Key takes over (and frees).
        guard let pkey = X509_get_pubkey(cert) else {
            ERR_clear_error()
            throw HealthCardError(.key, "the certificate's public key cannot be read")
        }
        do {
            return try P256Key(taking: pkey)
        } catch {
            ERR_clear_error()
            throw HealthCardError(.key, "the certificate's public key is not an EC P-256 key")
        }
    }
}
