internal import COpenSSL

/// A 256-bit AES key in memory that is wiped (`OPENSSL_cleanse`) when the last reference goes, as the
/// SMART Health Link key is (links-specification "Construct a SMART Health Link Payload": `key`).
///
/// The bytes live in one allocation owned by this object, not in a Swift array that may be copied
/// around; they are lent only inside `withUnsafeBytes`. The key's base64url text in a link is a Swift
/// string, which cannot be wiped: keep the link text's lifetime short, and never log it.
public final class AES256Key: @unchecked Sendable {
    /// 32 bytes.
    public static let byteCount = 32
    // Immutable after init; only read inside `withUnsafeBytes`, so sharing between threads is safe.
    private let storage: UnsafeMutableRawBufferPointer
    /// AES-256-GCM cipher contexts already keyed with this key, by direction (0 opening, 1 sealing), reused by
    /// `AESGCM` across messages: a message then sets only its IV, not the cipher, IV length and key schedule again
    /// (with a new context and its free, a fifth of a location GET's AES-GCM by callgrind). At most
    /// `keptContexts` a direction; freed, and so wiped, with the key. Guarded by `contextsLock`.
    private var contexts: [[OpaquePointer]] = [[], []]
    private let contextsLock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    static let keptContexts = 32

    private init(storage: UnsafeMutableRawBufferPointer) {
        self.storage = storage
        pthread_mutex_init(contextsLock, nil)
    }

    /// A context keyed with this key for one direction, if one is kept.
    fileprivate func takeContext(encrypting: Bool) -> OpaquePointer? {
        pthread_mutex_lock(contextsLock)
        defer { pthread_mutex_unlock(contextsLock) }
        return contexts[encrypting ? 1 : 0].popLast()
    }

    /// Keeps a context keyed with this key (one whose last message ended, well or not, without an OpenSSL error).
    fileprivate func keepContext(_ ctx: OpaquePointer, encrypting: Bool) {
        pthread_mutex_lock(contextsLock)
        let kept = contexts[encrypting ? 1 : 0].count < Self.keptContexts
        if kept { contexts[encrypting ? 1 : 0].append(ctx) }
        pthread_mutex_unlock(contextsLock)
        if !kept { EVP_CIPHER_CTX_free(ctx) }
    }

    /// A fresh key from OpenSSL's CSPRNG (`RAND_bytes`), written straight into the wiped storage.
    /// - Throws: `HealthCardError(.crypto)` when the generator is not seeded.
    public static func random() throws(HealthCardError) -> AES256Key {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        let key = AES256Key(storage: storage)  // owns `storage` from here: deinit wipes and frees it
        guard RAND_bytes(storage.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(byteCount)) == 1 else {
            throw cryptoError("random key generation")
        }
        return key
    }

    /// The key encoded in a link's `key` member: 43 base64url characters for 32 bytes.
    /// - Returns: nil for text that is not base64url of exactly 32 bytes.
    public static func decode(base64url text: String) -> AES256Key? {
        guard text.utf8.count == 43, var bytes = Base64URL.decode(text), bytes.count == byteCount else { return nil }
        defer { bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        storage.copyBytes(from: bytes)
        return AES256Key(storage: storage)
    }

    deinit {
        for ctx in contexts.joined() { EVP_CIPHER_CTX_free(ctx) }
        pthread_mutex_destroy(contextsLock)
        contextsLock.deallocate()
        OPENSSL_cleanse(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Lends the 32 key bytes; do not let them escape the closure.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    /// The key as 43 base64url characters, for the link's `key` member.
    public var base64url: String {
        withUnsafeBytes { Base64URL.encode(UnsafeRawBufferPointer($0)) }
    }

    /// SHA-256 of the key bytes: names a key (e.g. to tell whether two files share one) without holding it.
    public var fingerprint: [UInt8] { withUnsafeBytes { Digest.sha256(UnsafeRawBufferPointer($0)) } }
}

/// AES-256-GCM through OpenSSL's EVP AEAD interface (`EVP_aes_256_gcm`, `EVP_CTRL_GCM_*`), as JWE
/// `enc` `A256GCM` uses it (RFC 7518 section 5.3): a 96-bit IV, a 128-bit tag, additional authenticated data.
public enum AESGCM {
    /// IV length in bytes (96 bits, RFC 7518 section 5.3).
    public static let ivByteCount = 12
    /// Authentication tag length in bytes (128 bits).
    public static let tagByteCount = 16
    /// Largest plaintext or ciphertext handled, in bytes: far above any card (a few kB), and within
    /// OpenSSL's `int` lengths.
    public static let maxByteCount = 16 * 1024 * 1024

    /// A fresh random 96-bit IV from `RAND_bytes`. Every encryption takes a new one: under one key, a
    /// repeated IV breaks GCM (links-specification: "a unique nonce … for each encryption operation").
    /// - Throws: `HealthCardError(.crypto)` when the generator is not seeded.
    public static func randomIV() throws(HealthCardError) -> [UInt8] { try Digest.randomBytes(ivByteCount) }

    /// What both directions refuse before OpenSSL sees anything: an IV that is not 12 bytes, and a
    /// plaintext or ciphertext (`byteCount` bytes) or `aad` over `maxByteCount` bytes.
    private static func checkInput(iv: [UInt8], byteCount: Int, aad: [UInt8]) throws(HealthCardError) {
        guard iv.count == ivByteCount else {
            throw HealthCardError(.crypto, "an A256GCM IV is 12 bytes, found \(iv.count)")
        }
        guard byteCount <= maxByteCount, aad.count <= maxByteCount else {
            throw HealthCardError(.crypto, "AES-GCM input over \(maxByteCount) bytes")
        }
    }

    /// Encrypts and authenticates.
    /// - Parameters:
    ///   - plaintext: at most `maxByteCount` bytes.
    ///   - iv: 12 bytes, never used before with `key` (take `randomIV()`).
    ///   - aad: additional authenticated data (for a JWE: the ASCII of its first part).
    /// - Returns: the ciphertext (as long as the plaintext) and the 16-byte tag.
    /// - Throws: `HealthCardError(.crypto)` for a wrong IV length, an oversized input or an OpenSSL failure.
    public static func seal(_ plaintext: [UInt8], key: AES256Key, iv: [UInt8], aad: [UInt8]) throws(HealthCardError)
        -> (ciphertext: [UInt8], tag: [UInt8])
    {
        try checkInput(iv: iv, byteCount: plaintext.count, aad: aad)
        let context = try CipherContext(key: key, encrypting: true)
        let ctx = context.ctx
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        var length: Int32 = 0
        guard context.begin(iv: iv, aad: aad) else { throw cryptoError("AES-256-GCM encryption") }
        let update = ciphertext.withUnsafeMutableBufferPointer { out in
            EVP_EncryptUpdate(ctx, out.baseAddress, &length, plaintext, Int32(plaintext.count))
        }
        guard update == 1 else { throw cryptoError("AES-256-GCM encryption") }
        var total = Int(length)
        let final = ciphertext.withUnsafeMutableBufferPointer { out in
            EVP_EncryptFinal_ex(ctx, out.baseAddress! + total, &length)
        }
        guard final == 1 else { throw cryptoError("AES-256-GCM encryption") }
        total += Int(length)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1, total == plaintext.count
        else {
            throw cryptoError("AES-256-GCM encryption")
        }
        ciphertext.removeLast(ciphertext.count - total)
        context.reusable = true
        return (ciphertext, tag)
    }

    /// Checks the tag and decrypts.
    /// - Returns: the plaintext, or nil when the tag does not verify: a wrong key, or a ciphertext, IV,
    ///   tag or additional data that was altered (GCM cannot tell these apart).
    /// - Throws: `HealthCardError(.crypto)` for a wrong IV or tag length, an oversized input, or an OpenSSL failure.
    public static func open(_ ciphertext: [UInt8], tag: [UInt8], key: AES256Key, iv: [UInt8], aad: [UInt8])
        throws(HealthCardError) -> [UInt8]?
    {
        try checkInput(iv: iv, byteCount: ciphertext.count, aad: aad)
        guard tag.count == tagByteCount else {
            throw HealthCardError(.crypto, "an A256GCM tag is 16 bytes, found \(tag.count)")
        }
        let context = try CipherContext(key: key, encrypting: false)
        let ctx = context.ctx
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var tagCopy = tag
        var length: Int32 = 0
        var total = 0
        guard context.begin(iv: iv, aad: aad) else { throw cryptoError("AES-256-GCM decryption setup") }
        let update = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptUpdate(ctx, out.baseAddress, &length, ciphertext, Int32(ciphertext.count))
        }
        guard update == 1 else { throw cryptoError("AES-256-GCM decryption") }
        total = Int(length)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tagCopy) == 1 else {
            throw cryptoError("AES-256-GCM tag setup")
        }
        let final = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(ctx, out.baseAddress! + total, &length)
        }
        guard final > 0 else {
            // The tag did not verify: say nothing from OpenSSL's queue, and release no plaintext.
            ERR_clear_error()
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            context.reusable = true
            return nil
        }
        total += Int(length)
        plaintext.removeLast(plaintext.count - total)
        context.reusable = true
        return plaintext
    }
}

/// One message's `EVP_CIPHER_CTX`: one its key kept from an earlier message (`AES256Key.takeContext`), else a new
/// one. Given back to the key when the message ended without an OpenSSL error (`reusable`), else freed (and so
/// wiped of its key schedule, as `EVP_CIPHER_CTX_free` does).
private final class CipherContext {
    /// AES-256-GCM fetched from OpenSSL's default provider once (`EVP_CIPHER_fetch`): `EVP_aes_256_gcm()` makes
    /// every `EVP_CipherInit_ex` look the implementation up again under the provider store's lock (OpenSSL 3
    /// "Performance": explicit fetching). nil when the fetch failed; then each init looks it up itself.
    nonisolated(unsafe) static let cipher: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    let ctx: OpaquePointer
    let key: AES256Key
    let encrypting: Bool
    /// Whether `ctx` already holds the key (a kept context).
    let keyed: Bool
    /// Set when the message ended without an OpenSSL error: the context goes back to the key.
    var reusable = false

    init(key: AES256Key, encrypting: Bool) throws(HealthCardError) {
        self.key = key
        self.encrypting = encrypting
        if let kept = key.takeContext(encrypting: encrypting) {
            ctx = kept
            keyed = true
        } else {
            guard let ctx = EVP_CIPHER_CTX_new() else { throw cryptoError("cipher context") }
            self.ctx = ctx
            keyed = false
        }
    }

    deinit {
        if reusable {
            key.keepContext(ctx, encrypting: encrypting)
        } else {
            EVP_CIPHER_CTX_free(ctx)
        }
    }

    /// Starts one AES-256-GCM message: on a new context the cipher, the IV length (`AESGCM.ivByteCount`) and the
    /// key, on a kept one only the 12-byte `iv` (the key schedule stays); then `aad` as additional authenticated
    /// data.
    /// - Returns: false when OpenSSL refuses a step (its reason is on OpenSSL's error queue).
    func begin(iv: [UInt8], aad: [UInt8]) -> Bool {
        let enc: Int32 = encrypting ? 1 : 0
        var length: Int32 = 0
        let started =
            keyed
            ? EVP_CipherInit_ex(ctx, nil, nil, nil, iv, enc) == 1
            : key.withUnsafeBytes { keyBytes in
                EVP_CipherInit_ex(ctx, Self.cipher ?? EVP_aes_256_gcm(), nil, nil, nil, enc) == 1
                    && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(AESGCM.ivByteCount), nil) == 1
                    && EVP_CipherInit_ex(
                        ctx, nil, nil, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), iv, enc) == 1
            }
        return started && EVP_CipherUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1
    }
}
