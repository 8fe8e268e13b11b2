import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// The SMART Health Link stage of a batch worker (`issue --shl`), kept apart from the card pipeline: it runs
/// after the card is signed (or found already issued) and before its PDF, which prints the link with the card,
/// and before the card file is written (a card file on disk means its link is there too, like its images).
extension BatchWorker {
    /// Makes, keeps or updates the link of a card (`SHLStage.link`). Does nothing without `--shl`.
    /// - Parameters:
    ///   - card: the `.smart-health-card` file's bytes, as written (or found) in `cards/`.
    /// - Returns: what the stage did: the link, its files for the report (`shl/<name>.txt`, `shl/<name>.png`:
    ///   by name only, never the link text) and its warnings; nil without `--shl`, or when no link was made
    ///   (withdrawn, or a link text that must not be overwritten: `notes` says why, for the report).
    /// - Throws: `HealthCardError(.io)` when a link file cannot be written (the run stops, as for a card file).
    func link(card: [UInt8], name: String, bundle: JSONValue, notes: inout [HealthCardError]) throws -> SHLStage.Outcome? {
        guard let links else { return nil }
        return try links.link(card: card, name: name, bundle: bundle, provisional: pdfRidesInLink, notes: &notes)
    }

    /// Whether each card's PDF goes into its link's Bundle (`--pdf` with Bundle content): the link is made first
    /// (the PDF prints it), then `addPDF` puts the PDF in.
    var pdfRidesInLink: Bool { links?.options.content == .bundle && pdf?.options.perCard == true }

    /// Puts the printed card (`pdf/<name>.pdf`, just written) into the link's Bundle as a `DocumentReference`
    /// (`SharedBundle`), re-encrypting the link's file under its key with a fresh IV when that changes it.
    /// Does nothing unless `pdfRidesInLink`, or when no PDF was written (refused).
    /// - Returns: the link's warnings of this step (none when the file was already so).
    func addPDF(card: [UInt8], name: String, bundle: JSONValue, linked: SHLStage.Outcome?, printedFiles: [String]) throws
        -> [HealthCardError]
    {
        guard pdfRidesInLink, let links, let linked, printedFiles.contains("pdf/\(name).pdf"),
            let pdfBytes = try? FileIO.read("\(outDir)/pdf/\(name).pdf", maxBytes: InputBudget.defaultFileBytes)
        else { return [] }
        var notes: [HealthCardError] = []
        let outcome = try links.link(card: card, name: name, bundle: bundle, pdf: pdfBytes, notes: &notes)
        // Adding the PDF to a link made just now is not news for the report; updating one handed out is.
        let warnings = outcome?.warnings ?? []
        return notes + (linked.textChanged ? warnings.filter { !$0.text.contains("now opens this run's") } : warnings)
    }

    /// For a record now rejected whose card from an earlier run has a SMART Health Link in `shl/`: the link
    /// still opens that card, so say how to withdraw it. Nil when there is no such link.
    func earlierLinkWarning(name: String, at source: String) -> HealthCardError? {
        let linkFile = "shl/\(name).txt"
        guard FileIO.exists("\(outDir)/\(linkFile)"),
            !SHLWithdrawalRecord.isWithdrawn(outDir: outDir, name: name)
        else { return nil }
        return HealthCardError(
            .link,
            "\(linkFile) is the SMART Health Link of that earlier card and still opens it; withdraw the link "
                + "\(outDir)/\(linkFile) from its site if the card must not be shared",
            at: source)
    }
}

extension SHLStage.Outcome {
    /// The link as the PDF stage prints it.
    /// - Throws: `HealthCardError(.qr)` when the link text fits no QR version (the stage checks lengths first).
    func printable() throws -> PrintedLink { try PrintedLink(text: link.text) }
}
