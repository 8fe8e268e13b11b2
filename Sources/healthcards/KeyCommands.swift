import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum KeygenCommand {
    static let help = """
        Usage: healthcards keygen --out FILE
               healthcards keygen --rid-secret FILE

        Makes a new ECDSA P-256 signing key and writes it as PKCS#8 PEM (-----BEGIN PRIVATE KEY-----) with
        mode 0600. Prints the key's kid (RFC 7638 thumbprint) on stdout. A private key is only ever written
        to a new regular file: never over an existing file, link, FIFO or device, never to standard output.
        With --rid-secret, makes the issuer-wide 256-bit revocation secret instead (base64url, mode 0600).
        Neither is ever written inside a published site (a folder holding .well-known/jwks.json).

        Options:
          --out FILE          where to write the private key (missing folders are created, mode 0700)
          --rid-secret FILE   where to write a new revocation secret (for `issue --rid-secret`)
          -h, --help          show this help
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out", "rid-secret"], flagNames: [], command: "keygen")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        if let path = parsed.value("rid-secret") {
            guard parsed.value("out") == nil else {
                throw HealthCardError(.configuration, "give either --out (a signing key) or --rid-secret (a revocation secret), not both")
            }
            try IssuerSite.refuseHealthDataInside(path, option: "--rid-secret", what: "a revocation secret is private")
            try RIDSecretFile.create(at: path)
            return .ok
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(.configuration, "keygen takes no positional arguments, found \(Quote.text(parsed.positionals[0])); use --out FILE")
        }
        let out = try parsed.required("out", command: "keygen")
        if FileIO.isDirectory(out) {
            throw HealthCardError(
                .configuration,
                "--out \(out) is a folder; keygen writes one key file: give the path of the file to create, "
                    + "e.g. \(out.hasSuffix("/") ? out : out + "/")issuer.pem")
        }
        try IssuerSite.refuseHealthDataInside(out, option: "--out", what: "a private key is private")
        let key = try P256Key.generate()
        try KeyFile.writeNew(key, to: out)
        say(JWK(key: key).kid)
        return .ok
    }
}

enum JWKSCommand {
    static let help = """
        Usage: healthcards jwks KEY... --out FILE [--x5c CHAIN.pem]... [--issuer URL]
                                [--drop-kid KID]... [--report REPORT]...

        Writes the JWK Set {"keys":[...]} of the given keys' public halves: kty, kid, use "sig", alg "ES256",
        crv, x, y (32 bytes each), and x5c for keys given a certificate chain. Private members are never
        written. Publish it at <issuer>/.well-known/jwks.json with Access-Control-Allow-Origin: *
        (`healthcards site` lays out the whole folder, with CRLs and header rules for the host).

        crlVersion: the revocation lists live beside the key set, in crl/<kid>.json next to FILE. Each key
        whose CRL is there gets crlVersion = that CRL's ctr; a key without one gets no crlVersion. So
        rewriting .well-known/jwks.json never loses or falsifies a crlVersion (`healthcards revoke` owns
        the CRLs and their ctr). Written into a site (FILE is SITE/.well-known/jwks.json), it holds the
        site's lock as `site` and `revoke` do, waiting while one of them writes the site.

        Replacing a key set: a key published in FILE and not given again is refused (its cards would stop
        verifying) unless --drop-kid names it.

        The public demo key (keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION...) is refused unless --issuer is an
        example host (example.org, example.com, example.net, localhost, *.example).

        Arguments:
          KEY              PEM key file (PKCS#8 or SEC 1 private key, SPKI public key), DER SPKI public key
                           (as pkcs11-tool --read-object --type pubkey writes it), PKCS#11 URI
                           (pkcs11:token=...;object=...;type=private|public?module-path=...&pin-source=file:...),
                           or a .json file holding a public JWK or JWK Set (refused if any key in it has a
                           private member such as d). Give all keys whose cards are still in use (the
                           current one and retired ones); each appears once. A key whose point is not on
                           P-256, in any of these forms, is refused (no one holds its private key).
        Options:
          --out FILE       where to write jwks.json (missing folders are created; a regular file is replaced
                           atomically, a link's target is replaced and the link kept, a FIFO or device is
                           written directly); - writes to standard output (the kids then go to stderr)
          --x5c CHAIN.pem  an X.509 chain (PEM, leaf first) whose leaf certifies one of the keys; written
                           as x5c (standard base64 DER). Refused when the leaf holds another key. May be
                           repeated; a key with two chains gets two entries, identical except x5c.
          --issuer URL     the issuer the key set is published for (checked like `issue --issuer`)
          --drop-kid KID   leave out a key that FILE publishes, on purpose (a compromised key). May be repeated
          --report REPORT  an `issue` report.ndjson, to say how many cards a key left out signed. May be repeated
          -h, --help       show this help
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["out", "x5c", "issuer", "drop-kid", "report"], flagNames: [], command: "jwks")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let out = try parsed.required("out", command: "jwks")
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.configuration, "`healthcards jwks` needs at least one KEY; see `healthcards jwks --help`")
        }
        if out != "-" && FileIO.isDirectory(out) {
            throw HealthCardError(.io, "cannot write \(out): it is a folder; give the path of the key set file, "
                + "e.g. \(out.hasSuffix("/") ? out : out + "/").well-known/jwks.json")
        }
        let issuer = parsed.value("issuer")
        if let issuer { try Payload.validateIssuer(issuer) }
        let entries = try KeyArguments.entries(keys: parsed.positionals, chains: parsed.values("x5c")).entries
        try DemoKey.check(kids: entries.map(\.kid), issuer: issuer, command: "jwks")
        // A key set written into a site (SITE/.well-known/jwks.json) is written under the site's lock, like `site`.
        let lock = try (out == "-" ? nil : IssuerSite.containing(keySet: out)).map {
            try SiteLock.take(site: $0.root, waiting: { printError($0) })
        }
        defer { withExtendedLifetime(lock) {} }
        let keys: [JWK]
        var previous: JSONValue?
        if out == "-" {
            keys = entries
        } else {
            let crlDirectory = IssuerSite.crlDirectory(besideKeySet: out)
            keys = try IssuerSite.applyingCRLVersions(to: entries, crlDirectory: crlDirectory)
            // Only a regular file is read back: reading /dev/stdout or a FIFO would wait forever.
            if FileIO.isRegularFile(out) { previous = try? KeySetFile.parse(try FileIO.read(out, maxBytes: InputBudget.cardFileBytes), source: out) }
            if let previous {
                for key in keys where key.crlVersion == nil
                    && KeySetFile.crlVersions(kid: key.kid, in: previous).contains(where: { $0 != nil }) {
                    printError("warning: \(out) gave key \(key.kid) a crlVersion, but \(crlDirectory)/\(key.kid).json "
                        + "does not exist; the new key set has no crlVersion for it")
                }
            }
        }
        let reports = parsed.values("report")
        let issued = reports.isEmpty ? nil : try IssuedCards(reports: reports, keeping: .countsOnly)
        let previousKids = (previous?["keys"]?.arrayValue ?? []).compactMap { $0["kid"]?.stringValue }
        for warning in try KeyRetirement.check(
            previous: previousKids, next: keys.map(\.kid), dropping: parsed.values("drop-kid"), keySetPath: out,
            issued: issued)
        {
            printError("warning: " + warning)
        }
        try FileIO.writePublic(JWKS(keys: keys).fileBytes, to: out)
        var printed: [String] = []
        for key in keys where !printed.contains(key.kid) {
            printed.append(key.kid)
            if out == "-" { printError(key.kid) } else { say(key.kid) }
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
                let bytes = try FileIO.read(argument, maxBytes: InputBudget.cardFileBytes)
                let keys = try JWKS.publicKeys(jsonFile: bytes, source: argument).map { try JWK(x: $0.x, y: $0.y) }
                for warning in JWKS.kidWarnings(jsonFile: bytes, source: argument) { printError("warning: " + warning) }
                return keys
            }
            return [JWK(key: try KeySource.load(argument, requirePrivate: false))]
        }
        let chains = try chainPaths.map { path in
            PublishedKeys.Chain(try X509Chain(pem: try FileIO.read(path, maxBytes: InputBudget.certificateChainBytes), source: path), source: path)
        }
        return (try PublishedKeys.entries(keys: keys, chains: chains), chains)
    }
}
