#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR

/// One PDF with every card of a run, for mass printing: each card starts on a new page, in the order
/// they are added (the batch adds them in input order). Written as it goes to a temporary file beside
/// `path` (mode 0600: it is health data), which `finish` renames into place; a run that stops leaves no
/// half-written PDF under `path`.
public final class CombinedPDF {
    public let path: String
    private let temp: String
    private let fd: Int32
    private var file: PDFFile?
    private var writeError: String?
    /// Cards and pages added so far.
    public private(set) var cards = 0
    public private(set) var pages = 0

    /// - Parameter access: the file's mode (0600 unless the run opted into sharing) and of a folder made for it.
    /// - Throws: `HealthCardError(.io)` when the file cannot be created (the folder is made if missing).
    public init(path: String, access: OutputAccess = .ownerOnly) throws {
        self.path = path
        if FileIO.isDirectory(path) {
            throw HealthCardError(
                .io, "cannot write \(path): it is a folder; give the path of a .pdf file (\(Setting.pdfCombined))")
        }
        let folder = FileIO.parent(of: path)
        if !FileIO.isDirectory(folder) { try FileIO.createDirectories(folder, mode: access.folderMode) }
        temp = FileIO.temporaryName(for: path)
        fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, access.fileMode)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        fchmod(fd, access.fileMode)
    }

    deinit {
        if fd >= 0 { close(fd) }
        if FileIO.exists(temp) { unlink(temp) }
    }

    /// Appends a card's pages.
    public func append(_ card: PrintedCard) throws {
        if file == nil {
            let sink = PDFFile.Sink { [unowned self] piece in self.write(piece) }
            file = try PDFFile(sink: sink, title: "SMART Health Cards", author: card.author)
        }
        for page in card.pages { file?.add(page) }
        cards += 1
        pages += card.pages.count
    }

    private func write(_ piece: UnsafeBufferPointer<UInt8>) -> Bool {
        var written = 0
        while written < piece.count {
            let n = Glibc.write(fd, piece.baseAddress! + written, piece.count - written)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                writeError = String(cString: strerror(errno))
                return false
            }
            written += n
        }
        return true
    }

    /// Ends the PDF, flushes it to disk and renames it into place.
    /// - Throws: `HealthCardError(.io)` when writing failed (e.g. no space left), `.pdf` when no card was
    ///   added or Cairo failed.
    public func finish() throws {
        guard let file else { throw HealthCardError(.pdf, "no card was printed, so \(path) was not written") }
        do { _ = try file.finish() } catch let error as HealthCardError where error.kind == .io {
            throw HealthCardError(.io, "cannot write \(path): \(writeError ?? error.text)")
        }
        guard fsync(fd) == 0 else {
            throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        guard rename(temp, path) == 0 else {
            throw HealthCardError(.io, "cannot move the new \(path) into place: \(String(cString: strerror(errno)))")
        }
    }
}
