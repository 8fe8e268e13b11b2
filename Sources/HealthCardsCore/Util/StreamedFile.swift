#if canImport(Glibc)
    import Glibc
#endif

/// A file written as it goes (the combined PDF of a run, the merged report of shards), by the one output rule
/// (`OutputTarget`):
/// - a regular file (or a missing one, or a link to one) is written to a temporary file beside it, created with
///   `access.fileMode` whatever the umask, which `finish` syncs (`fsync`) and renames into place; one that is
///   dropped unfinished (`discard`, an error, a signal that ends the run, the value released) removes the
///   temporary, so nothing half-written is left under `path`; a temporary a killed run left beside it is removed
///   when the next one starts;
/// - a FIFO or a character device is written in place, never replaced; a link to this process's standard output
///   or error, to that descriptor. What a stopped run wrote there cannot be taken back;
/// - a folder, a socket or a block device is refused.
///
/// Used on one thread at a time.
package final class StreamedFile {
    /// The path given, for messages.
    package let path: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// The temporary file and the file it becomes; nil when writing in place (or once renamed).
    private var temporary: (temp: String, target: String)?
    /// Set once the file is dropped or finished: later writes are refused (nothing more reaches the file).
    package private(set) var discarded = false
    /// The system's reason for the first write that failed, if one did.
    package private(set) var writeError: String?
    private var closed = false

    /// - Parameters:
    ///   - path: the file's path (see the type for FIFOs, devices and links).
    ///   - access: the file's mode and the mode of a folder made for it (the folder is made if missing).
    ///   - expected: what to give instead of a folder, for the message (e.g. "a file's path").
    /// - Throws: `HealthCardError(.io)` when the path is a folder, a socket or a block device, a FIFO nothing
    ///   reads, or the file cannot be created.
    package init(path: String, access: OutputAccess, expected: String = "give a file's path") throws {
        self.path = path
        if FileIO.isDirectory(path) { throw HealthCardError(.io, "cannot write \(path): it is a folder; \(expected)") }
        switch try OutputTarget.resolve(path) {
        case .file(let target):
            let folder = FileIO.parent(of: target)
            if !FileIO.isDirectory(folder) { try FileIO.createDirectories(folder, mode: access.folderMode) }
            // What a killed run left (health data): only this file's temporaries, in a folder that may not be ours.
            FileIO.removeStaleTemporaries(in: folder, of: FileIO.basename(target))
            let temp = FileIO.temporaryName(for: target)
            let opened = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, access.fileMode)
            guard opened >= 0 else { throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())") }
            fchmod(opened, access.fileMode)
            (fd, ownsDescriptor, temporary) = (opened, true, (temp, target))
        case .stream(let stream):
            (fd, ownsDescriptor, temporary) = (try OutputTarget.openStream(stream, shownAs: path), true, nil)
        case .descriptor(let descriptor):
            (fd, ownsDescriptor, temporary) = (descriptor, false, nil)
        }
    }

    deinit {
        discard()
        close()
    }

    /// Writes all of `bytes`.
    /// - Returns: nil, or the system's reason for a failure (the first is kept in `writeError`); a refusal once the
    ///   file was dropped or finished.
    package func write(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard !discarded else { return "the file was already closed" }
        if let failure = OS.writeAll(bytes, to: fd) {
            if writeError == nil { writeError = failure }
            return failure
        }
        return nil
    }

    /// Writes all of `bytes`.
    /// - Throws: `HealthCardError(.io)` naming the path and the reason.
    package func write(_ bytes: [UInt8]) throws {
        if let failure = bytes.withUnsafeBytes({ write($0) }) {
            throw HealthCardError(.io, "cannot write \(path): \(failure)")
        }
    }

    /// Stops writing and removes the temporary file (once), freeing its space. The descriptor stays open until
    /// `close` (a writer such as Cairo may still try to write, refused, while it is dropped). Safe to call more
    /// than once.
    package func discard() {
        guard !discarded else { return }
        discarded = true
        if let temporary { unlink(temporary.temp) }
    }

    /// Closes the descriptor when it is ours: only then is a removed temporary's space free again.
    package func close() {
        guard !closed else { return }
        closed = true
        if ownsDescriptor { _ = Glibc.close(fd) }
    }

    /// Syncs a regular file and renames it into place (a FIFO or device: ends writing it), then closes it.
    /// - Throws: `HealthCardError(.io)` when it cannot be synced or renamed (the temporary is removed), or was
    ///   dropped or finished before.
    package func finish() throws {
        guard !discarded else { throw HealthCardError(.io, "cannot write \(path): it was already closed") }
        if let (temp, target) = temporary {
            guard fsync(fd) == 0 else {
                let reason = OS.errorText()
                discard()
                close()
                throw HealthCardError(.io, "cannot write \(path): \(reason)")
            }
            guard rename(temp, target) == 0 else {
                let reason = OS.errorText()
                discard()
                close()
                throw HealthCardError(.io, "cannot move the new \(path) into place: \(reason)")
            }
            // Renamed: nothing to remove any more.
            temporary = nil
        }
        discarded = true
        close()
    }
}
