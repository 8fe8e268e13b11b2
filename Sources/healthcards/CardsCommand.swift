import HealthCardsCore
import HealthCardsSite
import HealthCardsIssuing
import HealthCardsServer
import HealthCardsVerify

/// `healthcards cards import`: the cards of batch outputs into a server's database, for `$health-cards-issue`.
enum CardsCommand {
    static let help = """
        Usage: healthcards cards import --db DB (--site SITE | --accept-unverified-cards) OUT...

        Commands:
          import  load the cards and reports of batch output folders into DB

        Loads the cards of batch outputs (the folders `healthcards issue --out OUT` wrote: report.ndjson and the
        .smart-health-card files its lines name) into DB, for `healthcards serve` to answer
        POST /fhir/Patient/<id>/$health-cards-issue (docs/server.md). The cards are served as the batch signed
        them: the server never needs the signing key. A person is the report's id, normalized as the batch does
        (surrounding spaces, invisible characters and look-alike spaces removed; case kept).

        Importing a folder again after a newer run into it replaces the cards of the run before; a person's cards
        from an older run of another folder with the same vc.type list are replaced too; a folder whose run is
        older than the one already imported is left as it is. A card whose rid a revocation list revokes is never
        stored, and one already stored is removed: the lists of SITE (SITE/.well-known/crl/<kid>.json) with
        --site, and the records a run rejected because the site's list revokes them (their report lines).
        `healthcards serve --site SITE` also checks the lists on every answer; without it, run the import again
        after `healthcards revoke`.

        With --site, each card's signature is verified with the site's keys (SITE/.well-known/jwks.json), as
        `healthcards verify --jwks SITE` does: a card whose signature does not verify, or whose kid names no key of
        the site (SIG_INVALID, KID_UNKNOWN, …), is refused: not loaded, named with its file and rule code on
        stderr; the folder's other cards are loaded. A store serves cards to wallets, so it takes no card it could not
        verify unless told: without --site the import is refused (exit status 2), unless --accept-unverified-cards
        says to load the cards unchecked (a warning says so).

        Options:
          --db DB        sqlite:PATH (made with mode 0600 when missing) or postgresql://[USER@]HOST[:PORT]/DATABASE
          --site SITE    the issuer's site folder: its keys verify the cards, its revocation lists apply
          --accept-unverified-cards
                         load the cards without checking their signatures (no --site): only for cards whose
                         origin is known otherwise
          -h, --help     show this help

        Exit status: 0 every folder imported (or left as it was, being older); 1 some cards were refused (their
        signature is not the site's keys'), the others loaded; 2 usage or configuration error,
        a folder that is not a batch output, or the database could not be opened or written (nothing of that
        folder is changed: each folder is imported in one transaction).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        guard let name = args.first else {
            print(help)
            return .usage
        }
        if name == "-h" || name == "--help" || name == "help" {
            print(help)
            return .ok
        }
        guard name == "import" else {
            throw HealthCardError(
                .configuration, "unknown command `healthcards cards \(Quote.text(name))`; expected import")
        }
        let parsed = try Arguments(
            Array(args.dropFirst()), valued: ["db", "site"], flagNames: ["accept-unverified-cards"], command: "cards import")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        guard !parsed.positionals.isEmpty else {
            throw HealthCardError(
                .configuration, "`healthcards cards import` needs the output folders of batch runs (OUT...)")
        }
        let url = try DatabaseURL(try parsed.required("db", command: "cards import"))
        try requireKeySource(site: parsed.value("site"), accept: parsed.has("accept-unverified-cards"), command: "cards import")
        let database = try LinkCommand.db(url) {
            try Database(url: url, role: .operatorCommand, create: true, maxConnections: 1, now: Clock.nowSeconds())
        }
        defer { database.close() }
        let site = parsed.value("site")
        if site == nil {
            printError("warning: the cards' signatures are not checked (--accept-unverified-cards): give --site SITE to verify them with the site's keys")
        }
        let result = try load(parsed.positionals, site: site, into: DatabaseCardStore(database: database), url: url)
        for (folder, card) in result.refusals {
            printError(
                "\(folder)/\(card.file): card \(card.index + 1) refused, not loaded: \(card.code.rawValue): "
                    + ControlCharacters.escaped(card.reason))
        }
        for outcome in result.lines { say(outcome) }
        return result.refusals.isEmpty ? .ok : .partial
    }

    /// A store that serves cards to wallets takes no card it could not verify unless the operator says so: refuses
    /// an import without a key source (`--site`) unless `--accept-unverified-cards` was given.
    static func requireKeySource(site: String?, accept: Bool, command: String) throws {
        guard site == nil, !accept else { return }
        throw HealthCardError(
            .configuration,
            "`healthcards \(command)` found no keys to verify the cards' signatures with: give --site SITE (the issuer's site, "
                + "whose keys verify each card and whose revocation lists apply). A store that serves cards to wallets takes "
                + "no card nobody checked; to load them unchecked anyway, say so with --accept-unverified-cards")
    }

    /// Imports the folders; returns a line for each, and a line for each card refused (its signature does not
    /// verify with the site's keys: `CardImport.read` with a verifier).
    static func load(_ folders: [String], site: String?, into store: CardStore, url: DatabaseURL) throws
        -> (lines: [String], refusals: [(folder: String, card: RefusedCard)])
    {
        var lists: FileRevocationListStore?
        var verifier: HealthCardVerifier?
        let now = Clock.nowSeconds()
        if let site {
            guard FileIO.isDirectory(site) else {
                throw HealthCardError(.configuration, "--site \(Quote.text(site)) is not a folder")
            }
            lists = IssuerSite(root: site).revocationLists
            verifier = try FileVerifier(keySets: [site], now: now).verifier
        }
        // Each key's list is read once per import; a list that cannot be read stops the import (rolled back).
        var cache: [String: CRL?] = [:]
        let revokes: (String, String, Int64) throws -> Bool = { kid, rid, nbf in
            guard let lists else { return false }
            if cache[kid] == nil { cache[kid] = .some(try lists.list(kid: kid)) }
            return cache[kid]??.revokes(rid: rid, nbfSeconds: nbf) ?? false
        }
        var lines: [String] = []
        var refusals: [(folder: String, card: RefusedCard)] = []
        for folder in folders {
            let run = try CardImport.read(folder: folder, verifier: verifier, now: now)
            refusals += run.refused.map { (folder, $0) }
            let outcome = try LinkCommand.db(url) { try store.load(run, now: Clock.nowSeconds(), revokes: revokes) }
            guard outcome.loaded else {
                lines.append("\(folder): left as it was: the database holds a newer run of this folder")
                continue
            }
            lines.append(
                "\(folder): \(outcome.cards) card(s) of \(outcome.people) person(s) loaded, \(outcome.replaced) replaced, "
                    + "\(outcome.revoked) revoked card(s) left out or removed, \(outcome.revokedPeople) person(s) the report marks "
                    + "revoked (not served)")
        }
        return (lines, refusals)
    }
}
