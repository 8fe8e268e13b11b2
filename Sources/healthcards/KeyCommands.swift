import HealthCards

enum KeygenCommand {
    static let help = """
        Usage: healthcards keygen --out FILE
           or: healthcards keygen --rid-secret FILE

        Makes a new ECDSA P-256 signing key and writes it as PKCS#8 PEM (-----BEGIN PRIVATE KEY-----) with
        mode 0600. Prints the key's kid (RFC 7638 thumbprint) on stdout. Never overwrites an existing file.
        With --rid-secret, makes the issuer-wide 256-bit revocation secret instead (base64url, mode 0600).

        Options:
          --out FILE          where to write the private key (missing folders are created)
          --rid-secret FILE   where to write a new revocation secret (for `issue --rid-secret`)
          -h, --help          show this help
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out", "rid-secret"], flagNames: [], command: "keygen")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        if let path = parsed.value("rid-secret") {
            guard parsed.value("out") == nil else {
                throw HealthCardError(.usage, "give either --out (a signing key) or --rid-secret (a revocation secret), not both")
            }
            try RIDSecretFile.create(at: path)
            return .ok
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(.usage, "keygen takes no positional arguments, found '\(parsed.positionals[0])'; use --out FILE")
        }
        let out = try parsed.required("out", command: "keygen")
        let key = try P256Key.generate()
        try KeyFile.writeNew(key, to: out)
        print(JWK(key: key).kid)
        return .ok
    }
}

enum JWKSCommand {
    static let help = """
        Usage: healthcards jwks KEY... --out FILE [--x5c CHAIN.pem]...

        Writes the JWK Set {"keys":[...]} of the given keys' public halves: kty, kid, use "sig", alg "ES256",
        crv, x, y (32 bytes each), and x5c for keys given a certificate chain. Private members are never
        written. Publish it at <issuer>/.well-known/jwks.json with Access-Control-Allow-Origin: *
        (`healthcards site` lays out the whole folder, with CRLs and header rules for the host).

        crlVersion: the revocation lists live beside the key set, in crl/<kid>.json next to FILE. Each key
        whose CRL is there gets crlVersion = that CRL's ctr; a key without one gets no crlVersion. So
        rewriting .well-known/jwks.json never loses or falsifies a crlVersion (`healthcards revoke` owns
        the CRLs and their ctr).

        Arguments:
          KEY              PEM key file (PKCS#8 or SEC 1 private key, SPKI public key) or PKCS#11 URI
                           (pkcs11:token=...;object=...?module-path=...&pin-source=file:...), or a .json
                           file holding a public JWK or JWK Set (refused if any key in it has a private
                           member such as d). Give all keys whose cards are still in use (the
                           current one and retired ones); each appears once.
        Options:
          --out FILE       where to write jwks.json (missing folders are created; written atomically)
          --x5c CHAIN.pem  an X.509 chain (PEM, leaf first) whose leaf certifies one of the keys; written
                           as x5c (standard base64 DER). Refused when the leaf holds another key. May be
                           repeated; a key with two chains gets two entries, identical except x5c.
          -h, --help       show this help
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out", "x5c"], flagNames: [], command: "jwks")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        let out = try parsed.required("out", command: "jwks")
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.usage, "`healthcards jwks` needs at least one KEY; see `healthcards jwks --help`")
        }
        let entries = try KeyArguments.entries(keys: parsed.positionals, chains: parsed.values("x5c")).entries
        let crlDirectory = IssuerSite.crlDirectory(besideKeySet: out)
        let keys = try IssuerSite.applyingCRLVersions(to: entries, crlDirectory: crlDirectory)
        if FileIO.exists(out), let old = try? KeySetFile.parse(try FileIO.read(out), source: out) {
            for key in keys where key.crlVersion == nil
                && KeySetFile.crlVersions(kid: key.kid, in: old).contains(where: { $0 != nil }) {
                printError("warning: \(out) gave key \(key.kid) a crlVersion, but \(crlDirectory)/\(key.kid).json "
                    + "does not exist; the new key set has no crlVersion for it")
            }
        }
        try FileIO.writeAtomically(JWKS(keys: keys).fileBytes, to: out)
        var printed: [String] = []
        for key in keys where !printed.contains(key.kid) {
            printed.append(key.kid)
            print(key.kid)
        }
        return .ok
    }
}

/// Key and certificate-chain arguments shared by `jwks` and `site`.
enum KeyArguments {
    /// Public JWK entries for KEY arguments (PEM files or PKCS#11 URIs) and --x5c chain files, and the chains.
    static func entries(keys: [String], chains chainPaths: [String]) throws -> (entries: [JWK], chains: [PublishedKeys.Chain]) {
        let keys = try keys.flatMap { argument -> [JWK] in
            if argument.lowercased().hasSuffix(".json") {
                // A public JWK or JWK Set: refused when any key in it has a private member (d, ...). Only the
                // point is taken; x5c and crlVersion come from --x5c and the CRLs as for PEM keys.
                return try JWKS.publicKeys(jsonFile: try FileIO.read(argument), source: argument).map { JWK(x: $0.x, y: $0.y) }
            }
            return [JWK(key: try KeySource.load(argument, requirePrivate: false))]
        }
        let chains = try chainPaths.map { path in
            PublishedKeys.Chain(try X509Chain(pem: try FileIO.read(path), source: path), source: path)
        }
        return (try PublishedKeys.entries(keys: keys, chains: chains), chains)
    }
}
