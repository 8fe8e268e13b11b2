#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify

/// The exclusive lock every command that writes an issuer site takes for as long as it writes: `site`,
/// `jwks` into `SITE/.well-known/`, `revoke` (CRL and key set, or `--link`), `shl` and `issue --shl` (link
/// files in `SITE/shl/`).
///
/// Without it, two `revoke` runs each read the CRL, add their rid and write the list back: the later write
/// drops the earlier rid, though both said "revoked". Under the lock each one reads the CRL only after the
/// other has written it.
///
/// The lock is `flock(2)` on `SITE/.healthcards-site.lock` (the pid of the holder inside; the host rules
/// answer 404 for it, `HostRules.deniedFiles`). A command that finds the site locked waits for it, at most
/// `defaultWait` seconds (a `revoke` takes milliseconds, an `issue --shl` as long as its batch), then stops
/// naming the holder. The kernel releases the lock when the holder ends in any way; the file stays.
package enum SiteLock {
    /// The lock file's name at the site root.
    public static let fileName = ".healthcards-site.lock"
    /// Seconds a command waits for another one to finish writing the site.
    public static let defaultWait: Double = 60

    /// Takes the lock on the site folder `root` (created, 0755, when missing).
    /// - Parameters:
    ///   - waitSeconds: how long to wait for another holder.
    ///   - waiting: called once with a sentence naming the holder when the command has waited a second.
    /// - Returns: the lock, held until the value is freed.
    /// - Throws: `HealthCardError(.configuration)` naming the holder when the wait ran out (nothing was written),
    ///   `.io` when the folder cannot be made or the lock file cannot be opened.
    public static func take(site root: String, waitSeconds: Double = defaultWait, waiting: ((String) -> Void)? = nil)
        throws -> OutputLock
    {
        try FileIO.createDirectories(root, mode: OutputAccess.published.folderMode)
        return try OutputLock(
            folder: root, fileName: fileName, mode: OutputAccess.published.fileMode, waitSeconds: waitSeconds,
            waiting: { holder in
                waiting?("waiting for \(holder.command) (\(holder.description)), which is writing the site \(root)")
            },
            refusal: { holder in
                HealthCardError(
                    .configuration,
                    "another \(holder.command) (\(holder.description)) has been writing the site \(root) for over "
                        + "\(Int(waitSeconds)) s; two commands writing one site would lose each other's changes (a "
                        + "revocation list written over). Run this again when it has finished. Nothing was written")
            })
    }
}

/// The site's lock taken for each write into the site and released after it (`issue --shl`, `shl`): a long batch
/// holds it for the moment each link file goes in, not for its whole run, so an urgent `revoke` or
/// `site --drop-kid` waits milliseconds, never for the batch. The threads of one run take turns in the process
/// first (a lock file is locked per open file, so two threads would otherwise wait for each other through the
/// kernel, each naming the other as the holder).
package final class SiteWriteGate: Sendable {
    /// The site folder.
    public let root: String
    private let notice: (@Sendable (String) -> Void)?
    private let order = ThreadTurn()

    /// - Parameter notice: called with a sentence when a write has waited a second for another command.
    public init(root: String, notice: (@Sendable (String) -> Void)?) {
        self.root = root
        self.notice = notice
    }

    /// Runs `body` holding the site's lock (`SiteLock.take`).
    /// - Throws: what `SiteLock.take` throws (another command held the site for over `SiteLock.defaultWait`
    ///   seconds), and what `body` throws.
    public func withLock<T>(_ body: () throws -> T) throws -> T {
        order.lock()
        defer { order.unlock() }
        let lock = try SiteLock.take(site: root, waiting: notice)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }
}

/// A plain mutual exclusion between threads (a pthread mutex), for a section whose result is not `Sendable`.
final class ThreadTurn: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
