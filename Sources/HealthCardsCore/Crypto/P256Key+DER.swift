internal import COpenSSL

extension P256Key {
    /// True when `der` has the exact shape of a P-256 SubjectPublicKeyInfo (algorithm id-ecPublicKey with
    /// prime256v1, then an uncompressed or compressed point of the right length). OpenSSL refuses such a key
    /// only for its point: one that is not on the curve.
    static func isP256SPKI(_ der: [UInt8]) -> Bool {
        let algorithm: [UInt8] = [
            0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D,
            0x03, 0x01, 0x07,
        ]
        let uncompressed: [UInt8] = [0x30, 0x59] + algorithm + [0x03, 0x42, 0x00, 0x04]
        let compressed: [UInt8] = [0x30, 0x39] + algorithm + [0x03, 0x22, 0x00]
        if der.count == 91 && der.starts(with: uncompressed) { return true }
        return der.count == 59 && der.starts(with: compressed) && (der[26] == 0x02 || der[26] == 0x03)
    }

    /// The error for a P-256 public key whose point is not on the curve.
    static func offCurve(_ source: String) -> HealthCardError {
        HealthCardError(
            .key,
            "\(source) holds a P-256 public key whose point is not on the curve: no one can hold its private key, so "
                + "it verifies no card (a corrupted or made-up key). Export the public key again from the key file or "
                + "token (`openssl pkey -pubout`, `pkcs11-tool --read-object --type pubkey`)")
    }

    /// True when `bytes` look like DER (an ASN.1 SEQUENCE) rather than PEM text.
    static func looksLikeDER(_ bytes: [UInt8]) -> Bool { bytes.count > 2 && bytes[0] == 0x30 }

    /// Loads a public key from DER SubjectPublicKeyInfo (what `pkcs11-tool --read-object --type pubkey`
    /// and `openssl pkey -pubout -outform DER` write), e.g. the public half of a retired HSM key.
    /// - Parameters:
    ///   - der: the file's bytes.
    ///   - source: the file name, for messages.
    /// - Throws: `HealthCardError(.key)` when the bytes are not DER SPKI (a DER private key gets the
    ///   `openssl` command that converts it), or the key is not EC P-256.
    package static func load(der: [UInt8], source: String) throws -> P256Key {
        let pkey: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else {
            ERR_clear_error()
            if isP256SPKI(der) { throw offCurve(source) }
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
