#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR

/// One PDF with every card of a run, for mass printing: each card starts on a new page, in the order
/// they are added (the batch adds them in input order).
///
/// Where it goes follows the one output rule (`OutputTarget`):
/// - a regular file (or a missing one, or a link to one) is written as it goes to a temporary file beside it
///   (mode 0600 unless shared: it is health data), which `finish` renames into place; a run that stops
///   (a signal, an error, a full disk) removes the temporary, so nothing half-written is left under `path`,
///   and a temporary a killed run left beside it is removed when the next one starts;
/// - a FIFO or a character device (`/dev/null`, a printer's device) is written in place, never replaced; a
///   link to this process's standard output or error, to that descriptor. What a stopped run wrote there
///   cannot be taken back: the reader sees a PDF without its end;
/// - a folder, a socket or a block device is refused.
///
/// Used on one thread.
public final class CombinedPDF {
    public let path: String
    private let output: Output
    private var file: PDFFile?
    /// Cards and pages added so far.
    public private(set) var cards = 0
    public private(set) var pages = 0

    /// Where the bytes go: an open descriptor, and for a regular file the temporary and its final name.
    /// Held by the PDF's byte sink too, so Cairo's last writes (when the PDF is dropped unfinished) never
    /// reach a released `CombinedPDF`.
    private final class Output {
        let fd: Int32
        let ownsDescriptor: Bool
        /// The temporary file and the file it becomes; nil when writing in place.
        let temporary: (temp: String, target: String)?
        var writeError: String?
        /// Set once the PDF is dropped: later writes are refused (and nothing more reaches the file).
        var discarded = false

        init(fd: Int32, ownsDescriptor: Bool, temporary: (temp: String, target: String)?) {
            self.fd = fd
            self.ownsDescriptor = ownsDescriptor
            self.temporary = temporary
        }

        func write(_ piece: UnsafeBufferPointer<UInt8>) -> Bool {
            guard !discarded, let base = piece.baseAddress else { return !discarded }
            var written = 0
            while written < piece.count {
                let n = Glibc.write(fd, base + written, piece.count - written)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    writeError = String(cString: strerror(n == 0 ? EIO : errno))
                    return false
                }
                written += n
            }
            return true
        }

        private var closed = false

        /// Stops writing and removes the temporary file (once). The descriptor stays open until `close`: Cairo
        /// may still try to write (refused) while the PDF is dropped.
        func discard() {
            guard !discarded else { return }
            discarded = true
            if let temporary { unlink(temporary.temp) }
        }

        /// Closes the descriptor when it is ours: only then is a removed temporary's space free again.
        func close() {
            guard !closed else { return }
            closed = true
            if ownsDescriptor { _ = Glibc.close(fd) }
        }

        deinit {
            discard()
            close()
        }
    }

    /// - Parameters:
    ///   - path: the PDF's path (see the type for FIFOs, devices and links).
    ///   - access: the file's mode (0600 unless the run opted into sharing) and of a folder made for it.
    /// - Throws: `HealthCardError(.io)` when the path is a folder, a socket or a block device, a FIFO nothing
    ///   reads, or the file cannot be created (the folder is made if missing).
    public init(path: String, access: OutputAccess = .ownerOnly) throws {
        self.path = path
        if FileIO.isDirectory(path) {
            throw HealthCardError(
                .io, "cannot write \(path): it is a folder; give the path of a .pdf file (\(Setting.pdfCombined))")
        }
        switch try OutputTarget.resolve(path) {
        case .file(let target):
            let folder = FileIO.parent(of: target)
            if !FileIO.isDirectory(folder) { try FileIO.createDirectories(folder, mode: access.folderMode) }
            // What a killed run left (health data): only this file's temporaries, in a folder that may not be ours.
            FileIO.removeStaleTemporaries(in: folder, of: FileIO.basename(target))
            let temp = FileIO.temporaryName(for: target)
            let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, access.fileMode)
            guard fd >= 0 else {
                throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            fchmod(fd, access.fileMode)
            output = Output(fd: fd, ownsDescriptor: true, temporary: (temp, target))
        case .stream(let stream):
            output = Output(fd: try OutputTarget.openStream(stream, shownAs: path), ownsDescriptor: true, temporary: nil)
        case .descriptor(let fd):
            output = Output(fd: fd, ownsDescriptor: false, temporary: nil)
        }
    }

    deinit {
        // Unfinished: nothing more is written, and the temporary goes (Cairo's closing writes are refused).
        discard()
    }

    /// Appends a card's pages.
    /// - Throws: `HealthCardError(.io)` when they cannot be written (e.g. no space left: the run should stop
    ///   and `discard`), `.pdf` when Cairo cannot start the PDF.
    public func append(_ card: PrintedCard) throws {
        if file == nil {
            let output = self.output
            file = try PDFFile(
                sink: PDFFile.Sink { output.write($0) }, title: "SMART Health Cards", author: card.author)
        }
        for page in card.pages { file?.add(page) }
        if let reason = output.writeError {
            throw HealthCardError(.io, "cannot write \(path): \(reason)")
        }
        cards += 1
        pages += card.pages.count
    }

    /// Drops the unfinished PDF now: nothing more is written, and the temporary file is removed, freeing its
    /// space (before the run writes its report on a full disk). Safe to call more than once.
    public func discard() {
        output.discard()
        file = nil
        output.close()
    }

    /// Ends the PDF, flushes it to disk and renames it into place (a FIFO or device: ends writing it).
    /// - Throws: `HealthCardError(.io)` when writing failed (e.g. no space left; the temporary is removed),
    ///   `.pdf` when no card was added or Cairo failed.
    public func finish() throws {
        guard let file, !output.discarded else {
            throw HealthCardError(.pdf, "no card was printed, so \(path) was not written")
        }
        do {
            _ = try file.finish()
        } catch let error as HealthCardError where error.kind == .io {
            discard()
            throw HealthCardError(.io, "cannot write \(path): \(output.writeError ?? error.text)")
        } catch {
            discard()
            throw error
        }
        guard let (temp, target) = output.temporary else {
            output.discarded = true
            output.close()
            return
        }
        guard fsync(output.fd) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw HealthCardError(.io, "cannot write \(path): \(reason)")
        }
        guard rename(temp, target) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw HealthCardError(.io, "cannot move the new \(path) into place: \(reason)")
        }
        // Renamed: nothing to remove any more.
        output.discarded = true
        output.close()
    }
}
