import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// An input of a batch run.
public enum BatchInput: Sendable {
    /// A CSV file read with a template.
    case csv(path: String, template: Template)
    /// A `.json` (one Bundle) or `.ndjson` (one Bundle per line) file.
    case bundles(path: String)

    var path: String {
        switch self {
        case .csv(let p, _), .bundles(let p): return p
        }
    }
}

/// Runs the issuing pipeline over a batch and writes, under `outDir`:
/// `cards/<id>.smart-health-card`, `qr/<id>.png` (or `qr/<id>-<c>.png` for chunks) and
/// `report.ndjson` (one line per input record, in input order).
///
/// - Every file is written to a temporary name and renamed into place; images before the card, so
///   a card file means its images are there. Files are not synced one by one: the file system is
///   flushed once at the end (`syncfs`) and when the run stops.
/// - Records are issued by `jobs` worker threads, each with its own `CardIssuer`; the report is
///   written in input order, and the results are those of one job except for the signatures.
/// - Run again with the same arguments after a crash or a kill: temporary files of dead runs are
///   removed, a record whose card is already there (it verifies with this key and was made from the
///   same record, `CardIssuer.existingCard`) is skipped and reported `alreadyIssued`, and the
///   rest is issued. `force` reissues everything.
/// - A `StopRequest` (set from a signal handler) stops the run it was given to cleanly: cards being
///   made are finished, the rest are not started, the report of the records done is written.
/// - A record that cannot be judged is rejected with its reason; only an output that cannot be written
///   stops the run. So a run always finishes, and running it again finishes what a stop left.
/// - Threads: each worker owns its `CardIssuer` (handed over once, `Handoff`); the reading thread and
///   the workers exchange only `Sendable` jobs and results (`BatchPipe`); a key held in a PKCS#11 token
///   is used by one thread at a time whatever `jobs` is (`P256Key` serialises its use).
public final class BatchIssuer {
    public let outDir: String
    /// Worker threads.
    public let jobs: Int
    /// Reissue records whose card is already in `outDir`.
    public var force = false
    /// Permission bits of what the run writes: owner only (0600 files, 0700 folders) unless the
    /// operator opts into sharing a hand-off folder (`issue --share group|world`).
    public var access: OutputAccess = .ownerOnly
    /// For Bundle input: the `Patient.identifier` system whose value identifies the person, for
    /// `vc.rid` (`PatientIdentity.ofBundle`); nil takes the Patient's only identifier.
    public var patientIDSystem: String?
    /// The SMART Health Link stage (`issue --shl`): every card also gets a link; nil for none.
    public var links: SHLStage?
    /// The revocation list the site publishes for the signing key (`issue --site`): a record whose rid it
    /// revokes for this run's `nbf` is rejected before signing; nil when there is none to check.
    public var revocations: SiteRevocations?
    /// The issuer's site folder (`issue --site`), for the commands the report's messages suggest; nil for none.
    public var siteRoot: String?
    /// How each card's QR images are made (`qr/`).
    public var qr = QRSettings()
    /// Issue only the records of this shard of the batch (`Shard`, docs/scale.md), and write `shard.json`
    /// (`ShardManifest`) beside the report, whose lines then say their place in the whole batch (`record`);
    /// nil issues every record.
    public var shard: Shard?
    /// The budgets inputs are read within (rows, record and Bundle sizes, input held in flight).
    public var limits = InputLimits.standard
    /// Printed cards: `pdf/<id>.pdf` and/or one combined PDF (nil: none).
    public var pdf: PDFOptions?
    /// Pages written to the combined PDF by the last run (`pdf.combinedPath`).
    public private(set) var combinedPages = 0
    /// How the report says an error's message: the library's `message` unless a program adds its own words
    /// (the command line appends its hint for the rule code).
    public var sayMessage: @Sendable (HealthCardError) -> String = { $0.message }
    /// Where the run's log records go (`batch.file-rejected`, `batch.record-rejected` with the codes only,
    /// `batch.finished` with the counts): never a record's values.
    public var logger: any HealthCardsLogger = NoLogger()
    /// Called on the calling thread after each record with (records done, records in the input).
    public var progress: ((Int, Int) -> Void)?
    /// Called with a sentence for the operator while the run waits (for the site's lock, `SiteLock`); from any thread.
    public var notice: (@Sendable (String) -> Void)?
    /// Where to write every rejected row as CSV (`RejectedRow.csvLine`: file, line, column, code, reason, no patient
    /// data), through the output-target rule like the report; nil writes none.
    public var rejectedRowsPath: String?
    /// What messages call the file at `rejectedRowsPath` before its path, e.g. when it cannot be written: by default
    /// "the rejected-rows file"; a program names it as its users give it.
    public var rejectedRowsName = "the rejected-rows file"
    /// How many rejected rows `BatchSummary.rejectedSample` keeps.
    public var rejectedSampleSize = 20
    /// Where each run's report lines are kept after the next run replaces `report.ndjson` (`IssuanceLog`): by
    /// default `OUT/issuance-log.ndjson` (`FileIssuanceLog`, with the run's file mode); nil keeps none.
    public var issuanceLog: (any IssuanceLog)?
    /// Called once for each input file that cannot be used at all (not UTF-8, broken quoting, a missing
    /// column, no rows): its path and why. The file's one report line says the same.
    public var fileRejected: ((String, HealthCardError) -> Void)?
    private let makeIssuer: () throws -> CardIssuer

    /// The number of processors online: the default `jobs`.
    public static func activeCores() -> Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// - Parameters:
    ///   - jobs: worker threads (at least 1).
    ///   - makeIssuer: makes one `CardIssuer` per worker (each owns a zlib stream and a signing context).
    public init(outDir: String, jobs: Int = 1, makeIssuer: @escaping () throws -> CardIssuer) {
        self.outDir = outDir
        self.jobs = max(1, jobs)
        self.makeIssuer = makeIssuer
        self.issuanceLog = FileIssuanceLog(outDir: outDir)
    }

    /// One worker using `issuer`.
    public convenience init(issuer: CardIssuer, outDir: String) {
        self.init(outDir: outDir, jobs: 1, makeIssuer: { issuer })
    }

    /// An input opened for reading: a CSV index, a Bundle reader, or the record saying why it cannot be read.
    private enum Opened {
        case csv(CSVTemplateInput, Template)
        case bundles(BundleInput.Reader)
        case rejected(InputRecord)
    }

    /// Issues every record of `inputs` and writes the report.
    /// - Parameter stop: asks this run to stop (e.g. from a SIGINT handler); each run has its own unless
    ///   the caller shares one.
    /// - Returns: the counts; `interruptedBy` is non-zero when a signal stopped the run.
    /// - Throws: `HealthCardError(.io)` when an output cannot be written: checked before the first
    ///   card (the output folders get a probe file, and `report.ndjson` must not be a folder), so
    ///   usually nothing is written; in the middle of the run, it stops, the report of the records
    ///   done so far is written if it can be, and files already written stay whole.
    ///   `HealthCardError(.input)` when a CSV file changes while the run reads it back to compare the
    ///   patient ids found in several files (nothing is issued then). `HealthCardError(.configuration)`, with
    ///   nothing written, when `outDir` is inside a published site (`IssuerSite.enclosingSite`),
    ///   another process is issuing into it (`OutputLock`), or, with links, another command has been writing
    ///   the site for longer than `SiteLock.defaultWait`.
    public func run(_ inputs: [BatchInput], stop: StopRequest = StopRequest()) throws -> BatchSummary {
        let start = Clock.monotonicSeconds()
        var summary = BatchSummary()
        try IssuerSite.refuseHealthDataInside(outDir)
        // With links, the site's lock is taken for each link file written into the site, not for the run
        // (`SiteWriteGate`): an urgent `revoke` or `site --drop-kid` waits for one write, never for the batch.
        if var stage = links, stage.siteGate == nil {
            stage.siteGate = SiteWriteGate(root: stage.destination.site.site.root, notice: notice)
            links = stage
        }
        // Each worker's issuer (zlib stream, signing context) and PDF stage are made here, so a key that
        // cannot sign stops the run before anything is written, then handed to the one thread that uses them.
        var workers: [Handoff<BatchWorker>] = []
        var run = IssuanceRun(id: IssuanceRun.newID(), started: 0, issuer: "", kid: "")
        var manifestIssuer: (issuer: String, kid: String, nbf: Int64)?  // for shard.json
        for _ in 0..<jobs {
            let issuer = try makeIssuer()
            if workers.isEmpty { (run.started, run.issuer, run.kid) = (issuer.clock.nowSeconds(), issuer.settings.issuer, issuer.kid) }
            if manifestIssuer == nil { manifestIssuer = (issuer.settings.issuer, issuer.kid, issuer.settings.notBefore) }
            let worker = try BatchWorker(issuer: issuer, qr: qr, outDir: outDir, force: force, access: access,
                                         patientIDSystem: patientIDSystem, pdf: pdf, links: links)
            worker.revocations = revocations
            worker.siteRoot = siteRoot
            workers.append(Handoff(worker))
        }
        try ReportWriter.checkTarget("\(outDir)/report.ndjson")
        if let rejectedRowsPath { try ReportWriter.checkTarget(rejectedRowsPath, name: rejectedRowsName) }
        if let log = issuanceLog as? FileIssuanceLog { try log.checkTarget() }
        try FileIO.checkWritableFolder(outDir, mode: access.folderMode)
        try FileIO.checkWritableFolder("\(outDir)/cards", mode: access.folderMode)
        if qr.makeQR { try FileIO.checkWritableFolder("\(outDir)/qr", mode: access.folderMode) }
        let lock = try OutputLock(folder: outDir, mode: access.fileMode)
        defer { withExtendedLifetime(lock) {} }
        // After the lock of OUT: a run refused because another holds OUT makes no link folder. Preparing the link
        // folder in the site (and clearing what killed runs left there) is a write into the site.
        if let links {
            try links.siteGate.map { gate in try gate.withLock { try links.prepare() } } ?? links.prepare()
        }
        // The PDF folder and the combined PDF's temporary file too.
        let combined = try preparePDF()
        for folder in [outDir, "\(outDir)/cards", "\(outDir)/qr"] {
            summary.leftoversRemoved += FileIO.removeStaleTemporaries(in: folder).count
        }
        // A report that is a link to a file elsewhere is replaced there, where a killed run left its temporary.
        if case .file(let file)? = try? OutputTarget.resolve("\(outDir)/report.ndjson"), FileIO.parent(of: file) != outDir {
            summary.leftoversRemoved +=
                FileIO.removeStaleTemporaries(in: FileIO.parent(of: file), of: FileIO.basename(file)).count
        }
        let report = try ReportWriter(path: "\(outDir)/report.ndjson", access: access)
        let rejectedFile = try rejectedRowsPath.map { path in
            let writer = try ReportWriter(path: path, access: access, name: rejectedRowsName)
            try writer.append(Array((RejectedRow.csvHeader + "\n").utf8))
            return writer
        }
        // The run's report lines are also appended to the issuance log, which keeps every run's (the file takes the
        // run's mode; with the default log, `access` is only known now).
        if let log = issuanceLog as? FileIssuanceLog, log.access != access {
            issuanceLog = FileIssuanceLog(path: log.path, access: access)
        }
        let runLog = try issuanceLog.map { log in try log.begin(run) }

        var opened: [Opened] = []
        var refusedCSV: [(path: String, patients: Set<UInt64>)] = []
        var manifestInputs: [ShardManifest.Input] = []
        for input in inputs {
            let totalBefore = summary.total
            defer { manifestInputs.append(.init(path: input.path, bytes: FileIO.size(input.path) ?? 0, records: summary.total - totalBefore)) }
            do {
                switch input {
                case .csv(let path, let template):
                    var readBefore: [UInt64] = []
                    defer { if !readBefore.isEmpty { refusedCSV.append((path, Set(readBefore))) } }
                    let csv = try CSVTemplateInput(
                        path: path, template: template, limits: limits, patientsBeforeFailure: &readBefore)
                    summary.total += csv.count
                    opened.append(.csv(csv, template))
                case .bundles(let path):
                    let reader = try BundleInput.Reader(path: path, limits: limits)
                    summary.total += reader.count
                    opened.append(.bundles(reader))
                }
            } catch let error as HealthCardError {
                summary.total += 1
                fileRejected?(input.path, error)
                logger.log(LogRecord(.warning, "batch.file-rejected", error: error, fields: ["input": input.path]))
                opened.append(.rejected(InputRecord(source: input.path, id: nil, bundle: nil, errors: [error])))
            }
        }

        // Patients with rows in several CSV files are rejected in all of them (found before any card), and so are
        // patients of a CSV file refused partway in the other files.
        let shared = try CrossFilePatients(
            opened.compactMap { if case .csv(let csv, _) = $0 { csv } else { nil } }, refused: refusedCSV)

        let pipe = BatchPipe<BatchJob, BatchOutcome>()
        var threads: [WorkerThread] = []
        for worker in workers {
            do {
                threads.append(try WorkerThread {
                    guard let worker = worker.take() else { return }
                    while let (number, job) = pipe.take() { pipe.finish(number, worker.run(job)) }
                })
            } catch {
                // The threads already started wait for jobs: close the pipe so they end, then stop.
                pipe.close()
                for thread in threads { thread.join() }
                throw error
            }
        }
        var names = NameRegister(all: inputs.contains { if case .bundles = $0 { true } else { false } })
        var rids = RIDRegister()
        var next = 0
        var failure: HealthCardError?
        var reportFailure: HealthCardError?
        // The rejected-rows file could not be written: the run goes on (report.ndjson lists every record, rejected
        // ones too) and says so at its end, after the report is in place.
        var rejectedFailure: HealthCardError?
        let window = jobs * 16
        // Bytes of input submitted and not yet reported, by job number (`limits.inFlightBytes`).
        var inFlight: [Int: Int] = [:]
        var inFlightBytes = 0
        // With a shard: records read so far in the whole batch (this shard's and the others'), and each submitted
        // job's place among them (its report line's `record`).
        var recordsRead = 0
        var recordNumbers: [Int: Int] = [:]
        var reported = 0

        /// Takes the next result in order (waiting at most `wait` seconds) and reports it.
        var linkedOutputs = 0
        func collect(wait: Double) {
            guard next < pipe.submitted, let outcome = pipe.result(next, wait: wait) else { return }
            inFlightBytes -= inFlight.removeValue(forKey: next) ?? 0
            let recordNumber = recordNumbers.removeValue(forKey: next)
            next += 1
            if let error = outcome.failure {
                if failure == nil { failure = error }
                return
            }
            var line = outcome.line
            line.record = recordNumber
            if let owner = outcome.identity, let clash = rids.register(owner, reportLine: next - 1) {
                line.warnings.append(HealthCardError(.input, code: .ridCollision, severity: .warning, clash, at: line.source))
                summary.ridCollisions += 1
            }
            if let kid = outcome.replacedKid { summary.reissuedForKid[kid, default: 0] += 1 }
            if line.replaced == .recordChanged { summary.replacedRecordChanged += 1 }
            summary.staleOutputs += outcome.staleOutputs
            summary.withdrawn += outcome.withdrawn
            if let printed = outcome.printed, let combined {
                do { try combined.append(printed) } catch let error as HealthCardError {
                    if failure == nil { failure = error }
                } catch {}
            }
            if line.status == .issued { summary.issued += 1 } else { summary.rejected += 1 }
            // A link found at a record's path is the operator's to remove, not a fault of the record: said at once,
            // with the path (the rejected-rows table gives only the code), the first few times.
            for error in line.errors where error.code == .outputSymlink {
                linkedOutputs += 1
                if linkedOutputs <= 5 { notice?(error.text) }
                if linkedOutputs == 6 { notice?("more records' files are symbolic links; their lines in report.ndjson name them") }
            }
            for row in RejectedRow.rows(of: line) {
                summary.rejectedRows += 1
                if summary.rejectedSample.count < rejectedSampleSize { summary.rejectedSample.append(row) }
                if rejectedFailure == nil {
                    do { try rejectedFile?.append(Array(row.csvLine.utf8)) } catch let error as HealthCardError {
                        rejectedFailure = error
                    } catch {}
                }
            }
            if line.status == .rejected, logger.minimumLevel <= .info {
                let codes = line.errors.map(\.reportedCode.rawValue).joined(separator: ",")
                logger.log(.info, "batch.record-rejected", "a record was rejected", fields: ["source": line.source, "codes": codes])
            }
            if line.alreadyIssued { summary.alreadyIssued += 1 }
            if line.notPrinted != nil { summary.notPrinted += 1 }
            summary.warnings += line.warnings.count
            let bytes = line.ndjson(say: sayMessage)
            do {
                try report.append(bytes)
                try runLog?.append(reportLine: bytes)
                reported += 1
            } catch let error as HealthCardError {
                if reportFailure == nil { reportFailure = error }
            } catch {}
            progress?(summary.issued + summary.rejected + summary.otherShards, summary.total)
        }
        func stopping() -> Bool { failure != nil || reportFailure != nil || stop.signal != 0 }

        do {
            reading: for input in opened {
                var bundles: BundleInput.Reader?
                var rejected: InputRecord?
                var cursor: CSVTemplateInput.Cursor?
                var template: Template?
                switch input {
                case .csv(let c, let t): (cursor, template) = (c.cursor(), t)
                case .bundles(let reader): bundles = reader
                case .rejected(let record): rejected = record
                }
                while true {
                    if stopping() { break reading }
                    let job: BatchJob
                    let id: String?
                    let source: String
                    var bytes = 0  // of the input file, held until the record is reported
                    var splitPatient: [HealthCardError]?  // a patient with rows in several files, and its row errors
                    if let cursor, let template {
                        do {
                            guard let rows = try cursor.next() else { break }
                            job = .rows(rows, template)
                            (id, source, bytes) = (rows.id, rows.source, rows.inputBytes)
                            if let id, !rows.rows.isEmpty, let error = shared.error(for: id, at: source) { splitPatient = [error] + rows.errors }
                        } catch let error as HealthCardError {
                            recordsRead += 1
                            if shard?.contains(key: cursor.path) ?? true {
                                if shard != nil { recordNumbers[pipe.submitted] = recordsRead }
                                pipe.submit(.record(InputRecord(source: cursor.path, id: nil, bundle: nil, errors: [error])))
                            } else {
                                summary.otherShards += 1
                            }
                            break
                        }
                    } else if let bundles {
                        let record: InputRecord
                        do {
                            guard let next = try bundles.next() else { break }
                            record = next
                        } catch let error as HealthCardError {
                            recordsRead += 1
                            if shard?.contains(key: bundles.path) ?? true {
                                if shard != nil { recordNumbers[pipe.submitted] = recordsRead }
                                pipe.submit(.record(InputRecord(source: bundles.path, id: nil, bundle: nil, errors: [error])))
                            } else {
                                summary.otherShards += 1
                            }
                            break
                        }
                        job = .record(record)
                        (id, source, bytes) = (record.id, record.source, bundles.lastRecordBytes)
                    } else {
                        guard let record = rejected else { break }
                        rejected = nil
                        job = .record(record)
                        (id, source) = (record.id, record.source)
                    }
                    recordsRead += 1
                    if let shard {
                        var bundle: JSONValue?
                        if case .record(let record) = job { bundle = record.bundle }
                        guard shard.contains(key: Shard.key(id: id, bundle: bundle, system: patientIDSystem, source: source)) else {
                            summary.otherShards += 1
                            continue
                        }
                        recordNumbers[pipe.submitted] = recordsRead
                    }
                    // A Bundle record's files are named for its person (`OutputNames.person`): a second card of the same
                    // person in this run gets `.2`, `.3`, …; a name another person already holds is refused.
                    var named = job
                    var clash: String?
                    if case .record(var record) = job, let bundle = record.bundle, let id = record.id {
                        let person = OutputNames.person(ofBundle: bundle, system: patientIDSystem, fallback: id)
                        switch names.claim(person.name, person: person.person, source: source) {
                        case .name(let name):
                            record.fileName = name
                            named = .record(record)
                        case .clash(let earlier):
                            clash = "the file name \(person.name) of this record's person is already the name of another person's "
                                + "files in this run (from \(earlier)), so this card was not issued: no file may hold another person's "
                                + "card. Issue one of the two records in a separate output folder, and report this name clash"
                        }
                    }
                    // A CSV patient's name, registered once: the source of an earlier record with the same name.
                    var csvEarlier: String?
                    if case .rows = job, splitPatient == nil, let id { csvEarlier = names.register(OutputNames.safe(id), id: id, source: source) }
                    if let splitPatient {
                        pipe.submit(.decided(ReportLine(source: source, id: id, status: .rejected, errors: splitPatient, warnings: [], files: [])))
                    } else if let clash {
                        pipe.submit(.decided(ReportLine(source: source, id: id, status: .rejected, errors: [
                            HealthCardError(.input, code: .outputNameClash, clash, at: source)
                        ], warnings: [], files: [])))
                    } else if let id, let earlier = csvEarlier, names.isPersonName(OutputNames.safe(id)) {
                        pipe.submit(.decided(ReportLine(source: source, id: id, status: .rejected, errors: [
                            HealthCardError(.input, code: .outputNameClash, "the file name \(OutputNames.safe(id)) of patient id \(Quote.text(id)) is already the name of another person's files in this run (from \(earlier)), so this card was not issued: no file may hold another person's card. Issue this input into a separate output folder", at: source)
                        ], warnings: [], files: [])))
                    } else if let id, let earlier = csvEarlier {
                        pipe.submit(.decided(ReportLine(source: source, id: id, status: .rejected, errors: [
                            HealthCardError(.input, code: .patientIDDuplicate, "patient id \(Quote.text(id)) was already issued in this run (from \(earlier)); each patient must appear under one id in one input", at: source)
                        ], warnings: [], files: [])))
                    } else {
                        inFlight[pipe.submit(named)] = bytes
                        inFlightBytes += bytes
                    }
                    collect(wait: 0)
                    // At most `window` records, and at most `limits.inFlightBytes` of input, wait or are worked on.
                    while (pipe.submitted - next >= window || inFlightBytes > limits.inFlightBytes) && !stopping() {
                        collect(wait: 0.1)
                    }
                }
            }
        }
        if stopping() { pipe.discardWaiting() }
        while next < pipe.submitted { collect(wait: 0.1) }
        pipe.close()
        for thread in threads { thread.join() }

        summary.interruptedBy = stop.signal
        summary.seconds = Clock.monotonicSeconds() - start
        if failure != nil || reportFailure != nil || summary.interruptedBy != 0 {
            // The unfinished combined PDF goes first: on a full disk its temporary holds the space the report needs.
            combined?.discard()
        }
        let end = IssuanceRunEnd(
            issued: summary.issued, rejected: summary.rejected, total: summary.total, interruptedBy: summary.interruptedBy)
        if failure != nil || reportFailure != nil { try? runLog?.end(end) }
        /// `shard.json` of a sharded run: written with the report (it describes that report), atomically.
        func writeManifest(finished: Bool) throws {
            guard let shard, let issuer = manifestIssuer else { return }
            let manifest = ShardManifest(
                shard: shard, issuer: issuer.issuer, kid: issuer.kid, notBefore: issuer.nbf,
                finished: finished, records: recordsRead, reported: reported, inputs: manifestInputs)
            try FileIO.writeAtomically(manifest.json(), to: "\(outDir)/\(ShardManifest.fileName)", access: access, sync: false)
        }
        /// Commits the report after a failure; nil when it was written, else why not (said with the failure: a
        /// full disk that stopped the run often leaves no room for the report either).
        func commitReportAfterFailure() -> String? {
            do { try report.commit() } catch let error as HealthCardError {
                return error.text
            } catch { return "the report \(report.path) was NOT written: \(error)" }
            return nil
        }
        if let failure {
            try? rejectedFile?.commit()
            let reportNote = commitReportAfterFailure()
            try? writeManifest(finished: false)
            try? FileIO.syncFileSystem(outDir)
            throw HealthCardError(.io, "\(failure.text). The run stopped after \(summary.issued + summary.rejected + summary.otherShards) of \(summary.total) records; "
                + (reportNote.map { "\($0). The card files written so far are whole" } ?? "the files written so far are whole")
                + ", and running the same command again skips the cards already made" + (reportNote == nil ? "" : " and writes the report"))
        }
        if let reportFailure {
            try? writeManifest(finished: false)
            throw reportFailure
        }
        if let combined, combined.cards > 0, summary.interruptedBy == 0 {
            do {
                try combined.finish()
                combinedPages = combined.pages
            } catch let error as HealthCardError {
                // Its closing writes (fonts, the cross-reference table) failed, the disk full: the temporary is
                // gone, and the report of every record still goes where it belongs.
                try? runLog?.end(end)
                try? rejectedFile?.commit()
                let reportNote = commitReportAfterFailure()
                try? writeManifest(finished: summary.interruptedBy == 0)
                try? FileIO.syncFileSystem(outDir)
                throw HealthCardError(error.kind, "\(error.message). Every record was done (\(summary.issued + summary.rejected) of \(summary.total); "
                    + (reportNote.map { "but \($0)" } ?? "the report lists them")
                    + "), but the combined PDF was not written; the files written so far are whole, and running the same command again skips the cards already made and writes it")
            }
        }
        try runLog?.end(end)
        if rejectedFailure == nil {
            do { try rejectedFile?.commit() } catch let error as HealthCardError { rejectedFailure = error }
        }
        try report.commit()
        try writeManifest(finished: summary.interruptedBy == 0)
        try FileIO.syncFileSystem(outDir)
        try links?.finish()
        logger.log(
            .notice, "batch.finished", "the run finished",
            fields: [
                "issued": String(summary.issued), "rejected": String(summary.rejected), "total": String(summary.total),
                "interruptedBy": String(summary.interruptedBy),
            ])
        if let rejectedFailure {
            // The cards and the report are in place; only the rejected rows' table is missing.
            throw HealthCardError(
                .io,
                "\(rejectedFailure.text). The cards and the report were written: \(summary.issued) card(s) issued and "
                    + "\(summary.rejected) record(s) rejected of \(summary.total), each listed in \(report.path). To have the "
                    + "rejected rows' table, run "
                    + "the same command again with \(rejectedRowsName) at a path that can be written: the cards already made "
                    + "are skipped")
        }
        return summary
    }
}

extension BatchIssuer {
    /// Checks the `pdf/` folder and opens the combined PDF (each worker gets its own `PDFStage`).
    func preparePDF() throws -> CombinedPDF? {
        combinedPages = 0
        guard let pdf else { return nil }
        if pdf.perCard {
            try FileIO.checkWritableFolder("\(outDir)/pdf", mode: access.folderMode)
            FileIO.removeStaleTemporaries(in: "\(outDir)/pdf")
        }
        return try pdf.combinedPath.map { try CombinedPDF(path: $0, access: access) }
    }
}

/// A request to stop one batch run (`BatchIssuer.run(_:stop:)`), settable from a signal handler.
public final class StopRequest: Sendable {
    private let received = Atomic<Int32>(0)

    public init() {}

    /// Asks the run to stop; safe to call from a signal handler (one atomic store).
    /// - Parameter signal: the signal number (SIGINT 2, SIGTERM 15), reported as `BatchSummary.interruptedBy`.
    public func request(signal: Int32) { received.store(signal, ordering: .relaxed) }

    /// The signal that asked to stop, 0 while none has.
    public var signal: Int32 { received.load(ordering: .relaxed) }
}

/// Output names seen in a run, to reject a second record with the same patient id.
///
/// Within one CSV input the patient ids are unique by construction, and across CSV inputs a shared id
/// is rejected before issuing (`CrossFilePatients`); `OutputNames.safe` keeps
/// distinct ids apart, except in two ways: two ids it changed (`a b`, `a/b`) whose 32-bit hash
/// suffixes collide, or an id it left alone that equals another id's changed name. So only changed
/// names, and unchanged ones that look like a changed name (a `-` and 8 hex digits at the end and a
/// `_` inside, or a leading `-`), are kept; memory does not grow with ordinary ids. With Bundle input
/// every name is kept: two Bundle files with the same stem (`a/x.json`, `b/x.json`) give the same
/// ids (`x-1`), and a CSV patient id may equal a Bundle record's id.
struct NameRegister {
    let all: Bool
    private var seen: [String: String] = [:]

    init(all: Bool) { self.all = all }

    /// Registers `name` (made from `id`); returns the source of an earlier record with the same name.
    mutating func register(_ name: String, id: String, source: String) -> String? {
        guard all || name != id || (Self.hasHashSuffix(name) && (name.contains("_") || name.hasPrefix("-"))) else { return nil }
        if let earlier = seen[name] { return earlier }
        seen[name] = source
        return nil
    }

    /// The persons of Bundle records by name: a hash of the person's key (`OutputNames.person`), and the person's cards.
    private var owners: [String: (person: Int, cards: Int)] = [:]

    /// What `claim` gives a Bundle record.
    enum Claim: Equatable {
        /// The name of its files: `name` for the person's first record of the run, `name.2`, `name.3`, … for the next (not `-2`: `qr/name-2.png` is a chunk of `name`'s QR code).
        case name(String)
        /// The name is another person's (or another record's: a CSV patient id): the source of the record holding it.
        case clash(earlier: String)
    }

    /// True when a Bundle record's person holds `name` in this run.
    func isPersonName(_ name: String) -> Bool {
        owners[name] != nil || owners[String(name[..<(name.lastIndex(of: ".") ?? name.endIndex)])] != nil
    }

    /// Claims `name` for a Bundle record of `person` (`OutputNames.person(ofBundle:system:fallback:)`).
    mutating func claim(_ name: String, person: String, source: String) -> Claim {
        let key = person.hashValue
        if let held = owners[name] {
            guard held.person == key else { return .clash(earlier: seen[name] ?? "an earlier record") }
            let count = held.cards + 1
            owners[name] = (key, count)
            let next = "\(name).\(count)"
            if let earlier = seen[next] { return .clash(earlier: earlier) }
            seen[next] = source
            return .name(next)
        }
        if let earlier = seen[name] { return .clash(earlier: earlier) }
        owners[name] = (key, 1)
        seen[name] = source
        return .name(name)
    }

    /// Ends in `-` and 8 lowercase hex digits, as `OutputNames.safe` appends.
    static func hasHashSuffix(_ name: String) -> Bool {
        let bytes = Array(name.utf8.suffix(9))
        return bytes.count == 9 && bytes[0] == UInt8(ascii: "-")
            && bytes.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// The rids of a run, to find two records that share one (digest section 8: one rid per person).
///
/// Two records with one rid are either the same person (same id and the same name and birth date: two
/// cards of one person, which is right) or not: two people given one identifier in the export, or,
/// about once in 2^64, two ids whose HMACs share their first 8 bytes. Revoking either would revoke
/// both, so the later record gets a warning naming the earlier one's report line. Memory: 12 bytes a
/// slot in a `HashIndex` plus 20 bytes a rid, only in runs with a rid secret.
struct RIDRegister {
    private var index = HashIndex()
    private var ids: [UInt64] = []
    private var people: [UInt64] = []
    private var lines: [Int32] = []

    /// Registers a card's rid; returns a warning when an earlier record of the run has the same rid
    /// for another id or another person.
    /// - Parameter reportLine: the 0-based position of the record in the report.
    mutating func register(_ owner: RIDOwner, reportLine: Int) -> String? {
        let key = Base64URL.decode(owner.rid).map { $0.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } } ?? 0
        var hasher = Hasher()
        hasher.combine(owner.ridFrom)
        let id = UInt64(bitPattern: Int64(hasher.finalize()))
        if let slot = index.find(key).map(Int.init) {
            let earlier = "report line \(lines[slot] + 1)"
            if ids[slot] != id {
                return "vc.rid \(owner.rid) of this card (from id \(Quote.text(owner.ridFrom))) is also the rid of another id "
                    + "(\(earlier)): revoking one would revoke the other. This is an HMAC collision; report it"
            }
            if people[slot] != owner.person {
                return "this record's Patient (name, birth date) differs from the one at \(earlier), but both have the "
                    + "id \(Quote.text(owner.ridFrom)), so both cards got vc.rid \(owner.rid): revoking one would revoke the "
                    + "other. Two people share one identifier in the export; correct it and issue again"
            }
            return nil
        }
        // Slots are numbered in 32 bits; past 2^31 cards in one run, later rids are no longer compared.
        guard let slot = Int32(exactly: ids.count), slot < Int32.max else { return nil }
        index.set(key, slot)
        ids.append(id)
        people.append(owner.person)
        lines.append(Int32(truncatingIfNeeded: reportLine))
        return nil
    }
}
