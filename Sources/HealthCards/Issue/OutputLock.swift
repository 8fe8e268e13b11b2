#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive lock on an output folder, so two `issue` runs never write into the same `--out` at
/// once (they would race for the same card, image and report files).
///
/// The lock is `flock(2)` on `OUT/.healthcards-issue.lock`, which holds the owner's pid. The kernel
/// releases it when the process ends in any way (exit, crash, `kill -9`), so a dead run never leaves
/// a folder locked; the file itself stays (removing it could let two runs lock two different files).
final class OutputLock {
    /// The lock file's name inside the output folder.
    static let fileName = ".healthcards-issue.lock"

    let path: String
    private let fd: Int32

    /// Takes the lock, or fails at once naming the process that holds it.
    /// - Parameters:
    ///   - folder: the output folder (must exist).
    ///   - mode: permission bits of the lock file when it is created.
    /// - Throws: `HealthCardError(.usage)` when another process holds the lock (its pid and command
    ///   line are named), `.io` when the lock file cannot be opened.
    init(folder: String, mode: mode_t) throws {
        path = folder + "/" + Self.fileName
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        _ = fchmod(fd, mode)  // whatever the umask (fails harmlessly on another user's lock file)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let reason = errno
            let holder = Self.holder(fd)
            close(fd)
            guard reason == EWOULDBLOCK else {
                throw HealthCardError(.io, "cannot lock \(path): \(String(cString: strerror(reason)))")
            }
            throw HealthCardError(
                .usage,
                "another `healthcards issue` (\(holder)) is writing into \(folder) right now; two runs into one "
                    + "--out would race for the same files. Wait for it to finish (then run again: cards already "
                    + "made are skipped), or choose another --out. Nothing was written")
        }
        var text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeMutableBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    deinit { close(fd) }

    /// "pid 1234: healthcards issue --issuer …" from the lock file and `/proc/<pid>/cmdline`.
    private static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let text = n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: " \n") : ""
        guard let pid = Int32(text), pid > 0 else { return "pid unknown: it has not written it yet" }
        guard let command = try? FileIO.read("/proc/\(pid)/cmdline"), !command.isEmpty else { return "pid \(pid)" }
        let words = command.split(separator: 0).prefix(4).map { String(decoding: $0, as: UTF8.self) }
        return "pid \(pid): \(words.joined(separator: " "))\(command.split(separator: 0).count > 4 ? " …" : "")"
    }
}
