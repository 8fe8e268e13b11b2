import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify

/// An exclusive lock on an output folder, so two runs never write into the same `--out` at once: two
/// `issue` runs would race for the same card, image and report files, and `issue --shl` and `healthcards shl`
/// for the same link (`shl/<id>.txt` and its image: one run's text beside the other's image, or a link whose
/// file the other replaced). Both commands take it for the whole run.
///
/// The lock is `flock(2)` on `OUT/.healthcards-issue.lock`, which holds the owner's pid. The kernel
/// releases it when the process ends in any way (exit, crash, `kill -9`), so a dead run never leaves
/// a folder locked; the file itself stays (removing it could let two runs lock two different files).
/// The lock is held while the value lives; it is released when the value is freed.
package final class OutputLock {
    /// The lock file's name inside the output folder.
    public static let fileName = ".healthcards-issue.lock"

    /// The lock file.
    public let path: String
    private let fd: Int32
    /// The lock file's device and inode while this value holds its lock, nil before.
    private var identity: String?

    /// The lock files this process holds (device and inode), so a lock found busy under this process's own pid
    /// is told apart from one a run in this process really holds.
    private static let heldHere = Mutex<Set<String>>([])

    /// How long a lock busy under this process's own pid, but held by no value of this process, is waited
    /// for, in seconds: a child this process is starting holds a copy of every descriptor (a lock released
    /// a moment ago too) until its `exec` closes it (`O_CLOEXEC`), which takes milliseconds.
    static let inheritedCopyWait = 5.0

    /// Takes the lock, or fails at once naming the process that holds it.
    /// - Parameters:
    ///   - folder: the output folder (must exist).
    ///   - mode: permission bits of the lock file when it is created.
    /// - Throws: `HealthCardError(.configuration)` when another process holds the lock (its pid and command
    ///   line are named), `.io` when the lock file cannot be opened.
    public convenience init(folder: String, mode: mode_t) throws {
        try self.init(folder: folder, fileName: Self.fileName, mode: mode, waitSeconds: 0, waiting: nil) { holder in
            HealthCardError(
                .configuration,
                "another \(holder.command) (\(holder.description)) is writing into \(folder) right now; two runs into "
                    + "one output folder would race for the same files. Wait for it to finish (then run again: cards "
                    + "and links already made are kept), or choose another output folder. Nothing was written")
        }
    }

    /// Who holds a lock: "`healthcards shl`" (or "healthcards run" when unknown) and "pid 1234: healthcards …".
    public struct Holder: Sendable {
        public var command: String
        public var description: String
    }

    /// Takes the lock on `folder/fileName`, waiting at most `waitSeconds` for another process to release it.
    /// - Parameters:
    ///   - waiting: called once, with the holder, when the call has waited a second for the lock.
    ///   - refusal: the error thrown when the lock is still busy after the wait.
    /// - Throws: `refusal(holder)`, or `HealthCardError(.io)` when the lock file cannot be opened or locked.
    init(
        folder: String, fileName: String, mode: mode_t, waitSeconds: Double, waiting: ((Holder) -> Void)?,
        refusal: (Holder) -> HealthCardError
    ) throws {
        path = folder + "/" + fileName
        var fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)
        // A lock file another user made (a site the web team shares) cannot be opened for writing, but flock
        // works on a read-only descriptor too; only the pid is not recorded then.
        let writable = fd >= 0
        if fd < 0 && errno == EACCES { fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot open the lock file \(path): \(OS.errorText())")
        }
        self.fd = fd
        if writable { _ = fchmod(fd, mode) }  // whatever the umask (fails harmlessly on another user's lock file)
        let start = Clock.monotonicSeconds()
        let deadline = start + waitSeconds
        var announced = false
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let reason = errno
            // No close(fd) before these throws: every stored property is set, so `deinit` runs and closes it
            // (closing here too would close a descriptor number another thread may have opened since).
            guard reason == EWOULDBLOCK else {
                throw HealthCardError(.io, "cannot lock \(path): \(OS.errorText(reason))")
            }
            let now = Clock.monotonicSeconds()
            if now >= deadline && !(now < start + Self.inheritedCopyWait && Self.isInheritedCopy(fd)) {
                throw refusal(Self.holder(fd))
            }
            if !announced && Clock.monotonicSeconds() >= start + 1 {
                announced = true
                waiting?(Self.holder(fd))
            }
            usleep(20_000)
        }
        if writable {
            let text = Array("\(getpid())\n".utf8)
            _ = ftruncate(fd, 0)
            _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        if let held = FileIO.identity(fd: fd) {
            identity = held
            _ = Self.heldHere.withLock { $0.insert(held) }
        }
    }

    deinit {
        if let identity { _ = Self.heldHere.withLock { $0.remove(identity) } }
        close(fd)
    }

    /// Whether the busy lock on `fd`'s file names this process as its holder while no value of this process
    /// holds it: then the holder is a copy of a descriptor this process has closed, in a child between its
    /// fork and its exec, and the lock is free in a moment.
    private static func isInheritedCopy(_ fd: Int32) -> Bool {
        guard let identity = FileIO.identity(fd: fd), recordedPID(fd) == getpid() else { return false }
        return !heldHere.withLock { $0.contains(identity) }
    }

    /// The pid written in the lock file, or nil.
    private static func recordedPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let text = n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: " \n") : ""
        guard let pid = Int32(text), pid > 0 else { return nil }
        return pid
    }

    /// The holder's command ("`healthcards shl`", from its second word; "healthcards run" when unknown) and
    /// "pid 1234: healthcards issue --issuer …", from the lock file and `/proc/<pid>/cmdline`.
    private static func holder(_ fd: Int32) -> Holder {
        let unknown = "healthcards run"
        guard let pid = recordedPID(fd) else {
            return Holder(command: unknown, description: "pid unknown: it has not written it yet")
        }
        guard let command = try? FileIO.read("/proc/\(pid)/cmdline"), !command.isEmpty else {
            return Holder(command: unknown, description: "pid \(pid)")
        }
        let all = command.split(separator: 0)
        let words = all.prefix(4).map { String(decoding: $0, as: UTF8.self) }
        let subcommand = words.count > 1 && words[1].allSatisfy { $0.isLetter } ? "`healthcards \(words[1])`" : unknown
        return Holder(command: subcommand, description: "pid \(pid): \(words.joined(separator: " "))\(all.count > 4 ? " …" : "")")
    }
}
