internal import COpenSSL

/// SHA-256, HMAC-SHA-256 and secure random bytes from OpenSSL libcrypto.
public enum Digest {
    /// SHA-256 of `bytes`: 32 bytes.
    public static func sha256<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let input = Array(bytes)
        var out = [UInt8](repeating: 0, count: 32)
        input.withUnsafeBufferPointer { buffer in
            _ = SHA256(buffer.baseAddress, buffer.count, &out)
        }
        return out
    }

    /// HMAC-SHA-256 of `message` keyed by `key`: 32 bytes.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, &out, &length)
            }
        }
        return out
    }

    /// `count` cryptographically secure random bytes (OpenSSL `RAND_bytes`).
    /// - Throws: `HealthCardError(.crypto)` when the generator is not seeded.
    public static func randomBytes(_ count: Int) throws(HealthCardError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&out, Int32(count)) == 1 else { throw cryptoError("random generation") }
        return out
    }
}
