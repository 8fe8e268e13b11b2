import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

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
