import HealthCards

enum SiteCommand {
    static let help = """
        Usage: healthcards site --out SITE KEY... [--x5c CHAIN.pem]... [--issuer URL] [--no-crl]

        Lays out the folder to publish at the issuer URL (iss) on a static host:
          SITE/.well-known/jwks.json          the public keys: give the current key AND every retired key
                                              whose cards are still in use (a key left out stops verifying)
          SITE/.well-known/crl/<kid>.json     a revocation list per key (an empty one, ctr 1, is created for
                                              a key that has none; existing lists are kept as they are)
          SITE/healthcards-nginx.conf         nginx rules (include it in the server block)
          SITE/.htaccess                      Apache httpd rules
          SITE/_headers                       Netlify / Cloudflare Pages rules
        The rules serve jwks.json and the CRLs as application/json with Access-Control-Allow-Origin: *,
        and *.smart-health-card files as application/smart-health-card. Each key's crlVersion is its
        CRL's ctr. Run it again whenever the keys change (yearly rotation); it is safe to repeat.

        Arguments:
          KEY              PEM key file (private or public) or PKCS#11 URI
                           (pkcs11:token=...;object=...?module-path=...&pin-source=file:...)
        Options:
          --out SITE       the site folder (created if missing)
          --x5c CHAIN.pem  an X.509 chain (PEM, leaf first) certifying one of the keys; refused when its
                           leaf holds another key. May be repeated.
          --issuer URL     the iss: checks that x5c leaf certificates name it (subjectAltName URI) and puts
                           its path into _headers (needed when iss has a path, e.g. https://host/shc)
          --no-crl         create no new CRLs (keys without one then do not support revocation)
          -h, --help       show this help

        Exit status: 0 written; 2 usage or configuration error, or a file could not be written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out", "x5c", "issuer"], flagNames: ["no-crl"], command: "site")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        let out = try parsed.required("out", command: "site")
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(
                .usage,
                "`healthcards site` needs at least one KEY (current and retired keys); "
                    + "see `healthcards site --help`")
        }
        var pathPrefix = ""
        let loaded = try KeyArguments.entries(keys: parsed.positionals, chains: parsed.values("x5c"))
        if let issuer = parsed.value("issuer") {
            try Payload.validateIssuer(issuer)
            let afterScheme = issuer.dropFirst("https://".count)
            if let slash = afterScheme.firstIndex(of: "/") { pathPrefix = String(afterScheme[slash...]) }
            for problem in PublishedKeys.issuerMismatches(loaded.chains, issuer: issuer) {
                printError("warning: " + problem)
            }
        }
        let site = IssuerSite(root: out)
        let result = try site.publish(keys: loaded.entries, createCRLs: !parsed.has("no-crl"), pathPrefix: pathPrefix)
        for kid in result.removedKids {
            printError(
                "warning: key \(kid) was published in \(site.keySetPath) and is not any more; cards it signed "
                    + "no longer verify (right for a compromised key; for a retired key, give it again)")
        }
        let published = try JWKS(bytes: try FileIO.read(site.keySetPath), source: site.keySetPath)
        var printed: [String] = []
        for key in published.keys where !printed.contains(key.kid) {
            printed.append(key.kid)
            print(key.kid + (key.crlVersion.map { " crlVersion \($0)" } ?? " (no CRL)"))
        }
        return .ok
    }
}

enum RevokeCommand {
    static let help = """
        Usage: healthcards revoke --site SITE --key KEY --rid-secret FILE --id PATIENT_ID... [--before SECONDS]
           or: healthcards revoke --site SITE --key KEY --rid RID... [--before SECONDS]

        Revokes the cards of a patient signed by KEY: adds their rid (the one `issue --rid-secret` put in
        vc.rid) to SITE/.well-known/crl/<kid>.json, increments its ctr, and sets the same crlVersion on
        that key in SITE/.well-known/jwks.json. The CRL is written first, then the key set, each
        atomically. Revoking what is already revoked changes nothing. A list never shrinks.

        Options:
          --site SITE         the site folder made by `healthcards site` (its jwks.json must list KEY)
          --key KEY           the key that signed the cards: PEM file (a public key is enough) or PKCS#11 URI
          --rid-secret FILE   the issuer's revocation secret, as given to `issue --rid-secret`
          --id PATIENT_ID     the patient id the rid was derived from (may be repeated)
          --rid RID           a rid to revoke as is (may be repeated)
          --before SECONDS    revoke only cards issued before this time (nbf < SECONDS, integer seconds since
                              1970): the CRL entry becomes <rid>.<SECONDS>. Without it, every card with the rid.
          -h, --help          show this help

        Output: one line per rid (added, widened, already revoked), then the CRL's ctr.
        Exit status: 0 done (or nothing to do); 2 usage or configuration error, or a file could not be written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["site", "key", "rid-secret", "id", "rid", "before"], flagNames: [],
            command: "revoke")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(
                .usage,
                "revoke takes no positional arguments, found '\(parsed.positionals[0])'; "
                    + "use --id PATIENT_ID or --rid RID")
        }
        let site = IssuerSite(root: try parsed.required("site", command: "revoke"))
        let keyArgument = try parsed.required("key", command: "revoke")
        let ids = parsed.values("id")
        if ids.contains(where: { $0.allSatisfy(\.isWhitespace) }) {
            throw HealthCardError(.usage, "--id is empty (an unset shell variable?); a revocation list never shrinks, so an "
                + "empty id would stay in it for good. Give the patient id the cards were issued for")
        }
        let rids = parsed.values("rid")
        guard !ids.isEmpty || !rids.isEmpty else {
            throw HealthCardError(.usage, "`healthcards revoke` needs --id PATIENT_ID (with --rid-secret) or --rid RID")
        }
        var before: Int64?
        if let text = parsed.value("before") {
            guard let value = Int64(text), value > 0, value < 100_000_000_000 else {
                throw HealthCardError(
                    .usage,
                    "--before '\(text)' is not integer seconds since 1970 (e.g. \(Clock.nowSeconds())); "
                        + "milliseconds are a classic bug")
            }
            before = value
        }
        for rid in rids where !RID.isValid(rid) {
            throw HealthCardError(.usage, "--rid '\(rid)' is not a rid (1 to 24 base64url characters)")
        }
        var secret: String?
        if !ids.isEmpty {
            guard let path = parsed.value("rid-secret") else {
                throw HealthCardError(.usage, "--id needs --rid-secret FILE (the secret `issue --rid-secret` used)")
            }
            secret = try RIDSecretFile.read(path)
        }
        let kid = JWK(key: try KeySource.load(keyArgument, requirePrivate: false)).kid
        var entries = rids.map { CRL.Entry(rid: $0, before: before) }
        if let secret {
            entries += ids.map { CRL.Entry(rid: RID.derive(secret: secret, kid: kid, patientID: $0), before: before) }
        }
        let result = try site.revoke(entries, kid: kid)
        for (entry, change) in result.changes {
            switch change {
            case .added: print("revoked \(entry.text)")
            case .widened(let old): print("revoked \(entry.text) (was \(old.text))")
            case .alreadyRevoked(let by): print("already revoked \(entry.text) (by \(by.text))")
            }
        }
        let crlPath = site.crlPath(kid: kid)
        print(
            "\(crlPath): ctr \(result.ctr)" + (result.wroteCRL ? "" : " (unchanged)")
                + "; \(site.keySetPath): crlVersion \(result.ctr)" + (result.wroteKeySet ? "" : " (unchanged)"))
        return .ok
    }
}
