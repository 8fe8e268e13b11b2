import HealthCards

enum KeygenCommand {
    static let help = """
        Usage: healthcards keygen --out FILE
               healthcards keygen --rid-secret FILE

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
        Usage: healthcards jwks KEYFILE... --out FILE

        Writes the JWK Set {"keys":[...]} of the given keys' public halves: kty, kid, use "sig", alg "ES256",
        crv, x, y (32 bytes each). Private members are never written. Publish it at
        <issuer>/.well-known/jwks.json with Access-Control-Allow-Origin: *.

        Arguments:
          KEY          PEM key file (PKCS#8 or SEC 1 private key, SPKI public key), PKCS#11 URI, or a .json file
                       holding a public JWK or JWK Set (refused if any key in it has a private member such
                       as d). Several (current and retired) may be given; each appears once.
        Options:
          --out FILE   where to write jwks.json (missing folders are created; written atomically)
          -h, --help   show this help
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out"], flagNames: [], command: "jwks")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        let out = try parsed.required("out", command: "jwks")
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.usage, "`healthcards jwks` needs at least one KEYFILE; see `healthcards jwks --help`")
        }
        var keys: [JWK] = []
        for path in parsed.positionals {
            let found: [JWK]
            if path.lowercased().hasSuffix(".json") {
                found = try JWKS.publicKeys(jsonFile: try FileIO.read(path), source: path)
            } else {
                found = [JWK(key: try KeySource.load(path, requirePrivate: false))]
            }
            for jwk in found where !keys.contains(where: { $0.kid == jwk.kid }) { keys.append(jwk) }
        }
        try FileIO.writeAtomically(JWKS(keys: keys).fileBytes, to: out)
        for key in keys { print(key.kid) }
        return .ok
    }
}
