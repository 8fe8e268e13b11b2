import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsIssuing

/// `healthcards directory verify|show|check`: the VCI directory, offline (docs/directory.md).
enum DirectoryCommand {
    static let help = """
        Usage: healthcards directory verify DIR [--cert CERT] [--json]
               healthcards directory show DIR [--iss URL] [--cert CERT] [--now SECONDS] [--max-key-age DAYS] [--json]
               healthcards directory check DIR --site SITE [--cert CERT] [--now SECONDS] [--json]

        The VCI directory, offline: a folder DIR holding the files of the-commons-project/vci-directory
        (docs/directory.md says where each comes from):
          DIR/vci_snapshot.json   every issuer's keys and revocation lists (logs/vci_snapshot.json)
          DIR/vci_snapshot.sig    its signature: ECDSA P-521 / SHA-512, DER (logs/vci_snapshot.sig)
          DIR/vci_snapshot.crt    the certificate whose key signs it (vci_snapshot.crt)
          DIR/vci-issuers.json    the issuers listed today (vci-issuers.json); optional: without it no
                                  issuer is told archival
          DIR/daily_audit.json    the day's audit (logs/daily_audit.json); optional
        Every command first checks the snapshot's signature; a snapshot whose signature fails is refused
        (DIRECTORY_SIGNATURE_INVALID, exit status 1) and nothing in it is read.

        Commands:
          verify   check the snapshot's signature and say with which certificate
          show     counts (entries, listed, archival, keys, CRLs, stale, shared kids, canonical_iss) and,
                   per issuer, its name, iss, kids, CRL ctr and lastRetrieved; --iss URL shows one issuer
                   (found by iss, then through canonical_iss)
          check    would the issuer site SITE (written by `healthcards site`) pass the directory's key
                   rules: kty EC, crv P-256, use sig, alg ES256, kid the RFC 7638 thumbprint, each CRL's
                   ctr its key's crlVersion and a CRL for every key with a crlVersion; and is its iss
                   (from SITE/healthcards-site.json) listed yet
        Options:
          --cert CERT          the certificate (PEM or DER) to check the signature with: pin your own copy
                               of vci_snapshot.crt. Without it the one in DIR is used, with a warning
                               (DIRECTORY_NOT_PINNED): whoever can change DIR can change it too
          --iss URL            (show) the issuer to show
          --site SITE          (check) the issuer's site folder
          --now SECONDS        judge key ages and CRL timestamps at this time (seconds since 1970; default now)
          --max-key-age DAYS   (show) keys last retrieved more than DAYS before --now are stale (default 365)
          --json               print a JSON document instead of text
          -h, --help           show this help

        Exit status: 0 the signature verified (and, for show --iss, the issuer was found; for check, no key
        rule is broken); 1 the signature does not verify, the issuer is not in the directory, or a key rule
        is broken; 2 usage error (a missing file, an unknown option).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["cert", "iss", "site", "now", "max-key-age"], flagNames: ["json"], command: "directory")
        if parsed.has("help") || parsed.positionals.isEmpty {
            say(help)
            return parsed.has("help") ? .ok : .usage
        }
        let sub = parsed.positionals[0]
        guard ["verify", "show", "check"].contains(sub) else {
            throw HealthCardError(
                .configuration, "unknown directory command \(Quote.text(sub)); expected verify, show or check. See `healthcards directory --help`")
        }
        guard parsed.positionals.count == 2 else {
            throw HealthCardError(
                .configuration, "`healthcards directory \(sub)` takes one DIR (the folder of vci_snapshot.json); see `healthcards directory --help`")
        }
        let folder = parsed.positionals[1]
        let allowed: [String: Set<String>] = [
            "verify": ["cert"], "show": ["cert", "iss", "now", "max-key-age"], "check": ["cert", "site", "now"],
        ]
        for name in ["cert", "iss", "site", "now", "max-key-age"] where parsed.value(name) != nil && !allowed[sub]!.contains(name) {
            throw HealthCardError(.configuration, "--\(name) is not an option of `healthcards directory \(sub)`; see `healthcards directory --help`")
        }
        let now = try parsed.value("now").map { try TimeOption.parse("now", $0, example: Clock.nowSeconds()) } ?? Clock.nowSeconds()
        let maxKeyAge = try parsed.value("max-key-age").map { try keyAge($0) } ?? Directory.defaultMaxKeyAge
        let json = parsed.has("json")
        let site = sub == "check" ? try parsed.required("site", command: "directory check") : nil
        let loaded: DirectoryFiles
        do { loaded = try DirectoryFiles(folder: folder, certificate: parsed.value("cert")) } catch let error as HealthCardError
            where error.code == .directorySignatureInvalid || error.code == .directoryInvalid || error.kind == .key
        {
            if json {
                say(String(decoding: JSONWriter.pretty(.object([
                    "directory": .string(folder), "signature": .string("invalid"),
                    "error": .object(["code": .string((error.code ?? .directorySignatureInvalid).rawValue),
                                      "message": .string(Hints.said(error))]),
                ])), as: UTF8.self))
            }
            printError(error.commandLineText)
            return .partial
        }
        if !loaded.pinned { printError("warning DIRECTORY_NOT_PINNED: " + loaded.notPinnedText) }
        switch sub {
        case "verify": return verify(loaded, json: json)
        case "show": return show(loaded, iss: parsed.value("iss"), now: now, maxKeyAge: maxKeyAge, json: json)
        default: return try check(loaded, site: site ?? "", now: now, json: json)
        }
    }

    /// `--max-key-age DAYS` in seconds.
    static func keyAge(_ text: String) throws -> Int64 {
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let days = Int64(text), days <= 36_500 else {
            throw HealthCardError(.configuration, "--max-key-age \(Quote.text(text)) is not a whole number of days from 0 to 36500 (e.g. 365)")
        }
        return days * 86_400
    }

    /// What `--json` says of the snapshot and its signature.
    static func signatureJSON(_ loaded: DirectoryFiles) -> JSONValue {
        let d = loaded.directory
        return .object([
            "path": .string(loaded.folder), "time": .string(d.time), "source": d.source.map { .string($0) } ?? .null,
            "signature": "verified", "pinned": .bool(loaded.pinned),
            "certificate": .object([
                "path": .string(loaded.certificatePath), "subject": .string(d.certificateSubject),
                "sha256": .string(d.certificateFingerprint),
                "notBefore": .integer(d.certificateValidity.notBefore), "notAfter": .integer(d.certificateValidity.notAfter),
            ]),
            "issuerList": .bool(d.hasIssuerList), "audit": d.auditTime.map { .string($0) } ?? .null,
        ])
    }

    static func verify(_ loaded: DirectoryFiles, json: Bool) -> ExitStatus {
        let d = loaded.directory
        if json {
            say(String(decoding: JSONWriter.pretty(.object(["directory": signatureJSON(loaded)])), as: UTF8.self))
        } else {
            say("directory \(loaded.folder): signature verified (ECDSA P-521, SHA-512) with \(loaded.certificatePath)"
                + " (\(d.certificateSubject), SHA-256 \(d.certificateFingerprint)\(loaded.pinned ? ", pinned" : ", NOT pinned"))")
            say("  snapshot of \(d.time.isEmpty ? "?" : d.time): \(d.counts.entries) issuers, \(d.counts.keys) keys")
        }
        return .ok
    }

    static func issuerJSON(_ issuer: Directory.Issuer, staleBefore: Int64, errors: [Finding]) -> JSONValue {
        .object([
            "iss": .string(issuer.iss), "name": .string(issuer.name), "website": issuer.website.map { .string($0) } ?? .null,
            "canonicalIss": issuer.canonicalIss.map { .string($0) } ?? .null,
            "listedCanonicalIss": issuer.listedCanonicalIss.map { .string($0) } ?? .null,
            "listed": issuer.isListed.map { .bool($0) } ?? .null,
            "kids": .array(issuer.kids.map { .string($0) }),
            "crls": .array(issuer.crls.map { .object(["kid": .string($0.kid), "ctr": $0.ctr.map { .integer(Int64($0)) } ?? .null]) }),
            "lastRetrieved": issuer.lastRetrievedText.map { .string($0) } ?? .null,
            "stale": .bool(issuer.isStale(before: staleBefore)),
            "auditErrors": .array(issuer.auditErrors.map { .string($0) }),
            "keyErrors": .array(errors.map { $0.json(say: Hints.said) }),
        ])
    }

    static func show(_ loaded: DirectoryFiles, iss: String?, now: Int64, maxKeyAge: Int64, json: Bool) -> ExitStatus {
        let d = loaded.directory
        let staleBefore = now - maxKeyAge
        var shown = d.issuers
        var match: Directory.Match?
        if let iss {
            let found = d.issuers(for: iss)
            shown = found?.issuers ?? []
            match = found?.match
        }
        let stale = d.issuers.filter { $0.isStale(before: staleBefore) }.count
        // The entries' keys and CRLs judged as `verify --directory` judges them: their errors make cards KEY_SET_INVALID.
        var trust = TrustStore()
        trust.add(directory: d, pinned: loaded.pinned, now: now, maxKeyAge: maxKeyAge)
        let errors = trust.directoryEntryErrors
        let c = d.counts
        if json {
            let counts: JSONObject = [
                "entries": .integer(Int64(c.entries)), "listed": .integer(Int64(c.listed)),
                "archival": .integer(Int64(c.archival)), "keys": .integer(Int64(c.keys)),
                "entriesWithCRLs": .integer(Int64(c.entriesWithCRLs)), "entriesWithoutKeys": .integer(Int64(c.entriesWithoutKeys)),
                "stale": .integer(Int64(stale)), "staleBefore": .integer(staleBefore),
                "sharedKids": .integer(Int64(c.sharedKids)), "canonicalIss": .integer(Int64(c.listedWithCanonicalIss)),
                "entriesWithCanonicalIss": .integer(Int64(c.entriesWithCanonicalIss)),
                "auditErrors": .integer(Int64(c.auditErrors)),
                "entriesWithKeyErrors": .integer(Int64(errors.count)),
            ]
            var document: JSONObject = [
                "directory": signatureJSON(loaded), "counts": .object(counts),
                "issuers": .array(shown.map { issuerJSON($0, staleBefore: staleBefore, errors: errors[$0.position] ?? []) }),
            ]
            if iss != nil {
                document["match"] = match.map { .string($0 == .exact ? "iss" : "canonical_iss") } ?? .null
            }
            say(String(decoding: JSONWriter.pretty(.object(document)), as: UTF8.self))
        } else {
            if iss == nil {
                say("directory \(loaded.folder): snapshot of \(d.time.isEmpty ? "?" : d.time), signature verified"
                    + (loaded.pinned ? " (pinned certificate)" : " (certificate NOT pinned)"))
                say("  \(c.entries) entries: \(c.listed) listed, \(c.archival) archival"
                    + (d.hasIssuerList ? "" : " (no vci-issuers.json: none told archival)"))
                say("  \(c.keys) keys; \(c.entriesWithoutKeys) entr(ies) without a key; \(c.entriesWithCRLs) with CRLs")
                say("  \(stale) stale (last retrieved before \(Clock.describe(staleBefore)), \(maxKeyAge / 86_400) days before --now)")
                say("  \(c.sharedKids) kid(s) under more than one entry (keys are found by iss and kid together)")
                say("  \(c.listedWithCanonicalIss) listed issuer(s) with a canonical_iss (\(c.entriesWithCanonicalIss) in the signed snapshot)")
                if d.auditTime != nil { say("  \(c.auditErrors) issuer(s) with errors in the audit of \(d.auditTime!)") }
                say("  \(errors.count) issuer(s) whose keys or CRLs have errors (their cards are KEY_SET_INVALID)")
                say("")
            }
            for issuer in shown {
                let state = issuer.isListed == false ? "archival" : (issuer.isListed == true ? "listed" : "")
                say(ControlCharacters.escaped("\(issuer.name)  \(issuer.iss)" + (state.isEmpty ? "" : "  [\(state)]")))
                let crls = issuer.crls.map { "\($0.kid) ctr \($0.ctr.map(String.init) ?? "?")" }
                let staleNote = issuer.isStale(before: staleBefore) ? " (stale)" : ""
                say(ControlCharacters.escaped(
                    "  \(issuer.kids.count) key(s), lastRetrieved \(issuer.lastRetrievedText ?? "?")\(staleNote)"
                        + (crls.isEmpty ? "" : "; CRLs: " + crls.joined(separator: ", "))))
                if iss != nil {
                    for kid in issuer.kids { say("  kid \(ControlCharacters.escaped(kid))") }
                    if let canonical = issuer.canonicalIss { say(ControlCharacters.escaped("  canonical_iss \(canonical)")) }
                    for error in issuer.auditErrors { say(ControlCharacters.escaped("  audit error: \(error)")) }
                }
                for finding in errors[issuer.position] ?? [] {
                    say(ControlCharacters.escaped("  error \(finding.code.rawValue)" + (finding.location.path.map { " at \($0)" } ?? "")
                        + ": " + Hints.said(finding)))
                }
            }
        }
        if let iss, shown.isEmpty {
            printError("the issuer \(Quote.text(iss)) is not in the directory \(loaded.folder) (neither as an iss nor as a "
                + "canonical_iss); check it letter for letter (scheme, host, path, no final /)")
            return .partial
        }
        return .ok
    }

    static func check(_ loaded: DirectoryFiles, site: String, now: Int64, json: Bool) throws -> ExitStatus {
        let issuerSite = IssuerSite(root: site)
        guard FileIO.isDirectory(site), FileIO.isRegularFile(issuerSite.keySetPath) else {
            throw HealthCardError(.configuration, "--site \(Quote.text(site)) is not a site folder holding .well-known/jwks.json; "
                + "give the folder `healthcards site --out SITE` wrote")
        }
        let limits = VerifyLimits()
        let jwks = try FileIO.read(issuerSite.keySetPath, maxBytes: limits.fileBytes)
        var crls: [String: (bytes: [UInt8], name: String)] = [:]
        for kid in KeySetCheck.fileKids(jwks) where crls[kid] == nil {
            let path = issuerSite.crlPath(kid: kid)
            guard FileIO.isRegularFile(path) else { continue }
            crls[kid] = (try FileIO.read(path, maxBytes: limits.crlBytes), path)
        }
        let issuer = try issuerSite.readRecord()?.issuer
        let result = DirectorySiteCheck.check(
            jwks: jwks, file: issuerSite.keySetPath, crls: crls, issuer: issuer, directory: loaded.directory, now: now,
            limits: limits)
        if json {
            say(String(decoding: JSONWriter.pretty(.object([
                "directory": signatureJSON(loaded), "site": .string(site), "issuer": issuer.map { .string($0) } ?? .null,
                "keysPass": .bool(result.keysPass),
                "findings": .array(result.findings.map { $0.json(say: Hints.said) }),
                "notes": .array(result.notes.map { .string($0) }),
            ])), as: UTF8.self))
        } else {
            say("site \(site)" + (issuer.map { " (issuer \($0))" } ?? "") + ": "
                + (result.keysPass ? "passes the directory's key rules" : "breaks the directory's key rules"))
            for note in result.notes { say(ControlCharacters.escaped("  note     \(note)")) }
            for finding in result.findings {
                say(ControlCharacters.escaped("  \(finding.severity.rawValue) \(finding.code.rawValue)"
                    + (finding.location.path.map { " at \($0)" } ?? "") + ": " + Hints.said(finding)))
            }
        }
        return result.keysPass ? .ok : .partial
    }
}

/// The files of a directory folder, read within their budgets, and the `Directory` they make once its
/// signature verified.
struct DirectoryFiles {
    let folder: String
    let directory: Directory
    let certificatePath: String
    /// True when the certificate was given (`--cert`), not taken from the folder.
    let pinned: Bool

    var notPinnedText: String {
        "the snapshot's signature was checked with \(certificatePath), the certificate shipped in the same folder: whoever "
            + "can change the snapshot can change it too. Pin your own copy with --cert (its SHA-256 is "
            + "\(directory.certificateFingerprint); compare it with the one in docs/directory.md)"
    }

    /// - Throws: `HealthCardError(.configuration)` for a folder or file that is missing; the `Directory`'s errors
    ///   (`DIRECTORY_SIGNATURE_INVALID`, `DIRECTORY_INVALID`, `KEY_UNUSABLE` for a certificate that is not P-521).
    init(folder: String, certificate: String?) throws {
        guard FileIO.isDirectory(folder) else {
            throw HealthCardError(.configuration, "\(Quote.text(folder)) is not a folder; give the folder holding vci_snapshot.json, "
                + "vci_snapshot.sig and vci_snapshot.crt (docs/directory.md says where to get them)")
        }
        let limits = Directory.Limits()
        func read(_ name: String, maxBytes: Int, required: Bool) throws -> [UInt8]? {
            let path = "\(folder)/\(name)"
            guard FileIO.exists(path) else {
                if !required { return nil }
                throw HealthCardError(.configuration, "\(path) does not exist; a directory folder holds vci_snapshot.json, "
                    + "vci_snapshot.sig and vci_snapshot.crt (docs/directory.md says where to get them)")
            }
            return try Self.readFile(path, maxBytes: maxBytes)
        }
        let snapshot = try read("vci_snapshot.json", maxBytes: limits.snapshotBytes, required: true)!
        let signature = try read("vci_snapshot.sig", maxBytes: limits.signatureBytes, required: true)!
        let certificatePath = certificate ?? "\(folder)/vci_snapshot.crt"
        guard FileIO.exists(certificatePath) else {
            throw HealthCardError(.configuration, "the certificate \(certificatePath) does not exist; give the pinned "
                + "vci_snapshot.crt with --cert (docs/directory.md)")
        }
        let cert = try Self.readFile(certificatePath, maxBytes: CertificateKey.maxBytes)
        let list = try read("vci-issuers.json", maxBytes: limits.issuerListBytes, required: false)
        let audit = try read("daily_audit.json", maxBytes: limits.auditBytes, required: false)
        self.folder = folder
        self.certificatePath = certificatePath
        self.pinned = certificate != nil
        self.directory = try Directory(
            snapshot: snapshot, signature: signature, certificate: cert, certificateName: certificatePath, issuerList: list,
            audit: audit, limits: limits)
    }

    /// Reads a regular file within `maxBytes` (a FIFO or device is refused before it is opened).
    static func readFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
        try FileIO.requireRegularFile(path, role: "directory file", fix: "give the files of the vci-directory repository")
        do { return try FileIO.read(path, maxBytes: maxBytes) } catch let error as HealthCardError {
            throw HealthCardError(.input, code: .directoryInvalid, "\(path) cannot be read: \(error.text)")
        }
    }
}
