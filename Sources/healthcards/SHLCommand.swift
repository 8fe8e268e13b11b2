import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum SHLCommand {
    static let help = """
        Usage: healthcards shl --base-url BASE_URL --site SITE [--out DIR] [--label TEXT] [--exp SECONDS]
                               [--viewer URL#] [--no-qr] [--qr-scale PIXELS] [--share group|world]
                               [--content card|bundle|both] [--long-term] [--ktc] [--update] CARD...

        Makes a SMART Health Link (flag U, for a static host) for cards already issued, as `issue --shl` does
        while issuing (docs/shl.md). For each CARD (a .smart-health-card file) it writes:
          SITE/shl/<43 random chars>     the card file encrypted as a JWE (alg dir, enc A256GCM) with a fresh
                                         32-byte key and IV; mode 0644 (the host serves it; only the link opens it)
          DIR/shl/<name>.png             the link's QR code (error correction M), mode 0600
          DIR/shl/<name>.txt             the link, shlink:/… (with --viewer: URL#shlink:/…), mode 0600: the key
                                         in it opens the card, so treat it as the card itself
        <name> is the card's file name without .smart-health-card. A card that already has a link in DIR/shl keeps
        it (its file is encrypted again with the same key and a fresh IV when the card changed). A link text is
        never overwritten while its file may be live: a card whose link was withdrawn (`revoke --link` leaves
        DIR/shl/<name>.withdrawn) or whose link's file is not in SITE gets no new link unless --renew names it,
        and when DIR's links were made into another site folder that still exists (DIR/shl/.healthcards-links.json
        records it), the run is refused. Each card is verified first with the site's keys
        and must be the site issuer's: a card a verifier rejects gets no link. The link text is never printed.
        Publish SITE afterwards (the header rules of `healthcards site` serve shl/ as application/jose, CORS *,
        no-store). Like `issue`, it locks DIR for the run (DIR/.healthcards-issue.lock): while an `issue` or
        another `shl` writes into DIR it stops at once, writing nothing. It takes SITE's lock
        (SITE/.healthcards-site.lock) for each link file it writes there, not for the whole run, waiting at
        most 60 s while another command writes SITE (a revoke, an issue --shl). A PDF printed before the link was made
        or replaced does not show it: print the card again (`healthcards print`, which finds DIR/shl/<name>.txt).

        Commands:
          audit                 list each access to the site's links from the web server's access logs
                                (`healthcards shl audit --help`)

        Arguments:
          CARD                  a .smart-health-card file
        Options:
          --base-url BASE_URL   a folder named shl under the issuer URL the site is published at, e.g.
                                https://clinic.example.org/shl for SITE/shl/ (at most 84 characters, so the
                                link URL stays within 128)
          --site SITE           the issuer's site folder (`healthcards site --out SITE --issuer URL KEY...`)
          --out DIR             where shl/<name>.txt and .png go (default: for CARD in X/cards/, X); never
                                inside the published site
          --label TEXT          the label receivers show (at most 80 characters; default 'SMART Health Card');
                                {name} puts the Patient's name in it: only when the person wants that
          --exp SECONDS         the link's exp (integer seconds since 1970, or +N with s, m, h or d from now,
                                e.g. +48h): a hint that it is stale after
          --viewer URL#         a viewer URL ending in '#' put in front of the link (and in its QR)
          --no-qr               write no QR image
        \(QRScaleOption.help)
          --share group|world   let the group (0640/0750) or everyone (0644/0755) read DIR/shl; default 0600/0700
          --renew ID            make a new link for ID (the card's name) although its link was withdrawn or its
                                file is not in SITE (the old link stays dead). May be repeated
        \(LinkOptions.help(.shl))
          --update              only update the links CARDs already have (DIR/shl/<name>.txt whose file is in
                                SITE): the current content is encrypted again under the same key and file name
                                with a fresh IV when it changed (an LU link's receivers see it), and what the link
                                held is kept (a Bundle's printed card, while the card is unchanged); each line says
                                whether the file changed; a CARD without such a link gets none (exit status 1)
          -h, --help            show this help

        Exit status: 0 every card linked; 1 some cards got no link (not valid, not the site issuer's, or a link
        that stays withdrawn or must not be overwritten); 2 usage or configuration error, or a file could not be
        written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        if args.first == "audit" { return try SHLAuditCommand.run(Array(args.dropFirst())) }
        let parsed = try Arguments(
            args, valued: Set(["base-url", "site", "out", "label", "exp", "viewer", "qr-scale", "share", "renew"])
                .union(LinkOptions.valued(.shl)),
            flagNames: Set(["no-qr", "update"]).union(LinkOptions.flags(.shl)),
            command: "shl")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        _ = try parsed.required("base-url", command: "shl")
        var image = QRImage()
        if let text = parsed.value("qr-scale") {
            image.scale = try QRScaleOption.parse(text)
        }
        let site = try PublishedSite(root: try parsed.required("site", command: "shl"))
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards shl` needs at least one CARD (.smart-health-card file); see `healthcards shl --help`")
        }
        let access = try parsed.value("share").map { try OutputAccess(share: $0) } ?? .ownerOnly
        let now = Clock.nowSeconds()
        // Where each card's link goes, all decided (and checked) before anything is written.
        var jobs: [(card: String, outDir: String, name: String)] = []
        var seen: [String: String] = [:]
        for card in parsed.positionals {
            guard FileIO.isRegularFile(card), card.lowercased().hasSuffix(".smart-health-card") else {
                throw HealthCardError(.configuration, "CARD \(card) is not a .smart-health-card file")
            }
            let folder = FileIO.parent(of: card)
            let outDir: String
            if let out = parsed.value("out") {
                outDir = out
            } else if FileIO.basename(folder) == "cards" {
                outDir = FileIO.parent(of: folder)
            } else {
                throw HealthCardError(
                    .configuration,
                    "CARD \(card) is not in a cards/ folder of an `issue` output; give --out DIR for its link (DIR/shl/)"
                )
            }
            try IssuerSite.refuseHealthDataInside(
                outDir, option: parsed.value("out") == nil ? "the link folder of CARD \(card)," : "--out",
                what: "links open the cards they carry")
            let name = OutputNames.safe(FileIO.stem(card))
            let slot = (FileIO.identity(outDir) ?? outDir) + "/" + name
            if let earlier = seen[slot] {
                throw HealthCardError(
                    .configuration,
                    "CARD \(card) and \(earlier) would share the link \(outDir)/shl/\(name).txt; give them in separate runs with different --out"
                )
            }
            seen[slot] = card
            jobs.append((card, outDir, name))
        }
        guard
            let (destination, parsedOptions) = try LinkOptions.options(
                parsed, names: .shl, site: site, makeQR: !parsed.has("no-qr"), qrImage: image, now: now)
        else { return .usage }
        var options = parsedOptions
        options.updateOnly = parsed.has("update")
        if options.updateOnly, !options.renew.isEmpty {
            throw HealthCardError(.configuration, "--update never makes a new link; --renew does: give one or the other")
        }
        // One run at a time per output folder: `issue --shl` and `shl` into one DIR would race on shl/<name>.txt.
        let locks = try lockOutputs(jobs.map(\.outDir), access: access)
        defer { withExtendedLifetime(locks) {} }
        // The site's lock is taken for each link file written into SITE/shl (`SiteWriteGate`), not for the run: a
        // `revoke` or `site --drop-kid` waits for one write, and this run waits for them.
        let gate = SiteWriteGate(root: site.site.root, notice: { printError($0) })
        let verifier = try FileVerifier(keySets: [site.site.root], now: now)
        var refused = 0
        var prepared: Set<String> = []
        for job in jobs {
            var stage = SHLStage(destination: destination, options: options, outDir: job.outDir, access: access)
            stage.siteGate = gate
            let reports = try verifier.verify([job.card])
            let problems = reports.flatMap(\.findings).filter(\.isError)
            let issuers = Set(reports.compactMap { $0.payload?["iss"]?.stringValue })
            if !problems.isEmpty || issuers != [site.issuer] {
                refused += 1
                let why =
                    problems.isEmpty
                    ? "it is a card of \(issuers.sorted().joined(separator: ", ")), not of \(site.issuer) whose site this is"
                    : problems.prefix(3).map { ControlCharacters.escaped($0.description) }.joined(separator: "; ")
                printError(
                    "\(job.card): no link made: \(why). Check it with `healthcards verify --jwks \(site.site.root) \(job.card)`"
                )
                continue
            }
            if !prepared.contains(job.outDir) {
                try gate.withLock { try stage.prepare() }
                prepared.insert(job.outDir)
            }
            let bytes = try FileIO.read(job.card)
            let bundle = reports.first?.payload?["vc"]?["credentialSubject"]?["fhirBundle"]
            var notes: [HealthCardError] = []
            let made: SHLStage.Outcome?
            do {
                made = try stage.link(card: bytes, name: job.name, bundle: bundle, sync: true, notes: &notes)
            } catch let error as HealthCardError where error.code == .outputSymlink {
                printError("\(job.card): no link made: \(ControlCharacters.escaped(Hints.said(error)))")
                refused += 1
                continue
            }
            guard let outcome = made else {
                for note in notes { printError("\(job.card): \(Hints.said(note))") }
                refused += 1
                continue
            }
            for warning in outcome.warnings { printError("warning: \(job.card): \(Hints.said(warning))") }
            say(
                "\(job.card): link \(outcome.files.map { "\(job.outDir)/\($0)" }.joined(separator: ", ")); file "
                    + "\(site.site.root)/\(outcome.siteFile)"
                    + (outcome.fileChanged ? (outcome.textChanged ? " (new)" : " (content changed: encrypted again, same key, fresh IV)") : " (unchanged)"))
        }
        return refused > 0 ? .partial : .ok
    }

    /// Takes the output lock `issue` takes (`OutputLock`) on each output folder (created when missing), once
    /// per folder however it is named, before anything is written.
    /// - Throws: `HealthCardError(.configuration)` when another run holds one (nothing was written), `.io` when a
    ///   folder cannot be made.
    static func lockOutputs(_ folders: [String], access: OutputAccess) throws -> [OutputLock] {
        var locks: [OutputLock] = []
        var locked: Set<String> = []
        for folder in folders {
            try FileIO.checkWritableFolder(folder, mode: access.folderMode)
            guard locked.insert(FileIO.identity(folder) ?? folder).inserted else { continue }
            locks.append(try OutputLock(folder: folder, mode: access.fileMode))
        }
        return locks
    }
}
