import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading

/// `healthcards verify` over files and folders: reads cards, JWS texts, QR texts and images, key sets and
/// folders of them, and reports every problem with a stable code (`RuleCode`). A thin layer over the bytes
/// API (`HealthCardVerifier`, `TrustStore`): this type reads files (never FIFOs or devices), walks folders,
/// reads site records and the revocation lists beside key set files, and keeps what one run needs (files
/// visited, link IVs, the findings listed); every check on the bytes is the Verify layer's.
///
/// One choice is this walker's own, not the library's: a key set file given without an issuer (no site
/// record, no `ISSUER_URL=`), when it is the only one, stands for the issuer of every card
/// (`standInKeySet`; the command line says so in its summary). The bytes API binds every key set to an issuer.
public final class FileVerifier {
    /// The checks on bytes, with the trust store built from the `--jwks` key sets.
    public let verifier: HealthCardVerifier
    /// Reports of the `--jwks` key sets themselves.
    public var keySetReports: [CredentialReport] { verifier.trustStore.keySets }
    /// The time `nbf`, `exp` and clinical dates are judged against, in seconds since the epoch.
    public let now: Int64
    /// The `--jwks` key set files, in the order given.
    public var keySetFiles: [String] { verifier.trustStore.ring.sets.map(\.file) }
    /// The key set file that stood for every card's issuer (one unbound key set given alone), or nil.
    public var standInKeySet: String? { verifier.trustStore.ring.standIn?.file }
    /// Identities (`FileIO.identity`) of the `--jwks` key set files.
    private let givenKeySets: Set<String>
    /// Identities of the files and folders already visited in this `verify` call.
    private var visited: Set<String> = []
    /// Key set files met among the PATHs that were already checked as `--jwks` (so not reported again).
    private var skippedKeySets = 0
    /// The `--shl-site` folders: a SMART Health Link whose URL lies under one's issuer is opened from it.
    public let linkSites: [PublishedSite]
    /// The IVs of the link files opened in this `verify` call (`SHLCheck.IVRegister`).
    private var linkIVs = SHLCheck.IVRegister()
    /// The findings listed in this `verify` call, against `VerifyLimits.findingsPerRun`.
    private var ledger: FindingLedger
    /// What the last `verify` call's folder walks left unread, in walk order: FIFOs, sockets and devices,
    /// and symbolic links to folders outside the folder walked (`walk`). Each with what it is.
    public private(set) var skipped: [(path: String, what: String)] = []

    private var limits: VerifyLimits { verifier.limits }

    /// Loads key sets.
    /// - Parameter keySets: `--jwks` arguments (`KeySetArgument`): a `jwks.json` file, a folder holding
    ///   `.well-known/jwks.json` (or `jwks.json`), or either as `ISSUER_URL=PATH`. A site folder (or its
    ///   `.well-known/jwks.json`) with a `healthcards-site.json` record is bound to the recorded issuer. The
    ///   revocation lists `crl/<kid>.json` beside each key set file are read with it.
    /// - Parameter linkSites: `--shl-site` folders (`PublishedSite`): site folders holding SMART Health Link
    ///   files, standing offline for the hosts of their issuer URLs.
    /// - Parameter limits: what a run reads and lists at most (`VerifyLimits`; default `InputBudget`'s).
    /// - Parameter killTheClipboard: also judge links against the CMS Kill the Clipboard profile (`SHL_KTC`).
    /// - Parameter directory: a verified VCI directory whose issuers are trusted too (`TrustStore.add(directory:…)`),
    ///   and whether its certificate was pinned.
    /// - Parameter maxKeyAge: the age, in seconds, a directory's keys may have before they are stale.
    /// - Throws: `HealthCardError(.configuration)` for a path that does not exist, a URL without `=PATH`, a key set
    ///   given twice, a malformed site record, `URL=SITE` whose site records another issuer, or a link site
    ///   that is not a site folder with an issuer record.
    public init(
        keySets: [String], now: Int64, linkSites: [String] = [], limits: VerifyLimits = VerifyLimits(),
        killTheClipboard: Bool = false, directory: (directory: Directory, pinned: Bool)? = nil,
        maxKeyAge: Int64 = Directory.defaultMaxKeyAge
    ) throws {
        self.now = now
        self.linkSites = try linkSites.map { root in
            do { return try PublishedSite(root: root) } catch let error as HealthCardError {
                // The site was given to open links' files: its messages name it as the link site.
                guard error.setting == "site", error.text.hasPrefix("site ") else { throw error }
                var said = error
                said.text = "link " + error.text
                throw said.about("link site")
            }
        }
        var trust = TrustStore()
        // The walker's explicit choice (docs/verify.md, "Keys belong to their issuer"): one bare key set given
        // alone stands for every card's issuer. The library never makes it.
        trust.unboundStandsIn = true
        var given: [String: String] = [:]
        for argument in keySets {
            let parsed = try KeySetArgument.parse(argument)
            let file = try Self.keySetFile(parsed.path)
            let identity = FileIO.identity(file) ?? file
            if let earlier = given[identity] {
                throw HealthCardError(.configuration, "key set \(argument) is the key set \(earlier) given again; give each key set once")
                    .about("key set")
            }
            given[identity] = argument
            let (issuer, binding) = try Self.binding(of: file, folder: FileIO.isDirectory(parsed.path) ? parsed.path : nil,
                                                     argument: parsed)
            let bytes: [UInt8]
            do { bytes = try FileIO.read(file, maxBytes: limits.fileBytes) } catch {
                throw HealthCardError(.configuration, "key set \(file) cannot be read: \(error)").about("key set")
            }
            trust.add(jwks: bytes, file: file, issuer: issuer, binding: binding, crls: Self.revocationLists(besideKeySet: file, bytes, limits: limits),
                      now: now, limits: limits)
        }
        if let directory {
            trust.add(directory: directory.directory, pinned: directory.pinned, now: now, maxKeyAge: maxKeyAge, limits: limits)
        }
        self.verifier = HealthCardVerifier(trustStore: trust, limits: limits, killTheClipboard: killTheClipboard)
        self.givenKeySets = Set(given.keys)
        self.ledger = FindingLedger(limit: limits.findingsPerRun)
    }

    /// The revocation lists `crl/<kid>.json` beside a key set file, for each kid it names that can name a
    /// file (base64url only). A list that is there but cannot be read (a FIFO, over its budget, unreadable) is
    /// given as such: it revokes nothing, and the key set's report says so.
    static func revocationLists(besideKeySet file: String, _ bytes: [UInt8], limits: VerifyLimits) -> [String: CRLInput] {
        var lists: [String: CRLInput] = [:]
        for kid in KeySetCheck.fileKids(bytes) where lists[kid] == nil {
            let path = "\(FileIO.parent(of: file))/crl/\(kid).json"
            guard FileIO.exists(path) else { continue }
            do { lists[kid] = .bytes(try FileIO.read(path, maxBytes: limits.crlBytes), name: path) } catch {
                lists[kid] = .unreadable(name: path, reason: "\(error)")
            }
        }
        return lists
    }

    static func keySetFile(_ path: String) throws -> String {
        let fix = "give a jwks.json file or a site folder holding .well-known/jwks.json"
        guard FileIO.exists(path) else {
            throw HealthCardError(.configuration, "key set \(ControlCharacters.escapedValue(path)) does not exist; \(fix)").about("key set")
        }
        // A FIFO or device would wait or never end: refused by what it is, before it is opened.
        do {
            try FileIO.requireRegularFile(path, role: "key set", allowFolder: true, fix: fix)
            guard FileIO.isDirectory(path) else { return path }
            for candidate in ["\(path)/.well-known/jwks.json", "\(path)/jwks.json"] where FileIO.exists(candidate) {
                try FileIO.requireRegularFile(candidate, role: "key set", fix: fix)
                return candidate
            }
        } catch let error as HealthCardError where error.text.hasPrefix("key set ") {
            throw error.about("key set")
        }
        throw HealthCardError(.configuration, "key set \(ControlCharacters.escapedValue(path)) is a folder without .well-known/jwks.json or jwks.json")
            .about("key set")
    }

    /// The issuer a key set file belongs to: the argument's `URL=`, else the record of the site folder given
    /// (or of the site whose `.well-known/jwks.json` it is).
    /// - Throws: `HealthCardError(.configuration)` for a malformed record, or one that names another issuer than `URL=`.
    static func binding(of file: String, folder: String?, argument: KeySetArgument?) throws -> (String?, KeySetBinding) {
        let site = folder.map { IssuerSite(root: $0) } ?? IssuerSite.containing(keySet: file)
        let record = try site?.readRecord()
        if let issuer = argument?.issuer {
            if let record, record.issuer != issuer, let site {
                throw HealthCardError(
                    .configuration,
                    "key set \(issuer)=\(argument?.path ?? file): that site records the issuer \(record.issuer) (\(site.recordPath)); "
                        + "a key set belongs to one issuer. Give the key set \(argument?.path ?? file) alone, or the key set of \(issuer)"
                ).about("key set")
            }
            return (issuer, .given)
        }
        if let record, let site { return (record.issuer, .siteRecord(site.recordPath)) }
        return (nil, .unbound)
    }

    /// What a file holds, judged by its name and first bytes.
    enum Kind { case card, keySet, crl, jws, qrText, qrImage, shlink }

    /// The SMART Health Link checker with this verifier's sites, keys and time.
    var linkChecker: SHLCheck { verifier.linkChecker(now: now, files: SiteLinkFiles(sites: linkSites)) }

    /// The JWS checker with this verifier's keys, limits and time.
    var checker: JWSCheck { verifier.checker(now: now) }

    /// The report as it is kept: within the limits on findings (`VerifyLimits`).
    private func admit(_ report: CredentialReport) -> CredentialReport { ledger.admit(report, perCode: limits.findingsPerCode) }

    /// Checks every path (folders are walked, each file and folder visited once however many names lead to
    /// it: symbolic-link loops end) and returns one report per credential and key set found. When the paths
    /// hold nothing to check (e.g. an empty folder), the one report is a `NOTHING_TO_CHECK` error naming them.
    /// A PATH that is no file but SMART Health Link text (`shlink:/…`, or after a viewer URL's `#`) is checked
    /// as that link. A PATH is followed wherever its symbolic links lead; a FIFO, socket or device given as a
    /// PATH is `FILE_UNREADABLE` (never opened: it could wait forever). What walks skip is in `skipped`.
    /// - Throws: `HealthCardError(.configuration)` for a path that does not exist or is a dangling symbolic link.
    public func verify(_ paths: [String]) throws -> [CredentialReport] {
        for path in paths where !Self.isLinkText(path) {
            switch FileKind.of(path) {
            case .missing: throw HealthCardError(.configuration, "\(ControlCharacters.escapedValue(path)) does not exist")
            case .danglingLink: throw HealthCardError(.configuration, "\(ControlCharacters.escapedValue(path)) \(FileKind.of(path).phrase)")
            default: continue
            }
        }
        skippedKeySets = 0
        visited = []
        skipped = []
        linkIVs = SHLCheck.IVRegister()
        ledger = FindingLedger(limit: limits.findingsPerRun)
        var reports: [CredentialReport] = []
        var texts: [QRPiece] = []
        var images: [QRPiece] = []
        for (i, path) in paths.enumerated() {
            let kind = FileKind.of(path)
            if Self.isLinkText(path) {
                // The link text itself; its key stays out of the report (the argument is named by position).
                reports += linkChecker.check(text: path, file: "argument \(i + 1)", ivs: linkIVs)
            } else if kind == .folder {
                reports += walk(path)
            } else if kind.isSpecial {
                var report = CredentialReport(source: .unknown, file: path)
                report.findings.append(Finding(.fileUnreadable, "\(path) \(kind.phrase), not a regular file: verify reads "
                    + "files and folders only (it never opens a FIFO, socket or device, which could wait forever)",
                    at: .init(file: path)))
                reports.append(report)
            } else if firstVisit(path) {
                reports += file(path, explicit: true, texts: &texts, images: &images)
            }
        }
        reports += qrReports(texts, source: .qrText) + qrReports(images, source: .qrImage)
        if reports.isEmpty && skippedKeySets == 0 {
            var report = CredentialReport(source: .unknown, file: paths.joined(separator: ", "))
            let names = paths.map { "'\($0)'" }.joined(separator: ", ")
            report.findings.append(Finding(.nothingToCheck, "found nothing to check in \(names): no .smart-health-card file, JWS, "
                + "shc:/ QR text, PNG or JPEG QR image or jwks.json (files of other kinds are skipped when walking a folder). Give the folder or files holding the cards",
                at: .init(file: report.file)))
            reports.append(report)
        }
        return reports.map(admit)
    }

    /// True for a PATH that is no file but SMART Health Link text: it names `shlink:/` (in any case, bare or
    /// after a viewer URL). Such a PATH is checked as a link and never echoed (it holds the key).
    static func isLinkText(_ path: String) -> Bool {
        !FileIO.exists(path) && (SHLinkText.looksLikeLink(path) || path.lowercased().contains(SHLink.scheme))
    }

    /// `name` inside the folder `dir`, with one `/` between them however `dir` was written (`DIR/` given on the
    /// command line gives `DIR/file`, not `DIR//file`).
    static func join(_ dir: String, _ name: String) -> String {
        var base = Substring(dir)
        while base.count > 1, base.hasSuffix("/") { base = base.dropLast() }
        return base == "/" ? "/\(name)" : "\(base)/\(name)"
    }

    /// True the first time a file or folder (by device and inode, so through any link) is met.
    private func firstVisit(_ path: String) -> Bool {
        guard let identity = FileIO.identity(path) else { return true }  // unreadable: reported once, by its path
        return visited.insert(identity).inserted
    }

    /// Walks a folder depth first without recursion: each folder's files (QR chunks grouped within the
    /// folder), then its subfolders in name order. Like `find` without `-L`, the walk stays in the tree:
    /// a symbolic link to a folder is not followed (one to a folder inside the tree is walked under its own
    /// name; one to a folder outside it, such as `/` or `/dev`, is listed in `skipped`). A symbolic link to a
    /// file is read. FIFOs, sockets and devices are never opened (listed in `skipped`). A folder already
    /// visited is skipped, so the walk always ends.
    private func walk(_ root: String) -> [CredentialReport] {
        var reports: [CredentialReport] = []
        let rootPath = FileIO.realPath(root) ?? root
        var pending = [root]
        while let dir = pending.popLast() {
            guard firstVisit(dir) else { continue }
            var texts: [QRPiece] = []
            var images: [QRPiece] = []
            var subdirs: [String] = []
            for name in FileIO.list(dir) {
                let path = Self.join(dir, name)
                let kind = FileKind.of(path)
                if kind == .missing && name.contains("\u{FFFD}") {
                    // A name that is not UTF-8 comes back with U+FFFD in it, a path no call can open.
                    skipped.append((path, "a name that is not UTF-8 (\u{FFFD} stands for what cannot be read), so it cannot be "
                        + "opened; rename it in UTF-8 (e.g. `convmv -f latin1 -t utf8 --notest`) to check it"))
                    continue
                }
                let isLink = FileIO.linkTarget(path) != nil
                if kind == .folder && isLink {
                    let target = FileIO.realPath(path) ?? path
                    if target != rootPath && !target.hasPrefix(rootPath == "/" ? "/" : rootPath + "/") {
                        skipped.append((path, "a symbolic link to the folder \(target), outside \(root)"))
                    }
                } else if kind == .folder {
                    subdirs.append(path)
                } else if kind.isSpecial {
                    skipped.append((path, (isLink ? "a symbolic link to " : "") + kind.phrase.replacingFirst("is ", with: "")))
                } else if firstVisit(path) {
                    reports += file(path, explicit: false, texts: &texts, images: &images)
                }
            }
            reports += qrReports(texts, source: .qrText) + qrReports(images, source: .qrImage)
            pending += subdirs.reversed()
        }
        return reports
    }

    private func file(_ path: String, explicit: Bool, texts: inout [QRPiece], images: inout [QRPiece]) -> [CredentialReport] {
        let bytes: [UInt8]
        do {
            let image = Self.isImageName(path)
            bytes = try FileIO.read(path, maxBytes: image ? limits.input.imageFileBytes : limits.fileBytes)
        } catch let error as HealthCardError where error.kind == .input {
            // Over its budget: reported when it was asked for, or when its first bytes show a kind verify reads.
            guard explicit || Self.classify(path, (try? FileIO.readPrefix(path, count: 4096)) ?? [], prefixOnly: true) != nil
            else { return [] }
            var report = CredentialReport(source: .unknown, file: path)
            report.findings.append(Finding(.fileTooLarge, error.text, at: .init(file: path)))
            return [report]
        } catch {
            var report = CredentialReport(source: .unknown, file: path)
            report.findings.append(Finding(.fileUnreadable, "the file cannot be read: \(error)", at: .init(file: path)))
            return [report]
        }
        guard let kind = Self.classify(path, bytes) else {
            guard explicit else { return [] }
            var report = CredentialReport(source: .unknown, file: path)
            report.findings.append(Finding(.fileUnknownType, "not a .smart-health-card file, JWS, shc:/ QR text, PNG or JPEG QR image or jwks.json; nothing to check", at: .init(file: path)))
            return [report]
        }
        switch kind {
        case .keySet:
            guard !givenKeySets.contains(FileIO.identity(path) ?? path) else {
                skippedKeySets += 1
                return []
            }
            return keySet(path, bytes)
        case .crl:
            return revocationList(path, bytes)
        case .card:
            return CardFile.check(bytes, file: path, checker: checker)
        case .jws:
            var report = CredentialReport(source: .jws, file: path)
            let text = CardFile.cleanText(bytes, file: path, findings: &report.findings)
            checker.check(text, into: &report)
            return [report]
        case .shlink:
            // Whitespace around the link is the link checker's to trim and warn about (SHL_TEXT_WHITESPACE), as for
            // a pasted link; a BOM is the file's (FILE_BOM), and one final newline is no finding.
            var findings: [Finding] = []
            let text = CardFile.linkText(bytes, file: path, findings: &findings)
            return linkChecker.check(text: text, file: path, findings: findings, ivs: linkIVs)
        case .qrText:
            var findings: [Finding] = []
            let text = CardFile.cleanText(bytes, file: path, findings: &findings)
            var piece = QRPiece(text: Array(text.utf8), file: path)
            piece.findings = findings + piece.findings
            texts.append(piece)
            return []
        case .qrImage:
            let (pieces, links, findings) = QRImageCheck.read(image: bytes, file: path)
            var reports: [CredentialReport] = []
            if !findings.isEmpty {
                // No card symbol was read (an unreadable image, none found, or only links): the image's own findings.
                var report = CredentialReport(source: .qrImage, file: path)
                report.findings = findings
                reports.append(report)
            }
            images += pieces
            return reports + links.flatMap { symbol in
                linkChecker.check(text: symbol.text, file: path, symbol: QRImageCheck.linkSymbol(symbol), ivs: linkIVs)
            }
        }
    }

    /// A key set file met among the PATHs: checked and reported with the revocation lists beside it; its keys
    /// verify nothing in this run (only `--jwks` key sets do).
    private func keySet(_ path: String, _ bytes: [UInt8]) -> [CredentialReport] {
        var scratch = TrustStore()
        let crls = Self.revocationLists(besideKeySet: path, bytes, limits: limits)
        do {
            let (issuer, binding) = try Self.binding(of: path, folder: nil, argument: nil)
            return [scratch.add(jwks: bytes, file: path, issuer: issuer, binding: binding, crls: crls, now: now, limits: limits)]
        } catch {
            var report = scratch.add(jwks: bytes, file: path, issuer: nil, binding: .unbound, crls: crls, now: now, limits: limits)
            report.keySetBinding = nil
            report.notes = ["the site record beside it cannot be used: \(error)"]
            return [report]
        }
    }

    /// A revocation list file (`.well-known/crl/<kid>.json`, digest section 8) met as a PATH or in a walk. A list
    /// means something only with the key set it belongs to (its kid names a key, its ctr is that key's
    /// `crlVersion`, and it revokes cards verified with that key), so it is checked with that key set: the
    /// `jwks.json` beside its `crl/` folder, reported as a key set is (every list beside it read with it), with a
    /// note naming the list. A key set given as `--jwks` is already reported with its lists; one already met in
    /// this run is not reported twice. With no key set beside it: `CRL_WITHOUT_KEY_SET`, saying what the file is.
    private func revocationList(_ path: String, _ bytes: [UInt8]) -> [CredentialReport] {
        let folder = FileIO.parent(of: path)
        let keySet = Self.join(FileIO.parent(of: folder), "jwks.json")
        let list = try? JSONParser.parse(bytes)
        let kid = list?["kid"]?.stringValue.map { Quote.text($0, limit: 60) } ?? "(none)"
        let count = list?["rids"]?.arrayValue?.count ?? 0
        let what = "a revocation list (kid \(kid), ctr \(list?["ctr"]?.numberLexeme ?? "?"), \(count) "
            + "\(count == 1 ? "entry" : "entries"))"
        guard FileIO.basename(folder) == "crl", FileIO.isRegularFile(keySet) else {
            let location =
                FileIO.basename(folder) == "crl"
                ? "no key set is beside its folder (\(keySet))"
                : "it is not in the crl/ folder beside a key set, where a site publishes it (.well-known/crl/<kid>.json "
                    + "next to .well-known/jwks.json)"
            var report = CredentialReport(source: .unknown, file: path)
            report.findings.append(Finding(.crlWithoutKeySet, "\(path) is \(what). A revocation list is checked with the "
                + "key set it belongs to (its kid and ctr against the key's crlVersion), and it revokes the cards that key "
                + "verifies; \(location). Give the issuer's site folder or key set "
                + "together with the cards: their rids are then checked against this list",
                at: .init(file: path)))
            return [report]
        }
        if givenKeySets.contains(FileIO.identity(keySet) ?? keySet) {
            skippedKeySets += 1
            return []
        }
        guard firstVisit(keySet), let keySetBytes = try? FileIO.read(keySet, maxBytes: limits.fileBytes) else { return [] }
        var reports = self.keySet(keySet, keySetBytes)
        if !reports.isEmpty {
            reports[0].notes.insert("\(path) is \(what): checked with the key set it belongs to, \(keySet)", at: 0)
        }
        return reports
    }

    /// True for a JSON object shaped as a revocation list (`{"kid","method","ctr","rids"}`): `rids`, or
    /// `method` with `ctr`, and neither `keys` nor `verifiableCredential`.
    static func isRevocationList(_ json: JSONValue) -> Bool {
        guard json.objectValue != nil, json["keys"] == nil, json["verifiableCredential"] == nil else { return false }
        return json["rids"] != nil || (json["method"] != nil && json["ctr"] != nil)
    }

    private func qrReports(_ pieces: [QRPiece], source: CredentialReport.Source) -> [CredentialReport] {
        verifier.qrReports(pieces, source: source, now: now)
    }

    /// A QR image by its name: `.png`, `.jpg` or `.jpeg`, in any case (what is inside decides how it is decoded).
    static func isImageName(_ path: String) -> Bool {
        let lower = path.lowercased()
        return lower.hasSuffix(".png") || lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg")
    }

    /// - Parameter prefixOnly: `bytes` are the file's first bytes only (a file over its budget).
    static func classify(_ path: String, _ bytes: [UInt8], prefixOnly: Bool = false) -> Kind? {
        let lower = path.lowercased()
        if isImageName(lower) { return .qrImage }
        if lower.hasSuffix(".smart-health-card") { return .card }
        var body = UTF8BOM.strip(bytes)
        body = body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        if body.first == UInt8(ascii: "{") {
            if FileIO.basename(lower) == "jwks.json" { return .keySet }
            guard let json = try? JSONParser.parse(body) else {
                let start = String(decoding: body.prefix(200), as: UTF8.self)
                if start.contains("\"verifiableCredential\"") { return .card }
                return start.contains("\"keys\"") ? .keySet : nil
            }
            if json["keys"]?.arrayValue != nil { return .keySet }
            if json["verifiableCredential"] != nil { return .card }
            if Self.isRevocationList(json) { return .crl }
            // `{"keys":{}}` and the like: a malformed key set, reported as such.
            return json["keys"] != nil ? .keySet : nil
        }
        if body.count >= 4, body.prefix(4).map(QRPiece.lower) == Array("shc:".utf8) { return .qrText }
        if SHLinkText.looksLikeLink(String(decoding: body.prefix(SHLinkText.maxCharacters), as: UTF8.self)) { return .shlink }
        // A JWS: its two dots may be far apart (a large payload), so count them in the whole file (at most
        // `InputBudget.cardFileBytes`). A file cut to its first bytes for classifying still starts like one.
        if body.count > 20, body.starts(with: Array("ey".utf8)),
            prefixOnly || body.lazy.filter({ $0 == 0x2E }).count == 2
        {
            return .jws
        }
        return nil
    }
}
