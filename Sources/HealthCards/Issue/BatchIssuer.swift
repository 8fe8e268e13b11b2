/// An input of a batch run.
public enum BatchInput: Sendable {
    /// A CSV file read with a template.
    case csv(path: String, template: Template)
    /// A `.json` (one Bundle) or `.ndjson` (one Bundle per line) file.
    case bundles(path: String)
}

/// Runs the issuing pipeline over a batch and writes, under `outDir`:
/// `cards/<id>.smart-health-card`, `qr/<id>.png` (or `qr/<id>-<c>.png` for chunks) and `report.ndjson`,
/// each written atomically (temporary file + rename).
public final class BatchIssuer {
    public let outDir: String
    private let issuer: CardIssuer
    private var usedNames: [String: String] = [:]
    /// Called after each record with (records done, records known so far).
    public var progress: ((Int, Int) -> Void)?

    public init(issuer: CardIssuer, outDir: String) {
        self.issuer = issuer
        self.outDir = outDir
    }

    /// Issues every record of `inputs` and writes the report.
    /// - Returns: counts of issued and rejected records.
    /// - Throws: `HealthCardError(.io)` when an output cannot be written (the run stops; files already
    ///   written stay whole).
    public func run(_ inputs: [BatchInput]) throws -> BatchSummary {
        let start = Clock.monotonicSeconds()
        var summary = BatchSummary()
        var report: [UInt8] = []
        var done = 0
        for input in inputs {
            let records: [InputRecord]
            do {
                switch input {
                case .csv(let path, let template): records = try CSVTemplateInput(path: path, template: template).records()
                case .bundles(let path): records = try BundleInput.records(path: path)
                }
            } catch let error as HealthCardError {
                let path: String
                switch input {
                case .csv(let p, _), .bundles(let p): path = p
                }
                records = [InputRecord(source: path, id: nil, bundle: nil, errors: [error])]
            }
            for record in records {
                let line = try process(record)
                report.append(contentsOf: line.ndjson)
                if line.status == .issued { summary.issued += 1 } else { summary.rejected += 1 }
                summary.warnings += line.warnings.count
                done += 1
                progress?(done, done)
            }
        }
        try FileIO.writeAtomically(report, to: "\(outDir)/report.ndjson")
        summary.seconds = Clock.monotonicSeconds() - start
        return summary
    }

    /// Issues one record and writes its files.
    func process(_ record: InputRecord) throws -> ReportLine {
        var line = ReportLine(source: record.source, id: record.id, status: .rejected, errors: record.errors,
                              warnings: record.warnings, files: [])
        guard record.errors.isEmpty, let bundle = record.bundle, let id = record.id else { return line }
        let name = OutputNames.safe(id)
        if let other = usedNames[name] {
            line.errors.append(HealthCardError(.input, "patient id '\(id)' was already issued in this run (from \(other)); each patient must appear under one id in one input", at: record.source))
            return line
        }
        let card: IssuedCard
        do { card = try issuer.issue(bundle: bundle, patientID: id) } catch {
            line.errors = error.errors
            return line
        }
        usedNames[name] = record.source
        line.warnings += card.warnings
        var files = ["cards/\(name).smart-health-card"]
        try FileIO.writeAtomically(card.fileBytes, to: "\(outDir)/\(files[0])")
        for (i, png) in card.pngs.enumerated() {
            let file = card.pngs.count == 1 ? "qr/\(name).png" : "qr/\(name)-\(i + 1).png"
            try FileIO.writeAtomically(png, to: "\(outDir)/\(file)")
            files.append(file)
        }
        line.status = .issued
        line.files = files
        return line
    }
}
