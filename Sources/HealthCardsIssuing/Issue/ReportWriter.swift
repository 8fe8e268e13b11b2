#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// Writes `report.ndjson` as the run goes: lines are appended to a temporary file beside it
/// (`.report.ndjson.tmp-<pid>-<random>`) through a 64 KiB buffer, and `commit()` flushes, syncs
/// and renames it into place. A reader never sees a partial report; a killed run leaves only the
/// temporary file, which the next run removes.
///
/// The report's path goes through the output-target rule (`OutputTarget`) like every other output: a regular
/// file (or none) is replaced atomically; a symbolic link to one has its target replaced (the temporary file is
/// made beside the target) and stays a link; a FIFO, a character device or a link to this process's standard
/// output is written in place at `commit()`, from the temporary file, and never renamed over. A FIFO or device is
/// opened when the writer is made, before the run issues any card: a FIFO nothing reads is refused then, not
/// found at the end of a run that has written every card.
final class ReportWriter {
    let path: String
    /// What messages call the file before its path: "the report", or what the caller names it (the rejected rows'
    /// file by the name `BatchIssuer.rejectedRowsName` gives it).
    let name: String
    /// Where the report goes: the regular file renamed over, or the stream written to.
    private let target: OutputTarget
    /// The FIFO or device of a `.stream` target, open from the start (closed by `commit` or `deinit`).
    private var stream: Int32 = -1
    private let temp: String
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Creates the temporary file (and the output folder), with `access`'s modes whatever the umask.
    /// - Throws: `HealthCardError(.io)` when the folder cannot be written, or `path` is something no report can be
    ///   written to (a folder, a socket, a FIFO nothing reads): the run stops before any card.
    init(path: String, access: OutputAccess = .ownerOnly, name: String = "the report") throws {
        self.path = path
        self.name = name
        let folder = FileIO.parent(of: path)
        try FileIO.createDirectories(folder, mode: access.folderMode)
        target = try OutputTarget.resolve(path)
        if case .file(let file) = target {
            temp = FileIO.temporaryName(for: file)
        } else {
            temp = FileIO.temporaryName(for: path)
        }
        if case .stream(let device) = target { stream = try OutputTarget.openStream(device, shownAs: path) }
        fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, access.fileMode)
        guard fd >= 0 else {
            let reason = OS.errorText()
            if stream >= 0 { close(stream) }
            throw HealthCardError(.io, "cannot write in the output folder \(folder): \(reason); choose an output folder you can write to")
        }
        fchmod(fd, access.fileMode)
        buffer.reserveCapacity(65536)
    }

    /// Checks, before a run writes anything, that the report can later be written to `path`: nothing is there, a
    /// file (a report of an earlier run, replaced at the end), or a FIFO, device or link `OutputTarget` writes in
    /// place.
    /// - Throws: `HealthCardError(.io)` when `path` is a folder, a socket, a block device or a link to one.
    static func checkTarget(_ path: String, name: String = "the report") throws {
        if FileIO.isDirectory(path) {
            throw HealthCardError(.io, "cannot write \(name) \(path): it is a folder. Nothing was issued; move or remove that folder, or choose another output folder, and run again")
        }
        _ = try OutputTarget.resolve(path)
    }

    deinit {
        if fd >= 0 {
            close(fd)
            unlink(temp)
        }
        if stream >= 0 { close(stream) }
    }

    /// Appends one line (the bytes end with a newline).
    func append(_ line: [UInt8]) throws {
        buffer.append(contentsOf: line)
        if buffer.count >= 65536 { try flush() }
    }

    private func flush() throws {
        if buffer.withUnsafeBytes({ OS.writeAll($0, to: fd) }) != nil {
            throw notWritten(errno)
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// The error of a report that could not be written: its path, that it was not written, and why, with the
    /// errno's name (`No space left on device (ENOSPC)`), so a full disk is told apart from a permission.
    func notWritten(_ code: Int32, doing what: String = "") -> HealthCardError {
        let names: [Int32: String] = [
            ENOSPC: "ENOSPC", EDQUOT: "EDQUOT", EIO: "EIO", EROFS: "EROFS", EACCES: "EACCES", EPERM: "EPERM",
            EFBIG: "EFBIG", EPIPE: "EPIPE",
        ]
        let reason = OS.errorText(code) + (names[code].map { " (\($0))" } ?? "")
        let earlier =
            FileIO.isRegularFile(path)
            ? "; the file at \(path) is from an earlier run and does not list this run's records" : ""
        return HealthCardError(.io, "\(name) \(path) was NOT written\(what): \(reason)\(earlier)")
    }

    /// Flushes, syncs and puts the report in place: renamed over a regular file, or copied into a stream.
    func commit() throws {
        try flush()
        guard fsync(fd) == 0 else { throw notWritten(errno) }
        close(fd)
        fd = -1
        switch target {
        case .file(let file):
            guard rename(temp, file) == 0 else {
                let code = errno
                unlink(temp)
                throw notWritten(code, doing: " (its new file could not be moved into place)")
            }
        case .stream:
            defer {
                unlink(temp)
                close(stream)
                stream = -1
            }
            try copy(to: stream)
        case .descriptor(let out):
            defer { unlink(temp) }
            try copy(to: out)
        }
    }

    /// Writes the temporary file's bytes to `out`, 64 KiB at a time.
    private func copy(to out: Int32) throws {
        let input = open(temp, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw HealthCardError(.io, "cannot read back \(temp): \(OS.errorText())") }
        defer { close(input) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw notWritten(errno, doing: " (its temporary \(temp) could not be read back)") }
            if n == 0 { return }
            var written = 0
            while written < n {
                let m = chunk.withUnsafeBytes { write(out, $0.baseAddress! + written, n - written) }
                if m < 0 && errno == EINTR { continue }
                guard m > 0 else { throw notWritten(m == 0 ? EIO : errno) }
                written += m
            }
        }
    }
}
