#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsQR

/// One PDF with every card of a run, for mass printing: each card starts on a new page, in the order
/// they are added (the batch adds them in input order).
///
/// Where it goes follows the one output rule (`OutputTarget`, through `StreamedFile`):
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
    private let output: StreamedFile
    private var file: PDFFile?
    /// Cards and pages added so far.
    public private(set) var cards = 0
    public private(set) var pages = 0

    /// - Parameters:
    ///   - path: the PDF's path (see the type for FIFOs, devices and links).
    ///   - access: the file's mode (0600 unless the run opted into sharing) and of a folder made for it.
    /// - Throws: `HealthCardError(.io)` when the path is a folder, a socket or a block device, a FIFO nothing
    ///   reads, or the file cannot be created (the folder is made if missing).
    public init(path: String, access: OutputAccess = .ownerOnly) throws {
        self.path = path
        // Held by the PDF's byte sink too, so Cairo's last writes (when the PDF is dropped unfinished) never
        // reach a released `CombinedPDF`: they are refused once it is discarded.
        output = try StreamedFile(
            path: path, access: access, expected: "give the path of a .pdf file for the combined PDF")
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
                sink: PDFFile.Sink { output.write(UnsafeRawBufferPointer($0)) == nil }, title: "SMART Health Cards",
                author: card.author)
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
        do { try output.finish() } catch {
            discard()
            throw error
        }
    }
}
