/// One record's work in a batch, handed from the reading thread to a worker.
enum BatchJob {
    /// A patient's CSV rows, rendered by the worker.
    case rows(CSVTemplateInput.PatientRows, Template)
    /// A record read from Bundle input (or rejected while reading).
    case record(InputRecord)
    /// A line the reading thread already decided (a duplicate id); passed through in order.
    case decided(ReportLine)
}

/// What a worker made of one job: the report line, or the write failure that stops the run.
struct BatchOutcome {
    var line: ReportLine
    /// An output file could not be written (disk full, folder not writable): the run stops.
    var failure: HealthCardError?
    /// The card's printed pages, for the run's combined PDF (`--pdf-combined`).
    var printed: PrintedCard?
}

/// The per-thread part of a batch: its own `CardIssuer` (zlib stream, signing context), turning a
/// job into files and a report line.
final class BatchWorker {
    let issuer: CardIssuer
    let outDir: String
    let force: Bool
    /// The PDF stage (`--pdf`, `--pdf-combined`); nil when nothing is printed.
    var pdf: PDFStage?

    init(issuer: CardIssuer, outDir: String, force: Bool) {
        self.issuer = issuer
        self.outDir = outDir
        self.force = force
    }

    /// Issues one job. A rejected record whose card from an earlier run is still in `cards/` gets a
    /// warning saying so: that card is left alone (nothing issued is ever deleted), but the person
    /// running the batch should know it no longer matches the input.
    func run(_ job: BatchJob) -> BatchOutcome {
        var outcome = process(job)
        if outcome.failure == nil, outcome.line.status == .rejected, let id = outcome.line.id {
            let cardFile = "cards/\(OutputNames.safe(id)).smart-health-card"
            if FileIO.exists("\(outDir)/\(cardFile)") {
                outcome.line.warnings.append(HealthCardError(.input, "\(cardFile) is a card from an earlier run, and this record is now rejected; it was left in place. Remove it (and its QR images) if it must not be handed out", at: outcome.line.source))
            }
        }
        return outcome
    }

    private func process(_ job: BatchJob) -> BatchOutcome {
        let record: InputRecord
        switch job {
        case .decided(let line): return BatchOutcome(line: line)
        case .record(let r): record = r
        case .rows(let rows, let template): record = rows.render(template)
        }
        var line = ReportLine(source: record.source, id: record.id, status: .rejected, errors: record.errors,
                              warnings: record.warnings, files: [])
        guard record.errors.isEmpty, let bundle = record.bundle, let id = record.id else { return BatchOutcome(line: line) }
        let name = OutputNames.safe(id)
        let payload: Payload
        do { payload = try issuer.payload(for: bundle, patientID: id, minimized: record.validation != nil) } catch {
            line.errors = error.errors
            return BatchOutcome(line: line)
        }
        let payloadBytes = payload.minifiedBytes
        let cardFile = "cards/\(name).smart-health-card"
        do {
            if !force, let (files, printed) = try alreadyIssued(payload, payloadBytes, validation: record.validation, name: name, cardFile: cardFile, line: &line) {
                line.status = .issued
                line.alreadyIssued = true
                line.files = files
                return BatchOutcome(line: line, printed: printed)
            }
            let card: IssuedCard
            do { card = try issuer.issue(payload: payload, bytes: payloadBytes, validation: record.validation) } catch {
                line.errors = error.errors
                return BatchOutcome(line: line)
            }
            line.warnings += card.warnings
            // Images first, the card last: a card file on disk means its images are there too.
            let images = Self.imageFiles(name: name, count: card.pngs.count)
            for (file, png) in zip(images, card.pngs) {
                try FileIO.writeAtomically(png, to: "\(outDir)/\(file)", sync: false)
            }
            let printed = try pdf?.run(jws: card.jws, codes: card.qrCodes, name: name)
            try FileIO.writeAtomically(card.fileBytes, to: "\(outDir)/\(cardFile)", sync: false)
            line.status = .issued
            line.files = [cardFile] + images + (printed?.files ?? [])
            return BatchOutcome(line: line, printed: printed?.card)
        } catch let error as HealthCardError {
            line.errors = [error]
            return BatchOutcome(line: line, failure: error)
        } catch {
            let failure = HealthCardError(.io, "\(error)")
            return BatchOutcome(line: line, failure: failure)
        }
    }

    /// `qr/<name>.png`, or `qr/<name>-<c>.png` per chunk.
    static func imageFiles(name: String, count: Int) -> [String] {
        count == 1 ? ["qr/\(name).png"] : (0..<count).map { "qr/\(name)-\($0 + 1).png" }
    }

    /// When `cards/<name>.smart-health-card` is already the card for this payload (see
    /// `CardIssuer.existingCard`), makes sure its images are there and whole (they are
    /// deterministic: rewritten when missing or different) and returns the record's files.
    /// Returns nil when the record must be issued. A missing PDF is printed (an existing one is kept).
    private func alreadyIssued(_ payload: Payload, _ payloadBytes: [UInt8], validation: BundleValidator.Findings?, name: String,
                               cardFile: String, line: inout ReportLine) throws -> ([String], PrintedCard?)? {
        let path = "\(outDir)/\(cardFile)"
        guard FileIO.exists(path), let bytes = try? FileIO.read(path),
            let jws = issuer.existingCard(bytes, matches: payloadBytes)
        else { return nil }
        let findings = validation ?? BundleValidator.validate(payload.fhirBundle)
        guard findings.errors.isEmpty, let images = try? issuer.images(for: jws) else { return nil }
        let files = Self.imageFiles(name: name, count: images.pngs.count)
        for (file, png) in zip(files, images.pngs) {
            let imagePath = "\(outDir)/\(file)"
            if (try? FileIO.read(imagePath)) != png { try FileIO.writeAtomically(png, to: imagePath, sync: false) }
        }
        line.warnings += findings.warnings + images.warnings
        let printed = try pdf?.run(jws: jws, codes: images.codes, name: name, keepExisting: true)
        return ([cardFile] + files + (printed?.files ?? []), printed?.card)
    }
}
