internal import COpenSSL
import Synchronization

/// The storage of an ECDSA P-256 key held by OpenSSL (the one Swift owner of an `EVP_PKEY`), behind the
/// public `P256PrivateKey` and `P256PublicKey`.
///
/// A key is either a key pair (loaded from PKCS#8 or SEC 1 PEM, generated, or held in a PKCS#11 token) or a
/// public key (from SPKI PEM or JWK coordinates). The private scalar never leaves OpenSSL except through
/// `pkcs8PEM()`, which `keygen` uses to write a key file.
///
/// Threads: a key in memory may be used from any number of threads at once (immutable after init; OpenSSL 3
/// allows concurrent read-only use of an `EVP_PKEY`). Every key held in a PKCS#11 token is used by one thread
/// at a time in the whole process (`withPKey` takes `PKCS11Engine`'s one lock): OpenSSL's pkcs11 engine is one
/// per process and neither it nor a token's session is safe to use concurrently, however many times a key was
/// loaded and whatever number of jobs a caller runs.
package final class P256Key: @unchecked Sendable {
    private let pkey: OpaquePointer
    /// True for a key held in a PKCS#11 token (its private scalar never leaves it).
    package let isTokenKey: Bool
    /// True when the private scalar is present (the key can sign).
    package let hasPrivateKey: Bool
    /// The public point's x coordinate: 32 bytes, big-endian, left-padded.
    package let x: [UInt8]
    /// The public point's y coordinate: 32 bytes, big-endian, left-padded.
    package let y: [UInt8]

    /// Takes ownership of `pkey`. `canSign` says the key can sign even though its private scalar is
    /// not readable (a key held in an HSM behind OpenSSL's pkcs11 engine).
    package init(taking pkey: OpaquePointer, canSign: Bool = false) throws {
        self.pkey = pkey
        isTokenKey = canSign
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else {
            EVP_PKEY_free(pkey)
            throw HealthCardError(.key, "not an EC key")
        }
        var bnX: OpaquePointer? = nil
        var bnY: OpaquePointer? = nil
        var bnD: OpaquePointer? = nil
        defer {
            BN_free(bnX)
            BN_free(bnY)
            BN_clear_free(bnD)
        }
        var xb = [UInt8](repeating: 0, count: 32)
        var yb = [UInt8](repeating: 0, count: 32)
        if EVP_PKEY_get_bn_param(pkey, "qx", &bnX) == 1, EVP_PKEY_get_bn_param(pkey, "qy", &bnY) == 1 {
            guard BN_bn2binpad(bnX, &xb, 32) == 32, BN_bn2binpad(bnY, &yb, 32) == 32 else {
                EVP_PKEY_free(pkey)
                throw HealthCardError(.key, "public point coordinates are longer than 32 bytes")
            }
        } else {
            // Engine (legacy) keys have no qx/qy parameters; their encoded point is 04‖x‖y.
            var encoded: UnsafeMutablePointer<UInt8>? = nil
            let length = EVP_PKEY_get1_encoded_public_key(pkey, &encoded)
            defer { if let encoded { CRYPTO_free(encoded, #fileID, #line) } }
            guard length == 65, let point = encoded, point[0] == 0x04 else {
                EVP_PKEY_free(pkey)
                throw cryptoError("reading the public point")
            }
            xb = Array(UnsafeBufferPointer(start: point + 1, count: 32))
            yb = Array(UnsafeBufferPointer(start: point + 33, count: 32))
        }
        guard Self.isOnCurve(x: xb, y: yb) else {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            throw HealthCardError(.key, "the public point (x, y) is not on P-256: no one can hold its private key")
        }
        x = xb
        y = yb
        hasPrivateKey = canSign || EVP_PKEY_get_bn_param(pkey, "priv", &bnD) == 1
        ERR_clear_error()
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Runs `body` with the key's `EVP_PKEY`: for a key in a PKCS#11 token alone in the process (under the
    /// engine's one lock, `PKCS11Engine.serialized`), concurrently otherwise. The pointer must not be kept
    /// beyond `body`.
    package func withPKey<Result: Sendable>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        guard isTokenKey else { return try body(pkey) }
        return try PKCS11Engine.serialized { try body(pkey) }
    }

    /// What a key is when it is not the EC P-256 key ES256 needs, in words, or nil for a P-256 key:
    /// `isEC` false with "an RSA key", "an Ed25519 key", …; `isEC` true with the curve ("P-384",
    /// "secp256k1", or OpenSSL's name). The one place key files, PKCS#11 tokens and certificates are
    /// judged.
    static func notP256(_ pkey: OpaquePointer) -> (isEC: Bool, found: String)? {
        let base = EVP_PKEY_get_base_id(pkey)
        guard base == EVP_PKEY_EC else {
            switch base {
            case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS: return (false, "an RSA key")
            case EVP_PKEY_ED25519: return (false, "an Ed25519 key")
            case EVP_PKEY_ED448: return (false, "an Ed448 key")
            case EVP_PKEY_DSA: return (false, "a DSA key")
            default: return (false, "a key of OpenSSL type \(base)")
            }
        }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        let group = EVP_PKEY_get_utf8_string_param(pkey, "group", &buffer, buffer.count, &length) == 1
            ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "an unknown curve"
        if group == "prime256v1" { return nil }
        return (true, ["secp384r1": "P-384", "secp521r1": "P-521", "secp256k1": "secp256k1"][group] ?? group)
    }

    /// Generates a new P-256 key pair with OpenSSL's default random generator.
    /// - Throws: `HealthCardError(.crypto)`.
    package static func generate() throws -> P256Key {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw cryptoError("EC context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
            EVP_PKEY_generate(ctx, &pkey) == 1, let pkey
        else { throw cryptoError("P-256 key generation") }
        return try P256Key(taking: pkey)
    }

    /// Loads a key from PEM text.
    ///
    /// Accepts `BEGIN PRIVATE KEY` (PKCS#8), `BEGIN EC PRIVATE KEY` (SEC 1) and, unless
    /// `requirePrivate`, `BEGIN PUBLIC KEY` (SPKI). Never prompts for a passphrase.
    /// - Parameters:
    ///   - pem: the file's bytes.
    ///   - source: the file name, for messages.
    ///   - requirePrivate: refuse public keys (signing needs the private key).
    /// - Throws: `HealthCardError(.key)` saying what was found and what is expected: an encrypted PEM,
    ///   an RSA, Ed25519 or P-384 key, a public key where a private one is needed, or text that is
    ///   not PEM. The message never quotes the key material.
    package static func load(pem: [UInt8], source: String, requirePrivate: Bool) throws -> P256Key {
        try pem.withUnsafeBytes { try load(pem: $0, source: source, requirePrivate: requirePrivate) }
    }

    /// As `load(pem:source:requirePrivate:)`, from bytes lent by their owner (a `SecretBytes`): the key
    /// text is never copied into a Swift `String` or `Array`; only its labels are read.
    static func load(pem whole: UnsafeRawBufferPointer, source: String, requirePrivate: Bool) throws -> P256Key {
        // A UTF-8 byte order mark (left by some Windows editors) is not part of PEM; OpenSSL would skip
        // the first line because of it.
        let pem = UnsafeRawBufferPointer(rebasing: UTF8BOM.strip(whole))
        let expected = requirePrivate
            ? "expected an unencrypted ECDSA P-256 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----), "
                + "or a new P-256 key made for this issuer"
            : "expected an ECDSA P-256 key: a private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----) or a public "
                + "key in SPKI PEM (-----BEGIN PUBLIC KEY-----)"
        let labels = PEMLabel.all(in: pem)
        let keyBlocks = labels.filter { $0.hasSuffix("PRIVATE KEY") || $0.hasSuffix("PUBLIC KEY") }.count
        if keyBlocks > 1 {
            throw HealthCardError(.key, "\(source) holds \(keyBlocks) keys; a key file holds exactly one key, so it is not "
                + "clear which one to use. Split it into one file per key")
        }
        // `openssl ecparam -genkey` writes an EC PARAMETERS block before the key, and some files hold a
        // certificate and its key: look at the first key block, if there is one.
        guard let label = labels.first(where: { $0.hasSuffix("PRIVATE KEY") || $0.hasSuffix("PUBLIC KEY") }) ?? labels.first else {
            throw HealthCardError(.key, "\(source) holds no PEM block; \(expected)")
        }
        switch label {
        case "ENCRYPTED PRIVATE KEY":
            throw HealthCardError(.key, "\(source) is an encrypted PKCS#8 key and no passphrase can be given; "
                + "decrypt it with `openssl pkcs8 -in \(source) -out DECRYPTED.pem` (then chmod 600); \(expected)")
        case "RSA PRIVATE KEY", "RSA PUBLIC KEY":
            throw HealthCardError(.key, "\(source) holds an RSA key; SMART Health Cards are signed ES256, \(expected)")
        case "PRIVATE KEY", "EC PRIVATE KEY", "PUBLIC KEY": break
        case "CERTIFICATE":
            throw HealthCardError(.key, "\(source) holds an X.509 certificate, not a key; \(expected)")
        default:
            throw HealthCardError(.key, "\(source) holds a PEM block '\(label)'; \(expected)")
        }
        if PEMLabel.contains(Array("Proc-Type: 4,ENCRYPTED".utf8), in: pem) {
            throw HealthCardError(.key, "\(source) is an encrypted PEM key; decrypt it with "
                + "`openssl ec -in \(source) -out DECRYPTED.pem` (then chmod 600); \(expected)")
        }
        let isPublic = label == "PUBLIC KEY"
        if isPublic && requirePrivate {
            throw HealthCardError(.key, "\(source) holds a public key, but signing needs the private key; \(expected)")
        }
        guard pem.count <= Int(Int32.max) else {
            throw HealthCardError(.key, "\(source) is larger than OpenSSL reads at once; \(expected)")
        }
        let pkey: OpaquePointer? = {
            // A read-only memory BIO over the caller's buffer: OpenSSL copies nothing it does not wipe.
            guard let base = pem.baseAddress, let bio = BIO_new_mem_buf(base, Int32(pem.count)) else { return nil }
            defer { BIO_free(bio) }
            // A passphrase callback that gives none, so OpenSSL never prompts on the terminal.
            let noPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?)
                -> Int32 = { _, _, _, _ in 0 }
            if isPublic { return PEM_read_bio_PUBKEY(bio, nil, noPassphrase, nil) }
            return PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil)
        }()
        guard let pkey else {
            ERR_clear_error()
            // A public key is no secret, so it may be copied into a String to find its SPKI body.
            if isPublic, let der = PEMLabel.body(of: label, in: String(decoding: pem, as: UTF8.self)), isP256SPKI(der) {
                throw offCurve(source)
            }
            throw HealthCardError(.key, "\(source) has a '\(label)' block that OpenSSL cannot parse (corrupt or "
                + "truncated PEM); \(expected)")
        }
        if let other = notP256(pkey) {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            if other.isEC {
                throw HealthCardError(.key, "\(source) holds an EC key on \(other.found); ES256 needs P-256 (prime256v1), \(expected)")
            }
            throw HealthCardError(.key, "\(source) holds \(other.found); SMART Health Cards are signed ES256, \(expected)")
        }
        return try P256Key(taking: pkey)
    }

    /// True when (x, y) is a point on P-256 (not the point at infinity): what every public key must be,
    /// whatever form it came in (PEM, DER, JWK, a PKCS#11 token).
    /// - Parameters: x, y: 32 bytes each, big-endian.
    package static func isOnCurve(x: [UInt8], y: [UInt8]) -> Bool {
        guard x.count == 32, y.count == 32, let pkey = try? fromPoint(x: x, y: y) else { return false }
        defer { EVP_PKEY_free(pkey) }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else { return false }
        defer { EVP_PKEY_CTX_free(check) }
        let valid = EVP_PKEY_public_check(check) == 1
        ERR_clear_error()
        return valid
    }

    /// An `EVP_PKEY` (owned by the caller) for the uncompressed point 04‖x‖y on P-256: a public key, or
    /// with `privateScalar` (a `BIGNUM` the caller keeps and frees) the key pair `DerivedKey` makes.
    /// - Throws: `HealthCardError(.key)` when OpenSSL refuses the public point, `.crypto` on other failures
    ///   (a refused key pair included: its point was computed from the scalar, so that is OpenSSL failing).
    package static func fromPoint(x: [UInt8], y: [UInt8], privateScalar: OpaquePointer? = nil) throws -> OpaquePointer {
        let point: [UInt8] = [0x04] + x + y
        guard let builder = OSSL_PARAM_BLD_new() else { throw cryptoError("parameter builder") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps references to the key names and values until OSSL_PARAM_BLD_to_param, so they
        // must not be temporary bridged Strings: StaticString storage lives as long as the program.
        func cString(_ s: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        let built: UnsafeMutablePointer<OSSL_PARAM>? = point.withUnsafeBufferPointer { buffer in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString("group"), cString("prime256v1"), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, cString("pub"), buffer.baseAddress, 65) == 1
            else { return nil }
            if let privateScalar, OSSL_PARAM_BLD_push_BN(builder, cString("priv"), privateScalar) != 1 { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params = built else {
            throw cryptoError(privateScalar == nil ? "building public key parameters" : "building key parameters")
        }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw cryptoError("EC context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        let selection = privateScalar == nil ? COpenSSL_EVP_PKEY_PUBLIC_KEY() : COpenSSL_EVP_PKEY_KEYPAIR()
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &pkey, selection, params) == 1, let pkey
        else {
            if privateScalar != nil { throw cryptoError("deriving a P-256 key") }
            ERR_clear_error()
            throw HealthCardError(.key, "JWK x/y is not a point on P-256")
        }
        return pkey
    }

    /// Builds a public key from JWK coordinates.
    /// - Parameters: x, y: 32 bytes each, big-endian.
    /// - Throws: `HealthCardError(.key)` when the sizes are wrong or the point is not on P-256.
    package static func publicKey(x: [UInt8], y: [UInt8]) throws -> P256Key {
        guard x.count == 32, y.count == 32 else {
            throw HealthCardError(.key, "JWK x and y must be 32 bytes each, found \(x.count) and \(y.count)")
        }
        // `init(taking:)` checks the point (`isOnCurve`), as for a key in any other form.
        return try P256Key(taking: try fromPoint(x: x, y: y))
    }

    /// The key pair as PKCS#8 PEM text (`-----BEGIN PRIVATE KEY-----`), for writing a key file.
    /// - Throws: `HealthCardError(.key)` for a public key, `.crypto` if OpenSSL fails.
    package func pkcs8PEM() throws -> [UInt8] {
        guard hasPrivateKey else { throw HealthCardError(.key, "a public key has no PKCS#8 private form") }
        // A key in a PKCS#11 token shows OpenSSL a zero (or no) private scalar: never write that out.
        guard !isTokenKey else {
            throw HealthCardError(.key, "the private key is held in a PKCS#11 token and cannot be exported")
        }
        var d: OpaquePointer? = nil
        defer { BN_clear_free(d) }
        guard EVP_PKEY_get_bn_param(pkey, "priv", &d) == 1, let d, BN_is_zero(d) == 0 else {
            ERR_clear_error()
            throw HealthCardError(.key, "the private key is held in a PKCS#11 token and cannot be exported")
        }
        return try withMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 }
    }

    /// The public key as SPKI PEM text (`-----BEGIN PUBLIC KEY-----`).
    package func publicPEM() throws -> [UInt8] {
        try withPKey { pkey in try withMemoryBIO { bio in PEM_write_bio_PUBKEY(bio, pkey) == 1 } }
    }

    private func withMemoryBIO(_ body: (OpaquePointer) -> Bool) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw cryptoError("memory BIO") }
        defer { BIO_free(bio) }
        guard body(bio) else { throw cryptoError("PEM writing") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = COpenSSL_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw cryptoError("PEM writing") }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
    }

    /// True when both keys have the same public point.
    package func hasSamePublicKey(as other: P256Key) -> Bool { x == other.x && y == other.y }
}

/// The labels of the `-----BEGIN X-----` lines in PEM text, in order.
enum PEMLabel {
    /// The labels in PEM bytes, read line by line without copying the text (it may be a private key).
    static func all(in bytes: UnsafeRawBufferPointer) -> [String] {
        var labels: [String] = []
        let begin = Array("-----BEGIN ".utf8)
        let dashes = Array("-----".utf8)
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x0A && bytes[end] != 0x0D { end += 1 }
            var from = start
            var to = end
            while from < to && isSpace(bytes[from]) { from += 1 }
            while to > from && isSpace(bytes[to - 1]) { to -= 1 }
            let line = UnsafeRawBufferPointer(rebasing: bytes[from..<to])
            if line.count >= begin.count + dashes.count, line.starts(with: begin), line.suffix(dashes.count).elementsEqual(dashes) {
                labels.append(String(decoding: line.dropFirst(begin.count).dropLast(dashes.count), as: UTF8.self))
            }
            start = end + 1
        }
        return labels
    }

    /// True when `needle` occurs in `bytes`.
    static func contains(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer) -> Bool {
        guard !needle.isEmpty, bytes.count >= needle.count else { return false }
        for i in 0...(bytes.count - needle.count) where bytes[i] == needle[0] {
            if bytes[i..<(i + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// The bytes of the first `-----BEGIN <label>-----` block (its base64 lines decoded), or nil.
    static func body(of label: String, in text: String) -> [UInt8]? {
        var inside = false
        var base64 = ""
        for line in text.unicodeScalars.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).map(String.init) {
            let trimmed = line.trimmingCharacters(in: " \t")
            if trimmed == "-----BEGIN \(label)-----" {
                inside = true
            } else if trimmed == "-----END \(label)-----" {
                return inside ? Base64URL.decodeStandard(base64) : nil
            } else if inside {
                base64 += trimmed
            }
        }
        return nil
    }
}
