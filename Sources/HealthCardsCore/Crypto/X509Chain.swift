internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// An X.509 certificate chain for a JWK's `x5c` member (digest section 7): DER certificates, leaf
/// first, each followed by its issuer. The leaf certifies the signing key.
///
/// Certificates are parsed and the chain is verified by OpenSSL (`X509_STORE`, `X509_verify_cert`):
/// this type only holds the DER bytes and what OpenSSL read from them. There is no trust list offline,
/// so the last certificate of the chain is taken as its anchor: what is checked is that the chain holds
/// together (signatures, CA flags and key usages of the issuers, names) up to a self-signed root whose own
/// signature verifies, not who that root is. Validity
/// dates are not part of that check; `validity` gives them so callers can judge a time.
public struct X509Chain: Sendable, Equatable {
    /// The certificates as DER, leaf first.
    public let certificates: [[UInt8]]
    /// Each certificate's subject in OpenSSL's one-line form (`/CN=…`), leaf first.
    public let subjects: [String]
    /// Each certificate's validity period, leaf first.
    public let validity: [Validity]
    /// The leaf's subjectAltName URIs; the spec expects one of them to equal `iss`.
    public let leafSubjectAltNameURIs: [String]
    /// The leaf's subjectAltName DNS names (which do not name an issuer: `iss` is a URL).
    public let leafSubjectAltNameDNSNames: [String]
    /// True when the leaf has a subjectAltName extension at all.
    public let leafHasSubjectAltName: Bool
    private let leafKeyX: [UInt8]
    private let leafKeyY: [UInt8]

    /// A certificate's validity period, in seconds since 1970 (UTC).
    public struct Validity: Sendable, Equatable {
        public let notBefore: Int64
        public let notAfter: Int64

        /// True when `seconds` lies in `notBefore … notAfter` (both included, as RFC 5280 says).
        public func contains(_ seconds: Int64) -> Bool { notBefore <= seconds && seconds <= notAfter }
    }

    /// Why a chain was refused, with a sentence for people: what the package's key set check switches on
    /// (`init(checkingDER:source:)`). A client gets it as `HealthCardError` of kind `.key` with the failure's code.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package enum Kind: Sendable, Equatable {
            /// Certificate `index` (0-based) is not DER OpenSSL can parse.
            case undecodable(index: Int)
            /// A certificate is not followed by its issuer.
            case order
            /// OpenSSL's chain verification failed (a signature, a CA flag, a key usage…).
            case chain
            /// The leaf cannot certify an ES256 key: not EC P-256, or keyUsage without digitalSignature.
            case leaf
        }
        package let kind: Kind
        package let message: String
        package var description: String { message }

        /// The rule the failure breaks: `JWK_X5C_UNDECODABLE`, `JWK_X5C_CHAIN` (order or OpenSSL's verification)
        /// or `JWK_X5C_KEY_MISMATCH` (a leaf that cannot certify an ES256 key).
        package var code: RuleCode {
            switch kind {
            case .undecodable: return .jwkX5CUndecodable
            case .order, .chain: return .jwkX5CChain
            case .leaf: return .jwkX5CKeyMismatch
            }
        }

        /// The failure as the library's error: kind `.key`, the failure's code, the same message.
        package var healthCardError: HealthCardError { HealthCardError(.key, code: code, message) }
    }

    /// The leaf's subject in OpenSSL's one-line form (for messages).
    public var leafSubject: String { subjects[0] }

    /// The `x5c` strings: standard base64 DER (with `+`, `/` and `=` padding), leaf first.
    public var x5c: [String] { certificates.map { Base64URL.encodeStandard($0) } }

    /// The leaf certificate's public key as a JWK (the `x` and `y` it must share with the signing key).
    public var leafJWK: JWK { JWK(checkedX: leafKeyX, y: leafKeyY) }

    /// True when the leaf certifies `key` (same public point).
    public func certifies(_ key: JWK) -> Bool { key.x == leafKeyX && key.y == leafKeyY }

    /// Reads a PEM chain (`-----BEGIN CERTIFICATE-----` blocks, leaf first), e.g. `cat leaf.pem ca.pem`,
    /// and verifies it as `init(der:source:)` does.
    /// - Throws: `HealthCardError(.key)` for text with no certificate, a private key in the file, a
    ///   certificate OpenSSL cannot parse, or a chain `init(der:source:)` refuses.
    public init(pem: [UInt8], source: String) throws {
        let labels = pem.withUnsafeBytes { PEMLabel.all(in: $0) }
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
        self = try Self.asKeyError { try X509Chain(checking: certs, source: source) }
    }

    /// Reads a published `x5c` array: standard base64 (not base64url) DER certificates, leaf first.
    /// - Throws: `HealthCardError(.key)` for an empty array, text that is not standard base64 with
    ///   padding, or a chain `init(der:source:)` refuses (with that failure's code).
    public init(x5c: [String], source: String) throws(HealthCardError) {
        guard !x5c.isEmpty else {
            throw HealthCardError(.key, "\(source): x5c is empty; it lists the leaf certificate first")
        }
        var ders: [[UInt8]] = []
        for (i, text) in x5c.enumerated() {
            guard let der = Base64URL.decodeStandard(text) else {
                throw HealthCardError(
                    .key,
                    "\(source): x5c[\(i)] is not standard base64 (with + / and = padding); "
                        + "x5c is never base64url")
            }
            ders.append(der)
        }
        do { self = try X509Chain(checkingDER: ders, source: source) } catch { throw error.healthCardError }
    }

    /// Runs `make`, turning a `Failure` into `HealthCardError(.key)` (with the failure's code) for the commands
    /// that publish chains.
    private static func asKeyError(_ make: () throws -> X509Chain) throws -> X509Chain {
        do { return try make() } catch let failure as Failure { throw failure.healthCardError }
    }

    /// Parses DER certificates (leaf first) and verifies the chain with OpenSSL:
    /// - each certificate is followed by its issuer (`X509_check_issued`: names and key identifiers);
    /// - the last certificate is self-signed (issuer = subject) and its signature verifies with its own key:
    ///   a chain that stops short of its root (a lone leaf, leaf and intermediate) is refused, since nothing
    ///   would check who signed its last certificate;
    /// - `X509_verify_cert` accepts the chain with that root as its anchor (`X509_V_FLAG_CHECK_SS_SIGNATURE`),
    ///   without judging dates (`X509_V_FLAG_NO_CHECK_TIME`): every signature, the issuers' CA flags and key usages;
    /// - the leaf holds an EC P-256 key and its keyUsage, when present, allows digitalSignature.
    /// - Throws: `HealthCardError` of kind `.key` saying which check failed and on which certificate, with the
    ///   code of the rule: `JWK_X5C_UNDECODABLE`, `JWK_X5C_CHAIN` or `JWK_X5C_KEY_MISMATCH`.
    public init(der: [[UInt8]], source: String) throws(HealthCardError) {
        do { try self.init(checkingDER: der, source: source) } catch { throw error.healthCardError }
    }

    /// `init(der:source:)`, throwing the `Failure` itself (for the key set check, which reports each as a finding).
    package init(checkingDER der: [[UInt8]], source: String) throws(Failure) {
        guard !der.isEmpty else { throw Failure(kind: .chain, message: "\(source): the chain holds no certificate") }
        var certs: [X509Certificate] = []
        for (i, bytes) in der.enumerated() {
            do { certs.append(try X509Certificate(der: bytes, source: "\(source) certificate \(i + 1)")) } catch {
                throw Failure(kind: .undecodable(index: i), message: "\(error)")
            }
        }
        try self.init(checking: certs, source: source)
    }

    private init(checking certs: [X509Certificate], source: String) throws(Failure) {
        for i in 0..<(certs.count - 1) where !certs[i + 1].issued(certs[i]) {
            throw Failure(
                kind: .order,
                message: "\(source): certificate \(i + 2) (\(certs[i + 1].subject)) did not issue "
                    + "certificate \(i + 1) (\(certs[i].subject)); the chain must list the leaf first, then each issuer"
            )
        }
        // OpenSSL is given the last certificate as its anchor; unless that one is a self-signed root whose
        // signature verifies, nothing proves who signed it, and a lone leaf would "verify" as its own anchor.
        let root = certs[certs.count - 1]
        if !root.namesItselfAsIssuer {
            let which = certs.count == 1 ? "the leaf certificate" : "certificate \(certs.count), the last one"
            throw Failure(
                kind: .chain,
                message: "\(source): \(which) (\(root.subject)) is issued by \(root.issuerName), which is not in the chain, "
                    + "so the chain cannot be verified; list the whole chain, the leaf first, then each issuer up to the "
                    + "self-signed root certificate (issuer = subject)")
        }
        if !root.selfSignatureVerifies {
            throw Failure(
                kind: .chain,
                message: "\(source): certificate \(certs.count) (\(root.subject)) names itself as its issuer, but its "
                    + "self-signature does not verify with its own key; the chain must end with the root certificate as its CA signed it")
        }
        if let problem = X509Certificate.verifyChain(certs) {
            throw Failure(kind: .chain, message: "\(source): OpenSSL does not verify the chain: \(problem)")
        }
        let leaf = certs[0]
        guard leaf.allowsDigitalSignature else {
            throw Failure(
                kind: .leaf,
                message: "\(source): the leaf certificate (\(leaf.subject)) has a keyUsage without "
                    + "digitalSignature, so it cannot certify an ES256 signing key")
        }
        let key: P256Key
        do { key = try leaf.publicKey(source: source) } catch {
            throw Failure(kind: .leaf, message: "\(error)")
        }
        var ders: [[UInt8]] = []
        for cert in certs {
            guard let bytes = cert.der() else {
                throw Failure(
                    kind: .undecodable(index: ders.count), message: "\(source): a certificate cannot be written as DER")
            }
            ders.append(bytes)
        }
        certificates = ders
        subjects = certs.map(\.subject)
        validity = certs.map(\.validity)
        let names = leaf.subjectAltNames
        leafHasSubjectAltName = names != nil
        leafSubjectAltNameURIs = names?.uris ?? []
        leafSubjectAltNameDNSNames = names?.dnsNames ?? []
        leafKeyX = key.x
        leafKeyY = key.y
    }
}

/// The one Swift owner of an OpenSSL `X509` certificate.
final class X509Certificate {
    let cert: OpaquePointer

    /// Takes ownership of `cert`.
    private init(taking cert: OpaquePointer) { self.cert = cert }

    deinit { X509_free(cert) }

    /// - Throws: `HealthCardError(.key)` when OpenSSL cannot parse `der` as one certificate.
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
        guard pem.count < Int(Int32.max), let bio = BIO_new(BIO_s_mem()) else { throw cryptoError("memory BIO") }
        defer { BIO_free(bio) }
        // BIO_write copies the text into the BIO, so no pointer to `pem` outlives the closure.
        let written = pem.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
        guard pem.isEmpty || written == Int32(pem.count) else { throw cryptoError("memory BIO") }
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

    /// DER encoding, or nil when OpenSSL cannot write it.
    func der() -> [UInt8]? {
        let length = i2d_X509(cert, nil)
        guard length > 0 else {
            ERR_clear_error()
            return nil
        }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(cert, &pointer)
        }
        return written == length ? out : nil
    }

    /// The subject in OpenSSL's one-line form, e.g. `/CN=SMART Health Card Example Issuer`.
    var subject: String {
        guard let name = X509_get_subject_name(cert) else { return "unnamed" }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "unnamed" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The issuer's name in OpenSSL's one-line form.
    var issuerName: String {
        guard let name = X509_get_issuer_name(cert) else { return "unnamed" }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil else { return "unnamed" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True when the certificate's issuer name is its subject name (`X509_NAME_cmp`): a root, or a self-signed leaf.
    var namesItselfAsIssuer: Bool {
        guard let subject = X509_get_subject_name(cert), let issuer = X509_get_issuer_name(cert) else { return false }
        return X509_NAME_cmp(subject, issuer) == 0
    }

    /// True when the certificate's signature verifies with its own public key (`X509_verify`).
    var selfSignatureVerifies: Bool {
        defer { ERR_clear_error() }
        guard let key = X509_get0_pubkey(cert) else { return false }
        return X509_verify(cert, key) == 1
    }

    /// True when `issuer` (self) issued `child` by names and key identifiers (`X509_check_issued`).
    func issued(_ child: X509Certificate) -> Bool {
        defer { ERR_clear_error() }
        return X509_check_issued(cert, child.cert) == X509_V_OK
    }

    /// Verifies `chain` (leaf first) with `X509_verify_cert`, the last certificate as trust anchor and
    /// dates not judged. Returns nil when it verifies, else OpenSSL's reason and the certificate it
    /// concerns.
    static func verifyChain(_ chain: [X509Certificate]) -> String? {
        defer { ERR_clear_error() }
        guard let store = X509_STORE_new() else { return "OpenSSL could not make a certificate store" }
        defer { X509_STORE_free(store) }
        guard let anchor = chain.last, X509_STORE_add_cert(store, anchor.cert) == 1 else {
            return "OpenSSL could not add the last certificate to the store"
        }
        guard let untrusted = OPENSSL_sk_new_null() else { return "OpenSSL could not make a certificate stack" }
        // The stack only lends the pointers: the X509Certificate owners keep them alive and free them.
        defer { OPENSSL_sk_free(untrusted) }
        for certificate in chain.dropFirst().dropLast() {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.cert)) > 0 else {
                return "OpenSSL could not make a certificate stack"
            }
        }
        guard let context = X509_STORE_CTX_new() else { return "OpenSSL could not make a verification context" }
        defer { X509_STORE_CTX_free(context) }
        let verified: Bool = withExtendedLifetime(chain) {
            guard X509_STORE_CTX_init(context, store, chain[0].cert, untrusted) == 1,
                let parameters = X509_STORE_CTX_get0_param(context),
                X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_CHECK_SS_SIGNATURE | X509_V_FLAG_NO_CHECK_TIME))
                    == 1
            else { return false }
            return X509_verify_cert(context) == 1
        }
        if verified {
            // The chain OpenSSL built must be the one given, certificate for certificate.
            guard let built = X509_STORE_CTX_get0_chain(context), Int(OPENSSL_sk_num(built)) == chain.count else {
                return "the chain OpenSSL built from it does not use every certificate given, in order"
            }
            for (i, certificate) in chain.enumerated() {
                guard let item = OPENSSL_sk_value(built, Int32(i)), X509_cmp(OpaquePointer(item), certificate.cert) == 0
                else { return "the chain OpenSSL built from it does not use every certificate given, in order" }
            }
            return nil
        }
        let error = X509_STORE_CTX_get_error(context)
        let depth = Int(X509_STORE_CTX_get_error_depth(context))
        let reason = X509_verify_cert_error_string(Int(error)).map { String(cString: $0) } ?? "error \(error)"
        let which =
            depth >= 0 && depth < chain.count ? "certificate \(depth + 1) (\(chain[depth].subject))" : "the chain"
        return "\(which): \(reason)"
    }

    /// False only when a keyUsage extension is present and lacks digitalSignature.
    var allowsDigitalSignature: Bool {
        let usage = X509_get_key_usage(cert)
        return usage == UInt32.max || usage & UInt32(KU_DIGITAL_SIGNATURE) != 0
    }

    /// notBefore and notAfter in seconds since 1970; a time OpenSSL cannot read counts as the epoch
    /// (notBefore) or as already past (notAfter), so it never makes a certificate look valid.
    var validity: X509Chain.Validity {
        func seconds(_ time: UnsafePointer<ASN1_TIME>?, otherwise: Int64) -> Int64 {
            guard let time else { return otherwise }
            var parts = tm()
            guard ASN1_TIME_to_tm(time, &parts) == 1 else {
                ERR_clear_error()
                return otherwise
            }
            return Int64(timegm(&parts))
        }
        return .init(
            notBefore: seconds(X509_get0_notBefore(cert), otherwise: Int64.max),
            notAfter: seconds(X509_get0_notAfter(cert), otherwise: Int64.min))
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

    /// The subjectAltName URIs and DNS names (OpenSSL's `GENERAL_NAME` API), or nil when the certificate
    /// has no subjectAltName extension.
    var subjectAltNames: (uris: [String], dnsNames: [String])? {
        var critical: Int32 = 0
        guard let raw = X509_get_ext_d2i(cert, NID_subject_alt_name, &critical, nil) else {
            ERR_clear_error()
            // -1: absent; -2: present more than once (malformed), reported as present with no names.
            return critical == -2 ? ([], []) : nil
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var uris: [String] = []
        var dnsNames: [String] = []
        for i in 0..<OPENSSL_sk_num(names) {
            guard let item = OPENSSL_sk_value(names, i) else { continue }
            var type: Int32 = 0
            guard let value = GENERAL_NAME_get0_value(item.assumingMemoryBound(to: GENERAL_NAME.self), &type),
                type == GEN_URI || type == GEN_DNS
            else { continue }
            let text = value.assumingMemoryBound(to: ASN1_STRING.self)
            let length = Int(ASN1_STRING_length(text))
            guard length >= 0, let data = ASN1_STRING_get0_data(text) else { continue }
            let string = String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self)
            if type == GEN_URI { uris.append(string) } else { dnsNames.append(string) }
        }
        return (uris, dnsNames)
    }
}
