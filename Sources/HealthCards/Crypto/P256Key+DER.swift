import COpenSSL

extension P256Key {
    /// True when `bytes` look like DER (an ASN.1 SEQUENCE) rather than PEM text.
    static func looksLikeDER(_ bytes: [UInt8]) -> Bool { bytes.count > 2 && bytes[0] == 0x30 }

    /// Loads a public key from DER SubjectPublicKeyInfo (what `pkcs11-tool --read-object --type pubkey`
    /// and `openssl pkey -pubout -outform DER` write), e.g. the public half of a retired HSM key.
    /// - Parameters:
    ///   - der: the file's bytes.
    ///   - source: the file name, for messages.
    /// - Throws: `HealthCardError(.key)` when the bytes are not DER SPKI (a DER private key gets the
    ///   `openssl` command that converts it), or the key is not EC P-256.
    public static func load(der: [UInt8], source: String) throws -> P256Key {
        let pkey: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else {
            ERR_clear_error()
            throw HealthCardError(
                .key,
                "\(source) is binary (DER) but not a SubjectPublicKeyInfo public key; a DER private key is not "
                    + "read (convert it: `openssl pkey -inform DER -in \(source) -out key.pem`, then chmod 600)")
        }
        if let other = notP256(pkey) {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            throw HealthCardError(
                .key,
                "\(source) holds \(other.isEC ? "an EC key on \(other.found)" : other.found); "
                    + "SMART Health Cards are signed ES256 with a P-256 key")
        }
        return try P256Key(taking: pkey)
    }
}
