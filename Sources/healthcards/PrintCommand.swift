import HealthCards

enum PrintCommand {
    static let help = """
        Usage: healthcards print --out DIR [OPTIONS] CARD...
               healthcards print --pdf-combined FILE.pdf [OPTIONS] CARD...

        Prints cards already issued as PDF pages a clinic hands to a person: the person's name and birth
        date, every dose or lab result in date order, the issuer, the QR code (60 mm, vector) and a
        wallet-size cut-out with a 42 mm QR code (see docs/printing.md). Each card is checked as
        `healthcards verify` checks it first; a card with an error is not printed.

        Writes DIR/<card name>.pdf for each card (DIR/<card name>-<n>.pdf when a file holds several
        credentials), mode 0600: a printed card is health data.

        Arguments:
          CARD                  a .smart-health-card file, or a folder: its *.smart-health-card files (or
                                those in its cards/ folder, as `issue` writes them)
        Options:
          --out DIR             where the PDFs go (created if missing)
          --jwks FILE_OR_DIR    the issuer's key set (jwks.json or a site folder), to check signatures;
                                repeatable. Without it the signature is not checked (a warning)
        \(PrintOptions.help)
          -h, --help            show this help

        Exit status: 0 every card printed; 1 some cards not printed (verify found an error); 2 usage
        error, or a PDF that could not be written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            args, valued: PrintOptions.valued.union(["out", "jwks"]), flagNames: PrintOptions.flags, command: "print")
        if parsed.has("help") {
            print(help)
            return .ok
        }
        let outDir = parsed.value("out")
        let combinedPath = parsed.value("pdf-combined")
        guard outDir != nil || combinedPath != nil else {
            throw HealthCardError(
                .usage, "`healthcards print` needs --out DIR or --pdf-combined FILE.pdf; see `healthcards print --help`"
            )
        }
        if let outDir, outDir.isEmpty { throw HealthCardError(.usage, "--out is empty; give the folder for the PDFs") }
        let cards = try cardFiles(parsed.positionals)
        let settings = try PrintOptions.settings(parsed, environment: PrintOptions.environment())
        let verifier = try Verifier(keySets: parsed.values("jwks"), now: Clock.nowSeconds())
        for report in verifier.keySetReports where report.errorCount > 0 {
            printError(report.summaryLines.joined(separator: "\n"))
            throw HealthCardError(.usage, "the key set \(report.file) has errors; fix it or leave --jwks out")
        }
        let printer = try CardPrinter(settings: settings)
        let combined = try combinedPath.map { try CombinedPDF(path: $0) }
        if let outDir { try FileIO.checkWritableFolder(outDir) }
        var printed = 0
        var refused = 0
        for path in cards {
            let reports = try verifier.verify([path])
            if reports.isEmpty || reports.contains(where: { $0.errorCount > 0 }) {
                printError("not printed: \(path): `healthcards verify` finds errors in it:")
                for report in reports { printError(report.summaryLines.joined(separator: "\n")) }
                refused += 1
                continue
            }
            let credentials = try credentials(in: path)
            for (index, jws) in credentials.enumerated() {
                let card = try printer.print(
                    try PDFStage.sheet(jws, today: settings.today), codes: try PDFStage.codes(jws))
                if let outDir {
                    let name = OutputNames.safe(FileIO.stem(path)) + (credentials.count > 1 ? "-\(index + 1)" : "")
                    try FileIO.writeAtomically(try card.pdf(), to: "\(outDir)/\(name).pdf")
                }
                try combined?.append(card)
                printed += 1
            }
        }
        if let combined, printed > 0 { try combined.finish() }
        var summary = "print: \(printed) card(s) printed"
        if let outDir { summary += " to \(outDir)/" }
        if let combinedPath, printed > 0 { summary += (outDir == nil ? " to " : " and ") + combinedPath }
        if refused > 0 { summary += "; \(refused) file(s) not printed (errors above)" }
        printError(summary)
        return refused > 0 ? .partial : .ok
    }

    /// The card files named: files as given, folders expanded to their `.smart-health-card` files.
    static func cardFiles(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else {
            throw HealthCardError(
                .usage,
                "`healthcards print` needs at least one CARD (.smart-health-card file or folder); see `healthcards print --help`"
            )
        }
        var files: [String] = []
        for path in paths {
            if FileIO.isDirectory(path) {
                let folder = FileIO.isDirectory("\(path)/cards") ? "\(path)/cards" : path
                let found = FileIO.list(folder).filter { $0.hasSuffix(".smart-health-card") }.map { "\(folder)/\($0)" }
                guard !found.isEmpty else { throw HealthCardError(.usage, "\(path) holds no .smart-health-card file") }
                files += found
            } else {
                guard FileIO.exists(path) else { throw HealthCardError(.usage, "\(path) does not exist") }
                files.append(path)
            }
        }
        return files
    }

    /// The JWS of a `.smart-health-card` file (verify has already judged it).
    static func credentials(in path: String) throws -> [JWS] {
        let json = try JSONParser.parse(try FileIO.read(path))
        return (json["verifiableCredential"]?.arrayValue ?? []).compactMap { $0.stringValue.map { JWS(compact: $0) } }
    }
}
