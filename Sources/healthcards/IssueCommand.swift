import HealthCards

#if canImport(Glibc)
    import Glibc
#endif

enum IssueCommand {
    static let help = """
        Usage: healthcards issue --issuer URL --key KEYFILE [--template FILE] --out DIR INPUT...

        Issues one SMART Health Card per patient (CSV with --template) or per Bundle (.json, .ndjson), and
        writes under DIR:
          cards/<id>.smart-health-card   {"verifiableCredential":["<JWS>"]}
          qr/<id>.png                    the shc:/ QR (qr/<id>-<c>.png per chunk with --chunk)
          report.ndjson                  one line per input record: source, id, status, errors, files
        Every card is read back (inflate, parse, signature) before it is written; every file is written
        to a temporary name and renamed into place.

        Arguments:
          INPUT                 .csv (needs --template), .json (one FHIR Bundle), .ndjson (a Bundle per line)
        Options:
          --issuer URL          iss: https, no trailing '/', no query or fragment; keys are published at
                                URL/.well-known/jwks.json
          --key KEY             the signing key: a PKCS#8 PEM file (mode 0600), or a PKCS#11 URI
                                (pkcs11:token=...;object=...?module-path=...&pin-source=file:...)
          --template FILE       template for CSV input (see templates/ and docs/templates.md)
          --out DIR             output folder (created if missing)
          --nbf SECONDS         nbf, integer seconds since 1970 (default: now), for reproducible fixtures
          --exp SECONDS         exp, integer seconds since 1970 (default: none; cards normally do not expire)
          --vc-types POLICY     legacy (default): #health-card plus the deprecated #immunization, #covid19,
                                #laboratory derived from the content (Apple Health selects by them);
                                minimal: #health-card only
          --rid-secret FILE     add vc.rid to each card: HMAC-SHA-256 of the patient id keyed by this secret
                                and the kid (make one with `healthcards keygen --rid-secret FILE`)
          --chunk               split a JWS over 1195 characters into chunked QRs (deprecated since SHC 1.3.0)
                                instead of rejecting the patient
          --no-qr               write no QR images
          --qr-scale PIXELS     pixels per QR module (default \(QRImage.defaultScale); 1 to 64)
          --quiet               no summary on stderr
          -h, --help            show this help

        Exit status: 0 every record issued; 1 some records rejected (the others are issued; see
        report.ndjson); 2 usage or configuration error (nothing issued).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["issuer", "key", "template", "out", "nbf", "exp", "vc-types", "qr-scale", "rid-secret"],
            flagNames: ["chunk", "no-qr", "quiet"], command: "issue")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        let issuerURL = try parsed.required("issuer", command: "issue")
        try Payload.validateIssuer(issuerURL)
        let keyPath = try parsed.required("key", command: "issue")
        let outDir = try parsed.required("out", command: "issue")
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.usage, "`healthcards issue` needs at least one INPUT file (.csv, .json or .ndjson); see `healthcards issue --help`")
        }
        let now = Clock.nowSeconds()
        var nbf = String(now)
        if let text = parsed.value("nbf") {
            guard let value = Int64(text), value >= 0, value < 100_000_000_000 else {
                throw HealthCardError(.usage, "--nbf '\(text)' is not integer seconds since 1970 (e.g. \(now)); milliseconds are a classic bug")
            }
            nbf = String(value)
        }
        var exp: Int64?
        if let text = parsed.value("exp") {
            guard let value = Int64(text), value > Int64(nbf)!, value < 100_000_000_000 else {
                throw HealthCardError(.usage, "--exp '\(text)' must be integer seconds since 1970, after nbf (\(nbf))")
            }
            exp = value
        }
        let policyText = parsed.value("vc-types") ?? "legacy"
        guard let policy = Payload.TypePolicy(rawValue: policyText) else {
            throw HealthCardError(.usage, "--vc-types '\(policyText)' is not known; expected legacy or minimal")
        }
        var image = QRImage()
        if let text = parsed.value("qr-scale") {
            guard let scale = Int(text), (1...64).contains(scale) else {
                throw HealthCardError(.usage, "--qr-scale '\(text)' must be a whole number of pixels from 1 to 64")
            }
            image.scale = scale
        }
        var template: Template?
        if let path = parsed.value("template") {
            template = try Template(bytes: try FileIO.read(path), source: path)
        }
        var inputs: [BatchInput] = []
        for path in parsed.positionals {
            guard FileIO.exists(path), !FileIO.isDirectory(path) else {
                throw HealthCardError(.usage, "input \(path) does not exist or is a folder")
            }
            let lower = path.lowercased()
            if lower.hasSuffix(".csv") {
                guard let template else {
                    throw HealthCardError(.usage, "\(path) is CSV, which needs --template (e.g. templates/covid19-vaccination.json)")
                }
                inputs.append(.csv(path: path, template: template))
            } else if lower.hasSuffix(".json") || lower.hasSuffix(".ndjson") {
                inputs.append(.bundles(path: path))
            } else {
                throw HealthCardError(.usage, "input \(path) has an unknown extension; expected .csv, .json or .ndjson")
            }
        }
        let key = try KeySource.load(keyPath, requirePrivate: true)
        var settings = IssueSettings(issuer: issuerURL, notBefore: nbf, expires: exp, typePolicy: policy,
                                     chunk: parsed.has("chunk"), makeQR: !parsed.has("no-qr"), qrImage: image)
        if let path = parsed.value("rid-secret") { settings.ridSecret = try RIDSecretFile.read(path) }
        let issuer = try CardIssuer(signer: try ES256Signer(key: key), settings: settings)
        let batch = BatchIssuer(issuer: issuer, outDir: outDir)
        let summary = try batch.run(inputs)
        if !parsed.has("quiet") {
            let rate = summary.seconds > 0 ? Double(summary.issued) / summary.seconds : 0
            printError("issued \(summary.issued), rejected \(summary.rejected), warnings \(summary.warnings) in \(format(summary.seconds)) s (\(format(rate)) cards/s); kid \(issuer.kid); report: \(outDir)/report.ndjson")
        }
        return summary.rejected > 0 ? .partial : .ok
    }

    static func format(_ value: Double) -> String {
        let scaled = (value * 10).rounded() / 10
        return String(scaled)
    }
}
