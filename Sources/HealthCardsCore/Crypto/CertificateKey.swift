internal import COpenSSL

/// The public key of one X.509 certificate, for checking a detached signature made with it: the VCI
/// directory's `vci_snapshot.sig` (ECDSA P-521 with SHA-512, DER) over the exact bytes of
/// `vci_snapshot.json`, by the key of its self-signed `vci_snapshot.crt`.
///
/// OpenSSL does all of it: the certificate is parsed by `PEM_read_bio_X509` or `d2i_X509` (its owner is
/// `X509Certificate`), the key taken with `X509_get_pubkey`, the signature checked with `EVP_DigestVerify`.
/// This type is the one Swift owner of that `EVP_PKEY`. Immutable after init, so it may be shared between
/// threads (OpenSSL 3 allows concurrent read-only use of a key).
public final class CertificateKey: @unchecked Sendable {
    private let pkey: OpaquePointer
    /// The certificate's subject in OpenSSL's one-line form (`/CN=vci.org`).
    public let subject: String
    /// The certificate's issuer in the same form (the subject again for a self-signed certificate).
    public let issuer: String
    /// The certificate's validity period.
    public let validity: X509Chain.Validity
    /// The key's curve as JOSE names it (`P-521`, `P-256`, `P-384`), or OpenSSL's name for another curve.
    public let curve: String
    /// The SHA-256 of the certificate's DER, as lowercase hex with `:` between bytes (what
    /// `openssl x509 -fingerprint -sha256` prints, in lower case): the value to pin it by.
    public let sha256Fingerprint: String

    /// Most bytes of a certificate file read: 64 KiB (a certificate is one or two kB).
    public static let maxBytes = 64 << 10

    /// Reads a certificate given as PEM (`-----BEGIN CERTIFICATE-----`; the first one is taken) or as DER.
    /// - Parameters:
    ///   - bytes: the certificate file's bytes, at most `maxBytes`.
    ///   - source: the file's name, for messages.
    ///   - curve: the curve its key must be on (JOSE name), e.g. `P-521`.
    /// - Throws: `HealthCardError(.key)` for bytes that are no certificate OpenSSL can parse, a private key,
    ///   or a key that is not EC on `curve`.
    public init(certificate bytes: [UInt8], source: String, curve expected: String) throws(HealthCardError) {
        guard bytes.count <= Self.maxBytes else {
            throw HealthCardError(
                .key, "\(source) is \(bytes.count) bytes; a certificate is a few kB (at most \(InputBudget.describe(bytes: Self.maxBytes)) are read)")
        }
        let labels = bytes.withUnsafeBytes { PEMLabel.all(in: $0) }
        if labels.contains(where: { $0.hasSuffix("PRIVATE KEY") }) {
            throw HealthCardError(.key, "\(source) contains a private key; give the certificate alone (-----BEGIN CERTIFICATE-----)")
        }
        let certificate: X509Certificate
        do {
            if labels.isEmpty {
                certificate = try X509Certificate(der: bytes, source: source)
            } else {
                guard let first = try X509Certificate.readAll(pem: bytes, source: source).first else {
                    throw HealthCardError(.key, "\(source) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
                }
                certificate = first
            }
        } catch let error as HealthCardError {
            throw error
        } catch {
            throw HealthCardError(.key, "\(source) cannot be read as a certificate: \(error)")
        }
        guard let key = X509_get_pubkey(certificate.cert) else {  // a new reference, owned by this object below
            throw HealthCardError(.key, "\(source): the certificate's public key cannot be read: \(openSSLErrorMessage())")
        }
        let found = Self.curveName(key)
        guard found == expected else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            throw HealthCardError(
                .key, "\(source) (\(certificate.subject)) holds \(found == nil ? "a key that is not EC" : "an EC key on \(found!)"); "
                    + "an EC \(expected) key is expected")
        }
        pkey = key
        subject = certificate.subject
        issuer = certificate.issuerName
        validity = certificate.validity
        curve = expected
        let digest = Digest.sha256(certificate.der() ?? [])
        sha256Fingerprint = digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The JOSE name of an EC key's curve, OpenSSL's for others; nil for a key that is not EC.
    private static func curveName(_ key: OpaquePointer) -> String? {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &buffer, buffer.count, &length) == 1 else {
            ERR_clear_error()
            return "an unknown curve"
        }
        let group = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return ["prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"][group] ?? group
    }

    /// Checks an ECDSA signature (ASN.1 DER `SEQUENCE { r, s }`) made with SHA-512 over `message`
    /// (`EVP_DigestVerify`).
    /// - Returns: true only when it verifies; false for a wrong, truncated or malformed signature.
    public func verifyECDSASHA512(signatureDER signature: [UInt8], message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard !signature.isEmpty, signature.count <= 1024, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha512(), nil, pkey) == 1 else { return false }
        return message.withUnsafeBufferPointer { m in
            signature.withUnsafeBufferPointer { s in
                EVP_DigestVerify(ctx, s.baseAddress, s.count, m.baseAddress, m.count) == 1
            }
        }
    }
}
