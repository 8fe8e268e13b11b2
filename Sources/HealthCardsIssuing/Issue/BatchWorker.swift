import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// One record's work in a batch, handed from the reading thread to a worker.
enum BatchJob: Sendable {
    /// A patient's CSV rows, rendered by the worker.
    case rows(CSVTemplateInput.PatientRows, Template)
    /// A record read from Bundle input (or rejected while reading).
    case record(InputRecord)
    /// A line the reading thread already decided (a duplicate id); passed through in order.
    case decided(ReportLine)
}

/// What a worker made of one job: the report line, or the write failure that stops the run.
struct BatchOutcome: Sendable {
    var line: ReportLine
    /// An output file could not be written (disk full, folder not writable): the run stops.
    var failure: HealthCardError?
    /// For a card with a `vc.rid`: the person it was derived from, to find two people with one rid in a run.
    var identity: RIDOwner?
    /// The kid of a card from an earlier run that this run replaced because another key signed it.
    var replacedKid: String?
    /// The card's printed pages, for the run's combined PDF (`--pdf-combined`).
    var printed: PrintedCard?
    /// Printed cards and links beside the card that still hold the card it replaced (each warned in the line).
    var staleOutputs = 0
    /// Cards of an earlier run moved to `withdrawn/` because the person is revoked (`CardWithdrawal`).
    var withdrawn = 0
}

/// Who a rid in a run belongs to (see `RIDRegister`).
struct RIDOwner: Sendable {
    var rid: String
    /// The normalized id the rid was derived from (`PatientIdentity`).
    var ridFrom: String
    /// `PatientIdentity.fingerprint` of the card's Patient.
    var person: UInt64
}

/// The per-thread part of a batch: its own `CardIssuer` (zlib stream, signing context), turning a
/// job into files and a report line.
final class BatchWorker {
    let issuer: CardIssuer
    /// How the card's QR images are made.
    let qr: QRSettings
    let outDir: String
    let force: Bool
    /// Permission bits of the files written (health data: 0600 unless the run opted into sharing).
    let access: OutputAccess
    /// The identifier system naming the person in Bundle input (`PatientIdentity.ofBundle`), or nil.
    let patientIDSystem: String?
    /// The SMART Health Link stage (`issue --shl`), or nil (see `BatchWorker+SHL.swift`).
    var links: SHLStage?
    /// The PDF stage (`--pdf`, `--pdf-combined`); nil when nothing is printed.
    var pdf: PDFStage?
    /// The site's revocation lists (`issue --site`), or nil.
    var revocations: SiteRevocations?
    /// The issuer's site folder (`--site`), for the commands messages suggest, or nil.
    var siteRoot: String?

    /// - Parameter pdf: what to print; the worker makes its own `PDFStage` (font map, Cairo) from it.
    /// - Throws: `HealthCardError(.pdf)` when the PDF stage cannot start.
    init(issuer: CardIssuer, qr: QRSettings = QRSettings(), outDir: String, force: Bool, access: OutputAccess = .ownerOnly,
         patientIDSystem: String? = nil, pdf: PDFOptions? = nil, links: SHLStage? = nil) throws {
        self.pdf = try pdf.map { try PDFStage(options: $0, outDir: outDir, access: access) }
        self.links = links
        self.issuer = issuer
        self.qr = qr
        self.outDir = outDir
        self.force = force
        self.access = access
        self.patientIDSystem = patientIDSystem
    }

    /// Issues one job. A rejected record whose card from an earlier run is still in `cards/` gets a
    /// warning saying so: that card is left alone (nothing issued is ever deleted), but the person
    /// running the batch should know it no longer matches the input.
    func run(_ job: BatchJob) -> BatchOutcome {
        var outcome = process(job)
        if outcome.failure == nil, outcome.line.status == .rejected, let name = Self.fileName(of: job),
            !outcome.line.errors.contains(where: { $0.code == .outputSymlink || $0.code == .outputNameClash })
        {
            let cardFile = "cards/\(name).smart-health-card"
            if outcome.line.revokedOnRecord, FileIO.exists("\(outDir)/\(cardFile)") {
                // The person is revoked: the card of an earlier run must not stay among the cards to hand out.
                do {
                    let (moved, left) = try CardWithdrawal.move(CardWithdrawal.files(name: name, outDir: outDir), outDir: outDir)
                    if !moved.isEmpty {
                        outcome.withdrawn += 1
                        let link = moved.first { $0.from.hasPrefix("shl/") && $0.from.hasSuffix(".txt") }
                        outcome.line.warnings.append(
                            HealthCardError(
                                .validation, code: .cardWithdrawn, severity: .warning,
                                "\(moved.map(\.from).joined(separator: ", ")) (the card of an earlier run and its files) moved to "
                                    + "\(outDir)/\(CardWithdrawal.folder)/: the site's revocation list revokes this person, so the card "
                                    + "must not be handed out (a verifier calls it REVOKED)"
                                    + (link.map {
                                        ". Its SMART Health Link still opens it until withdrawn from site \(siteName): the link \(outDir)/\($0.to)"
                                    } ?? "")
                                    + (left.isEmpty ? "" : ". Left in place, being symbolic links this run did not make: \(left.joined(separator: ", "))"),
                                at: outcome.line.source))
                    }
                } catch let error as HealthCardError {
                    return BatchOutcome(line: outcome.line, failure: error)
                } catch {}
            } else if FileIO.exists("\(outDir)/\(cardFile)") {
                outcome.line.warnings.append(
                    HealthCardError(
                        .input, code: .cardOutdated, severity: .warning,
                        "\(cardFile) is a card from an earlier run, and this record is now rejected; it was left in place. Remove it "
                            + "(and its QR images) if it must not be handed out", at: outcome.line.source))
                if let warning = earlierLinkWarning(name: name, at: outcome.line.source) { outcome.line.warnings.append(warning) }
            }
        }
        return outcome
    }

    /// The name of a job's output files (`OutputNames`): a CSV patient's id made safe, a Bundle record's person (the
    /// name the reading thread gave it); nil for a line already decided or a record without an id.
    static func fileName(of job: BatchJob) -> String? {
        switch job {
        case .decided: return nil
        case .rows(let rows, _): return rows.id.map(OutputNames.safe)
        case .record(let record): return record.fileName ?? record.id.map(OutputNames.safe)
        }
    }

    private func process(_ job: BatchJob) -> BatchOutcome {
        // Every input reaches the issuer the same way: as a record with a checked Bundle.
        let record: CheckedRecord
        // Bundle input: the Bundle as read, whose Patient.identifier the rid comes from (minimization drops it).
        var asRead: JSONValue?
        switch job {
        case .decided(let line): return BatchOutcome(line: line)
        case .record(let read): (record, asRead) = (read.checked(now: issuer.clock.nowSeconds()), read.bundle)
        case .rows(let rows, let template): record = rows.render(template, now: issuer.clock.nowSeconds())
        }
        var line = ReportLine(source: record.source, id: record.id, status: .rejected, errors: record.errors,
                              warnings: record.warnings, files: [])
        line.profile = record.checked?.profile
        guard record.errors.isEmpty, let checked = record.checked, let id = record.id else { return BatchOutcome(line: line) }
        // The site's lists and key set as they are now (read again when one changed: a revocation or a dropped key
        // that lands while the batch runs applies to every record signed after it).
        var lists: SiteRevocations.Snapshot?
        if let revocations {
            do { lists = try revocations.current() } catch let error as HealthCardError {
                line.errors = [Self.at(record.source, error)]
                return BatchOutcome(line: line)
            } catch {}
            if lists?.signingKeyPublished == false {
                line.errors = [
                    HealthCardError(
                        .key, code: .keyDropped,
                        "not signed: the signing key \(issuer.kid) is no longer in \(revocations.site.keySetPath) (it was dropped "
                            + "from the site's key set while this run was signing), so no verifier would find it. Sign with a published key",
                        at: record.source)
                ]
                return BatchOutcome(line: line)
            }
        }
        let name = Self.fileName(of: job) ?? OutputNames.safe(id)
        let identity = ridIdentity(id: id, asRead: asRead)
        let payload = issuer.payload(for: checked, patientID: identity?.id)
        if case .none(let reason)? = identity {
            line.warnings.append(HealthCardError(.input, code: .ridNone, severity: .warning, "no vc.rid: \(reason). This card cannot be revoked by itself (only by dropping the whole key)", at: record.source))
        }
        var owner: RIDOwner?
        if let rid = payload.payload.rid, let from = identity?.id {
            line.rid = rid
            line.ridFrom = from
            owner = RIDOwner(rid: rid, ridFrom: from, person: PatientIdentity.fingerprint(ofMinimized: checked.bundle))
            // A card the site's lists already revoke would be turned away at every door: never sign it. Nor a card of a
            // person revoked under another key of the site: it would carry a rid no list names, and verify.
            if let lists, let secret = issuer.settings.ridSecret, let revocations {
                let refusal: RevocationRefusal?
                do {
                    refusal = try lists.refusal(
                        rid: rid, ridFrom: from, nbf: issuer.settings.notBefore, signingKid: issuer.kid, secret: secret,
                        site: revocations.site.root, now: issuer.clock.nowSeconds())
                } catch {
                    line.errors = [HealthCardError(.key, "cannot derive the rid of this record under the site's keys: \(error)", at: record.source)]
                    return BatchOutcome(line: line)
                }
                if let refusal {
                    line.errors = [HealthCardError(.validation, code: .ridRevoked, refusal.message, at: record.source)]
                    line.kid = issuer.kid
                    line.revokedOnRecord = true
                    line.revokedBy = refusal
                    return BatchOutcome(line: line)
                }
            }
        }
        let cardFile = "cards/\(name).smart-health-card"
        // A symbolic link at one of the record's paths was not made by any run (a run writes files): nothing is read
        // or written through it, so the file it points to is never replaced or chmodded. Looked at before anything of
        // the record is written (a link, a PDF), and again by each write (`links: .refuse`).
        let ownFiles = [cardFile] + (pdf?.options.perCard == true ? [PDFStage.file(name: name)] : []) + (links?.files(name: name) ?? [])
        if let refusal = linkedOutput(ownFiles, source: record.source) {
            line.errors = [refusal]
            return BatchOutcome(line: line)
        }
        // The card an earlier run left there, read once for the three questions asked of it below.
        let existing = try? FileIO.read("\(outDir)/\(cardFile)")
        do {
            var printed: PrintedCard?
            if !force, let existing,
                let files = try alreadyIssued(
                    payload, existing: existing, name: name, cardFile: cardFile, bundle: checked.bundle, line: &line,
                    printed: &printed)
            {
                line.status = .issued
                line.alreadyIssued = true
                line.files = files
                line.kid = issuer.kid
                return BatchOutcome(line: line, identity: owner, printed: printed)
            }
            let replacedKid = force ? nil : existing.flatMap(signedByAnotherKey)
            let previous = existing.flatMap { issuer.replacement(of: $0, by: payload) }
            let card: IssuedCard
            let images: CardImages
            do {
                card = try issuer.issue(payload)
                images = try CardImages(jws: card.jws, settings: qr)
            } catch let error as HealthCardError {
                line.errors = error.all
                return BatchOutcome(line: line)
            }
            line.warnings += (card.warnings + images.warnings).map(record.located)
            let imageFiles = Self.imageFiles(name: name, count: images.pngs.count)
            if let refusal = linkedOutput(imageFiles, source: record.source) {
                line.errors = [refusal]
                return BatchOutcome(line: line)
            }
            // Images, link and PDF first, the card last: a card file on disk means they are there too. The link
            // comes before the PDF, which prints it beside the card's QR code (or in its place).
            for (file, png) in zip(imageFiles, images.pngs) {
                try FileIO.writeAtomically(png, to: "\(outDir)/\(file)", access: access, sync: false, links: .refuse)
            }
            var notes: [HealthCardError] = []
            let fileBytes = card.fileBytes
            let linked = try link(card: fileBytes, name: name, bundle: checked.bundle, notes: &notes)
            line.warnings += notes
            let print = try pdf?.run(jws: card.jws, codes: images.codes, name: name, link: try linked?.printable())
            line.warnings += try addPDF(
                card: fileBytes, name: name, bundle: checked.bundle, linked: linked, printedFiles: print?.files ?? [])
            line.notPrinted = print?.refusal.map { Self.at(record.source, $0) }
            try FileIO.writeAtomically(fileBytes, to: "\(outDir)/\(cardFile)", access: access, sync: false, links: .refuse)
            line.status = .issued
            line.files = [cardFile] + imageFiles + (print?.files ?? []) + (linked?.files ?? [])
            line.warnings += linked?.warnings ?? []
            line.kid = issuer.kid
            var stale: [HealthCardError] = []
            if let previous {
                line.replaced = previous.reason
                line.warnings.append(replacedWarning(previous, cardFile: cardFile, line: line, source: record.source))
                stale = staleOutputs(name: name, printed: print != nil && print?.refusal == nil, linked: linked != nil || links != nil, source: record.source)
                line.warnings += stale
            }
            return BatchOutcome(
                line: line, identity: owner, replacedKid: replacedKid, printed: print?.card, staleOutputs: stale.count)
        } catch let error as HealthCardError where error.code == .outputSymlink {
            // A link that appeared at one of the record's paths after the look above: this record is not issued,
            // the run goes on (the disk is fine).
            line.errors = [Self.notIssued(Self.at(record.source, error))]
            line.files = []
            return BatchOutcome(line: line)
        } catch let error as HealthCardError {
            line.errors = [error]
            return BatchOutcome(line: line, failure: error)
        } catch {
            let failure = HealthCardError(.io, "\(error)")
            return BatchOutcome(line: line, failure: failure)
        }
    }

    /// The refusal of the first of a record's `files` (relative to `outDir`) that is a symbolic link, at `source`;
    /// nil when none is.
    private func linkedOutput(_ files: [String], source: String) -> HealthCardError? {
        for file in files {
            if let refusal = OutputTarget.linkedOutput("\(outDir)/\(file)") { return Self.notIssued(Self.at(source, refusal)) }
        }
        return nil
    }

    /// A refused record file's error, saying what became of the record.
    private static func notIssued(_ error: HealthCardError) -> HealthCardError {
        var said = error
        said.text += "; this record was not issued"
        return said
    }

    /// `error` (its code and text kept) at the record's `source`.
    private static func at(_ source: String, _ error: HealthCardError) -> HealthCardError {
        var located = error
        located.location = HealthCardError.Location(source: source)
        return located
    }

    /// The id `vc.rid` is derived from, or why there is none; nil when the run has no rid secret.
    /// CSV records: the patient id (already normalized by the reader). Bundle records: the Patient's
    /// identifier in the Bundle as read (`PatientIdentity.ofBundle`; the card itself does not carry it), never
    /// the record's `<file stem>-<n>`.
    private func ridIdentity(id: String, asRead: JSONValue?) -> PatientIdentity.Outcome? {
        guard issuer.settings.ridSecret != nil else { return nil }
        guard let asRead else { return .id(PatientIdentity.normalize(id)) }
        return PatientIdentity.ofBundle(asRead, system: patientIDSystem)
    }

    /// The kid of a card file's first JWS when another key than this run's signed it (a key rotation since it
    /// was issued), else nil.
    private func signedByAnotherKey(_ bytes: [UInt8]) -> String? {
        guard let file = try? JSONParser.parse(bytes),
            let compact = file["verifiableCredential"]?[0]?.stringValue,
            let header = try? JSONParser.parse(try JWS(compact: compact).parts().header),
            let kid = header["kid"]?.stringValue, kid != issuer.kid
        else { return nil }
        return kid
    }

    /// The report's word on a card that replaced a different card of this key: why, and that the old card stays
    /// valid until it is revoked (with the command, when the card has a rid).
    private func replacedWarning(
        _ previous: (reason: ReportLine.Replacement, nbf: Int64?), cardFile: String, line: ReportLine, source: String
    ) -> HealthCardError {
        let old = "the card of an earlier run" + (previous.nbf.map { " (nbf \($0))" } ?? "")
        let why =
            previous.reason == .recordChanged
            ? "because its record changed" : "because the run's options changed (iss, exp, vc.type or vc.rid), not the record"
        let nbf = issuer.settings.notBefore
        let revoke =
            line.rid != nil && line.ridFrom != nil
            ? "revoke in site \(siteName) the cards of patient id '\(line.ridFrom ?? "")' issued before \(nbf) (this one's nbf), "
                + "with the signing key, the revocation secret and the report \(outDir)/report.ndjson"
            : "it has no vc.rid, so it can be revoked only with its key"
        return HealthCardError(
            .input, code: .cardReplaced, severity: .warning,
            "\(cardFile) replaced \(old) \(why). The old card stays valid (anyone holding it can still show it) unless "
                + "revoked: \(revoke)", at: source)
    }

    /// Warnings for the outputs beside a replaced card that this run did not rewrite and that still hold the old
    /// card: `pdf/<name>.pdf` (no `--pdf` this run) and the link `shl/<name>.txt` (no `--shl`), whose file in the
    /// site is the old card encrypted.
    private func staleOutputs(name: String, printed: Bool, linked: Bool, source: String) -> [HealthCardError] {
        var warnings: [HealthCardError] = []
        let pdfFile = "pdf/\(name).pdf"
        if !printed || pdf?.options.perCard != true, FileIO.exists("\(outDir)/\(pdfFile)") {
            warnings.append(
                HealthCardError(
                    .input, code: .outputStale, severity: .warning,
                    "\(pdfFile) still shows the replaced card; print \(outDir)/cards/\(name).smart-health-card again into \(outDir)/pdf "
                        + "(with the site's key set, and the print options of the first run)",
                    at: source))
        }
        let linkFile = "shl/\(name).txt"
        if !linked, FileIO.exists("\(outDir)/\(linkFile)"), !SHLWithdrawalRecord.isWithdrawn(outDir: outDir, name: name) {
            let text = String(decoding: (try? FileIO.read("\(outDir)/\(linkFile)")) ?? [], as: UTF8.self)
            let base = (try? SHLinkText.parse(text.trimmingCharacters(in: "\r\n"))).map { FileIO.parent(of: $0.url) } ?? "BASE_URL"
            warnings.append(
                HealthCardError(
                    .link, code: .outputStale, severity: .warning,
                    "\(linkFile) is the SMART Health Link of the replaced card: its file in the site still holds that card. "
                        + "Encrypt the new card under the same link (same key and URL, so the link handed out opens it): "
                        + "make the link of \(outDir)/cards/\(name).smart-health-card again with base URL \(base) into site \(siteName), then "
                        + "deploy the site (or withdraw the link \(outDir)/\(linkFile) from site \(siteName))",
                    at: source))
        }
        return warnings
    }

    /// The report's word on `pdf/<name>.pdf` printed again without the card's link (`alreadyIssued`): the earlier
    /// PDF showed a link that this run found withdrawn or gone from the site.
    private func reprintedWithoutLink(name: String, source: String) -> HealthCardError {
        let textFile = "shl/\(name).txt"
        let why =
            SHLWithdrawalRecord.isWithdrawn(outDir: outDir, name: name)
            ? "was withdrawn" + (SHLWithdrawalRecord.withdrawnAt(outDir: outDir, name: name).map { " on \(Clock.describe($0))" } ?? "")
                + " (\(SHLWithdrawalRecord.path(outDir: outDir, name: name)))"
            : "gets no link in this run (see the warning above)"
        return HealthCardError(
            .link, code: .pdfReprintedWithoutLink, severity: .warning,
            "pdf/\(name).pdf was printed again, without a SMART Health Link: the link \(textFile) \(why), and the earlier "
                + "PDF was not that page (it showed the link's QR code, which opens nothing, or was printed with other options). "
                + "The card's own QR code is unchanged; discard paper copies of the earlier PDF and hand out this one", at: source)
    }

    /// The site folder of the run (`--site`) for the commands messages suggest, or `SITE`.
    private var siteName: String { siteRoot ?? "SITE" }

    /// The `nbf` of a card's JWS (whole seconds, `CardIssuer.notBefore`), or nil when it cannot be read.
    static func notBefore(of jws: JWS) -> Int64? {
        guard let parts = try? jws.parts(), let payload = try? RawInflate.inflate(parts.payload),
            let json = try? JSONParser.parse(payload)
        else { return nil }
        return CardIssuer.notBefore(of: json)
    }

    /// `qr/<name>.png`, or `qr/<name>-<c>.png` per chunk.
    static func imageFiles(name: String, count: Int) -> [String] {
        count == 1 ? ["qr/\(name).png"] : (0..<count).map { "qr/\(name)-\($0 + 1).png" }
    }

    /// When `cards/<name>.smart-health-card` is already the card for this payload (see
    /// `CardIssuer.existingCard`), makes sure its images are there and whole (they are
    /// deterministic: rewritten when missing or different), keeps or makes its link (`--shl`), and returns
    /// the record's files. Returns nil when the record must be issued. A missing PDF is printed; an existing
    /// one is kept, unless this run made the card a new link (the old page would show no link, or a dead one).
    /// - Parameter bytes: the file's bytes as read (a card file over `InputBudget.cardFileBytes` is no card of ours).
    private func alreadyIssued(_ payload: CardPayload, existing bytes: [UInt8], name: String, cardFile: String,
                               bundle: JSONValue, line: inout ReportLine, printed: inout PrintedCard?) throws -> [String]? {
        guard payload.errors.isEmpty, bytes.count <= InputBudget.cardFileBytes,
            let jws = issuer.existingCard(bytes, matches: payload)
        else { return nil }
        // The card there may be one the site's list revokes (issued before a revocation): then it is replaced.
        if let rid = payload.payload.rid, let list = try revocations?.current().list(kid: issuer.kid), let nbf = Self.notBefore(of: jws),
            let entry = list.entry(revoking: rid, nbf: nbf)
        {
            line.warnings.append(
                HealthCardError(
                    .validation,
                    "\(cardFile) (nbf \(nbf)) is revoked by the entry '\(entry.text)' in \(list.location); this run issued a new "
                        + "card (nbf \(issuer.settings.notBefore)) in its place: hand it out"))
            return nil
        }
        guard let images = try? CardImages(jws: jws, settings: qr) else { return nil }
        let files = Self.imageFiles(name: name, count: images.pngs.count)
        for (file, png) in zip(files, images.pngs) {
            let imagePath = "\(outDir)/\(file)"
            if (try? FileIO.read(imagePath, maxBytes: InputBudget.imageFileBytes)) != png {
                try FileIO.writeAtomically(png, to: imagePath, access: access, sync: false, links: .refuse)
            }
        }
        line.warnings += payload.warnings + images.warnings
        var notes: [HealthCardError] = []
        let linked = try link(card: bytes, name: name, bundle: bundle, notes: &notes)
        line.warnings += notes
        // A card this run gives no link (withdrawn, or its file gone from the site) may have a PDF of an earlier run
        // that prints that link: a person handed it would scan a link that opens nothing. Print it again without.
        let linkGone = linked == nil && (links != nil || SHLWithdrawalRecord.isWithdrawn(outDir: outDir, name: name))
        let print = try pdf?.run(
            jws: jws, codes: images.codes, name: name, link: try linked?.printable(),
            keepExisting: !(linked?.textChanged ?? false), keepIfSame: linkGone)
        if print?.replaced == true { line.warnings.append(reprintedWithoutLink(name: name, source: line.source)) }
        line.warnings += try addPDF(card: bytes, name: name, bundle: bundle, linked: linked, printedFiles: print?.files ?? [])
        printed = print?.card
        line.notPrinted = print?.refusal.map { Self.at(line.source, $0) }
        line.warnings += linked?.warnings ?? []
        return [cardFile] + files + (print?.files ?? []) + (linked?.files ?? [])
    }
}
