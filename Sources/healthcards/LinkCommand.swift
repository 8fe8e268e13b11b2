import HealthCardsCore
import HealthCardsSite
import HealthCardsIssuing
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsServer

#if canImport(Glibc)
    import Glibc
#endif

/// `healthcards link create|update|deactivate|list|audit`: the operator's side of the link server.
enum LinkCommand {
    static let subcommands: [(name: String, summary: String, run: @Sendable ([String]) throws -> ExitStatus)] = [
        ("create", "encrypt files here and store a new link (only its JWEs) in the database", create),
        ("update", "replace the files of a long-term (L) link, under its own key", update),
        ("deactivate", "close a link for good (404 from then on)", deactivate),
        ("list", "the links in the database: flags, state, files, attempts left", list),
        ("audit", "every access to a link: time, recipient, what was answered", audit),
    ]

    static let createUsage = """
        Usage: healthcards link create --db DB --base-url URL [--passcode-file FILE] [--kdf FUNCTION]
                                       [--max-attempts N] [--long-term] [--direct] [--exp SECONDS] [--label TEXT]
                                       [--viewer URL#] [--out FILE] [--qr FILE.png] [--jwks KEYS] FILE...
        """
    static let updateUsage = "Usage: healthcards link update --db DB --base-url URL --link LINK_FILE [--id ID] [--jwks KEYS] FILE..."
    static let deactivateUsage = "Usage: healthcards link deactivate --db DB --id ID"
    static let listUsage = "Usage: healthcards link list --db DB [--json]"
    static let auditUsage = "Usage: healthcards link audit --db DB [--id ID] [--json] | --prune DAYS"

    static let dbOption = """
          --db DB               sqlite:PATH (made with mode 0600 when missing) or
                                postgresql://[USER@]HOST[:PORT]/DATABASE (a local socket folder:
                                postgresql:///DATABASE?host=/run/postgresql), the database `healthcards serve`
                                serves (a password comes from ~/.pgpass or PGPASSFILE, never the URL)
        """
    static let baseURLOption = """
          --base-url URL        the public https URL the server answers at, e.g. https://links.example.org/shl
                                (the same for every command on one database; at most 84 characters)
        """
    static let createOptions = """
          --passcode-file FILE  flag P: receivers must give this passcode (FILE, mode 0600, its first line; '-'
                                reads it from standard input, asked for twice on a terminal, not shown). It is
                                stored only as a slow salted hash; never give it as an argument
          --kdf FUNCTION        the passcode hash: scrypt (default, ln=15,r=8,p=1: 32 MiB), scrypt:ln=N,r=R,p=P,
                                pbkdf2-sha256 (600000 iterations) or pbkdf2-sha256:i=N. The time one hash takes
                                here is printed: the server pays it for every passcode it checks
          --max-attempts N      wrong passcodes allowed in the link's lifetime (default 10; 1 to 1000); then the
                                link is disabled for good
          --long-term           flag L: the content may be replaced later (`link update`); receivers may poll
          --direct              flag U: the link URL is the one file, fetched with GET ?recipient= (one FILE,
                                no passcode)
          --exp SECONDS         integer seconds since 1970 after which the link answers 404 (also the payload's exp)
          --label TEXT          at most 80 characters, shown to receivers (anyone who sees the link sees it)
          --viewer URL#         a viewer URL ending in '#' put in front of the link (and in its QR)
          --out FILE            write the link to FILE (mode 0600) instead of standard output
          --qr FILE.png         also write the link's QR code (error correction M), mode 0600
                                (a FIFO or device is written in place, a link's target replaced; a folder or
                                socket is refused before the link is made, so no link is left without its text)
          --jwks KEYS           the issuer's keys (a site folder or a jwks.json, as `healthcards verify --jwks`):
                                every .smart-health-card FILE must verify with them (signature, kid, content), or
                                no link is made. Without it a card's signature is not checked (a warning says so)
        """
    static let updateOptions = """
          --link LINK_FILE      the link text `link create` wrote ('-': standard input): its URL names the link and
                                its key encrypts the new files (the server does not have it)
          --id ID               the link's id, checked against the link's URL
          --jwks KEYS           the issuer's keys (a site folder or a jwks.json, as `healthcards verify --jwks`):
                                every .smart-health-card FILE must verify with them (signature, kid, content), or
                                the link is not updated. Without it a card's signature is not checked (a warning
                                says so)
        """

    static let help = """
        Usage: healthcards link create --db DB --base-url URL [--passcode-file FILE] [--kdf FUNCTION]
                                       [--max-attempts N] [--long-term] [--direct] [--exp SECONDS] [--label TEXT]
                                       [--viewer URL#] [--out FILE] [--qr FILE.png] [--jwks KEYS] FILE...
               healthcards link update --db DB --base-url URL --link LINK_FILE [--id ID] [--jwks KEYS] FILE...
               healthcards link deactivate --db DB --id ID
               healthcards link list --db DB [--json]
               healthcards link audit --db DB [--id ID] [--json] | --prune DAYS

        Makes and manages the SMART Health Links that `healthcards serve` answers (docs/server.md). Each FILE
        (a .smart-health-card file, or a FHIR resource in JSON such as an IPS or a patient-shared Bundle:
        application/fhir+json) is encrypted on this machine with the link's fresh 32-byte key (JWE, alg dir,
        enc A256GCM, a fresh IV each time); the database gets only the JWEs, flags, limits and the passcode's
        slow hash. The server never holds a link key: a stolen database gives ciphertext and passcode hashes
        (and location keys that make location URLs for about two hours: docs/server.md).
        The link text (shlink:/…) holds the key: whoever has it opens the files (with the passcode, for P).

        Commands:
        \(subcommands.map { "  " + $0.name.padding(12) + $0.summary }.joined(separator: "\n"))

        Run `healthcards link COMMAND --help` for one command's options. All of them:
        \(dbOption)
        \(baseURLOption)
        \(createOptions)
          --link LINK_FILE      (update) the link text `link create` wrote ('-': standard input): its URL names the
                                link and its key encrypts the new files (the server does not have it)
          --id ID               (deactivate, audit, update) the link's id: the last part of its URL (update: checked
                                against the link's URL)
          --json                (list, audit) one JSON object a line
          --prune DAYS          (audit) delete the accesses older than DAYS days (the newest is kept)
          -h, --help            show this help

        Exit status: 0 done; 1 no such link (deactivate, update); 2 usage or configuration error, or the database
        could not be opened or written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        guard let name = args.first, !name.hasPrefix("-") || name == "-h" || name == "--help" else {
            if args.isEmpty {
                print(help)
                return .usage
            }
            throw HealthCardError(
                .configuration, "`healthcards link` needs a command first: create, update, deactivate, list or audit")
        }
        if name == "-h" || name == "--help" || name == "help" {
            print(help)
            return .ok
        }
        guard let sub = subcommands.first(where: { $0.name == name }) else {
            throw HealthCardError(
                .configuration,
                "unknown command `healthcards link \(Quote.text(name))`; expected \(subcommands.map(\.name).joined(separator: ", "))"
            )
        }
        if sub.name == "create" || sub.name == "update" { ProcessProtection.protectSecrets() }
        return try sub.run(Array(args.dropFirst()))
    }

    // MARK: helpers

    /// Runs a database step, saying the database's errors (`STORE_…` codes) with a message that names it.
    static func db<T>(_ url: DatabaseURL, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as HealthCardError where StoreError.codes.contains(error.reportedCode) {
            throw HealthCardError(error.kind, "the database \(url): \(error.message)", code: error.code)
        }
    }

    static func open(_ parsed: Arguments, command: String, create: Bool) throws -> (DatabaseURL, DatabaseLinkStore) {
        let url = try DatabaseURL(try parsed.required("db", command: command))
        let database = try db(url) {
            try Database(url: url, role: .operatorCommand, create: create, maxConnections: 1, now: Clock.nowSeconds())
        }
        return (url, DatabaseLinkStore(database: database))
    }

    /// Whether writing `output` would replace `other`: the same file (device and inode, through any link), or,
    /// when either is not there yet (a database this command creates, a symlink to one), the same path once its
    /// symbolic links and folders are resolved.
    static func sameFile(_ output: String, _ other: String) -> Bool {
        if let a = FileIO.identity(output), let b = FileIO.identity(other) { return a == b }
        guard let a = resolvedPath(output), let b = resolvedPath(other) else { return output == other }
        return a == b
    }

    /// `path` with every symbolic link followed, also a last one that points at nothing yet (what a write
    /// through it would create), and its folder made absolute; nil when its folder cannot be resolved.
    static func resolvedPath(_ path: String) -> String? {
        var path = path
        for _ in 0..<40 {
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK else { break }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(path, &buffer, buffer.count - 1)
            guard count > 0 else { break }
            let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            path = target.hasPrefix("/") ? target : FileIO.parent(of: path) + "/" + target
        }
        guard let folder = realpath(FileIO.parent(of: path), nil) else { return nil }
        defer { free(folder) }
        let name = path.utf8.split(separator: UInt8(ascii: "/")).last.map { String(Substring($0)) } ?? path
        return String(cString: folder) + "/" + name
    }

    /// Whether `output` (resolved) is inside `folder` (resolved): the site or key folder a command reads.
    static func isInside(_ output: String, folder: String) -> Bool {
        guard let path = resolvedPath(output), let real = realpath(folder, nil) else { return false }
        defer { free(real) }
        let root = String(cString: real)
        return path.hasPrefix(root == "/" ? "/" : root + "/")
    }

    static func idOption(_ parsed: Arguments, command: String) throws -> String {
        let id = try parsed.required("id", command: command)
        guard LinkID.isValid(id) else {
            throw HealthCardError(
                .configuration,
                "--id \(Quote.text(id)) is not a link id: 43 characters, the last part of the link's URL (`healthcards link list`)"
            )
        }
        return id
    }

    static func contents(_ files: [String], command: String) throws -> [LinkContent] {
        guard !files.isEmpty else {
            throw HealthCardError(
                .configuration,
                "`healthcards link \(command)` needs at least one FILE (.smart-health-card or FHIR JSON); see --help")
        }
        let unchanged = command == "create" ? "No link was made" : "The link was not updated"
        return try files.map { file in
            guard FileIO.isRegularFile(file) else {
                let shown = ControlCharacters.escaped(file)
                var st = stat()
                let found: String
                if stat(file, &st) != 0 {
                    let reason = errno
                    var link = stat()
                    if reason == ENOENT, lstat(file, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
                        let target = FileIO.linkTarget(file).map { " to \(ControlCharacters.escaped($0))" } ?? ""
                        found = "FILE \(shown) is a symbolic link\(target), which points at nothing"
                    } else {
                        found =
                            reason == ENOENT
                            ? "there is nothing at FILE \(shown)"
                            : "FILE \(shown) cannot be looked at (\(String(cString: strerror(reason))))"
                    }
                } else {
                    switch st.st_mode & S_IFMT {
                    case S_IFDIR: found = "FILE \(shown) is a folder"
                    case S_IFIFO: found = "FILE \(shown) is a FIFO (named pipe), not a regular file"
                    case S_IFCHR, S_IFBLK: found = "FILE \(shown) is a device, not a regular file"
                    default: found = "FILE \(shown) is a socket, not a regular file"
                    }
                }
                throw HealthCardError(
                    .configuration,
                    "\(found); give the path of a card (.smart-health-card) or a FHIR JSON file. \(unchanged)")
            }
            let bytes: [UInt8]
            do { bytes = try FileIO.read(file, maxBytes: LinkContent.maxBytes) } catch let error as HealthCardError {
                throw HealthCardError(
                    error.kind,
                    "FILE \(ControlCharacters.escaped(file)): \(error.text); give a card (.smart-health-card) or a FHIR "
                        + "JSON file this user can read. \(unchanged)")
            }
            return try LinkContent.read(bytes, name: file)
        }
    }

    /// With `--jwks KEYS`, verifies every card FILE as `healthcards verify --jwks KEYS` does and refuses them all
    /// (no link is made) when one has an error (an altered card: SIG_INVALID; a key the issuer does not publish:
    /// KID_UNKNOWN, …). Without it, warns that the signatures are not checked.
    static func checkCards(_ files: [String], _ contents: [LinkContent], keys: String?, made: String = "No link was made") throws {
        let cards = zip(files, contents).filter { $0.1.contentType == JWE.smartHealthCard }.map(\.0)
        guard !cards.isEmpty else { return }
        guard let keys else {
            printError("warning: the cards' signatures are not checked: give --jwks KEYS (the issuer's site or jwks.json) to verify them")
            return
        }
        let verifier = try FileVerifier(keySets: [keys], now: Clock.nowSeconds())
        for card in cards {
            let reports = try verifier.verify([card]).filter(\.isCredential)
            let problems = reports.flatMap(\.findings).filter(\.isError)
            if problems.isEmpty, !reports.isEmpty, reports.allSatisfy({ $0.signature == .verified }) { continue }
            var why =
                problems.isEmpty
                ? "its signature was not verified with the keys of \(keys)"
                : problems.prefix(3).map { ControlCharacters.escaped($0.description) }.joined(separator: "; ")
            // A finding's sentence ends in its own full stop.
            while why.hasSuffix(".") { why.removeLast() }
            throw HealthCardError(
                .configuration,
                "\(ControlCharacters.escaped(card)): \(why). \(made); check it with `healthcards verify --jwks \(keys) \(card)`")
        }
    }

    /// Reads a passcode: a file only its owner can read (its first line), or standard input (`-`; on a
    /// terminal asked for twice without echo). Never an argument or the environment.
    static func passcode(_ source: String) throws -> SecretBytes {
        var secret: SecretBytes
        if source == "-" {
            if isatty(0) == 1 {
                let first = try promptHidden("Passcode for the link: ")
                let again = try promptHidden("The same passcode again: ")
                let same = first.withUnsafeBytes { a in again.withUnsafeBytes { b in a.elementsEqual(b) } }
                guard same else { throw HealthCardError(.configuration, "the two passcodes differ; nothing was made") }
                secret = first
            } else {
                secret = try SecretBytes.read(path: "/dev/stdin", maxBytes: 4096).trimmingFinalNewline()
            }
        } else {
            try FileIO.requireRegularFile(
                source, role: "passcode file", kind: .configuration,
                fix: "give the file holding the passcode (mode 0600)")
            var st = stat()
            if stat(source, &st) == 0, st.st_mode & 0o077 != 0 {
                throw HealthCardError(
                    .configuration,
                    "passcode file \(source) can be read by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))); "
                        + "a passcode must be private to its owner. Run `chmod 600 \(source)` and try again")
            }
            secret = try SecretBytes.read(path: source, maxBytes: 4096).trimmingFinalNewline()
        }
        let problem = secret.withUnsafeBytes { bytes -> String? in
            if bytes.isEmpty { return "is empty" }
            if bytes.count > PasscodeHash.maxPasscodeBytes { return "is over \(PasscodeHash.maxPasscodeBytes) bytes" }
            if bytes.contains(0) || bytes.contains(0x0A) { return "holds a NUL or more than one line" }
            if String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self) == nil { return "is not UTF-8 text" }
            return nil
        }
        if let problem {
            throw HealthCardError(.configuration, "the passcode \(problem) (receivers type it as UTF-8 text)")
        }
        return secret
    }

    /// One line from the terminal with echo off.
    static func promptHidden(_ prompt: String) throws -> SecretBytes {
        var line = prompt
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        var saved = termios()
        let hasTerminal = tcgetattr(0, &saved) == 0
        if hasTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if hasTerminal { tcsetattr(0, TCSAFLUSH, &saved) }
            _ = write(2, "\n", 1)
        }
        let capacity = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer {
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            buffer.deallocate()
        }
        var count = 0
        while count < capacity {
            var byte: UInt8 = 0
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || byte == 0x0A { break }
            buffer[count] = byte
            count += 1
        }
        if count > 0 && buffer[count - 1] == 0x0D { count -= 1 }
        return SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    static func parse(
        _ args: [String], valued: Set<String>, flags: Set<String> = [], command: String, usage: String, options: String
    )
        throws -> Arguments?
    {
        let parsed = try Arguments(args, valued: valued, flagNames: flags, command: "link \(command)")
        if parsed.has("help") {
            print("\(usage)\n\nOptions:\n\(options)\n  -h, --help            show this help")
            return nil
        }
        return parsed
    }

    // MARK: create

    static func create(_ args: [String]) throws -> ExitStatus {
        guard
            let parsed = try parse(
                args,
                valued: [
                    "db", "base-url", "passcode-file", "kdf", "max-attempts", "exp", "label", "viewer", "out", "qr",
                    "jwks",
                ],
                flags: ["long-term", "direct"], command: "create",
                usage: createUsage + """


                    Encrypts each FILE (.smart-health-card, or FHIR JSON: application/fhir+json) here with a fresh
                    32-byte key and stores only the JWEs in DB; prints the link (shlink:/…, with its key) on standard
                    output, or writes it to --out. Keep it if the link is long-term: `link update` needs it.
                    """,
                options: dbOption + "\n" + baseURLOption + "\n" + createOptions)
        else { return .ok }
        let base = try BaseURL(try parsed.required("base-url", command: "link create"))
        var options = LinkPublisher.Options()
        options.longTerm = parsed.has("long-term")
        options.direct = parsed.has("direct")
        if let text = parsed.value("exp") {
            options.exp = try TimeOption.parse("exp", text, example: Clock.nowSeconds() + 86400)
        }
        options.label = parsed.value("label")
        if let viewer = parsed.value("viewer") { options.viewer = try SHLOptions.checkViewer(viewer) }
        if let text = parsed.value("kdf") {
            guard let function = PasscodeHash.Function.parse(text) else {
                let why = PasscodeHash.Function.problem(of: text).map { ": \($0)" } ?? ""
                throw HealthCardError(
                    .configuration,
                    "--kdf \(Quote.text(text)) is not a cost this program takes\(why); give scrypt[:ln=N,r=R,p=P] (10 ≤ ln "
                        + "≤ 20, N < 2^(16·r), at most 256 MiB) or pbkdf2-sha256[:i=N] (1000 to 10000000). No link was made")
            }
            options.passcodeFunction = function
        }
        if let text = parsed.value("max-attempts") {
            guard let number = Int(text), (1...LinkPublisher.maxAttemptsLimit).contains(number) else {
                throw HealthCardError(
                    .configuration,
                    "--max-attempts \(Quote.text(text)) must be a whole number from 1 to \(LinkPublisher.maxAttemptsLimit)"
                )
            }
            options.maxAttempts = number
        }
        if parsed.value("passcode-file") == nil {
            for name in ["kdf", "max-attempts"] where parsed.value(name) != nil {
                throw HealthCardError(
                    .configuration, "--\(name) is for a passcode; give --passcode-file too, or leave it out")
            }
        }
        if options.direct && parsed.value("passcode-file") != nil {
            throw HealthCardError(
                .configuration,
                "--direct (flag U) and --passcode-file (flag P) do not go together: a U link is fetched with a plain GET"
            )
        }
        if let out = parsed.value("out"), let qr = parsed.value("qr"), out == qr || sameFile(out, qr) {
            throw HealthCardError(.configuration, "--out and --qr name the same file; give two. No link was made")
        }
        let contents = try contents(parsed.positionals, command: "create")
        if options.direct && contents.count != 1 {
            throw HealthCardError(.configuration, "--direct makes a U link: one FILE, not \(contents.count)")
        }
        try checkCards(parsed.positionals, contents, keys: parsed.value("jwks"))
        if let source = parsed.value("passcode-file") { options.passcode = try passcode(source) }
        // Where the link's text goes is checked before the link is made: made first, a link whose text cannot be
        // written would stay active with its key (never stored here) lost.
        // Never over what this command reads or keeps: the database (and its journal files), a FILE, the passcode
        // file, the keys; nor into the issuer's site folder that --jwks reads (its key set, revocation lists and
        // record; and a web root, where a link, which holds health data, must never be).
        var kept: [(what: String, path: String)] = []
        if case .sqlite(let database) = try DatabaseURL(try parsed.required("db", command: "link create")) {
            kept.append(("the link database given by --db", database))
            kept += ["-wal", "-shm", "-journal"].map { ("the link database's \($0) file", database + $0) }
        }
        kept += parsed.positionals.map { ("an input FILE", $0) }
        kept += ["passcode-file", "jwks"].compactMap { name in parsed.value(name).map { ("--\(name)", $0) } }
        // A site folder, or the site a `.well-known/jwks.json` belongs to; a key set elsewhere is one file.
        func isWellKnown(_ folder: String) -> Bool { folder == ".well-known" || folder.hasSuffix("/.well-known") }
        var site: String? = nil
        if let keys = parsed.value("jwks") {
            site = FileIO.isDirectory(keys) ? keys : nil
            if site == nil, isWellKnown(FileIO.parent(of: keys)) { site = FileIO.parent(of: FileIO.parent(of: keys)) }
            if let folder = site, isWellKnown(folder) { site = FileIO.parent(of: folder) }
        }
        var heldStreams: [Int32] = []
        defer { for fd in heldStreams { close(fd) } }
        for option in ["out", "qr"] {
            guard let path = parsed.value(option) else { continue }
            let shown = ControlCharacters.escaped(path)
            if FileIO.isDirectory(path) {
                throw HealthCardError(
                    .configuration, "--\(option) \(shown) is a folder; give the path of a file to write. No link was made")
            }
            do {
                // A FIFO (or a link to one) is opened now, before the link exists: one nothing reads is refused
                // here rather than leaving an active link whose text went nowhere. The descriptor is held until the
                // text is written, so the reader sees the whole text before its end.
                if case .stream(let stream) = try OutputTarget.resolve(path) {
                    heldStreams.append(try OutputTarget.openStream(stream, shownAs: path))
                }
            } catch let error as HealthCardError {
                throw HealthCardError(.configuration, "--\(option): \(error.text). No link was made")
            }
            if let clash = kept.first(where: { sameFile(path, $0.path) }) {
                throw HealthCardError(
                    .configuration,
                    "--\(option) \(shown) is \(clash.what), \(ControlCharacters.escaped(clash.path)): writing the link "
                        + "there would replace it; give another file. No link was made")
            }
            if let folder = site, isInside(path, folder: folder) {
                throw HealthCardError(
                    .configuration,
                    "--\(option) \(shown) is inside \(ControlCharacters.escaped(folder)), the keys' folder --jwks reads "
                        + "(a site's files are published); write the link elsewhere. No link was made")
            }
        }
        let (url, store) = try open(parsed, command: "link create", create: true)
        let created = try db(url) {
            try LinkPublisher(store: store, baseURL: base).create(contents, options: options, now: Clock.nowSeconds())
        }
        let text = created.link.text
        var qrWritten: String?
        do {
            if let qr = parsed.value("qr") {
                let png = try QRImage().png(try QRCode(link: text))
                try FileIO.writeAtomically(png, to: qr, access: .ownerOnly)
                qrWritten = qr
            }
            // Standard output is written at once and checked, as --out is: the text holds the link's only key.
            try FileIO.writeAtomically(
                Array((text + "\n").utf8), to: parsed.value("out") ?? "/dev/stdout", access: .ownerOnly)
        } catch let error as HealthCardError {
            // The link is in the database, active, and its key only in `text` (and the QR image, if written), which
            // was not written: say so, with the command to close it as it would be typed.
            let held =
                qrWritten.map { "its key is only in the QR image \(ControlCharacters.escaped($0))" }
                ?? "its key is stored nowhere"
            throw HealthCardError(
                error.kind,
                "\(error.text). The link \(created.id) was made but its text was not written, and \(held): close it "
                    + "with `healthcards link deactivate --db \(Self.shellWord(url.description)) --id \(created.id)` and make a new one")
        }
        var summary =
            "link \(created.id) made: flag \(created.link.flag ?? "none"), \(contents.count) file(s)"
            + (options.exp.map { ", expires \(Clock.describe($0))" } ?? "")
        if let cost = created.passcodeCost {
            summary +=
                ", passcode hashed with \(cost.function) in \(Int((cost.seconds * 1000).rounded())) ms "
                + "(the server takes as long for each passcode it checks), \(options.maxAttempts) wrong attempts allowed"
        }
        printError(summary + (parsed.value("out").map { "; the link is in \($0)" } ?? ""))
        return .ok
    }

    /// `text` as one shell word: as it is when it holds only characters no shell treats specially, else in single
    /// quotes (a quote inside written `'\''`).
    static func shellWord(_ text: String) -> String {
        let plain = text.unicodeScalars.allSatisfy {
            switch $0 {
            case "a"..."z", "A"..."Z", "0"..."9", "/", ".", "_", "-", "+", ":", "=", "@", "%", ",": return true
            default: return false
            }
        }
        if plain && !text.isEmpty { return text }
        return "'" + ControlCharacters.escaped(text).split(separator: "'", omittingEmptySubsequences: false)
            .joined(separator: "'\\''") + "'"
    }

    // MARK: update

    static func update(_ args: [String]) throws -> ExitStatus {
        guard
            let parsed = try parse(
                args, valued: ["db", "base-url", "link", "id", "jwks"], command: "update",
                usage: updateUsage + """


                    Replaces the files of a long-term (L) link: each FILE is encrypted here with the link's own key
                    (from its text) and a fresh IV, and the manifest's lastUpdated becomes now. The link's
                    receivers see the new content at their next request (on PostgreSQL the command returns 0.2 s
                    after its commit, when no server instance can still answer with the old content). The key is
                    checked against the stored files first: a wrong link text changes nothing.
                    """,
                options: dbOption + "\n" + baseURLOption + "\n" + updateOptions)
        else { return .ok }
        let base = try BaseURL(try parsed.required("base-url", command: "link update"))
        let source = try parsed.required("link", command: "link update")
        let raw =
            source == "-"
            ? try SecretBytes.read(path: "/dev/stdin", maxBytes: SHLinkText.maxCharacters)
            : try SecretBytes.read(path: source, maxBytes: SHLinkText.maxCharacters)
        let text = String(
            raw.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.drop { $0.isWhitespace }.reversed().drop {
                $0.isWhitespace
            }
            .reversed())
        let link: SHLink
        do throws(HealthCardError) { link = try SHLinkText.parse(text) } catch {
            throw HealthCardError(
                error.kind, "--link \(ControlCharacters.escaped(source)): \(error.text). The link was not updated", code: error.code)
        }
        if parsed.value("id") != nil {
            let id = try idOption(parsed, command: "link update")
            guard base.id(ofLink: link.url) == id else {
                throw HealthCardError(
                    .configuration, "--id \(id) is not the link in \(source) (its URL is another link's)")
            }
        }
        let contents = try contents(parsed.positionals, command: "update")
        try checkCards(parsed.positionals, contents, keys: parsed.value("jwks"), made: "The link was not updated")
        let (url, store) = try open(parsed, command: "link update", create: false)
        let publisher = LinkPublisher(store: store, baseURL: base)
        let before: StoredLink
        do {
            before = try db(url) {
                try publisher.checkBaseURL()
                return try publisher.update(link: link, contents: contents, now: Clock.nowSeconds())
            }
        } catch let error as HealthCardError where error.kind == .link {
            printError(error.message)
            return .partial
        }
        printError(
            "link \(before.id) updated: \(contents.count) file(s) (was \(before.files.count)), same key, fresh IVs")
        return .ok
    }

    // MARK: deactivate, list, audit

    static func deactivate(_ args: [String]) throws -> ExitStatus {
        guard
            let parsed = try parse(
                args, valued: ["db", "id"], command: "deactivate",
                usage: deactivateUsage + """


                    Closes a link for good: from now on it answers 404 (the same answer as an unknown link), its
                    location URLs stop working, and it cannot be opened again. Deactivating it twice changes nothing.
                    On PostgreSQL the command returns 0.2 s after its commit, when no server instance can still
                    answer from the link as it was.
                    """,
                options: dbOption
                    + "\n  --id ID               the link's id: the last part of its URL (`healthcards link list`)")
        else { return .ok }
        let id = try idOption(parsed, command: "link deactivate")
        let (url, store) = try open(parsed, command: "link deactivate", create: false)
        guard try db(url, { try store.deactivate(linkID: id, now: Clock.nowSeconds()) }) else {
            printError("there is no link \(id) in \(url)")
            return .partial
        }
        printError("link \(id) is deactivated")
        return .ok
    }

    static func list(_ args: [String]) throws -> ExitStatus {
        guard
            let parsed = try parse(
                args, valued: ["db"], flags: ["json"], command: "list",
                usage: listUsage + """


                    Lists the links in DB, oldest first: id, flags, state (active, deactivated, expired, disabled:
                    no wrong passcode left), files, wrong passcodes left, created, exp, the tag the server's log
                    names it by, label. Never a key.
                    """,
                options: dbOption + "\n  --json                one JSON object a line")
        else { return .ok }
        let (url, store) = try open(parsed, command: "link list", create: false)
        let (links, counts) = try db(url) { (try store.links(), try store.fileCounts()) }
        let now = Clock.nowSeconds()
        for link in links {
            let files = counts[link.id] ?? 0
            if parsed.has("json") {
                var object: JSONObject = [
                    "id": .string(link.id), "logTag": .string(linkTag(link.id)), "flag": .string(link.flags),
                    "state": .string(link.state(at: now).rawValue),
                    "files": .integer(Int64(files)), "created": .string(Clock.iso8601(link.createdAt)),
                    "updated": .string(Clock.iso8601(link.updatedAt)),
                ]
                if let exp = link.exp { object["exp"] = .string(Clock.iso8601(exp)) }
                if let left = link.remainingAttempts, let max = link.maxAttempts {
                    object["remainingAttempts"] = .integer(Int64(left))
                    object["maxAttempts"] = .integer(Int64(max))
                }
                if let label = link.label { object["label"] = .string(label) }
                print(JSONWriter.minifiedString(.object(object)))
            } else {
                let attempts =
                    link.remainingAttempts.map { "\($0)/\(link.maxAttempts ?? $0) attempts" } ?? "no passcode"
                let exp = link.exp.map { "exp \(Clock.describe($0))" } ?? "no exp"
                let label = link.label.map { ControlCharacters.escaped($0) } ?? ""
                print(
                    "\(link.id)  \((link.flags.isEmpty ? "-" : link.flags).padding(3))\(link.state(at: now).rawValue.padding(12))"
                        + "\(files) file(s)  \(attempts)  created \(Clock.describe(link.createdAt))  \(exp)  log \(linkTag(link.id))  "
                        + label)
            }
        }
        if !parsed.has("json") { printError("\(links.count) link(s) in \(url)") }
        return .ok
    }

    static func audit(_ args: [String]) throws -> ExitStatus {
        guard
            let parsed = try parse(
                args, valued: ["db", "id", "prune"], flags: ["json"], command: "audit",
                usage: auditUsage + """


                    Every recorded access, oldest first: time, link, kind (manifest: a manifest request; file: a
                    manifest's location fetched; direct: a U link fetched), outcome (served, wrong-passcode,
                    no-passcode, disabled, expired, deactivated, rate-limited, …), the HTTP status, and the
                    recipient as the receiver gave it (control characters shown escaped). Never a key or content.
                    With --prune DAYS, deletes the accesses older than DAYS days instead (1 to 36500; the newest
                    access is always kept) and says how many; `serve --audit-days DAYS` does it every minute.
                    """,
                options: dbOption
                    + "\n  --id ID               only this link's accesses\n  --json                one JSON object a line"
                    + "\n  --prune DAYS          delete the accesses older than DAYS days"
            )
        else { return .ok }
        if let text = parsed.value("prune") {
            guard let days = Int(text), (1...36500).contains(days) else {
                throw HealthCardError(
                    .configuration, "--prune \(Quote.text(text)) must be a whole number of days from 1 to 36500")
            }
            guard parsed.value("id") == nil, !parsed.has("json") else {
                throw HealthCardError(.configuration, "--prune deletes old accesses of every link: give it without --id and --json")
            }
            let (url, store) = try open(parsed, command: "link audit", create: false)
            let before = Clock.nowSeconds() - Int64(days) * 86400
            let pruned = try db(url) { try store.pruneAudit(before: before) }
            printError("\(pruned) access(es) older than \(days) day(s) (before \(Clock.describe(before))) deleted from \(url)")
            return .ok
        }
        let id = parsed.value("id") == nil ? nil : try idOption(parsed, command: "link audit")
        let (url, store) = try open(parsed, command: "link audit", create: false)
        let entries = try db(url) { try store.audit(linkID: id) }
        for entry in entries {
            if parsed.has("json") {
                var object: JSONObject = [
                    "time": .string(Clock.iso8601(entry.at)), "kind": .string(entry.kind),
                    "outcome": .string(entry.outcome),
                    "status": .integer(Int64(entry.status)),
                ]
                if let link = entry.linkID { object["link"] = .string(link) }
                if let recipient = entry.recipient { object["recipient"] = .string(recipient) }
                if let detail = entry.detail { object["detail"] = .string(detail) }
                if let grant = entry.grant { object["grant"] = .string(grant) }
                print(JSONWriter.minifiedString(.object(object)))
            } else {
                let recipient =
                    entry.recipient.map { Quote.text(ControlCharacters.escaped($0), limit: 200) }
                    ?? (entry.grant == nil || entry.kind == "manifest"
                        ? "(none given)"
                        : "(no record of its manifest: pruned, lost in a crash, or the location was not made by this server)")
                print(
                    "\(Clock.describe(entry.at))  \(entry.linkID ?? "-")  \(entry.kind.padding(9))\(entry.outcome.padding(15))"
                        + "\(entry.status)  \(recipient)")
            }
        }
        if !parsed.has("json") {
            printError("\(entries.count) access(es)\(id.map { " to link \($0)" } ?? "") in \(url)")
        }
        return .ok
    }
}
