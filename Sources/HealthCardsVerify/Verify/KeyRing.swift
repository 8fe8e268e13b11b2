import HealthCardsCore

/// How a key set's issuer is known.
public enum KeySetBinding: Sendable, Equatable {
    /// Not bound to an issuer: a key set a program read without one (`verify KEYSET.json`, a bare `--jwks`
    /// file). Its keys verify no card, unless the program chose to let one such set stand for every issuer.
    case unbound
    /// The issuer was given with the key set: `TrustStore.add(issuer:jwks:…)`, or `--jwks URL=PATH`.
    case given
    /// The site's `healthcards-site.json` names the issuer, at this path.
    case siteRecord(String)
    /// A signed VCI directory snapshot lists the key set under the issuer (`Directory`).
    case directory

    /// What `--json` writes as `boundBy`: `argument`, `site-record`, or nil (null) when not bound.
    package var jsonName: String? {
        switch self {
        case .unbound: return nil
        case .given: return "argument"
        case .siteRecord: return "site-record"
        case .directory: return "directory"
        }
    }
}

/// The key sets a check may use, each with the issuer it belongs to: what a `TrustStore` holds.
///
/// The spec finds an issuer's keys at `<iss>/.well-known/jwks.json` (digest section 7), so a key only
/// vouches for cards whose `iss` is the issuer that publishes it: key sets are never pooled across
/// issuers. Unbound key sets (only a program's file walker adds them) verify nothing, unless the program
/// chose `standIn` (`TrustStore.unboundStandsIn`): one unbound key set given alone then stands for the
/// issuer of every card (the command line's everyday "check my own cards" case).
package struct KeyRing: Sendable {
    /// One key set and its issuer.
    package struct KeySet: Sendable {
        /// The key set's name (its file, or `<issuer>/.well-known/jwks.json` for bytes given without one).
        package var file: String
        /// The issuer (`iss`) whose keys these are; nil when unbound.
        package var issuer: String?
        package var binding: KeySetBinding
        /// The usable keys (`KeySetCheck`).
        package var keys: [TrustedKey]
        /// The set's own errors (a set with no usable key has `JWKS_NO_KEYS`): what a card of its issuer
        /// depends on when no key of it could verify the card.
        package var problems: [Finding] = []

        package init(
            file: String, issuer: String?, binding: KeySetBinding, keys: [TrustedKey], problems: [Finding] = []
        ) {
            self.file = file
            self.issuer = issuer
            self.binding = binding
            self.keys = keys
            self.problems = problems
        }

        /// `F (issuer X)` or `F (not bound to an issuer)`, for messages.
        package var described: String {
            "\(file) (" + (issuer.map { "issuer \($0)" } ?? "not bound to an issuer") + ")"
        }
    }

    package var sets: [KeySet]
    /// Whether one unbound key set given alone stands for the issuer of every card: a program's explicit
    /// choice (the command line's, for `--jwks FILE`), never the library's default.
    package var standInAllowed: Bool
    /// The issuers of a VCI directory, each with its key set (`TrustStore.add(directory:…)`).
    package var directory: DirectoryTrust?

    /// A directory's key sets, one per entry in the directory's order, found through its indices (by `iss`, then
    /// `canonical_iss`; by kid only to name another issuer's key), never by a scan of the entries.
    package struct DirectoryTrust: Sendable {
        package var directory: Directory
        /// `sets[i]` is the key set of `directory.issuers[i]`.
        package var sets: [KeySet]
        /// The time a key's `lastRetrieved` must not be before (now less the key age allowed), in seconds.
        package var staleBefore: Int64
        /// The key age allowed, in seconds.
        package var maxKeyAge: Int64
        /// Whether the certificate was pinned by the program (not the one shipped beside the snapshot).
        package var pinned: Bool

        /// The key sets of the card's issuer `iss`, with its directory entries and how they were found.
        package func lookup(_ iss: String) -> (entries: [Directory.Issuer], sets: [KeySet], match: Directory.Match)? {
            guard let (entries, match) = directory.issuers(for: iss) else { return nil }
            return (entries, entries.map { sets[$0.position] }, match)
        }
    }

    package init(sets: [KeySet] = [], standInAllowed: Bool = false) {
        self.sets = sets
        self.standInAllowed = standInAllowed
    }

    /// True when no key set was given and no directory: no signature can be checked.
    package var isEmpty: Bool { sets.isEmpty && directory == nil }

    /// The one unbound key set that stands for every card's issuer: set when the program allows it and
    /// exactly one key set was given and it is not bound.
    /// Never with a directory: its issuers are bound by it.
    package var standIn: KeySet? {
        standInAllowed && directory == nil && sets.count == 1 && sets[0].issuer == nil ? sets[0] : nil
    }

    /// The key sets whose keys may verify a card with `iss`: those bound to `iss`, or the stand-in.
    package func sets(for iss: String?) -> [KeySet] {
        if let standIn { return [standIn] }
        guard let iss else { return [] }
        return sets.filter { $0.issuer == iss } + (directory?.lookup(iss)?.sets ?? [])
    }

    /// The key sets that may not verify a card with `iss`: every other one.
    func otherSets(for iss: String?) -> [KeySet] {
        if standIn != nil { return [] }
        return sets.filter { $0.issuer == nil || $0.issuer != iss }
    }
}
