#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// Writes `report.ndjson` as the run goes: lines are appended to a temporary file beside it
/// (`.report.ndjson.tmp-<pid>-<random>`) through a 64 KiB buffer, and `commit()` flushes, syncs
/// and renames it into place. A reader never sees a partial report; a killed run leaves only the
/// temporary file, which the next run removes.
final class ReportWriter {
    let path: String
    private let temp: String
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Creates the temporary file (and the output folder), with `access`'s modes whatever the umask.
    /// - Throws: `HealthCardError(.io)` when the folder cannot be written: the run stops before any card.
    init(path: String, access: OutputAccess = .ownerOnly) throws {
        self.path = path
        let folder = FileIO.parent(of: path)
        try FileIO.createDirectories(folder, mode: access.folderMode)
        temp = FileIO.temporaryName(for: path)
        fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, access.fileMode)
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot write in the output folder \(folder): \(String(cString: strerror(errno))); choose a folder you can write to (\(Setting.out))")
        }
        fchmod(fd, access.fileMode)
        buffer.reserveCapacity(65536)
    }

    /// Checks, before a run writes anything, that the report can later be renamed to `path`: nothing
    /// is there, or a file (a report of an earlier run, replaced at the end).
    /// - Throws: `HealthCardError(.io)` when `path` is a folder.
    static func checkTarget(_ path: String) throws {
        guard FileIO.isDirectory(path) else { return }
        throw HealthCardError(.io, "cannot write the report \(path): it is a folder. Nothing was issued; move or remove that folder, or choose another \(Setting.out), and run again")
    }

    deinit {
        if fd >= 0 {
            close(fd)
            unlink(temp)
        }
    }

    /// Appends one line (the bytes end with a newline).
    func append(_ line: [UInt8]) throws {
        buffer.append(contentsOf: line)
        if buffer.count >= 65536 { try flush() }
    }

    private func flush() throws {
        var written = 0
        while written < buffer.count {
            let n = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
            written += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, syncs and renames the report into place.
    func commit() throws {
        try flush()
        guard fsync(fd) == 0 else { throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        fd = -1
        guard rename(temp, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw HealthCardError(.io, "cannot move the new \(path) into place: \(reason)")
        }
    }
}
