import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum SiteCommand {
    static let help = """
        Usage: healthcards site --out SITE KEY... [--x5c CHAIN.pem]... [--issuer URL] [--crl]
                                [--drop-kid KID]... [--report REPORT]... [--viewer]

        Lays out the folder to publish at the issuer URL (iss) on a static host:
          SITE/.well-known/jwks.json          the public keys: give the current key AND every retired key
                                              whose cards are still in use (a key left out stops verifying)
          SITE/.well-known/crl/<kid>.json     a revocation list per key whose cards can be revoked (existing
                                              lists are kept as they are; --crl creates empty ones)
          SITE/healthcards-nginx.conf         nginx rules (include it in the server block)
          SITE/.htaccess                      Apache httpd rules
          SITE/_headers                       Netlify / Cloudflare Pages rules
          SITE/healthcards-site.json          with --issuer: the issuer URL, for `verify --jwks SITE` and
                                              `issue --site SITE` (the rules keep it from being served)
          SITE/viewer/                        with --viewer: a web page that opens SMART Health Links in the
                                              browser and checks the card inside (index.html, viewer.css,
                                              viewer.js, codes.js; see docs/viewer.md)
        The rules serve jwks.json and the CRLs as application/json with Access-Control-Allow-Origin: *,
        *.smart-health-card files as application/smart-health-card, and answer 404 for the rule files
        themselves. Each key's crlVersion is its CRL's ctr; a key without a CRL gets none (its cards
        cannot be revoked one by one). Run it again whenever the keys change (yearly rotation); it is
        safe to repeat. Files are world-readable (0644, folders 0755): they are public.

        SITE must not hold what `issue` writes (report.ndjson, .healthcards-issue.lock, cards/*.smart-health-card,
        pdf/*.pdf, shl/*.txt, in it or in a folder below): everything in a site is published, so such a
        folder is refused. Every command that writes SITE (site, jwks into SITE/.well-known, revoke, shl,
        issue --shl) holds SITE/.healthcards-site.lock while it writes (shl and issue --shl for each link file,
        not for their whole run); one that finds it held waits (at most 60 s, then stops naming the holder),
        so no two of them lose each other's changes.

        A key that SITE publishes and that is not given again is refused (every card it signed would stop
        verifying) unless --drop-kid names it. The public demo key is refused unless --issuer is an example
        host (example.org, example.com, example.net, localhost, *.example).

        Arguments:
          KEY              PEM key file (private or public), DER SPKI public key (pkcs11-tool's output),
                           .json public JWK, or PKCS#11 URI
                           (pkcs11:token=...;object=...;type=private|public?module-path=...&pin-source=file:...);
                           refused when its point is not on P-256
        Options:
          --out SITE       the site folder (created if missing)
          --x5c CHAIN.pem  an X.509 chain (PEM, leaf first) certifying one of the keys; refused when its
                           leaf holds another key. May be repeated.
          --issuer URL     the iss: recorded in SITE/healthcards-site.json (so `verify --jwks SITE` binds the
                           keys to it and `issue --site SITE` refuses another issuer; it never changes once
                           recorded), checked against x5c leaf certificates (subjectAltName URI), and its path
                           put into _headers (needed when iss has a path, e.g. https://host/shc)
          --crl            give each key without a CRL an empty one (ctr 1): for keys whose cards carry
                           vc.rid (issue --rid-secret). The choice is kept: run again without --crl, a site
                           whose published keys have CRLs gives a new key one too. Without it on a site that
                           has none, `healthcards revoke` creates a key's CRL at its first revocation.
          --no-crl         give new keys no CRL, even when the site's other keys have one
          --drop-kid KID   drop a published key on purpose (a compromised key); its cards stop verifying.
                           May be repeated
          --report REPORT  an `issue` report.ndjson, to say how many cards a key left out signed. May be repeated
          --viewer         also write the link viewer into SITE/viewer/ (or update it): a static page, no
                           third-party code, served by the rules above with a strict Content-Security-Policy,
                           no referrer and no caching. Point links at it with
                           `issue --shl ... --viewer ISSUER_URL/viewer/#` (or `link create --viewer`). Files in
                           SITE/viewer that it did not write, and symbolic links, are refused, never replaced
          -h, --help       show this help

        Exit status: 0 written; 2 usage or configuration error (nothing written), or a file could not be written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["out", "x5c", "issuer", "drop-kid", "report"], flagNames: ["no-crl", "crl", "viewer"],
            command: "site")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let out = try parsed.required("out", command: "site")
        if FileIO.exists(out) && !FileIO.isDirectory(out) {
            throw HealthCardError(
                .configuration,
                "--out \(out) is a file; site lays out a folder (SITE/.well-known/jwks.json, CRLs, header rules). "
                    + "Give the folder to publish at the issuer URL (created if missing)")
        }
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards site` needs at least one KEY (current and retired keys); "
                    + "see `healthcards site --help`")
        }
        if parsed.has("crl") && parsed.has("no-crl") { throw HealthCardError(.configuration, "give --crl or --no-crl, not both") }
        var pathPrefix = ""
        let site = IssuerSite(root: out)
        try IssuerSite.refuseSiteHoldingHealthData(out)
        let loaded = try KeyArguments.entries(keys: parsed.positionals, chains: parsed.values("x5c"))
        // Without --issuer, a site laid out before with one keeps it (and its _headers path).
        let issuer = try parsed.value("issuer") ?? site.readRecord()?.issuer
        if let issuer {
            try Payload.validateIssuer(issuer)
            let afterScheme = issuer.dropFirst("https://".count)
            if let slash = afterScheme.firstIndex(of: "/") { pathPrefix = String(afterScheme[slash...]) }
            for problem in PublishedKeys.issuerMismatches(loaded.chains, issuer: issuer) {
                printError("warning: " + problem)
            }
        }
        try DemoKey.check(kids: loaded.entries.map(\.kid), issuer: issuer, command: "site")
        // Everything below reads the site (key set, CRLs) under its lock: a `revoke` running now cannot bump a
        // CRL between the read and the key set written from it.
        let lock = try SiteLock.take(site: out, waiting: { printError($0) })
        defer { withExtendedLifetime(lock) {} }
        let reports = parsed.values("report")
        for warning in try KeyRetirement.check(
            previous: try IssuerSite.publishedKids(keySetAt: site.keySetPath), next: loaded.entries.map(\.kid),
            dropping: parsed.values("drop-kid"), keySetPath: site.keySetPath,
            issued: reports.isEmpty ? nil : try IssuedCards(reports: reports, keeping: .countsOnly))
        {
            printError("warning: " + warning)
        }
        // Without --crl or --no-crl, the site's earlier choice holds: a site whose published keys have revocation
        // lists (laid out with --crl, or revoked from) gives a new key one too, since its cards carry vc.rid as well.
        let keepsCRLs = try !parsed.has("no-crl") && !parsed.has("crl") && site.publishesRevocationLists()
        // The viewer's folder is checked before anything is written: a file there that it did not write stops the run.
        if parsed.has("viewer") { try SiteViewer.check(siteRoot: out) }
        let result = try site.publish(
            keys: loaded.entries, createCRLs: parsed.has("crl") || keepsCRLs, pathPrefix: pathPrefix, issuer: issuer)
        if parsed.has("viewer") {
            let viewer = try SiteViewer.write(siteRoot: out)
            let address = issuer.map { "\($0)/\(SiteViewer.folderName)/#" } ?? "ISSUER_URL/\(SiteViewer.folderName)/#"
            printError(
                "viewer: \(viewer.folder)/ (\(viewer.written.count) files). Deploy the site, then give links "
                    + "--viewer \(address) (issue --shl, shl, link create); see docs/viewer.md")
        }
        if keepsCRLs && !result.createdCRLs.isEmpty {
            printError(
                "note: gave \(result.createdCRLs.joined(separator: ", ")) an empty revocation list, as the site's other keys have "
                    + "(this issuer's cards carry vc.rid); give --no-crl to publish a key without one")
        }
        for kid in result.removedKids {
            printError(
                "key \(kid) was dropped from \(site.keySetPath) (--drop-kid): cards it signed no longer verify; "
                    + "deploy the site now")
        }
        let published = try JWKS(bytes: try FileIO.read(site.keySetPath, maxBytes: InputBudget.cardFileBytes), source: site.keySetPath)
        var printed: [String] = []
        for key in published.keys where !printed.contains(key.kid) {
            printed.append(key.kid)
            say(key.kid + (key.crlVersion.map { " crlVersion \($0)" } ?? " (no CRL)"))
        }
        return .ok
    }
}

enum RevokeCommand {
    static let help = """
        Usage: healthcards revoke --site SITE --key KEY --rid-secret FILE --id PATIENT_ID... --report REPORT...
                                  [--before SECONDS [--narrow]] [--force]
               healthcards revoke --site SITE --key KEY --rid RID... --report REPORT... [--before SECONDS] [--force]
               healthcards revoke --site SITE --link LINK... [--force]

        Revokes the cards of a patient signed by KEY: adds their rid (the one `issue --rid-secret` put in
        vc.rid) to SITE/.well-known/crl/<kid>.json, increments its ctr, and sets the same crlVersion on
        that key in SITE/.well-known/jwks.json. The CRL is written first, then the key set, each
        atomically, and read back: a rid is reported revoked only when the list written holds it. Revoking
        what is already revoked changes nothing. A list never shrinks. Runs at the same time take turns:
        each holds the site's lock (SITE/.healthcards-site.lock) while it reads and writes the list, and
        waits (at most 60 s) while another command writes the site.

        Checked first, against the reports of the runs that issued the cards (--report): each id must
        have a card signed by KEY, and the rid derived now must be the rid the report recorded (a wrong
        --rid-secret or --key is refused). An id or rid the reports do not show is refused unless --force.
        A report's output folder keeps every run's report lines in OUT/issuance-log.ndjson, which is read
        with it: a card of a run from before a key rotation is found whichever key signed it. Ids are
        normalized as `issue` reads them (surrounding spaces, no-break and zero-width spaces dropped).

        --link withdraws a SMART Health Link instead (or as well): its encrypted file is deleted from SITE, so
        once the site is deployed the link opens nothing. Given the link's file (OUT/shl/<id>.txt), the
        withdrawal is remembered beside it (OUT/shl/<id>.withdrawn): later `issue --shl` and `shl` runs make
        that person no new link unless --shl-renew ID (shl --renew ID) names them. A link text whose output
        folder records another site folder (OUT/shl/.healthcards-links.json) is refused. The card itself
        stays valid (a copy already fetched still verifies); revoke its rid as above when the card must stop
        verifying everywhere. See docs/shl.md.

        Options:
          --site SITE         the site folder made by `healthcards site` (its jwks.json must list KEY)
          --link LINK         a link to withdraw: a file holding it (OUT/shl/<id>.txt) or the shlink:/ text. Its
                              file must open with the link's key (else refused, unless --force). May be repeated
          --key KEY           the key that signed the cards: PEM or DER file (a public key is enough) or
                              PKCS#11 URI
          --rid-secret FILE   the issuer's revocation secret, as given to `issue --rid-secret`
          --id PATIENT_ID     the id the rid was derived from: the report's "ridFrom" (the CSV patient id,
                              or system|value of the Patient identifier for Bundle input). May be repeated
          --rid RID           a rid to revoke as is (may be repeated)
          --report REPORT     an `issue` report.ndjson (with the OUT/issuance-log.ndjson beside it), the log itself, or
                              the output folder OUT, listing the cards (may be repeated)
          --force             revoke ids or rids the reports do not show (or without any --report)
          --before SECONDS    revoke only cards issued before this time (nbf < SECONDS, integer seconds since
                              1970, at most a day from now): the CRL entry becomes <rid>.<SECONDS>. Without
                              it, every card with the rid, including any issued later: give --before when
                              the person will get a corrected card (now, or just after the bad card's nbf)
          --narrow            with --before: replace an entry that revokes more of the rid's cards (a plain
                              <rid>, or a later timestamp) by <rid>.<SECONDS>, so a corrected card issued
                              from SECONDS on verifies; cards issued before SECONDS stay revoked. The one way
                              a list shrinks: cards issued between SECONDS and the old entry's end verify again
          -h, --help          show this help

        Output: one line per rid (revoked, narrowed, already revoked) with the patient id, then the CRL's ctr.
        Exit status: 0 done (or nothing to do); 2 usage or configuration error, a check failed (nothing
        written), or a file could not be written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["site", "key", "rid-secret", "id", "rid", "before", "report", "link"],
            flagNames: ["force", "narrow"],
            command: "revoke")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let links = parsed.values("link")
        if !links.isEmpty && parsed.values("id").isEmpty && parsed.values("rid").isEmpty {
            guard parsed.positionals.isEmpty else {
                throw HealthCardError(.configuration, "revoke takes no positional arguments, found \(Quote.text(parsed.positionals[0])); use --link LINK")
            }
            let root = try parsed.required("site", command: "revoke")
            _ = try PublishedSite(root: root)
            let lock = try SiteLock.take(site: root, waiting: { printError($0) })
            defer { withExtendedLifetime(lock) {} }
            return try withdraw(links, site: root, force: parsed.has("force"))
        }
        guard parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration,
                "revoke takes no positional arguments, found \(Quote.text(parsed.positionals[0])); "
                    + "use --id PATIENT_ID or --rid RID")
        }
        let site = IssuerSite(root: try parsed.required("site", command: "revoke"))
        let keyArgument = try parsed.required("key", command: "revoke")
        let ids = parsed.values("id").map(PatientIdentity.normalize)
        if ids.contains(where: \.isEmpty) {
            throw HealthCardError(.configuration, "--id is empty (an unset shell variable?); a revocation list never shrinks, so an "
                + "empty id would stay in it for good. Give the patient id the cards were issued for")
        }
        let rids = parsed.values("rid")
        guard !ids.isEmpty || !rids.isEmpty else {
            throw HealthCardError(.configuration, "`healthcards revoke` needs --id PATIENT_ID (with --rid-secret) or --rid RID")
        }
        var before: Int64?
        if let text = parsed.value("before") {
            let now = Clock.nowSeconds()
            let value = try TimeOption.parse("before", text, example: now)
            guard value > 0 else { throw HealthCardError(.configuration, "--before 0 revokes no card (no card has nbf < 0)") }
            if value > now + 86_400 {
                throw HealthCardError(
                    .configuration,
                    "--before \(value) (\(Clock.describe(value))) is more than a day from now: the entry would also revoke "
                        + "the patient's cards issued from now until then, including corrected ones. Give the time the "
                        + "correction was issued (now is \(now)), or leave --before out to revoke all their cards")
            }
            before = value
        }
        let narrow = parsed.has("narrow")
        if narrow && before == nil {
            throw HealthCardError(
                .configuration,
                "--narrow replaces a rid's entry with one that revokes only the cards issued before --before SECONDS; "
                    + "give --before (the time after the cards to keep revoked, at most now)")
        }
        for rid in rids where !RID.isValid(rid) {
            throw HealthCardError(.configuration, "--rid \(Quote.text(rid)) is not a rid (1 to 24 base64url characters)")
        }
        var secret: RIDSecret?
        if !ids.isEmpty {
            guard let path = parsed.value("rid-secret") else {
                throw HealthCardError(.configuration, "--id needs --rid-secret FILE (the secret `issue --rid-secret` used)")
            }
            secret = try RIDSecretFile.read(path)
        }
        let reports = parsed.values("report")
        let force = parsed.has("force")
        if reports.isEmpty && !force {
            throw HealthCardError(
                .configuration,
                "revoke checks each id against the report of the run that issued its card, so that a mistyped id, a "
                    + "wrong --rid-secret or --key cannot put a dead entry in the public list (which never shrinks). "
                    + "Give --report OUT/report.ndjson (once per run), or --force to revoke without checking")
        }
        let issued = reports.isEmpty ? nil : try IssuedCards(reports: reports, keeping: .only(ids: Set(ids), rids: Set(rids)))
        let kid = JWK(key: try KeySource.load(keyArgument, requirePrivate: false)).kid
        var requests: [(entry: CRL.Entry, patient: String, verdict: RevocationCheck.Verdict?)] = rids.map { rid in
            let verdict = issued.map { RevocationCheck.check(rid: rid, kid: kid, in: $0) }
            var patient = "unknown"
            if case .confirmed(let from?, _)? = verdict { patient = from }
            return (CRL.Entry(rid: rid, before: before), patient, verdict)
        }
        for id in ids {
            // `ids` is non-empty only with a secret (checked above).
            guard let secret else { break }
            let rid = try RID.derive(secret: secret, kid: kid, patientID: id)
            let verdict = try issued.map { try RevocationCheck.check(id: id, rid: rid, kid: kid, in: $0) }
            requests.append((CRL.Entry(rid: rid, before: before), id, verdict))
        }
        let unknown = requests.compactMap { request -> String? in
            if case .unknown(let reason)? = request.verdict { return reason }
            return nil
        }
        if !unknown.isEmpty && !force {
            throw HealthCardError(
                .configuration,
                unknown.joined(separator: "; ") + ". Nothing was written; pass --force to revoke "
                    + (unknown.count == 1 ? "it" : "them") + " anyway")
        }
        for reason in unknown { printError("warning: --force: " + reason) }
        // A person revoked under one key may hold cards another key signed (after a rotation): those still verify.
        if let issued {
            for request in requests where request.patient != "unknown" {
                for (other, places) in RevocationCheck.otherKeys(ridFrom: request.patient, kid: kid, in: issued) {
                    printError(
                        "note: \(Quote.text(request.patient)) also has cards signed by key \(other) (\(places.prefix(3).joined(separator: ", "))"
                            + "\(places.count > 3 ? ", …" : "")), which this revocation does not reach: revoke them too with --key for that key")
                }
            }
        }
        if issued == nil { printError("warning: --force without --report: nothing was checked against what was issued") }
        // Under the site's lock, the CRL is read after any other revoke has written it (a missing site is left
        // for `revoke` to report, not created).
        let lock = FileIO.isDirectory(site.root) ? try SiteLock.take(site: site.root, waiting: { printError($0) }) : nil
        defer { withExtendedLifetime(lock) {} }
        let result = try site.revoke(requests.map(\.entry), kid: kid, narrow: narrow)
        for ((entry, change), request) in zip(result.changes, requests) {
            let who = "patient \(request.patient)"
            switch change {
            case .added: say("revoked \(entry.text) (\(who))")
            case .widened(let old): say("revoked \(entry.text) (\(who); was \(old.text))")
            case .narrowed(let old):
                say("narrowed \(old.text) to \(entry.text) (\(who)): cards issued from \(entry.before ?? 0) on verify again")
            case .alreadyRevoked(let by):
                say("already revoked \(entry.text) (\(who); by \(by.text))")
                if let before = entry.before, by != entry {
                    printError(
                        "note: \(by.text) revokes more cards of \(request.patient) than \(entry.text) (also those issued "
                            + "from \(before) on, so a corrected card would be revoked too); to revoke only the cards "
                            + "before \(before), run this again with --narrow")
                }
            }
        }
        let crlPath = site.crlPath(kid: kid)
        say(
            "\(crlPath): ctr \(result.ctr)" + (result.wroteCRL ? "" : " (unchanged)")
                + "; \(site.keySetPath): crlVersion \(result.ctr)" + (result.wroteKeySet ? "" : " (unchanged)"))
        if !links.isEmpty { return try withdraw(links, site: site.root, force: force) }
        return .ok
    }

    /// `--link`: deletes each link's file from the site (`SHLWithdrawal`). All links are read and checked
    /// before the first file is deleted.
    static func withdraw(_ links: [String], site root: String, force: Bool) throws -> ExitStatus {
        let site = try PublishedSite(root: root)
        var texts: [(text: String, what: String, file: String?)] = []
        for (i, link) in links.enumerated() {
            if SHLinkText.looksLikeLink(link) && !FileIO.exists(link) {
                texts.append((link, "argument \(i + 1)", nil))
            } else {
                let bytes = try FileIO.read(link)
                let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
                texts.append((text, link, link))
            }
        }
        for (text, what, file) in texts {
            _ = try SHLWithdrawal.withdraw(linkText: text, site: site, force: force, what: what, dryRun: true)
            // A link text of an output folder whose links were made into another site folder: that folder holds
            // its file, so this site saying "not here" would be no withdrawal at all.
            if let file {
                try SHLSiteRecord.check(
                    linkFolder: FileIO.parent(of: file), site: site.site.root, what: "nothing was deleted")
            }
        }
        for (text, what, file) in texts {
            let result = try SHLWithdrawal.withdraw(linkText: text, site: site, force: force, what: what)
            let path: String
            switch result {
            case .withdrawn(let deleted):
                path = deleted
                say("withdrew \(what): deleted \(deleted); deploy the site now")
            case .alreadyWithdrawn(let missing):
                path = missing
                say("already withdrawn \(what): \(missing) is not in the site")
            }
            // Remembered beside the link text, so later runs make the person no new link unless asked. A link
            // withdrawn before keeps its first record (and the time it went).
            if let file, let marker = SHLWithdrawalRecord.path(besideLinkFile: file) {
                if case .alreadyWithdrawn = result, FileIO.exists(marker) {
                    say("kept the withdrawal recorded in \(marker)")
                    continue
                }
                try SHLWithdrawalRecord.record(
                    besideLinkFile: file, siteFile: String(path.dropFirst(site.site.root.count + 1)),
                    now: Clock.nowSeconds())
                say("recorded the withdrawal in \(SHLWithdrawalRecord.path(besideLinkFile: file) ?? ""): later runs make "
                    + "no new link for it unless asked (--shl-renew ID)")
            }
        }
        return .ok
    }
}
