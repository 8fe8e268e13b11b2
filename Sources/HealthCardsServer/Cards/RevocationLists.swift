import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The issuer site's revocation lists (`SITE/.well-known/crl/<kid>.json`, SMART Health Cards "Revocation"), as
/// the server checks them on every `$health-cards-issue` answer: a card revoked after it was imported is not
/// served from the moment `revoke` replaced the list.
///
/// Each list is read again when its file changed (device, inode, size or modification time: `revoke` replaces the
/// file by a rename), else taken from memory.
public final class RevocationLists: Sendable {
    /// The folder of the lists, `SITE/.well-known/crl`.
    public let directory: String
    private let cache = Locked<[String: (stamp: [Int64], crl: CRL?)]>([:])  // pthread: seen by ThreadSanitizer

    public init(directory: String) { self.directory = directory }

    /// Whether the list of `kid` revokes a card with `rid` and `nbf` (seconds since 1970).
    /// - Throws: `HealthCardError(.validation)` for a list that exists but is not a CRL of `kid`, `.io` when it
    ///   cannot be read, `.input` for a kid that cannot name a file: the caller serves nothing then.
    public func revokes(kid: String, rid: String, nbf: Int64) throws -> Bool {
        guard !kid.isEmpty, kid.utf8.count <= 128, kid.utf8.allSatisfy(RID.isBase64URLCharacter) else {
            throw HealthCardError(.input, "a card's kid is not base64url, so its revocation list cannot be found")
        }
        let path = directory + "/" + kid + ".json"
        var st = stat()
        guard stat(path, &st) == 0 else {
            guard errno == ENOENT else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
            cache.withLock { $0[kid] = ([], nil) }
            return false
        }
        let stamp = [
            Int64(st.st_dev), Int64(st.st_ino), Int64(st.st_size), Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec),
        ]
        if let cached = cache.withLock({ $0[kid] }), cached.stamp == stamp {
            return cached.crl?.revokes(rid: rid, nbfSeconds: nbf) ?? false
        }
        let crl = try CRL(bytes: try FileIO.read(path, maxBytes: InputBudget.crlFileBytes), source: path)
        guard crl.kid == kid else {
            throw HealthCardError(.validation, "\(path) has kid \(crl.kid), not the one its name says")
        }
        cache.withLock { $0[kid] = (stamp, crl) }
        return crl.revokes(rid: rid, nbfSeconds: nbf)
    }
}
