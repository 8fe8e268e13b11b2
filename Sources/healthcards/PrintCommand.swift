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

enum PrintCommand {
    static let help = """
        Usage: healthcards print --out DIR [OPTIONS] CARD...
               healthcards print --pdf-combined FILE.pdf [OPTIONS] CARD...

        Prints cards already issued as PDF pages a clinic hands to a person: the person's name and birth
        date, every dose or lab result in date order, the issuer, the QR code (60 mm, vector) and a
        wallet-size cut-out with a 42 mm QR code (see docs/printing.md). Each card is checked as
        `healthcards verify` checks it first; a card with an error is not printed, and stderr names the
        file and the error codes (never the person's data: run verify on the file for the details).

        Writes DIR/<card name>.pdf for each card (DIR/<card name>-<n>.pdf when a file holds several
        credentials), mode 0600: a printed card is health data, so neither DIR nor --pdf-combined may be
        inside a published site (a folder holding .well-known/jwks.json). A card whose PDF name another card of
        the run took (the same file name in two folders) is not printed over it: print it into another DIR.

        A card's SMART Health Link is printed with it: the link's QR code (0.65 mm a module, error correction M)
        beside the card's, or in place of the chunked codes of a card too large for one QR code. The link is
        the one given with --link FILE, or else the one `issue --shl` or `healthcards shl` wrote beside the
        card: OUT/shl/<name>.txt for a card at OUT/cards/<name>.smart-health-card. It is checked as `verify`
        checks links, and its file is opened from the site folder (--shl-site SITE, or else the one the link
        was made into, recorded in OUT/shl/.healthcards-links.json) and must hold this very card. A card whose
        link has an error, or opens another card, is not printed (or give --no-link).

        Arguments:
          CARD                  a .smart-health-card file, or a folder: its *.smart-health-card files (or
                                those in its cards/ folder, as `issue` writes them)
        Options:
          --out DIR             where the PDFs go (created if missing)
          --jwks FILE_OR_DIR    the issuer's key set (jwks.json or a site folder), to check signatures;
                                repeatable. Without it the signature is not checked (a warning, once)
          --link FILE           the card's SMART Health Link (a text file holding shlink:/…), for one CARD
          --no-link             print no link, even one found beside the card
          --shl-site SITE       the issuer's site folder holding the link's file, to check the link opens
                                the card (offline; nothing is fetched). Without it, a warning
        \(PrintOptions.help)
          -h, --help            show this help

        --pdf-combined FILE.pdf is written to a temporary file beside it, renamed into place at the end; a FIFO or a
        device (/dev/null) is written in place, never replaced.

        Exit status: 0 every card printed; 1 some cards not printed (verify found an error in the card or its
        link, or the card cannot be printed as it is: a character no installed font has, a name too long for the
        wallet card); 2 usage error, or a PDF that could not be written; 130/143 stopped by SIGINT/SIGTERM (no
        combined PDF is written; run it again).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: PrintOptions.valued.union(["out", "jwks", "link", "shl-site"]),
            flagNames: PrintOptions.flags.union(["no-link"]), command: "print")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let outDir = parsed.value("out")
        let combinedPath = parsed.value("pdf-combined")
        guard outDir != nil || combinedPath != nil else {
            throw HealthCardError(
                .configuration, "`healthcards print` needs --out DIR or --pdf-combined FILE.pdf; see `healthcards print --help`"
            )
        }
        if let outDir, outDir.isEmpty { throw HealthCardError(.configuration, "--out is empty; give the folder for the PDFs") }
        if let outDir { try IssuerSite.refuseHealthDataInside(outDir, option: "--out", what: "printed cards are health data") }
        if let combinedPath {
            try IssuerSite.refuseHealthDataInside(combinedPath, option: "--pdf-combined", what: "printed cards are health data")
        }
        let cards = try cardFiles(parsed.positionals)
        let givenLink = parsed.value("link")
        if let givenLink {
            guard !parsed.has("no-link") else {
                throw HealthCardError(.configuration, "--link and --no-link contradict each other; give one")
            }
            guard cards.count == 1 else {
                throw HealthCardError(
                    .configuration,
                    "--link FILE is the link of one card, but \(cards.count) cards were given; print them one at a time, or "
                        + "leave --link out to use the link beside each card (OUT/shl/<name>.txt)")
            }
            guard FileIO.isRegularFile(givenLink) else {
                throw HealthCardError(.configuration, "--link \(givenLink) is not a file")
            }
        }
        let settings = try PrintOptions.settings(parsed, environment: PrintOptions.environment())
        // Without --shl-site, the site folders the links were made into (OUT/shl/.healthcards-links.json), where
        // they are here: a link is then opened and checked to hold its card, not printed on trust.
        var linkSites = parsed.values("shl-site")
        if linkSites.isEmpty && !parsed.has("no-link") {
            for card in cards {
                guard let linkFile = givenLink ?? PrintedLink.file(besideCard: card),
                    let site = SHLSiteRecord.recordedSite(linkFolder: FileIO.parent(of: linkFile)),
                    FileIO.isRegularFile(site + "/" + SiteRecord.fileName), !linkSites.contains(site)
                else { continue }
                linkSites.append(site)
            }
        }
        let now = Clock.nowSeconds()
        let verifier = try FileVerifier(keySets: parsed.values("jwks"), now: now, linkSites: linkSites)
        if parsed.values("jwks").isEmpty {
            // Once per run: without keys a card altered after it was issued verifies as well as any other.
            printError(
                "warning: no --jwks: the cards' signatures are not checked, so a card changed after it was issued is "
                    + "printed like any other. Give the issuer's key set (--jwks SITE or --jwks jwks.json)")
        }
        for report in verifier.keySetReports where report.errorCount > 0 {
            printError(report.summaryLines(say: Hints.said, now: now).joined(separator: "\n"))
            throw HealthCardError(.configuration, "the key set \(report.file) has errors; fix it or leave --jwks out")
        }
        let printer = try CardPrinter(settings: settings)
        let combined = try combinedPath.map { try CombinedPDF(path: $0) }
        if let outDir {
            try FileIO.checkWritableFolder(outDir)
            // The PDF temporaries a killed run left (health data).
            FileIO.removeStaleTemporaries(in: outDir)
        }
        // SIGINT/SIGTERM: the card being printed is finished, no other is started, the unfinished combined PDF is
        // removed (its temporary too), and the exit status is 130/143.
        Signals.install()
        defer { Signals.restore() }
        var printed = 0
        var refused = 0
        // PDF name in --out → the card printed to it: two cards of one file name (from two folders) would
        // otherwise write one PDF over the other while the summary counts both.
        var pdfSources: [String: String] = [:]
        var done = 0
        for path in cards {
            if Signals.stop.signal != 0 { break }
            done += 1
            let reports = try verifier.verify([path])
            if reports.isEmpty || reports.contains(where: { $0.errorCount > 0 }) {
                // Codes and where they are, never the person's data (this often goes to a cron log).
                let lines = reports.flatMap { report in
                    report.errorLinesWithoutHealthData(say: Hints.said).map { (report.index.map { "[credential \($0)] " } ?? "") + $0 }
                }
                printError(
                    "not printed: \(ControlCharacters.escaped(path)): `healthcards verify` finds \(lines.count) error(s) in it "
                        + "(`healthcards verify` on the file shows the details):\n"
                        + lines.map { "  " + $0 }.joined(separator: "\n"))
                refused += 1
                continue
            }
            // With --jwks given, a card is printed only when its signature was verified: a card of an issuer whose
            // keys were not given could have been changed after it was issued (SIG_NOT_CHECKED is only a warning
            // in verify, where the reader sees it; a printed page shows no warning).
            if !parsed.values("jwks").isEmpty,
                let unchecked = reports.first(where: { $0.isCredential && $0.signature != .verified })
            {
                let issuer = unchecked.payload?["iss"]?.stringValue.map { Quote.text($0) } ?? "(unknown)"
                printError(
                    "not printed: \(ControlCharacters.escaped(path))\(unchecked.index.map { " [credential \($0)]" } ?? ""): its "
                        + "signature was not checked: no key set given with --jwks holds its key (issuer \(issuer), kid "
                        + "\(Quote.text(unchecked.kid ?? "none"))), so a card changed after it was issued would print like any "
                        + "other. Give that issuer's key set too (--jwks ISSUER_URL=SITE_OR_JWKS), or check the card with "
                        + "`healthcards verify` first")
                refused += 1
                continue
            }
            let credentials = try credentials(in: path)
            var link: PrintedLink?
            if !parsed.has("no-link"), let linkFile = givenLink ?? PrintedLink.file(besideCard: path) {
                do {
                    let checked = try PrintedLink.check(
                        linkFile: linkFile, credentials: credentials.map(\.compact), verifier: verifier)
                    for warning in checked.warnings { printError("warning: \(path): \(warning)") }
                    link = checked.link
                } catch let error as HealthCardError where error.kind == .link {
                    printError("not printed: \(path): \(Hints.said(error))")
                    refused += 1
                    continue
                }
            }
            let names = credentials.indices.map {
                OutputNames.safe(FileIO.stem(path)) + (credentials.count > 1 ? "-\($0 + 1)" : "")
            }
            if let outDir, let clash = names.first(where: { pdfSources[$0] != nil }), let other = pdfSources[clash] {
                // The same file given twice is printed once.
                if FileIO.identity(other) != nil && FileIO.identity(other) == FileIO.identity(path) { continue }
                printError(
                    "not printed: \(ControlCharacters.escaped(path)): its PDF would be \(outDir)/\(clash).pdf, which this "
                        + "run has already printed \(ControlCharacters.escaped(other)) to (two cards with the same file name). "
                        + "Print it with another --out folder")
                refused += 1
                continue
            }
            for name in names { pdfSources[name] = path }
            for (index, jws) in credentials.enumerated() {
                let card = try printer.print(
                    try PDFStage.sheet(jws, today: settings.today), codes: try PDFStage.codes(jws), link: link)
                if let refusal = card.refusal {
                    printError(
                        "not printed: \(ControlCharacters.escaped(path))"
                            + (credentials.count > 1 ? " [credential \(index + 1)]" : "") + ": \(refusal.message)")
                    refused += 1
                    continue
                }
                if let outDir {
                    // A card's PDF in the --out folder is a path print names itself: a symbolic link found there was
                    // made by someone else and is never written through (that would replace the file it points to).
                    do {
                        try FileIO.writeAtomically(try card.pdf(), to: "\(outDir)/\(names[index]).pdf", links: .refuse)
                    } catch let error as HealthCardError where error.code == .outputSymlink {
                        printError("not printed: \(ControlCharacters.escaped(path)): \(ControlCharacters.escaped(Hints.said(error)))")
                        refused += 1
                        continue
                    }
                }
                try combined?.append(card)
                printed += 1
            }
        }
        let signal = Signals.stop.signal
        if signal != 0 {
            combined?.discard()
            var summary = "print: stopped by signal \(signal) after \(done) of \(cards.count) card file(s): \(printed) card(s) printed"
            if let outDir { summary += " to \(outDir)/" }
            if let combinedPath { summary += "; \(combinedPath) was not written" }
            printError(summary + ". Run the same command again to print them all")
            return signal == SIGTERM ? .terminated : .interrupted
        }
        if let combined, printed > 0 { try combined.finish() }
        var summary = "print: \(printed) card(s) printed"
        if let outDir { summary += " to \(outDir)/" }
        if let combinedPath, printed > 0 { summary += (outDir == nil ? " to " : " and ") + combinedPath }
        if refused > 0 { summary += "; \(refused) file(s) not printed (errors above)" }
        printError(summary)
        return refused > 0 ? .partial : .ok
    }

    /// The card files named: files as given, folders expanded to their `.smart-health-card` files.
    static func cardFiles(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards print` needs at least one CARD (.smart-health-card file or folder); see `healthcards print --help`"
            )
        }
        var files: [String] = []
        for path in paths {
            if FileIO.isDirectory(path) {
                // `out/cards/` as `out/cards`, so a card's path names its folder (and the link beside it).
                var path = path
                while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
                let folder = FileIO.isDirectory("\(path)/cards") ? "\(path)/cards" : path
                let found = FileIO.list(folder).filter { $0.hasSuffix(".smart-health-card") }.map { "\(folder)/\($0)" }
                guard !found.isEmpty else { throw HealthCardError(.configuration, "\(path) holds no .smart-health-card file") }
                files += found
            } else {
                guard FileIO.exists(path) else { throw HealthCardError(.configuration, "\(path) does not exist") }
                files.append(path)
            }
        }
        return files
    }

    /// The JWS of a `.smart-health-card` file (verify has already judged it).
    static func credentials(in path: String) throws -> [JWS] {
        let json = try JSONParser.parse(try FileIO.read(path))
        return (json["verifiableCredential"]?.arrayValue ?? []).compactMap { $0.stringValue.map { JWS(compact: $0) } }
    }
}
