import HealthCardsCore

/// Would an issuer's own site pass the VCI directory's key rules? For an issuer's web team before they apply
/// to be listed (docs/directory.md): every key EC P-256 with `use` `sig` and `alg` `ES256` (`JWK_*`), its
/// `kid` the RFC 7638 thumbprint (`JWK_KID_MISMATCH`), each revocation list's `ctr` equal to its key's
/// `crlVersion` and a list for every key that publishes one (`CRL_*`), and whether the directory lists the
/// issuer yet. Bytes in, as `KeySetCheck` reads a key set.
public enum DirectorySiteCheck {
    /// What the check found.
    public struct Result: Sendable {
        /// Problems with the keys and lists (errors), and the issuer's standing in the directory (warnings).
        public var findings: [Finding] = []
        /// What was checked and found sound, in sentences.
        public var notes: [String] = []
        /// True when no key rule is broken (the directory standing aside).
        public var keysPass: Bool { !findings.contains { $0.isError } }
    }

    /// - Parameters:
    ///   - jwks: the site's `.well-known/jwks.json`.
    ///   - file: its name, for locations.
    ///   - crls: the revocation list of each kid, as the site publishes it at `.well-known/crl/<kid>.json`, with
    ///     its name.
    ///   - issuer: the site's issuer URL (`iss`), when known.
    ///   - directory: the directory to look the issuer up in, when given.
    ///   - now: seconds since 1970 (CRL timestamps, `x5c` validity).
    public static func check(
        jwks: [UInt8], file: String, crls: [String: (bytes: [UInt8], name: String)], issuer: String?,
        directory: Directory?, now: Int64, limits: VerifyLimits = VerifyLimits()
    ) -> Result {
        var result = Result()
        var inputs: [String: CRLInput] = [:]
        for (kid, crl) in crls { inputs[kid] = .bytes(crl.bytes, name: crl.name) }
        let keySet = KeySetCheck.check(bytes: jwks, file: file, issuer: issuer, crls: inputs, now: now, limits: limits)
        result.findings = keySet.findings
        // A key that says it has a revocation list (crlVersion) must publish one: a verifier that finds none
        // cannot tell a revoked card.
        for key in keySet.keys where key.crlVersion != nil && key.crl == nil && inputs[key.kid] == nil {
            result.findings.append(Finding(
                .crlMissing, "key \(key.kid) publishes crlVersion \(key.crlVersion!), but there is no revocation list for it "
                    + "(.well-known/crl/\(key.kid).json); publish the list, or leave crlVersion out",
                at: .init(file: file, path: "keys[kid=\(key.kid)].crlVersion")))
        }
        if keySet.findings.isEmpty && !keySet.keys.isEmpty {
            result.notes.append("\(keySet.keys.count) key(s): EC P-256, use sig, alg ES256, kid the RFC 7638 thumbprint"
                + (crls.isEmpty ? "" : "; \(crls.count) revocation list(s) agree with their keys' crlVersion"))
        }
        guard let issuer else {
            result.notes.append("the site records no issuer, so whether the directory lists it was not checked")
            return result
        }
        guard let directory else { return result }
        let snapshot = directory.time.isEmpty ? "the VCI directory" : "the VCI directory of \(directory.time)"
        guard let (entries, match) = directory.issuers(for: issuer) else {
            result.findings.append(Finding(
                .directoryIssuerUnknown, "the issuer \(issuer) is not listed in \(snapshot) yet: verifiers that trust the "
                    + "directory will not verify its cards until it is. Apply to be listed (vci-directory), giving this iss "
                    + "exactly", at: .init(file: file, path: "iss"), severity: .warning))
            return result
        }
        for entry in entries {
            let how = match == .canonical ? " through its canonical_iss" : ""
            if entry.isListed == false {
                result.findings.append(Finding(
                    .directoryIssuerArchival, "the issuer \(issuer) is archival in \(snapshot)\(how) (\(Quote.text(entry.name))): "
                        + "kept for the record, no longer listed; ask the directory to list it again",
                    at: .init(file: file, path: "iss"), severity: .warning))
            } else {
                result.notes.append("the issuer is listed in \(snapshot)\(how) as \(Quote.text(entry.name))")
            }
            let published = Set(keySet.keys.map(\.kid))
            let gone = entry.kids.filter { !published.contains($0) }
            if !gone.isEmpty {
                result.notes.append("the directory still holds kid(s) this site no longer publishes: "
                    + gone.prefix(5).joined(separator: ", ") + (gone.count > 5 ? " and \(gone.count - 5) more" : "")
                    + " (cards signed with them stop verifying once the directory drops them)")
            }
        }
        return result
    }
}
