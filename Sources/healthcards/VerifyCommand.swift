import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum VerifyCommand {
    static let help = """
        Usage: healthcards verify [--jwks [ISSUER_URL=]FILE_OR_SITE_DIR]... [--directory DIR [--directory-cert CERT]
                                  [--max-key-age DAYS]] [--shl-site SITE]... [--now SECONDS] [--ktc] [--json] PATH...

        Checks SMART Health Cards from anyone, offline, and reports every problem with a stable code
        (see docs/error-codes.md), a severity, where it is (file, credential, chunk, FHIR path) and what to do.

        Arguments:
          PATH                  a .smart-health-card file, a jwks.json (checked as a key set), a file holding
                                one compact JWS, a file holding shc:/ QR text (give chunk sets together or in
                                one folder), a QR image (.png, .jpg or .jpeg: a scan, a screenshot or a
                                photo), or a folder (walked); or a SMART Health Link:
                                shlink:/… text (bare or after a viewer URL's '#'), a file holding one, or
                                its QR image. A walk stays in the folder (as find without -L): it does not
                                follow links to folders outside it and never opens FIFOs, sockets or devices,
                                and says once what it skipped. A PATH given here is followed
        Options:
          --jwks FILE_OR_DIR    an issuer's key set: a jwks.json, or a site folder holding .well-known/jwks.json;
                                repeatable. A key verifies only cards of the issuer whose key set it is in: a
                                site folder written by `healthcards site --issuer URL` says its issuer, and
                                ISSUER_URL=FILE binds any key set to one. One unbound key set given alone stands
                                for every card's issuer; with several, only bound ones verify. Revocation lists at
                                crl/<kid>.json beside the key set are applied. Verify is offline: it never fetches
                                a URL. Without --jwks the signature is not checked (a warning; the card is NOT
                                VERIFIED, exit status 1)
          --directory DIR       trust the issuers of the VCI directory in DIR (vci_snapshot.json, .sig, .crt, and
                                optionally vci-issuers.json and daily_audit.json: `healthcards directory --help`).
                                Its signature is checked first; a snapshot whose signature fails is refused and no
                                card is judged (exit status 1). A card's issuer is found by its iss, then through
                                a canonical_iss; its key by iss and kid together; the issuer's CRLs revoke. A card
                                whose issuer is not in it (nor given with --jwks ISSUER_URL=FILE) is an error,
                                DIRECTORY_ISSUER_UNKNOWN; archival issuers, stale keys and issuers in the day's
                                audit errors are warnings. Combine with --jwks for issuers not listed yet
          --directory-cert CERT the pinned certificate for --directory (default DIR/vci_snapshot.crt, with a
                                warning that it is not pinned)
          --max-key-age DAYS    a directory issuer's keys last retrieved more than DAYS before --now are stale
                                (DIRECTORY_KEYS_STALE, a warning; default 365)
          --shl-site SITE       a site folder (`healthcards site --issuer URL`) standing for the host of its issuer
                                URL: a link whose url lies under that URL is opened from the folder (offline:
                                nothing is fetched), decrypted with the link's key, and the card inside verified.
                                Repeatable. Without it a link's payload is checked, not its file. The key is never
                                printed
          --now SECONDS         judge nbf, exp (of cards and links) and clinical dates at this time (seconds since
                                1970; default now)
          --ktc                 also judge SMART Health Links against the CMS Kill the Clipboard profile
                                (SHL_KTC): flag U and no P, exp required (a warning when it is more than 48
                                hours ahead), content application/fhir+json or application/smart-health-card
          --json                print a JSON report (its schema is in docs/verify.md): the key sets, credentials,
                                links and other inputs, each with its findings, and a summary of the counts
          -h, --help            show this help

        Control characters from cards and files are printed escaped (\\u{1B}); --json keeps the data as is.

        A card is OK only when its signature verified with a key of its issuer and it has no error; one whose
        signature was not checked (no key set given for its issuer) is NOT VERIFIED, whatever else passed, and
        so is a link whose file was not opened (no --shl-site for its host, or a manifest link).

        Exit status: 0 no error (warnings allowed) and every card's signature verified; 1 at least one error,
        a card whose signature was not checked (NOT VERIFIED), or nothing to check found in the PATHs
        (NOTHING_TO_CHECK); 2 usage error.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: ["jwks", "now", "shl-site", "directory", "directory-cert", "max-key-age"], flagNames: ["json", "ktc"],
            command: "verify")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(.configuration, "`healthcards verify` needs at least one PATH (a card, JWS, QR text or image, jwks.json or folder); see `healthcards verify --help`")
        }
        var now = Clock.nowSeconds()
        if let text = parsed.value("now") {
            guard let value = Int64(text), value >= 0, value < 100_000_000_000 else {
                throw HealthCardError(.configuration, "--now \(Quote.text(text)) is not integer seconds since 1970 (e.g. \(now))")
            }
            now = value
        }
        if parsed.value("directory") == nil, let other = ["directory-cert", "max-key-age"].first(where: { parsed.value($0) != nil }) {
            throw HealthCardError(.configuration, "--\(other) goes with --directory DIR; see `healthcards verify --help`")
        }
        let maxKeyAge = try parsed.value("max-key-age").map { try DirectoryCommand.keyAge($0) } ?? Directory.defaultMaxKeyAge
        var directory: DirectoryFiles?
        if let folder = parsed.value("directory") {
            do { directory = try DirectoryFiles(folder: folder, certificate: parsed.value("directory-cert")) } catch let error as HealthCardError
                where error.code == .directorySignatureInvalid || error.code == .directoryInvalid
            {
                // Refused before any card is judged: the cards are not checked against a directory that cannot be trusted.
                printError(error.commandLineText + "; no card was checked")
                return .partial
            }
            if let directory, !directory.pinned {
                printError("warning DIRECTORY_NOT_PINNED: " + directory.notPinnedText.replacingFirst("--cert", with: "--directory-cert"))
            }
        }
        let verifier = try FileVerifier(
            keySets: parsed.values("jwks"), now: now, linkSites: parsed.values("shl-site"), killTheClipboard: parsed.has("ktc"),
            directory: directory.map { ($0.directory, $0.pinned) }, maxKeyAge: maxKeyAge)
        let walked = try verifier.verify(parsed.positionals)
        let keySets = verifier.keySetReports + walked.filter { $0.source == .keySet }
        let checked = walked.filter { $0.source != .keySet }
        let reports = verifier.keySetReports + walked
        let errors = reports.reduce(0) { $0 + $1.errorCount }
        let warnings = reports.reduce(0) { $0 + $1.warningCount }
        let credentials = checked.filter(\.isCredential).count
        // Valid, yet not verified: a card whose signature was not checked, a link whose file was not opened.
        let notVerified = checked.filter { $0.isValid && (($0.isCredential && !$0.isVerified) || $0.isLinkContentChecked == false) }.count
        let links = checked.filter { $0.source == .shlink }.count
        let standIn = verifier.standInKeySet.map {
            "key set \($0) is not bound to an issuer, so it was taken as the key set of every card's issuer; bind it with "
                + "--jwks ISSUER_URL=\($0), or give the site folder written by `healthcards site --issuer ISSUER_URL`"
        }
        if parsed.has("json") {
            var extra: JSONObject = [:]
            if let standIn { extra["keySetNotBound"] = .string(standIn) }
            if let directory {
                extra["directory"] = directoryJSON(directory, verifier: verifier)
            }
            if !verifier.skipped.isEmpty {
                extra["skipped"] = .array(verifier.skipped.map { .object(["path": .string($0.path), "what": .string($0.what)]) })
            }
            let document = VerificationReport.json(
                now: now, keySets: keySets, reports: checked, say: Hints.said, extra: extra)
            say(String(decoding: JSONWriter.pretty(document), as: UTF8.self))
        } else {
            for report in reports {
                say(report.summaryLines(say: Hints.said, now: now).joined(separator: "\n"))
                say("")
            }
            if let standIn { say("verify: " + ControlCharacters.escaped(standIn)) }
            if let directory { say("verify: " + ControlCharacters.escaped(directoryLine(directory, verifier: verifier))) }
            if let skipped = skippedLine(verifier.skipped) { say("verify: " + ControlCharacters.escaped(skipped)) }
            let linkCount = links > 0 ? ", \(links) link(s)" : ""
            let unverified = notVerified > 0
                ? ", \(notVerified) NOT VERIFIED (a signature not checked: give the issuer's key set with --jwks; a link's file "
                    + "not opened: give its site with --shl-site)" : ""
            say("verify: \(credentials) credential(s)\(linkCount) checked, \(errors) error(s), \(warnings) warning(s)\(unverified)")
        }
        return errors > 0 || notVerified > 0 ? .partial : .ok
    }

    /// The line saying which directory was trusted, how its signature was checked, and its entries' errors.
    static func directoryLine(_ loaded: DirectoryFiles, verifier: FileVerifier) -> String {
        let d = loaded.directory
        let problems = verifier.verifier.trustStore.directoryFindings.filter(\.isError).count
        return "trusted the VCI directory \(loaded.folder) (snapshot of \(d.time.isEmpty ? "?" : d.time), \(d.counts.entries) issuers, "
            + "\(d.counts.keys) keys), its signature verified with \(loaded.certificatePath) ("
            + (loaded.pinned ? "pinned" : "NOT pinned: give --directory-cert") + ")"
            + (problems > 0 ? "; its entries have \(problems) error(s) in keys or CRLs (cards of those issuers are KEY_SET_INVALID)" : "")
    }

    static func directoryJSON(_ loaded: DirectoryFiles, verifier: FileVerifier) -> JSONValue {
        let d = loaded.directory
        return .object([
            "path": .string(loaded.folder), "time": .string(d.time), "issuers": .integer(Int64(d.counts.entries)),
            "keys": .integer(Int64(d.counts.keys)), "signature": "verified", "pinned": .bool(loaded.pinned),
            "certificate": .string(loaded.certificatePath), "certificateSha256": .string(d.certificateFingerprint),
            "entryErrors": .integer(Int64(verifier.verifier.trustStore.directoryFindings.filter(\.isError).count)),
        ])
    }

    /// The one line saying what the folder walks left unread (FIFOs, sockets, devices, links to folders
    /// outside the walk), naming the first few; nil when nothing was skipped.
    static func skippedLine(_ skipped: [(path: String, what: String)]) -> String? {
        guard !skipped.isEmpty else { return nil }
        let shown = skipped.prefix(5).map { "\($0.path) (\($0.what))" }.joined(separator: ", ")
        let more = skipped.count > 5 ? " and \(skipped.count - 5) more" : ""
        return "skipped \(skipped.count) path(s) in the folders walked, not read: \(shown)\(more). A walk reads regular files "
            + "and stays in the folders given; give a linked folder as a PATH to check it (PATHs are followed)"
    }
}
