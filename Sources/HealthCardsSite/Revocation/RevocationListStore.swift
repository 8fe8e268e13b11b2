import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// Where an issuer keeps its revocation lists (SMART Health Cards "Revocation", digest section 8): one list per
/// signing key, named by the key's kid. `revoke` reads and replaces them; `issue --site` reads every key's list
/// before a batch and again whenever one changes (`revision`), so a revocation that lands while the batch runs
/// turns away the records signed after it.
///
/// The first implementation is the static site's files, `FileRevocationListStore` (`SITE/.well-known/crl/<kid>.json`);
/// another (a database behind a link server) only has to keep the same promises:
/// - `list(kid:)` returns the list as last replaced, whole: never a list half written;
/// - `replace(_:)` makes the new list the one every later `list(kid:)` returns, or throws and changes nothing;
/// - `revision(kid:)` changes whenever the list may have changed, and is cheap enough to ask before every record.
///
/// Writers take the site's lock (`SiteLock`) around their read and replace; readers need none.
public protocol RevocationListStore: Sendable {
    /// The revocation list of key `kid`, or nil when the key has none.
    /// - Throws: `HealthCardError(.validation)` for a malformed list or one naming another kid; `.io` when it exists
    ///   but cannot be read.
    func list(kid: String) throws -> CRL?

    /// Makes `crl` the list of `crl.kid`, whole.
    /// - Throws: `HealthCardError(.io)` when it cannot be written; then the old list stays.
    func replace(_ crl: CRL) throws

    /// A value that is the same for as long as the list of `kid` is unchanged (and for a key without a list), and
    /// different once it was created, replaced or removed.
    func revision(kid: String) -> String

    /// Where the list of `kid` is, for messages: a path or a URL.
    func location(kid: String) -> String
}

/// The revocation lists of a static issuer site: `<directory>/<kid>.json`, each CRL replaced atomically (a
/// temporary file renamed into place, `FileIO.writeAtomically`), world-readable since it is published.
public struct FileRevocationListStore: RevocationListStore {
    /// The folder of the lists, `SITE/.well-known/crl`.
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public func location(kid: String) -> String { directory + "/" + kid + ".json" }

    public func list(kid: String) throws -> CRL? {
        let path = location(kid: kid)
        guard FileIO.exists(path) else { return nil }
        let crl = try CRL(bytes: try FileIO.read(path, maxBytes: InputBudget.crlFileBytes), source: path)
        guard crl.kid == kid else {
            throw HealthCardError(
                .validation,
                "\(path) has kid \(crl.kid), but its file name says \(kid); a CRL lives at .well-known/crl/<its kid>.json"
            )
        }
        return crl
    }

    public func replace(_ crl: CRL) throws {
        try FileIO.writeAtomically(crl.fileBytes, to: location(kid: crl.kid), access: .published)
    }

    /// The file's device, inode, size and modification time (nanoseconds), or `-` when there is none: a list is
    /// replaced by renaming a new file over it, so every replacement gets another inode.
    public func revision(kid: String) -> String { FileRevision.of(location(kid: kid)) }
}

/// The revision of a file, for readers that keep what it says in memory and read it again when it changed.
enum FileRevision {
    /// `device:inode:size:seconds.nanoseconds` of the file at `path` (links followed), or `-` when there is none.
    static func of(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return "-" }
        return "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }
}
