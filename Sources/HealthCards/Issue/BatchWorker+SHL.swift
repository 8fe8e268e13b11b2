/// The SMART Health Link stage of a batch worker (`issue --shl`), kept apart from the card pipeline: it
/// runs after the card file is written (or found already issued), so a link always opens a card on disk.
extension BatchWorker {
    /// Makes, keeps or updates the link of the card just issued (`SHLStage.link`), and lists its files
    /// (`shl/<name>.txt`, `shl/<name>.png`: by name only, never the link text) and warnings on the report line.
    /// Does nothing without `--shl`.
    /// - Returns: the link and its QR image (for a later stage, e.g. a printed card showing both QR codes), or
    ///   nil without `--shl`.
    /// - Throws: `HealthCardError(.io)` when a link file cannot be written (the run stops, as for a card file).
    @discardableResult
    func addLink(card: [UInt8], name: String, bundle: JSONValue, line: inout ReportLine) throws -> SHLStage.Outcome? {
        guard let links else { return nil }
        let outcome = try links.link(card: card, name: name, bundle: bundle)
        line.files += outcome.files
        line.warnings += outcome.warnings
        return outcome
    }

    /// As `addLink(card:…)` for a card found already issued in `cardFile` (relative to the output folder).
    @discardableResult
    func addLink(cardFile: String, name: String, bundle: JSONValue, line: inout ReportLine) throws -> SHLStage.Outcome?
    {
        guard links != nil else { return nil }
        return try addLink(card: try FileIO.read("\(outDir)/\(cardFile)"), name: name, bundle: bundle, line: &line)
    }

    /// For a record now rejected whose card from an earlier run has a SMART Health Link in `shl/`: the link
    /// still opens that card, so say how to withdraw it. Nil when there is no such link.
    func earlierLinkWarning(id: String, at source: String) -> HealthCardError? {
        let linkFile = "shl/\(OutputNames.safe(id)).txt"
        guard FileIO.exists("\(outDir)/\(linkFile)") else { return nil }
        return HealthCardError(
            .link,
            "\(linkFile) is the SMART Health Link of that earlier card and still opens it; withdraw it with "
                + "`healthcards revoke --site SITE --link \(outDir)/\(linkFile)` if the card must not be shared",
            at: source)
    }
}
