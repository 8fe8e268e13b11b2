import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// The SMART Health Link stage of `issue --shl` and `healthcards shl`: for each card, a link from the issuer's
/// static host (flag `U`: one encrypted file fetched with GET).
///
/// For a card written as `OUT/cards/<name>.smart-health-card` it writes, in this order:
/// 1. `SITE/<folder>/<43 random characters>`: the card file encrypted as a compact JWE (`JWE`) with a fresh
///    32-byte key and a fresh IV, mode 0644 (the web server reads it; it is useless without the key, and its
///    name says nothing about the person);
/// 2. `OUT/shl/<name>.png`: the link's QR code (ECC M), mode 0600;
/// 3. `OUT/shl/<name>.txt`: the link text and a newline, mode 0600 (the key in it opens the card), last, so a
///    link text on disk means its file and image are there.
///
/// Run again for the same name (a resumed or repeated run, or a reissued card), it keeps the link already
/// handed out: when `OUT/shl/<name>.txt` holds a link into this folder whose file is there, the file is left
/// as it is if it decrypts to this card, or else encrypted again with the **same key and a fresh IV** (the
/// IG's "update shared files"). A link text is never overwritten while its file may still be live:
/// - withdrawn (`revoke --link` left `OUT/shl/<name>.withdrawn`): no new link, unless `options.renew` names it;
/// - its file is not in this site (withdrawn, or made into another copy of the site): no new link, the text is
///   kept, unless `options.renew` names it; a link text of another folder of the site whose file is there is
///   kept as it is;
/// - the links of `OUT` were made into another site folder that still exists (`SHLSiteRecord`): `prepare`
///   refuses the run.
public struct SHLStage: Sendable {
    public let destination: SHLDestination
    public let options: SHLOptions
    /// The folder holding `shl/<name>.txt` and `.png` (the run's `--out`).
    public let outDir: String
    /// Permission bits of the link text and image (health data: 0600 unless the run shares its output).
    public let access: OutputAccess

    /// Takes the site's lock around each write into the site (`SiteWriteGate`); nil when the caller holds it.
    package var siteGate: SiteWriteGate?

    public init(destination: SHLDestination, options: SHLOptions, outDir: String, access: OutputAccess = .ownerOnly) {
        self.destination = destination
        self.options = options
        self.outDir = outDir
        self.access = access
    }

    /// `OUT/shl`.
    public var linkFolder: String { outDir + "/shl" }

    /// The files of a link, relative to `outDir`: `shl/<name>.txt`, and `shl/<name>.png` with QR output.
    public func files(name: String) -> [String] {
        ["shl/\(name).txt"] + (options.makeQR ? ["shl/\(name).png"] : [])
    }

    /// What `link` did for one card.
    public struct Outcome: Sendable {
        /// The link (its `text` holds the key: never log it).
        public var link: SHLink
        /// The link's QR image (PNG), when QR output is on: what a printed card shows beside the card's own QR.
        public var png: [UInt8]?
        /// Files written or kept under `outDir` (`files(name:)`).
        public var files: [String]
        /// The encrypted file, relative to the site folder (e.g. `shl/Xb3…`).
        public var siteFile: String
        /// Why an earlier link was replaced or updated, for the report.
        public var warnings: [HealthCardError] = []
        /// Whether `shl/<name>.txt` was written by this call: a new link, or one that replaced another (false
        /// when the link already handed out was kept). Something printed with the old text is then stale.
        public var textChanged = false
        /// Whether the link's encrypted file in the site was written by this call (new, or its content changed); false
        /// when the file was left as it was.
        public var fileChanged = false
    }

    /// Checks, before a run writes anything, that the link folders can be written, and removes temporary files
    /// left by killed runs in both.
    /// - Throws: `HealthCardError(.io)` naming the folder; `.configuration` when the links of `outDir` were made into
    ///   another site folder that still exists (`SHLSiteRecord`).
    public func prepare() throws {
        try SHLSiteRecord.check(
            linkFolder: linkFolder, site: destination.site.site.root,
            what: "nothing was written (a run into this site would take every link for withdrawn)")
        try FileIO.checkWritableFolder(destination.folder, mode: OutputAccess.published.folderMode)
        try FileIO.checkWritableFolder(linkFolder, mode: access.folderMode)
        FileIO.removeStaleTemporaries(in: destination.folder)
        FileIO.removeStaleTemporaries(in: linkFolder)
    }

    /// Flushes the site folder's file system to disk at the end of a run (the run's own `syncFileSystem`
    /// covers `outDir`, which may be on another disk).
    public func finish() throws { try FileIO.syncFileSystem(destination.folder) }

    /// Makes (or keeps, or updates) the link of one card.
    /// - Parameters:
    ///   - card: the `.smart-health-card` file's bytes, exactly as handed out.
    ///   - name: the record's file name (`OutputNames.safe(id)`), for `shl/<name>.txt`.
    ///   - bundle: the card's Bundle, for a label with `{name}`.
    ///   - sync: flush each file to disk before renaming it (a batch passes false and calls `finish`).
    ///   - notes: receives why no link was made (withdrawn, or a link text that must not be overwritten).
    /// - Returns: the link, or nil when none was made (`notes` says why).
    /// - Throws: `HealthCardError(.io)` when a file cannot be written (`code: .outputSymlink`, before anything is
    ///   written, when the link's text or image path is a symbolic link), `.crypto` when OpenSSL fails or the
    ///   encrypted file does not decrypt back to the card, `.qr`/`.png` for the image.
    ///   - pdf: the printed card, which a Bundle link (`SHLContent.bundle`) carries as a `DocumentReference`.
    ///   - provisional: the PDF is printed next (with this link on it) and `link` is called again with it: a
    ///     link file already there is kept as it is for now, and a new one is written without the PDF.
    public func link(
        card: [UInt8], name: String, bundle: JSONValue?, pdf: [UInt8]? = nil, provisional: Bool = false, sync: Bool = false,
        notes: inout [HealthCardError]
    ) throws -> Outcome? {
        let textFile = "shl/\(name).txt"
        let textPath = outDir + "/" + textFile
        // A symbolic link at the link's text or image path was made by someone else: refused before the site is
        // touched, so no link is made whose text would go nowhere (`OutputLinkRule.refuse`).
        for file in files(name: name) {
            if let refusal = OutputTarget.linkedOutput(outDir + "/" + file) { throw refusal }
        }
        let renew = options.renew.contains(name)
        var warnings: [HealthCardError] = []
        let withdrawn = SHLWithdrawalRecord.isWithdrawn(outDir: outDir, name: name)
        if withdrawn && !renew {
            let when = SHLWithdrawalRecord.withdrawnAt(outDir: outDir, name: name).map { " on \(Clock.describe($0))" } ?? ""
            notes.append(
                HealthCardError(
                    .link, code: .shlWithdrawn,
                    "no SMART Health Link: the link of this card (\(textFile)) was withdrawn\(when), and a withdrawn link "
                        + "stays withdrawn. To give the person a new link, name them among the people whose links are renewed"))
            return nil
        }
        // What the site holds is looked at and written under the site's lock, taken for this link only: a
        // `revoke --link` between the look and the write would otherwise be undone by it.
        func write(_ notes: inout [HealthCardError]) throws -> (link: SHLink, fileName: String, warnings: [HealthCardError], written: Bool)? {
            try siteSide(
                card: card, textFile: textFile, textPath: textPath, renew: renew, withdrawn: withdrawn, bundle: bundle,
                pdf: pdf, provisional: provisional, sync: sync, notes: &notes)
        }
        let written = try siteGate.map { gate in try gate.withLock { try write(&notes) } } ?? write(&notes)
        guard let (link, fileName, sideWarnings, fileWritten) = written else { return nil }
        warnings += sideWarnings
        try SHLSiteRecord.record(linkFolder: linkFolder, site: destination.site.site.root, access: access)
        var png: [UInt8]?
        if options.makeQR {
            let image = try options.qrImage.png(QRCode(link: link.text))
            try writeIfChanged(image, to: outDir + "/shl/\(name).png", sync: sync)
            png = image
        }
        let changed = try writeIfChanged(Array((link.text + "\n").utf8), to: textPath, sync: sync)
        if withdrawn { SHLWithdrawalRecord.clear(outDir: outDir, name: name) }
        return Outcome(
            link: link, png: png, files: files(name: name), siteFile: destination.relativeFolder + "/" + fileName,
            warnings: warnings, textChanged: changed, fileChanged: fileWritten)
    }

    /// The part of `link` that reads and writes the site: decides whether the card gets a link and which (the one
    /// handed out, kept, or a new one), and writes its encrypted file. Nil when no link is made (`notes` says why).
    private func siteSide(
        card: [UInt8], textFile: String, textPath: String, renew: Bool, withdrawn: Bool, bundle: JSONValue?, pdf: [UInt8]?,
        provisional: Bool, sync: Bool, notes: inout [HealthCardError]
    ) throws -> (link: SHLink, fileName: String, warnings: [HealthCardError], written: Bool)? {
        var warnings: [HealthCardError] = []
        var current: (link: SHLink, fileName: String, key: AES256Key)?
        switch existingLink(at: textPath) {
        case .none: break
        case .unreadable:
            warnings.append(
                HealthCardError(.link, "\(textFile) did not hold a SMART Health Link (unreadable); it was replaced by a new link"))
        case .elsewhere(let link, let path):
            if let path, FileIO.exists(path) {
                notes.append(
                    HealthCardError(
                        .link, code: .linkKept, severity: .warning,
                        "\(textFile) was kept as it is: it is a live link whose file \(path) is in the site, in another folder than "
                            + "\(destination.baseURL), so this run neither updated its file to this card nor made a link under "
                            + "\(destination.baseURL); run with the base URL it was made with, or withdraw it "
                            + "before making a new one"))
                return nil
            }
            guard renew else {
                notes.append(
                    HealthCardError(
                        .link, code: .shlWithdrawn,
                        "no SMART Health Link made: \(textFile) holds a link to \(link.url), whose file is not in \(destination.site.site.root) "
                            + "(withdrawn, or made into another copy of the site or for another issuer); the link text was kept. "
                            + "If it was withdrawn and the person needs a new link, name them among the people whose links are renewed"))
                return nil
            }
            warnings.append(HealthCardError(.link, "\(textFile) was replaced by a new link (renewed)"))
        case .here(let link, let fileName, let key):
            let path = destination.path(ofFile: fileName)
            if !FileIO.exists(path) {
                guard renew else {
                    notes.append(
                        HealthCardError(
                            .link, code: .shlWithdrawn,
                            "no SMART Health Link made: the file of the link in \(textFile) is not in \(destination.folder) "
                                + "(withdrawn, or the link was made into another copy of the site); the link text was kept. "
                                + "If it was withdrawn and the person needs a new link, name them among the people whose links are renewed"))
                    return nil
                }
                warnings.append(
                    HealthCardError(
                        .link,
                        "a new link replaced the withdrawn one in \(textFile) (renewed); the old link stays dead. Hand out the new one"))
            } else {
                if withdrawn {
                    // Renewal asked for a link whose file is still live: it was not withdrawn here; keep it.
                    warnings.append(
                        HealthCardError(
                            .link, code: .linkKept, severity: .warning,
                            "\(textFile) was kept, not renewed: its link is live (its file is in the site), so it was never withdrawn here"))
                }
                current = (link, fileName, key)
            }
        }
        // What the link's file holds now: an update keeps it unless this call says otherwise. A Bundle link that holds
        // the printed card (`issue --pdf --shl --shl-content bundle`) keeps it when the card is unchanged, so unchanged
        // content leaves the file as it is; with a changed card the old page (which shows the replaced card) is left out.
        var held: (contentType: String, plaintext: [UInt8])?
        if let (_, fileName, key) = current, let bytes = try? FileIO.read(destination.path(ofFile: fileName)),
            let opened = try? JWE(compact: String(decoding: bytes, as: UTF8.self)).decrypt(key: key)
        {
            held = (opened.parts.contentType ?? "", opened.plaintext)
        }
        var keptPDF = pdf
        if pdf == nil, !provisional, options.content == .bundle, let held, held.contentType == SharedBundle.contentType,
            let printed = SharedBundle.printedCard(in: held.plaintext)
        {
            if (try? options.content.fileContent(card: card, pdf: printed).bytes) == held.plaintext {
                keptPDF = printed
            } else {
                warnings.append(
                    HealthCardError(
                        .link, code: .linkUpdated, severity: .warning,
                        "the link in \(textFile) held the printed card (a DocumentReference with the PDF), which shows the card this run "
                            + "replaced: the updated Bundle leaves it out. Print the new card into the link to put it back "
                            + "(issue it again with the PDF and link options of the first run)"))
            }
        }
        let (contentType, plaintext) = try options.content.fileContent(card: card, pdf: keptPDF)
        if options.updateOnly && current == nil {
            notes.append(
                HealthCardError(
                    .link,
                    "no link updated: \(textFile) holds no live link into \(destination.folder) (an update never makes a new link)"))
            return nil
        }
        var rewrite = true
        if let (_, fileName, key) = current {
            _ = (fileName, key)
            if provisional {
                rewrite = false
            } else if let held, held.plaintext == plaintext, held.contentType == contentType {
                rewrite = false
            } else {
                warnings.append(
                    HealthCardError(
                        .link, code: .linkUpdated, severity: .warning,
                        "the link in \(textFile) now opens this run's \(options.content == .bundle ? "Bundle" : "card"): its file was "
                            + "encrypted again with the same key and a fresh IV, so the link already handed out keeps working"))
            }
        }
        let key = try current?.key ?? AES256Key.random()
        let fileName = try current?.fileName ?? SHLDestination.newFileName()
        let label = options.label.render(bundle: bundle)
        if label.shortened {
            warnings.append(
                HealthCardError(
                    .link,
                    "the link label was over \(SHLink.maxLabelCharacters) characters with the name; the name was shortened"
                ))
        }
        let link = SHLink(
            url: destination.url(ofFile: fileName), key: key.base64url, exp: options.exp,
            // A link handed out as long-term stays long-term: its receivers may poll it.
            flag: current?.link.flag?.contains("L") == true ? "LU" : options.flag,
            label: label.label, viewer: options.viewer)
        if rewrite {
            let jwe = try JWE.encrypt(plaintext, key: key, contentType: contentType, deflate: options.deflate)
            // Read back as a receiver would before anything is written: a file that does not open is never published.
            guard let back = try? jwe.decrypt(key: key), back.plaintext == plaintext else {
                throw HealthCardError(
                    .crypto, "self-check failed: the encrypted link file does not decrypt back to the card")
            }
            try FileIO.writeAtomically(
                Array(jwe.compact.utf8), to: destination.path(ofFile: fileName), access: .published, sync: sync)
        }
        return (link, fileName, warnings, rewrite)
    }

    /// What `OUT/shl/<name>.txt` holds.
    private enum Existing {
        /// No file.
        case none
        /// Not a `U` link with a usable key.
        case unreadable
        /// A link into this stage's folder.
        case here(SHLink, fileName: String, key: AES256Key)
        /// A link elsewhere: another folder of this site (its file's path), or not in this site at all (nil).
        case elsewhere(SHLink, path: String?)
    }

    /// The link in `path`, and where its file is.
    private func existingLink(at path: String) -> Existing {
        guard FileIO.exists(path) else { return .none }
        let text = String(decoding: (try? FileIO.read(path)) ?? [], as: UTF8.self).trimmingCharacters(in: "\r\n")
        guard let link = try? SHLinkText.parse(text), link.flag?.contains("U") == true,
            let key = AES256Key.decode(base64url: link.key)
        else { return .unreadable }
        guard let local = destination.site.localPath(forURL: link.url) else { return .elsewhere(link, path: nil) }
        guard FileIO.parent(of: local) == destination.folder, SHLDestination.isFileName(FileIO.basename(local)) else {
            return .elsewhere(link, path: local)
        }
        return .here(link, fileName: FileIO.basename(local), key: key)
    }

    /// Writes `bytes` unless `path` holds them already; returns whether it wrote.
    @discardableResult
    private func writeIfChanged(_ bytes: [UInt8], to path: String, sync: Bool) throws -> Bool {
        // A record's link file: a symbolic link there was made by someone else, and is never read or written through.
        if let refusal = OutputTarget.linkedOutput(path) { throw refusal }
        if (try? FileIO.read(path)) == bytes { return false }
        try FileIO.writeAtomically(bytes, to: path, access: access, sync: sync, links: .refuse)
        return true
    }
}
