import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// The random names of the server: a link's id (the manifest URL's last segment) and a location URL's
/// secret segment. Both are 32 bytes from the kernel's CSPRNG (`getrandom(2)`, which blocks only until the
/// kernel's pool is first seeded), base64url: 43 characters, 256 bits (links-specification "Establish a SMART
/// Health Link Manifest URL": at least 256 bits of entropy).
public enum LinkID {
    /// Characters of an id.
    public static let length = 43

    /// A fresh id.
    /// - Throws: `HealthCardError(.crypto)` when the kernel gives no random bytes.
    public static func random() throws(HealthCardError) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { systemGetrandom($0.baseAddress! + filled, $0.count - filled, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw HealthCardError(
                    .crypto, "the kernel's random generator failed: \(String(cString: strerror(errno)))")
            }
            filled += n
        }
        return Base64URL.encode(bytes)
    }

    /// Whether `text` has the form of an id: 43 characters of the base64url alphabet.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        text.utf8.count == length
            && text.utf8.allSatisfy {
                ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D
                    || $0 == 0x5F
            }
    }

    /// The stored form of a secret segment: base64url of its SHA-256 (a stolen database holds no live URL).
    public static func hash(_ segment: some StringProtocol) -> String {
        Base64URL.encode(Digest.sha256(Array(segment.utf8)))
    }
}

/// getrandom(2) from glibc's <sys/random.h>, which the Glibc module does not import.
@_silgen_name("getrandom") private func systemGetrandom(_ buffer: UnsafeMutableRawPointer?, _ length: Int, _ flags: UInt32)
    -> Int
