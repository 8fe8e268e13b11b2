internal import COpenSSL

/// An X.509 certificate chain for a JWK's `x5c` member (digest section 7): DER certificates, leaf
/// first, each followed by its issuer. The leaf certifies the signing key.
///
/// Certificates are parsed, ordered and checked by OpenSSL; this type only holds the DER bytes.
public struct X509Chain: Sendable, Equatable {
    /// The certificates as DER, leaf first.
    public let certificates: [[UInt8]]

    /// Reads a PEM chain (`-----BEGIN CERTIFICATE-----` blocks, leaf first), e.g. `cat leaf.pem ca.pem`.
    ///
    /// Checks that every certificate was issued by the next one (names and signature, OpenSSL
    /// `X509_check_issued` and `X509_verify`), and that the leaf holds an EC P-256 key whose
    /// keyUsage, when present, allows digitalSignature. Validity dates and trust are not checked.
    /// - Throws: `HealthCardError(.key)` for text with no certificate, a private key in the file, a
    ///   certificate OpenSSL cannot parse, a chain out of order, or a leaf unfit for ES256.
    public init(pem: [UInt8], source: String) throws {
        let labels = PEMLabel.all(in: String(decoding: pem, as: UTF8.self))
        if labels.contains(where: { $0.hasSuffix("PRIVATE KEY") }) {
            throw HealthCardError(
                .key,
                "\(source) contains a private key; x5c is published, so give a file with "
                    + "certificates only (e.g. `cat leaf.crt ca.crt > chain.pem`)")
        }
        let expected = labels.filter { $0 == "CERTIFICATE" || $0 == "X509 CERTIFICATE" || $0 == "TRUSTED CERTIFICATE" }
            .count
        guard expected > 0 else {
            throw HealthCardError(
                .key,
                "\(source) holds no PEM certificate (-----BEGIN CERTIFICATE-----); "
                    + "expected the leaf certificate first, then its issuing CA certificates")
        }
        let certs = try X509Certificate.readAll(pem: pem, source: source)
        guard certs.count == expected else {
            throw HealthCardError(.key, "\(source) has \(expected) certificate blocks but OpenSSL read \(certs.count)")
        }
        try self.init(checking: certs, source: source)
    }

    /// Reads a published `x5c` array: standard base64 (not base64url) DER certificates, leaf first.
    /// - Throws: `HealthCardError(.key)` for an empty array, text that is not standard base64 with
    ///   padding, DER OpenSSL cannot parse, or a chain that fails the checks of `init(pem:source:)`.
    public init(x5c: [String], source: String) throws {
        guard !x5c.isEmpty else {
            throw HealthCardError(.key, "\(source): x5c is empty; it lists the leaf certificate first")
        }
        var certs: [X509Certificate] = []
        for (i, text) in x5c.enumerated() {
            guard let der = Base64URL.decodeStandard(text) else {
                throw HealthCardError(
                    .key,
                    "\(source): x5c[\(i)] is not standard base64 (with + / and = padding); "
                        + "x5c is never base64url")
            }
            certs.append(try X509Certificate(der: der, source: "\(source) x5c[\(i)]"))
        }
        try self.init(checking: certs, source: source)
    }

    private init(checking certs: [X509Certificate], source: String) throws {
        for i in 0..<(certs.count - 1) {
            guard certs[i + 1].issued(certs[i]) else {
                throw HealthCardError(
                    .key,
                    "\(source): certificate \(i + 2) (\(certs[i + 1].subject)) did not issue "
                        + "certificate \(i + 1) (\(certs[i].subject)); the chain must list the leaf first, then each issuer"
                )
            }
        }
        let leaf = certs[0]
        guard leaf.allowsDigitalSignature else {
            throw HealthCardError(
                .key,
                "\(source): the leaf certificate (\(leaf.subject)) has a keyUsage without "
                    + "digitalSignature, so it cannot certify an ES256 signing key")
        }
        let key = try leaf.publicKey(source: source)
        certificates = try certs.map { try $0.der() }
        leafSubjectAltNameURIs = leaf.subjectAltNameURIs
        leafSubject = leaf.subject
        leafKeyX = key.x
        leafKeyY = key.y
    }

    private let leafKeyX: [UInt8]
    private let leafKeyY: [UInt8]

    /// The leaf's subject name in OpenSSL's one-line form (for messages).
    public let leafSubject: String

    /// The leaf's subjectAltName URIs; the spec expects one of them to equal `iss`.
    public let leafSubjectAltNameURIs: [String]

    /// The `x5c` strings: standard base64 DER (with `+`, `/` and `=` padding), leaf first.
    public var x5c: [String] { certificates.map { Base64URL.encodeStandard($0) } }

    /// The leaf certificate's public key as a JWK (the `x` and `y` it must share with the signing key).
    public var leafJWK: JWK { JWK(x: leafKeyX, y: leafKeyY) }

    /// True when the leaf certifies `key` (same public point).
    public func certifies(_ key: JWK) -> Bool { key.x == leafKeyX && key.y == leafKeyY }
}

/// The one Swift owner of an OpenSSL `X509` certificate.
final class X509Certificate {
    let cert: OpaquePointer

    /// Takes ownership of `cert`.
    private init(taking cert: OpaquePointer) { self.cert = cert }

    deinit { X509_free(cert) }

    convenience init(der: [UInt8], source: String) throws {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &pointer, buffer.count)
        }
        guard let parsed else {
            throw HealthCardError(.key, "\(source) is not a DER X.509 certificate: \(openSSLErrorMessage())")
        }
        self.init(taking: parsed)
    }

    /// Every certificate in PEM text, in order.
    static func readAll(pem: [UInt8], source: String) throws -> [X509Certificate] {
        guard let bio = pem.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw cryptoError("memory BIO")
        }
        defer { BIO_free(bio) }
        var certs: [X509Certificate] = []
        while let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
            certs.append(X509Certificate(taking: cert))  // ownership moves to the Swift owner
        }
        let code = ERR_peek_last_error()
        // The loop ends with "no start line" at the end of the text; anything else is a bad certificate.
        if code != 0 && ERR_GET_REASON(code) != PEM_R_NO_START_LINE {
            throw HealthCardError(
                .key, "\(source): certificate \(certs.count + 1) cannot be read: \(openSSLErrorMessage())")
        }
        ERR_clear_error()
        return certs
    }

    /// DER encoding.
    func der() throws -> [UInt8] {
        let length = i2d_X509(cert, nil)
        guard length > 0 else { throw cryptoError("DER encoding of a certificate") }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(cert, &pointer)
        }
        guard written == length else { throw cryptoError("DER encoding of a certificate") }
        return out
    }

    /// The subject in OpenSSL's one-line form, e.g. `/CN=SMART Health Card Example Issuer`.
    var subject: String {
        guard let name = X509_get_subject_name(cert) else { return "unnamed" }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "unnamed" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when `issuer` (self) issued `child`: names and key identifiers match, and the signature verifies.
    func issued(_ child: X509Certificate) -> Bool {
        defer { ERR_clear_error() }
        guard X509_check_issued(cert, child.cert) == X509_V_OK, let key = X509_get0_pubkey(cert) else { return false }
        return X509_verify(child.cert, key) == 1
    }

    /// False only when a keyUsage extension is present and lacks digitalSignature.
    var allowsDigitalSignature: Bool {
        let usage = X509_get_key_usage(cert)
        return usage == UInt32.max || usage & UInt32(KU_DIGITAL_SIGNATURE) != 0
    }

    /// The certificate's public key, which must be EC P-256.
    func publicKey(source: String) throws -> P256Key {
        guard let pkey = X509_get_pubkey(cert) else {  // a new reference, owned by the P256Key below
            throw HealthCardError(
                .key, "\(source): the leaf certificate's public key cannot be read: \(openSSLErrorMessage())")
        }
        if let other = P256Key.notP256(pkey) {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            throw HealthCardError(
                .key,
                "\(source): the leaf certificate (\(subject)) holds "
                    + (other.isEC ? "an EC key on \(other.found)" : other.found)
                    + "; an SHC signing key is EC P-256")
        }
        return try P256Key(taking: pkey)
    }

    /// The subjectAltName URIs.
    var subjectAltNameURIs: [String] {
        guard let raw = X509_get_ext_d2i(cert, NID_subject_alt_name, nil, nil) else {
            ERR_clear_error()
            return []
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var uris: [String] = []
        for i in 0..<OPENSSL_sk_num(names) {
            guard let item = OPENSSL_sk_value(names, i) else { continue }
            let name = item.assumingMemoryBound(to: GENERAL_NAME.self)
            guard name.pointee.type == GEN_URI, let text = name.pointee.d.uniformResourceIdentifier,
                let data = ASN1_STRING_get0_data(text)
            else { continue }
            uris.append(
                String(decoding: UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(text))), as: UTF8.self))
        }
        return uris
    }
}
