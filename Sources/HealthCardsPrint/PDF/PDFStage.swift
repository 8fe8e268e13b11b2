import HealthCardsCore
import HealthCardsQR

/// What a batch prints, besides cards and QR images: a PDF per card (`pdf/<id>.pdf`), and/or one
/// combined PDF of the whole run.
public struct PDFOptions: Sendable {
    public var settings: PrintSettings
    /// Write `pdf/<id>.pdf` for each card (`issue --pdf`).
    public var perCard: Bool
    /// Write every card of the run into this one file, one person per page, in input order
    /// (`--pdf-combined`).
    public var combinedPath: String?

    public init(settings: PrintSettings, perCard: Bool, combinedPath: String? = nil) {
        self.settings = settings
        self.perCard = perCard
        self.combinedPath = combinedPath
    }
}

/// The PDF stage of one batch worker: it prints a signed card (what the JWS says, not what the input
/// said) and writes `pdf/<name>.pdf` atomically with the run's file mode (0600 unless shared: health
/// data, like the cards).
public final class PDFStage {
    public let options: PDFOptions
    let printer: CardPrinter
    let outDir: String
    /// Permission bits of the PDFs (0600 unless the run opted into sharing, `issue --share`).
    let access: OutputAccess

    /// - Throws: `HealthCardError(.pdf)` when the printer cannot start (Cairo, the logo).
    public init(options: PDFOptions, outDir: String, access: OutputAccess = .ownerOnly) throws {
        self.options = options
        self.outDir = outDir
        self.access = access
        printer = try CardPrinter(settings: options.settings)
    }

    /// The file a card's PDF goes to, relative to the output folder.
    public static func file(name: String) -> String { "pdf/\(name).pdf" }

    /// Prints the card of `jws` and writes its PDF (when `perCard`; an existing one is kept when
    /// `keepExisting`, as a resumed run does for cards already issued, or when `keepIfSame` and it is this
    /// page already, its creation date aside: `samePage`).
    /// - Parameters:
    ///   - codes: the card's QR symbols; made here from the JWS when empty (`--no-qr`, or a card over the
    ///     single-QR limit that has a link).
    ///   - link: the card's SMART Health Link (`issue --shl`), printed with the card; a card that needs more
    ///     than one QR code is then printed with the link only (`CardPrinter.print`).
    ///   - keepIfSame: print the card even though a PDF is there, and replace that one only when it is another
    ///     page (a card printed with a link that this run no longer prints). `replaced` says whether it was.
    /// - Returns: the files written (relative to the output folder), the printed pages (for the combined PDF,
    ///   nil when there is none), whether an existing PDF was replaced by another page (`keepIfSame`), and why the card got no PDF when it must not be handed out as printed
    ///   (`PrintedCard.refusal`: a character no font has, a name that does not fit whole; no file is written
    ///   and `card` is nil).
    /// - Throws: `HealthCardError(.io)` when the PDF cannot be written (`code: .outputSymlink` when its path is a
    ///   symbolic link, which is never written through), `.pdf` when it cannot be drawn,
    ///   `.qr`/`.compression`/`.input` when the JWS cannot be read back.
    public func run(
        jws: JWS, codes: [QRCode], name: String, link: PrintedLink? = nil, keepExisting: Bool = false,
        keepIfSame: Bool = false
    ) throws -> (files: [String], card: PrintedCard?, refusal: HealthCardError?, replaced: Bool) {
        let file = Self.file(name: name)
        let path = "\(outDir)/\(file)"
        let exists = FileIO.exists(path)
        let needFile = options.perCard && !(keepExisting && !keepIfSame && exists)
        guard needFile || options.combinedPath != nil else { return (options.perCard ? [file] : [], nil, nil, false) }
        // A link at the card's PDF path was made by someone else: never written through (`OutputLinkRule.refuse`).
        if needFile, let refusal = OutputTarget.linkedOutput(path) { throw refusal }
        let card = try printer.print(
            try Self.sheet(jws, today: options.settings.today), codes: codes.isEmpty ? try Self.codes(jws) : codes,
            link: link)
        // No PDF rather than one that shows empty boxes or a cut name.
        if let refusal = card.refusal { return ([], nil, refusal, false) }
        var replaced = false
        if needFile {
            let bytes = try card.pdf()
            let old = keepIfSame && exists ? try? FileIO.read(path, maxBytes: InputBudget.defaultFileBytes) : nil
            if old.map({ !Self.samePage($0, bytes) }) ?? true {
                try FileIO.writeAtomically(bytes, to: path, access: access, sync: false, links: .refuse)
                replaced = old != nil
            }
        }
        return (options.perCard ? [file] : [], options.combinedPath != nil ? card : nil, nil, replaced)
    }

    /// Whether two PDFs of this printer are the same page: the same bytes once their `/CreationDate (D:…)`
    /// values (the only part Cairo writes from the clock) are set aside; they must be at the same offset.
    static func samePage(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        let key = Array("/CreationDate (".utf8)
        func date(_ bytes: [UInt8]) -> Range<Int>? {
            guard bytes.count > key.count else { return nil }
            for start in 0...(bytes.count - key.count) where bytes[start] == key[0] && Array(bytes[start..<(start + key.count)]) == key {
                var end = start + key.count
                while end < bytes.count, bytes[end] != UInt8(ascii: ")") { end += 1 }
                return start..<end
            }
            return nil
        }
        guard let da = date(a), da == date(b) else { return a == b }
        return a[..<da.lowerBound] == b[..<da.lowerBound] && a[da.upperBound...] == b[da.upperBound...]
    }

    /// What a signed card says, read back from its JWS (raw inflate and parse; the signature is not
    /// checked here).
    public static func sheet(_ jws: JWS, today: String) throws -> CardSheet {
        let parts = try jws.parts()
        return CardSheet(payload: try JSONParser.parse(try RawInflate.inflate(parts.payload)), today: today)
    }

    /// The QR symbols of a JWS: one, or one per chunk when it is over 1195 characters.
    public static func codes(_ jws: JWS) throws -> [QRCode] {
        let chunks = QRNumeric.chunks(jws.compact)
        return try chunks.enumerated().map { try QRCode(jws: $1, chunk: $0 + 1, of: chunks.count) }
    }
}
