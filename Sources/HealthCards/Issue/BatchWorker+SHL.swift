/// The SMART Health Link stage of a batch worker (`issue --shl`), kept apart from the card pipeline: it
/// runs after the card file is written (or found already issued), so a link always opens a card on disk.
extension BatchWorker {
    /// Makes, keeps or updates the link of the card just issued (`SHLStage.link`), and lists its files
    /// (`shl/<name>.txt`, `shl/<name>.png`: by name only, never the link text) and warnings on the report line.
    /// Does nothing without `--shl`.
    /// - Throws: `HealthCardError(.io)` when a link file cannot be written (the run stops, as for a card file).
    func addLink(card: [UInt8], name: String, bundle: JSONValue, line: inout ReportLine) throws {
        guard let links else { return }
        let outcome = try links.link(card: card, name: name, bundle: bundle)
        line.files += outcome.files
        line.warnings += outcome.warnings
    }

    /// As `addLink(card:…)` for a card found already issued in `cardFile` (relative to the output folder).
    func addLink(cardFile: String, name: String, bundle: JSONValue, line: inout ReportLine) throws {
        guard links != nil else { return }
        try addLink(card: try FileIO.read("\(outDir)/\(cardFile)"), name: name, bundle: bundle, line: &line)
    }
}
