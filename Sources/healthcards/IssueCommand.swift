#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum IssueCommand {
    static let help = """
        Usage: healthcards issue --issuer URL --key KEYFILE [--rid-secret FILE] [--site SITE [--shl BASE_URL]]
                                 [--template FILE] --out DIR INPUT...
               (--rid-secret is recommended: without it no card can be revoked by itself)

        Issues one SMART Health Card per patient (CSV with --template) or per Bundle (.json, .ndjson), and
        writes under DIR:
          cards/<id>.smart-health-card   {"verifiableCredential":["<JWS>"]}
          qr/<id>.png                    the shc:/ QR (qr/<id>-<c>.png per chunk with --chunk)
          pdf/<id>.pdf                   with --pdf: the card printed for the person (docs/printing.md)
          report.ndjson                  one line per input record: source, id, status, errors, files,
                                         and for issued cards kid, rid and ridFrom (what `revoke` checks);
                                         "replaced" when the card replaced a different one of an earlier
                                         run (its record or the options changed: the old card stays valid
                                         unless revoked with --before, and a PDF or link still holding it
                                         is named)
        and with --shl, a SMART Health Link per card (docs/shl.md):
          shl/<id>.txt                   the link (shlink:/…), 0600: the key in it opens the card
          shl/<id>.png                   the link's QR code (ECC M)
                                         (a link withdrawn with `revoke --link` stays withdrawn: no new
                                         one unless --shl-renew ID; see docs/shl.md)
          SITE/shl/<43 random chars>     the card encrypted (JWE, A256GCM) for the static host, 0644
        These are health data: files are written 0600 and folders 0700 whatever the umask (--share opts
        into group or world access). DIR must not be inside a published site (a folder holding
        .well-known/jwks.json or healthcards-nginx.conf). One run at a time writes into DIR (a second
        one is refused, naming the first); with --shl, the run also holds SITE's lock (as revoke and site
        do), waiting at most 60 s for another command writing SITE. The public demo key is refused unless
        the issuer is an example host (example.org, example.com, example.net, localhost, *.example).
        Every card is read back (inflate, parse, signature) before it is written; every file is written
        to a temporary name and renamed into place (images first, the card last).

        Resuming: after a crash, a kill or Ctrl-C, run the same command again. Leftover temporary files
        are removed, records whose card is already in DIR (it verifies with this key and was made from
        the same record; only nbf may differ) are skipped and reported with "alreadyIssued": true, and
        the rest are issued. Running a finished job again changes no card unless --force is given.
        Ctrl-C or SIGTERM stops cleanly: cards being made are finished, the report of the records done
        is written, and the exit status is 130 (SIGINT) or 143 (SIGTERM).

        Arguments:
          INPUT                 .csv (needs --template), .json (one FHIR Bundle), .ndjson (a Bundle per line)
        Options:
          --issuer URL          iss: https, a lowercase DNS host (labels of at most 63 characters, 253 in
                                all; optional port, not 443), no user name, no trailing '/', query,
                                fragment or '.'/'..' segments; keys are published at URL/.well-known/jwks.json
          --key KEY             the signing key: a PKCS#8 or SEC 1 PEM file (mode 0600), or a PKCS#11 URI
                                (pkcs11:token=...;object=...?module-path=...&pin-source=file:...)
          --site SITE           the issuer's site folder (written by `healthcards site --issuer URL`): before
                                anything is issued, refuse unless --issuer is the issuer it records and the
                                key's kid is in its .well-known/jwks.json (cards that no verifier accepts); and
                                reject (RID_REVOKED, never signed) a record whose vc.rid the key's CRL there revokes
                                for this run's nbf (revoke with --before, or --before --narrow, to reissue)
          --template FILE       template for CSV input (see docs/templates.md); the shipped ones are in
                                /usr/local/share/healthcards/templates (make install; /usr/share/... from
                                the .deb; templates/ in the source tree)
          --out DIR             output folder (created if missing)
          --nbf SECONDS         nbf, integer seconds since 1970 (default: now), for reproducible fixtures;
                                not in the future, and not before the events on a card
          --exp SECONDS         exp, integer seconds since 1970 (default: none; cards normally do not expire)
          --vc-types POLICY     legacy (default): #health-card plus the deprecated #immunization, #covid19,
                                #laboratory derived from the content (Apple Health selects by them);
                                minimal: #health-card only
          --rid-secret FILE     add vc.rid to each card: HMAC-SHA-256 of the patient id keyed by this secret
                                and the kid (make one with `healthcards keygen --rid-secret FILE`). Without
                                it no card can be revoked by itself. For Bundle input the id is the Patient's
                                identifier (system|value), read before minimization drops it from the card; a
                                Bundle without one gets no rid (the report says why)
          --patient-id-system URI
                                for Bundle input: the Patient.identifier system that holds the issuer's
                                patient id (default: the Patient's only identifier with a system and value)
          --share group|world   let the file's group (0640/0750) or everyone (0644/0755) read what is written,
                                for a hand-off folder; by default only the owner can (0600/0700)
          --shl BASE_URL        also make a SMART Health Link for each card (flag U: one encrypted file the
                                host serves with GET), with the file in SITE: BASE_URL is a folder named shl
                                under the issuer URL, e.g. https://clinic.example.org/shl is SITE/shl/ (needs
                                --site). A card too long for one QR is then issued with its link instead of
                                being rejected. Publish SITE after the run
          --shl-label TEXT      the link's label, shown to the receiver (at most 80 characters; default
                                'SMART Health Card'); {name} puts the Patient's name in it, which anyone who
                                sees the link or its QR can read: only when the person wants it
          --shl-exp SECONDS     the link's exp, integer seconds since 1970 (or +N with s, m, h or d from now,
                                e.g. +48h): a hint that the link is stale after
          --shl-renew ID        make a new link for ID although its link was withdrawn (`revoke --link`) or its
                                file is not in SITE: without it such a person gets no new link, and the report
                                says so. The old link stays dead. May be repeated
        \(LinkOptions.help(.issue))
          --viewer URL#         put a viewer URL ending in '#' in front of each link (and in its QR), so a phone
                                camera opens the viewer; the link stays in the fragment, which is never sent
          --chunk               split a JWS over 1195 characters into chunked QRs (deprecated since SHC 1.3.0)
                                instead of rejecting the patient
          --no-qr               write no QR images, for cards or links (a card too long for one QR is then
                                issued, with a warning)
        \(QRScaleOption.help)
          --jobs N              worker threads (default: the processors online, here \(BatchIssuer.activeCores()));
                                the report stays in input order; a PKCS#11 key always uses 1
          --shard K/N           issue only shard K (0 to N-1) of the batch split N ways, for spreading one batch
                                over N machines (docs/scale.md): a record goes to the shard its patient id
                                hashes to (SHA-256, the same on every machine; every row of a patient in one
                                shard), each shard into its own --out, where shard.json describes it and each
                                report line ends with its "record" number in the whole batch. Check and
                                combine the shards with `healthcards report merge`
          --pdf                 also write pdf/<id>.pdf per card: name, birth date, doses or results, the
                                issuer, the QR code (vector, 60 mm) and a wallet-size cut-out; with --shl, the
                                link's QR code too (beside the card's, or instead of chunks for a large card)
        \(PrintOptions.help)
          --force               reissue records whose card is already in DIR (new signature and nbf)
          --deterministic       sign with deterministic ECDSA nonces (RFC 6979) instead of random ones, so the
                                same key, input and --nbf give byte-identical cards (fixture-style batches;
                                see docs/fixtures.md). Only with a public test key (the demo key, the spec's
                                example keys): its signer is not constant-time, so a real key is refused
                                (as is a PKCS#11 key, which never hands out its private scalar)
          --rejected FILE.csv   also write every reason a record was rejected as CSV: file, line, column, code,
                                reason (no patient data; the report has the full messages). Without it, the
                                first 20 are printed as a table after the summary
          --quiet               no progress line, no summary and no table of rejected rows on stderr (the
                                progress line is shown only when stderr is a terminal)
          -h, --help            show this help

        Exit status: 0 every record issued; 1 some records rejected (the others are issued; see
        report.ndjson), or a card issued without its PDF (notPrinted in the report: a character no installed font
        has, a name too long for the wallet card); 2 usage or configuration error (nothing issued), or an output that cannot be
        written (disk full, folder not writable: the run stops; files written so far are whole);
        130/143 stopped by SIGINT/SIGTERM (run again to finish).
        """

    /// `--pdf`, `--pdf-combined` and the print options; nil when nothing is printed.
    static func pdfOptions(_ parsed: Arguments) throws -> PDFOptions? {
        let printOptionGiven = PrintOptions.valued.contains { parsed.value($0) != nil } || PrintOptions.flags.contains { parsed.has($0) }
        guard parsed.has("pdf") || parsed.value("pdf-combined") != nil else {
            if printOptionGiven {
                throw HealthCardError(.configuration, "print options (--paper, --issuer-name, --logo, --no-lot, --no-performer) need --pdf or --pdf-combined FILE.pdf")
            }
            return nil
        }
        return PDFOptions(settings: try PrintOptions.settings(parsed, environment: PrintOptions.environment()),
                          perCard: parsed.has("pdf"), combinedPath: parsed.value("pdf-combined"))
    }

    /// Refuses a `--out` that cannot be the run's folder, saying what it is, before anything else is said or written:
    /// a FIFO, a device or a file (it was "cannot write OUT/report.ndjson: Not a directory", after the run had
    /// started), or a folder inside a published site.
    static func checkOutFolder(_ outDir: String) throws {
        let kind = FileKind.of(outDir)
        switch kind {
        case .folder, .missing: break
        default:
            throw HealthCardError(
                .configuration,
                "--out \(ControlCharacters.escaped(outDir)) \(kind.phrase); --out must be a folder, where issue writes "
                    + "cards/, qr/ and report.ndjson. Give the path of a folder (one that does not exist yet is made), "
                    + "e.g. --out out; nothing was written")
        }
        try IssuerSite.refuseHealthDataInside(outDir)
    }

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: PrintOptions.valued.union(["issuer", "key", "template", "out", "nbf", "exp", "vc-types", "qr-scale", "rid-secret", "jobs",
                           "share", "patient-id-system", "site", "shl", "shl-label", "shl-exp", "shl-renew", "viewer", "rejected", "shard"]).union(LinkOptions.valued(.issue)),
            flagNames: PrintOptions.flags.union(["chunk", "no-qr", "quiet", "force", "pdf", "deterministic"]).union(LinkOptions.flags(.issue)),
            command: "issue")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let pdf = try pdfOptions(parsed)
        if let path = pdf?.combinedPath {
            try IssuerSite.refuseHealthDataInside(path, option: "--pdf-combined", what: "printed cards are health data")
        }
        let issuerURL = try parsed.required("issuer", command: "issue")
        try Payload.validateIssuer(issuerURL)
        let keyPath = try parsed.required("key", command: "issue")
        let outDir = try parsed.required("out", command: "issue")
        // Said first, before any warning: a run with a --out it cannot use writes nothing, and its other advice is noise.
        try checkOutFolder(outDir)
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.configuration, "`healthcards issue` needs at least one INPUT file (.csv, .json or .ndjson); see `healthcards issue --help`")
        }
        let now = Clock.nowSeconds()
        var nbf = now
        if let text = parsed.value("nbf") {
            let value = try TimeOption.parse("nbf", text, example: now)
            if value > now {
                throw HealthCardError(.configuration, "--nbf \(value) (\(Clock.describe(value))) is in the future; verifiers reject a card "
                    + "before its nbf. Leave --nbf out (it defaults to now) or give a time that has passed")
            }
            nbf = value
        }
        var exp: Int64?
        if let text = parsed.value("exp") {
            let value = try TimeOption.parse("exp", text, example: now + 31_536_000)
            if value <= now {
                throw HealthCardError(.configuration, "--exp \(value) (\(Clock.describe(value))) has passed; verifiers reject an expired "
                    + "card. Give a time in the future, or leave --exp out (health cards normally do not expire)")
            }
            guard value > nbf else {
                throw HealthCardError(.configuration, "--exp \(value) is not after nbf (\(nbf)); a card must be valid for some time")
            }
            exp = value
        }
        let policyText = parsed.value("vc-types") ?? "legacy"
        guard let policy = Payload.TypePolicy(rawValue: policyText) else {
            throw HealthCardError(.configuration, "--vc-types \(Quote.text(policyText)) is not known; expected legacy or minimal")
        }
        var image = QRImage()
        if let text = parsed.value("qr-scale") {
            image.scale = try QRScaleOption.parse(text)
        }
        var template: Template?
        if let path = parsed.value("template") {
            let bytes = try FileIO.read(path, maxBytes: InputBudget.templateBytes)
            try TemplateArgument.checkIsJSON(bytes, path: path)
            template = try Template(bytes: bytes, source: path)
        }
        var inputs: [BatchInput] = []
        var seenInputs: [String: String] = [:]
        for path in parsed.positionals {
            if path == "-" {
                throw HealthCardError(
                    .configuration,
                    "input - (standard input): `healthcards issue` does not read standard input. Give the path of the "
                        + "export file (.csv, .json or .ndjson; the report names each record by its file and line); to "
                        + "issue what a pipe gives, save it to a file first")
            }
            // Before anything is opened: a FIFO would wait for a writer, a device might never end.
            try FileIO.requireRegularFile(path, role: "input", fix: "give the export file (.csv, .json or .ndjson)")
            // The same file under another name, through a symlink or a hard link, is the same input.
            let resolved = FileIO.identity(path) ?? path
            if let earlier = seenInputs[resolved] {
                throw HealthCardError(.configuration, "input \(path) is given twice (also as \(earlier)); give each file once")
            }
            seenInputs[resolved] = path
            let lower = path.lowercased()
            if lower.hasSuffix(".csv") {
                guard let template else {
                    throw HealthCardError(.configuration, "\(path) is CSV, which needs --template (e.g. \(InstalledFiles.template("covid19-vaccination.json")))")
                }
                inputs.append(.csv(path: path, template: template))
            } else if lower.hasSuffix(".json") || lower.hasSuffix(".ndjson") {
                inputs.append(.bundles(path: path))
            } else {
                throw HealthCardError(.configuration, "input \(path) has an unknown extension; expected .csv, .json or .ndjson")
            }
        }
        var jobs = BatchIssuer.activeCores()
        if let text = parsed.value("jobs") {
            guard let value = Int(text), (1...256).contains(value) else {
                throw HealthCardError(.configuration, "--jobs \(Quote.text(text)) must be a whole number of worker threads from 1 to 256")
            }
            jobs = value
        }
        if keyPath.lowercased().hasPrefix("pkcs11:") { jobs = 1 }
        var shard: Shard?
        if let text = parsed.value("shard") {
            do { shard = try Shard(parsing: text) } catch { throw HealthCardError(.configuration, "--shard: \(error.text)") }
        }
        let deterministic = parsed.has("deterministic")
        if deterministic && keyPath.lowercased().hasPrefix("pkcs11:") {
            throw HealthCardError(.configuration, "--deterministic cannot sign with a PKCS#11 key: RFC 6979 derives each nonce from the "
                + "private scalar, which a token never hands out. Leave out --deterministic (random nonces, the default), "
                + "or sign fixture batches with a PEM test key")
        }
        let access = try parsed.value("share").map { try OutputAccess(share: $0) } ?? .ownerOnly
        let patientIDSystem = parsed.value("patient-id-system")
        if let system = patientIDSystem, PatientIdentity.normalize(system).isEmpty {
            throw HealthCardError(.configuration, "--patient-id-system is empty; give the identifier system URI (e.g. the MRN system)")
        }
        let key = try KeySource.load(keyPath, requirePrivate: true)
        // The hand-written RFC 6979 signer is not constant-time: only a key whose private half is public anyway.
        let testKey = deterministic ? try PublicTestKey(key) : nil
        var site: PublishedSite?
        if let root = parsed.value("site") {
            site = try PublishedSite(root: root)
            try site?.checkSigner(issuer: issuerURL, kid: JWK(key: key).kid, now: now)
        }
        let links = try LinkOptions.stage(parsed, names: .issue, site: site, outDir: outDir, access: access,
                                          makeQR: !parsed.has("no-qr"), qrImage: image, now: now)
        try DemoKey.check(kids: [JWK(key: key).kid], issuer: issuerURL, command: "issue")
        var settings = IssueSettings(issuer: issuerURL, notBefore: nbf, expires: exp, typePolicy: policy)
        if let path = parsed.value("rid-secret") { settings.ridSecret = try RIDSecretFile.read(path) }
        let frozen = settings
        let batch = BatchIssuer(outDir: outDir, jobs: jobs) {
            let signer: any JWSSigner = try testKey.map { try DeterministicES256Signer(key: $0) } ?? ES256Signer(key: key)
            return try CardIssuer(signer: signer, settings: frozen, clock: SystemWallClock())
        }
        batch.qr = QRSettings(
            makeQR: !parsed.has("no-qr"), chunk: parsed.has("chunk"), qrImage: image, linksOversized: links != nil)
        batch.force = parsed.has("force")
        batch.shard = shard
        batch.sayMessage = { Hints.said($0) }
        batch.pdf = pdf
        batch.access = access
        batch.patientIDSystem = patientIDSystem
        batch.links = links
        batch.siteRoot = site?.site.root
        // Every published key's list, read again whenever one changes during the run.
        if let site { batch.revocations = try SiteRevocations(site: site.site, signingKid: JWK(key: key).kid) }
        if frozen.ridSecret == nil {
            printError("warning: no --rid-secret: the cards get no vc.rid, so none can be revoked by itself (only by "
                + "dropping the whole key, which revokes every card it signed). Make a secret once with "
                + "`healthcards keygen --rid-secret FILE`, keep it like a key, and pass --rid-secret FILE")
        } else if patientIDSystem != nil && !inputs.contains(where: { if case .bundles = $0 { true } else { false } }) {
            printError("warning: --patient-id-system applies to Bundle input only; CSV rids come from the patient id column")
        }
        let quiet = parsed.has("quiet")
        let progress = ProgressLine(enabled: !quiet && isatty(2) == 1)
        batch.progress = { done, total in progress.update(done: done, total: total) }
        batch.fileRejected = { path, error in printError("nothing issued from \(path): \(Hints.said(error))") }
        if let path = parsed.value("rejected") {
            try IssuerSite.refuseHealthDataInside(path, option: "--rejected", what: "the rejected rows of a run belong with its report")
            // A file the operator names: its folder must exist (never made here, as --out is), and it is not a folder.
            if FileIO.isDirectory(path) {
                throw HealthCardError(.configuration, "--rejected \(ControlCharacters.escaped(path)) is a folder; give the path of a CSV file to write, e.g. \(ControlCharacters.escaped(path))/rejected.csv; nothing was issued")
            }
            let folder = FileIO.parent(of: path)
            if !folder.isEmpty && !FileIO.isDirectory(folder) {
                throw HealthCardError(.configuration, "--rejected \(ControlCharacters.escaped(path)): the folder \(ControlCharacters.escaped(folder)) does not exist; create it or choose another path; nothing was issued")
            }
            batch.rejectedRowsPath = path
            batch.rejectedRowsName = "the --rejected file"
        }
        batch.notice = { printError($0) }
        Signals.install()
        defer { Signals.restore() }
        let summary: BatchSummary
        do { summary = try batch.run(inputs, stop: Signals.stop) } catch let error as HealthCardError where error.kind == .io {
            progress.clear()
            printError(error.commandLineText)
            return .usage
        }
        progress.clear()
        if !quiet { printError(summary.summaryLine(jobs: jobs, kid: JWK(key: key).kid, report: "\(outDir)/report.ndjson")) }
        if !quiet && summary.rejectedRows > 0 {
            // What staff need to fix, without a JSON tool and without patient data: where, the code, why.
            let shown = summary.rejectedSample.count
            let more = summary.rejectedRows > shown ? "; the first \(shown) here" : ""
            let all = parsed.value("rejected").map { ", all of them in \($0)" } ?? " (--rejected FILE.csv writes them all)"
            printError(
                "rejected rows: \(summary.rejectedRows) reason\(summary.rejectedRows == 1 ? "" : "s") in \(summary.rejected) "
                    + "record\(summary.rejected == 1 ? "" : "s")\(more)\(all); \(outDir)/report.ndjson has the full messages\n"
                    + RejectedRow.table(summary.rejectedSample).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        }
        if !quiet, let path = batch.pdf?.combinedPath, batch.combinedPages > 0 {
            printError("combined PDF: \(path) (\(batch.combinedPages) pages)")
        } else if !quiet, let path = batch.pdf?.combinedPath, summary.interruptedBy != 0 {
            printError(Self.combinedNotWritten(path))
        }
        switch summary.interruptedBy {
        case 0: return summary.rejected > 0 || summary.notPrinted > 0 ? .partial : .ok
        case SIGTERM: return .terminated
        default: return .interrupted
        }
    }
}

extension IssueCommand {
    /// What a stopped run says of its `--pdf-combined` output, which is written only at the end of a whole run:
    /// a file is not written (its temporary was removed; a file already there is an earlier run's), a FIFO or a
    /// device got a PDF without its end.
    static func combinedNotWritten(_ path: String) -> String {
        let shown = ControlCharacters.escaped(path)
        if case .file? = try? OutputTarget.resolve(path) {
            let earlier =
                FileIO.exists(path)
                ? "; the file at \(shown) is from an earlier run and lacks this run's cards" : ""
            return "combined PDF: \(shown) was NOT written: the run was stopped before its last card, and the unfinished "
                + "PDF was removed\(earlier). Run the same command again to finish the batch and write it"
        }
        return "combined PDF: \(shown) was NOT finished: the run was stopped before its last card, and what was written there "
            + "is not a whole PDF (its reader got no end): discard it. Run the same command again to finish the batch and write it"
    }
}

/// The `--template` argument.
enum TemplateArgument {
    /// Refuses a template file that is not JSON before the parser's message (about a byte offset) hides
    /// the likely cause: the CSV export given as the template.
    /// - Throws: `HealthCardError(.configuration)` naming the file as the template and what it looks like.
    static func checkIsJSON(_ bytes: [UInt8], path: String) throws {
        let body = UTF8BOM.strip(bytes)
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D && $0 != 0x0A }),
            first != UInt8(ascii: "{")
        else { return }
        let firstLine = body.prefix { $0 != 0x0A && $0 != 0x0D }
        let line = String(decoding: firstLine.prefix(60), as: UTF8.self)
        let shown = firstLine.count > 60 ? "'\(ControlCharacters.escaped(line))…'" : Quote.text(line)
        let looksCSV = path.lowercased().hasSuffix(".csv") || line.contains(",")
        throw HealthCardError(
            .configuration,
            "--template \(path) is not a template: a template is a JSON object (see \(InstalledFiles.templates ?? "templates/") and docs/templates.md), "
                + "and this file starts with \(shown)"
                + (looksCSV
                    ? ". It looks like the CSV export, which is an INPUT: give the template with --template and the CSV "
                        + "after the options, e.g. --template \(InstalledFiles.template("covid19-vaccination.json")) --out out \(path)"
                    : ""))
    }
}
