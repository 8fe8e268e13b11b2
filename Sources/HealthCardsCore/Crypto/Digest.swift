internal import COpenSSL

/// SHA-256, HMAC-SHA-256 and secure random bytes from OpenSSL libcrypto.
public enum Digest {
    /// SHA-256 of `bytes`: 32 bytes.
    public static func sha256<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var out = [UInt8](repeating: 0, count: 32)
        let digest = { (buffer: UnsafeBufferPointer<UInt8>) in
            // OpenSSL 3's one-shot SHA256() looks the algorithm up (EVP_MD_fetch) at every call: about three
            // quarters of its cost on a short input. The implementation is fetched once (`sha256Algorithm`); when
            // that or EVP_Digest fails, the one-shot call gives the same digest.
            var length: UInt32 = 0
            if let algorithm = sha256Algorithm,
                EVP_Digest(buffer.baseAddress, buffer.count, &out, &length, algorithm, nil) == 1, length == 32
            {
                return
            }
            _ = SHA256(buffer.baseAddress, buffer.count, &out)
        }
        if bytes.withContiguousStorageIfAvailable(digest) == nil { Array(bytes).withUnsafeBufferPointer(digest) }
        return out
    }

    /// SHA-256 from the default provider, fetched once (an `EVP_MD` may be shared by threads; never freed).
    nonisolated(unsafe) private static let sha256Algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// HMAC-SHA-256 of `message` keyed by `key`: 32 bytes.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails (never an empty or constant MAC).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) throws(HealthCardError) -> [UInt8] {
        try key.withUnsafeBytes { k in Result { () throws(HealthCardError) in try hmacSHA256(key: k, message: message) } }.get()
    }

    /// HMAC-SHA-256 with a key lent as raw bytes (a `SecretBytes`): 32 bytes.
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails or the key is longer than 2^31 bytes.
    static func hmacSHA256(key: UnsafeRawBufferPointer, message: [UInt8]) throws(HealthCardError) -> [UInt8] {
        guard key.count <= Int(Int32.max) else { throw HealthCardError(.crypto, "an HMAC key longer than 2 GiB") }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let done = message.withUnsafeBufferPointer { m in
            // A zero-length key still needs a non-null pointer for OpenSSL.
            HMAC(EVP_sha256(), key.baseAddress ?? UnsafeRawPointer(m.baseAddress), Int32(key.count), m.baseAddress, m.count, &out, &length)
        }
        guard done != nil, length == 32 else {
            throw cryptoError("HMAC-SHA-256")
        }
        return out
    }

    /// `count` cryptographically secure random bytes (OpenSSL `RAND_bytes`).
    /// - Throws: `HealthCardError(.crypto)` when the generator is not seeded.
    public static func randomBytes(_ count: Int) throws(HealthCardError) -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else { throw HealthCardError(.crypto, "cannot make \(count) random bytes at once") }
        var out = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&out, Int32(count)) == 1 else { throw cryptoError("random generation") }
        return out
    }
}
