internal import COpenSSL
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// Builds small X.509 chains for an `x5c` member with OpenSSL, signed with deterministic ECDSA
/// (RFC 6979), so the same keys and dates give the same DER bytes (the fixture catalogue). Test
/// material: a real issuer gets its certificates from its CA.
package enum CertificateBuilder {
    /// What one certificate says.
    package struct Subject: Sendable {
        /// The subject's common name.
        package var commonName: String
        /// The serial number (positive).
        package var serial: Int
        /// Validity, seconds since 1970 (UTC).
        package var notBefore: Int64
        package var notAfter: Int64

        package init(commonName: String, serial: Int, notBefore: Int64, notAfter: Int64) {
            self.commonName = commonName
            self.serial = serial
            self.notBefore = notBefore
            self.notAfter = notAfter
        }
    }

    /// A chain `[leaf, CA]` as DER: a self-signed CA certificate for `caKey` (CA:TRUE, keyCertSign and
    /// cRLSign) and a leaf for `leafKey` (CA:FALSE, digitalSignature, subjectAltName `URI:<issuer>`, as
    /// the spec's example chain has) signed by the CA.
    /// - Throws: `HealthCardError(.key)` when `caKey` cannot sign deterministically; `.crypto` when
    ///   OpenSSL refuses a step or the result does not verify.
    package static func chain(caKey: PublicTestKey, ca: Subject, leafKey: PublicTestKey, leaf: Subject, issuerURL: String) throws
        -> [[UInt8]]
    {
        let caCertificate = try Certificate(subject: ca, issuer: ca.commonName, key: caKey.key)
        try caCertificate.add(NID_basic_constraints, "critical,CA:TRUE", issuer: nil)
        try caCertificate.add(NID_key_usage, "critical,keyCertSign,cRLSign", issuer: nil)
        try caCertificate.add(NID_subject_key_identifier, "hash", issuer: nil)
        let caDER = try caCertificate.sign(with: caKey, verifyingWith: caKey.key)

        let leafCertificate = try Certificate(subject: leaf, issuer: ca.commonName, key: leafKey.key)
        try leafCertificate.add(NID_basic_constraints, "critical,CA:FALSE", issuer: caCertificate)
        try leafCertificate.add(NID_key_usage, "critical,digitalSignature", issuer: caCertificate)
        try leafCertificate.add(NID_subject_alt_name, "URI:" + issuerURL, issuer: caCertificate)
        try leafCertificate.add(NID_subject_key_identifier, "hash", issuer: caCertificate)
        try leafCertificate.add(NID_authority_key_identifier, "keyid:always", issuer: caCertificate)
        let leafDER = try leafCertificate.sign(with: caKey, verifyingWith: caKey.key)
        return [leafDER, caDER]
    }

    /// DER length octets.
    static func derLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var n = count
        while n > 0 {
            bytes.insert(UInt8(n & 0xFF), at: 0)
            n >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// AlgorithmIdentifier ecdsa-with-SHA256 (RFC 5758 section 3.2: parameters absent).
    static let ecdsaWithSHA256: [UInt8] = [0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
}

/// Owner of one `X509` being built.
private final class Certificate {
    let x509: OpaquePointer

    init(subject: CertificateBuilder.Subject, issuer: String, key: P256Key) throws {
        guard let x509 = X509_new() else { throw cryptoError("X509_new") }
        self.x509 = x509
        guard X509_set_version(x509, 2) == 1,
            ASN1_INTEGER_set(X509_get_serialNumber(x509), subject.serial) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(subject.notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(subject.notAfter)) != nil,
            key.withPKey({ X509_set_pubkey(x509, $0) }) == 1
        else { throw cryptoError("certificate fields") }
        try setName(subject.commonName, X509_set_subject_name)
        try setName(issuer, X509_set_issuer_name)
    }

    deinit { X509_free(x509) }

    private func setName(_ commonName: String, _ set: (OpaquePointer?, OpaquePointer?) -> Int32) throws {
        guard let name = X509_NAME_new() else { throw cryptoError("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        let bytes = Array(commonName.utf8)
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1,
            set(x509, name) == 1
        else { throw cryptoError("certificate name") }
    }

    /// Adds an extension written in OpenSSL's configuration syntax (`critical,CA:TRUE`, `URI:https://…`).
    func add(_ nid: Int32, _ value: String, issuer: Certificate?) throws {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.x509 ?? x509, x509, nil, nil, 0)
        guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            throw cryptoError("certificate extension \(value)")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else { throw cryptoError("adding extension \(value)") }
    }

    /// Signs the certificate with deterministic ECDSA: OpenSSL first signs it (which fills in the
    /// signature algorithm of the TBSCertificate), then the TBSCertificate is re-signed with RFC 6979
    /// and the certificate assembled as DER `SEQUENCE { tbs, ecdsa-with-SHA256, BIT STRING sig }`,
    /// parsed back and verified with `issuerKey`.
    func sign(with testKey: PublicTestKey, verifyingWith issuerKey: P256Key) throws -> [UInt8] {
        let key = testKey.key
        guard key.withPKey({ X509_sign(x509, $0, EVP_sha256()) }) > 0 else { throw cryptoError("X509_sign") }
        var tbsPointer: UnsafeMutablePointer<UInt8>? = nil
        let tbsLength = i2d_re_X509_tbs(x509, &tbsPointer)
        guard tbsLength > 0, let tbsPointer else { throw cryptoError("TBSCertificate") }
        let tbs = Array(UnsafeBufferPointer(start: tbsPointer, count: Int(tbsLength)))
        CRYPTO_free(tbsPointer, #fileID, #line)
        let raw = try RFC6979.sign(tbs, key: testKey).raw
        let signature = try ES256.derSignature(fromRaw: raw)
        let bitString: [UInt8] = [0x03] + CertificateBuilder.derLength(signature.count + 1) + [0x00] + signature
        let body = tbs + CertificateBuilder.ecdsaWithSHA256 + bitString
        let der: [UInt8] = [0x30] + CertificateBuilder.derLength(body.count) + body
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &pointer, buffer.count)
        }
        guard let parsed else { throw cryptoError("reading back the certificate") }
        defer { X509_free(parsed) }
        guard issuerKey.withPKey({ X509_verify(parsed, $0) }) == 1 else {
            ERR_clear_error()
            throw HealthCardError(.crypto, "the deterministically signed certificate does not verify")
        }
        return der
    }
}
