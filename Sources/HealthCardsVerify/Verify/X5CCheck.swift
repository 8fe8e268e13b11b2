import HealthCardsCore

/// Checks a key's `x5c` certificate chain (digest section 7; spec "Determining keys associated with an
/// issuer"): standard base64 DER, leaf first; OpenSSL verifies that the chain holds together up to a
/// self-signed root (`X509Chain`); the leaf's public key is the JWK's; the leaf has a subjectAltName URI
/// equal to `iss`; the leaf is valid at `now`: otherwise an error on each card the key verifies, and a warning
/// on the key set (whose other keys are not affected). A leaf that was not valid at a card's `nbf` but is now
/// is only a warning on that card.
///
/// In a key set alone, `iss` is known only when the key set is bound to an issuer; each card is then
/// checked against its own `iss` (`cardFindings`).
struct X5CCheck {
    /// The JSON path of the `x5c` member (`keys[1].x5c`).
    var path: String
    /// The issuer the key set is bound to, if any.
    var issuer: String?
    /// Seconds since 1970 to judge the leaf's validity at.
    var now: Int64

    /// Checks `value` for the key `key`; adds findings (located in `file`) and a note saying what was
    /// verified. Returns the chain when OpenSSL verified it and the leaf certifies the key.
    func check(_ value: JSONValue, key: JWK, findings: inout [Finding], notes: inout [String], file: String)
        -> X509Chain?
    {
        func add(_ code: RuleCode, _ at: String, _ message: String) {
            findings.append(Finding(code, message, at: .init(file: file, path: at)))
        }
        guard let items = value.arrayValue, !items.isEmpty else {
            add(
                .jwkX5CUndecodable, path,
                "x5c must be a non-empty array of base64 DER certificates, found \(quoted(value))")
            return nil
        }
        var ders: [[UInt8]] = []
        for (i, item) in items.enumerated() {
            guard let text = item.stringValue else {
                add(
                    .jwkX5CUndecodable, "\(path)[\(i)]",
                    "x5c entries are strings (standard base64 DER), found \(quoted(item))")
                continue
            }
            guard let der = Base64URL.decodeStandard(text) else {
                if Base64URL.decode(text) != nil {
                    add(
                        .jwkX5CEncoding, "\(path)[\(i)]",
                        "the certificate is base64url; x5c uses standard base64 with '+', '/' and '=' padding (RFC 7517 section 4.7)"
                    )
                } else {
                    add(.jwkX5CUndecodable, "\(path)[\(i)]", "the certificate is not standard base64")
                }
                continue
            }
            ders.append(der)
        }
        guard ders.count == items.count else { return nil }
        let chain: X509Chain
        do { chain = try X509Chain(checkingDER: ders, source: path) } catch let failure {
            switch failure.kind {
            case .undecodable(let index): add(.jwkX5CUndecodable, "\(path)[\(index)]", failure.message)
            case .order, .chain: add(.jwkX5CChain, path, failure.message)
            case .leaf: add(.jwkX5CKeyMismatch, "\(path)[0]", failure.message)
            }
            return nil
        }
        guard chain.certifies(key) else {
            add(
                .jwkX5CKeyMismatch, "\(path)[0]",
                "the leaf certificate (\(chain.leafSubject)) holds the key with kid \(chain.leafJWK.kid), not this key (\(key.kid)); the first x5c certificate must certify the key itself"
            )
            return nil
        }
        if let problem = Self.subjectAltNameProblem(chain, issuer: issuer) {
            add(.jwkX5CSAN, "\(path)[0]", problem + (issuer == nil ? "" : " (the key set's issuer)"))
        }
        let leaf = chain.validity[0]
        if !leaf.contains(now) {
            // A warning on the key set: its other keys, and cards this key does not verify, are not affected. A card
            // this key verifies gets the error (`cardFindings`): its certificate vouches for nothing now.
            findings.append(
                Finding(
                    .jwkX5CValidity,
                    "the leaf certificate (\(chain.leafSubject)) is valid from \(Clock.describe(leaf.notBefore)) to "
                        + "\(Clock.describe(leaf.notAfter)), not now (\(Clock.describe(now))), so it certifies nothing now "
                        + "and a card this key verifies is an error; renew it and publish the new chain (or remove x5c)",
                    at: .init(file: file, path: "\(path)[0]"), severity: .warning))
        }
        let uris =
            chain.leafSubjectAltNameURIs.isEmpty
            ? "no subjectAltName URI" : "subjectAltName URI " + chain.leafSubjectAltNameURIs.joined(separator: ", ")
        let named =
            issuer.map { "; the key set's issuer is \($0)" }
            ?? "; the key set is not bound to an issuer, so whether the leaf names it is checked against each card's iss"
        notes.append(
            "\(path): chain of \(chain.certificates.count) certificate(s) verified by OpenSSL up to its self-signed root \(chain.subjects.last ?? "?") "
                + "(not checked against any trust list); leaf \(chain.leafSubject), \(uris), valid "
                + "\(Clock.describe(leaf.notBefore)) to \(Clock.describe(leaf.notAfter))\(named)")
        return chain
    }

    /// Why the leaf does not name `issuer` (or any issuer when `issuer` is nil), or nil when it does.
    static func subjectAltNameProblem(_ chain: X509Chain, issuer: String?) -> String? {
        let leaf = "the leaf certificate (\(chain.leafSubject))"
        guard chain.leafHasSubjectAltName else {
            return
                "\(leaf) has no subjectAltName; the spec requires a URI equal to the issuer (URI:\(issuer ?? "<iss>"))"
        }
        let uris = chain.leafSubjectAltNameURIs
        guard !uris.isEmpty else {
            let dns = chain.leafSubjectAltNameDNSNames.map { "DNS:\($0)" }.joined(separator: ", ")
            return
                "\(leaf) has subjectAltName \(dns.isEmpty ? "entries" : dns) but no URI; a DNS name does not name an issuer: "
                + "the spec requires URI:\(issuer ?? "<iss>")"
        }
        guard let issuer, !uris.contains(issuer) else { return nil }
        return "\(leaf) has subjectAltName URI \(uris.joined(separator: ", ")), not \(issuer)"
    }

    /// What a card verified by `key` adds about the key's chain: a leaf that does not name the card's
    /// `iss` (an error, unless the key set's own findings already say so), a leaf outside its validity at
    /// `now` (an error: the certificate vouches for nothing now), and a leaf valid now but not at the card's
    /// `nbf` (a warning: the spec's own example 01 is signed after its example leaf expired).
    static func cardFindings(key: TrustedKey, iss: String?, nbf: Double?, now: Int64) -> [(
        RuleCode, String, Finding.Severity
    )] {
        guard let chain = key.x5c else { return [] }
        var out: [(RuleCode, String, Finding.Severity)] = []
        let which = "key \(key.kid) of \(key.source)"
        if let iss, !key.problems.contains(where: { $0.code == .jwkX5CSAN }),
            let problem = subjectAltNameProblem(chain, issuer: iss)
        {
            out.append(
                (
                    .jwkX5CSAN,
                    "the card's iss is \(iss), but the x5c of \(which) does not name it: \(problem). "
                        + "The key belongs to the issuer its certificate names", .error
                ))
        }
        let leaf = chain.validity[0]
        let period = "the x5c leaf certificate of \(which) is valid from \(Clock.describe(leaf.notBefore)) to "
            + "\(Clock.describe(leaf.notAfter))"
        var atNbf: String?
        if let nbf, nbf.isFinite, nbf < Double(Int64.max), nbf > Double(Int64.min),
            !leaf.contains(Int64(nbf.rounded(.down)))
        {
            atNbf = "the card's nbf (\(Clock.describe(Int64(nbf.rounded(.down)))))"
        }
        if !leaf.contains(now) {
            let also = atNbf.map { " (nor \($0))" } ?? ""
            out.append(
                (
                    .jwkX5CValidity,
                    "\(period), which does not include now (\(Clock.describe(now)))\(also): the key's certificate vouches for "
                        + "nothing now, so the card is not verified by it; the issuer must renew the certificate and publish the new chain",
                    .error
                ))
        } else if let atNbf {
            out.append(
                (
                    .jwkX5CValidity,
                    "\(period), which does not include \(atNbf); it is valid now and the signature verifies, but the card "
                        + "was signed while the certificate was not valid",
                    .warning
                ))
        }
        return out
    }
}
