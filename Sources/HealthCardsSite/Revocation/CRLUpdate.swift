import HealthCardsCore
import HealthCardsVerify

extension CRL {
    /// What adding one entry did to a list.
    public enum Change: Sendable, Equatable {
        /// The rid was not listed; the entry was appended.
        case added
        /// The rid was listed for fewer cards (an earlier timestamp); this entry replaced it.
        case widened(from: Entry)
        /// An existing entry already revokes every card this one would (same or later timestamp, or
        /// no timestamp); nothing changed.
        case alreadyRevoked(by: Entry)
        /// The rid was listed for more cards (no timestamp, or a later one); on request (`narrow`) this entry
        /// replaced it, so cards with `nbf` from this entry's timestamp on are no longer revoked.
        case narrowed(from: Entry)
    }

    /// True when `entry` revokes every card that `other` revokes (same rid; no timestamp, or a
    /// timestamp at or after `other`'s).
    static func covers(_ entry: Entry, _ other: Entry) -> Bool {
        guard entry.rid == other.rid else { return false }
        guard let mine = entry.before else { return true }
        guard let theirs = other.before else { return false }
        return mine >= theirs
    }

    /// Revokes `entry.rid` (for cards with `nbf` before `entry.before` when given), keeping one entry
    /// per rid: an entry that already covers it leaves the list as it is, a narrower one is replaced
    /// in place. A list never shrinks: verifiers may already act on what it says. `ctr` is not changed
    /// here (`IssuerSite.revoke` increments it once per update).
    ///
    /// With `narrow` (and a timestamp on `entry`), an entry for the rid that revokes more cards is replaced by
    /// `entry` instead: the one way a list shrinks, asked for by name, so that a corrected card issued after
    /// the timestamp verifies while the cards before it stay revoked.
    public mutating func add(_ entry: Entry, narrow: Bool = false) -> Change {
        if narrow, entry.before != nil, let index = entries.firstIndex(where: { $0.rid == entry.rid && $0 != entry }),
            CRL.covers(entries[index], entry)
        {
            let old = entries[index]
            replaceEntries(of: entry.rid, with: entry)
            return .narrowed(from: old)
        }
        if let existing = entries.first(where: { CRL.covers($0, entry) }) { return .alreadyRevoked(by: existing) }
        guard let index = entries.firstIndex(where: { $0.rid == entry.rid }) else {
            entries.append(entry)
            return .added
        }
        let old = entries[index]
        replaceEntries(of: entry.rid, with: entry)
        return .widened(from: old)
    }

    /// Leaves `entry` as the one entry of `rid`, where its first entry was. (A hand-edited list may hold the
    /// rid more than once, `entry` itself among them: it is kept once.)
    private mutating func replaceEntries(of rid: String, with entry: Entry) {
        let position = entries.firstIndex { $0.rid == rid } ?? entries.count
        entries.removeAll { $0.rid == rid }
        entries.insert(entry, at: min(position, entries.count))
    }
}

extension IssuerSite {
    /// What `revoke` did.
    public struct RevocationResult: Sendable, Equatable {
        public var kid: String
        /// Each requested entry and what happened to it.
        public var changes: [(entry: CRL.Entry, change: CRL.Change)]
        /// The CRL's `ctr` after the update (the key's `crlVersion`).
        public var ctr: Int
        /// Whether the CRL file was written.
        public var wroteCRL: Bool
        /// Whether `jwks.json` was written (its `crlVersion` for the key differed from `ctr`).
        public var wroteKeySet: Bool

        public static func == (a: RevocationResult, b: RevocationResult) -> Bool {
            a.kid == b.kid && a.ctr == b.ctr && a.wroteCRL == b.wroteCRL && a.wroteKeySet == b.wroteKeySet
                && a.changes.count == b.changes.count
                && zip(a.changes, b.changes).allSatisfy { $0.entry == $1.entry && $0.change == $1.change }
        }
    }

    /// Revokes rids of cards signed by key `kid` (digest section 8): adds them to
    /// `.well-known/crl/<kid>.json` (created with `ctr` 1 when missing), increments `ctr` once when the
    /// list changed, then sets the key's `crlVersion` in `.well-known/jwks.json` to the same value.
    ///
    /// The CRL is written before the key set, each atomically, so a verifier never sees a
    /// `crlVersion` whose list is not yet there, and read back: every entry reported revoked is in the list
    /// on disk. Revoking what is already revoked writes nothing, except that a key set left behind by an
    /// interrupted run is brought up to the CRL's `ctr`. Callers hold the site's lock (`SiteLock`), so no
    /// other command changes the list between the read and the write.
    /// - Throws: `HealthCardError(.configuration)` when the site has no `jwks.json` or it does not publish
    ///   `kid`; `.validation` for a malformed CRL; `.key` for a malformed key set; `.io` on write errors
    ///   or when the list read back lacks an entry.
    /// - Parameter narrow: replace an entry of the same rid that revokes more cards (`CRL.add(_:narrow:)`).
    public func revoke(_ entries: [CRL.Entry], kid: String, narrow: Bool = false) throws -> RevocationResult {
        try revoke(entries, kid: kid, narrow: narrow, in: revocationLists)
    }

    /// `revoke(_:kid:narrow:)` with the lists kept in `store` (the key set stays this site's `jwks.json`).
    public func revoke(_ entries: [CRL.Entry], kid: String, narrow: Bool = false, in store: some RevocationListStore) throws
        -> RevocationResult
    {
        guard FileIO.exists(keySetPath) else {
            throw HealthCardError(
                .configuration,
                code: .siteNotLaidOut,
                "\(keySetPath) does not exist; lay out the issuer site \(root) first, with its keys")
        }
        let keySet = try KeySetFile.parse(try FileIO.read(keySetPath, maxBytes: InputBudget.cardFileBytes), source: keySetPath)
        // Fails early, before the CRL is touched, when the key is not published.
        _ = try KeySetFile.settingCRLVersion(1, kid: kid, in: keySet, source: keySetPath)
        let existing = try store.list(kid: kid)
        var crl = existing ?? CRL(kid: kid, ctr: 0)
        var changes: [(entry: CRL.Entry, change: CRL.Change)] = []
        for entry in entries {
            guard RID.isValid(entry.rid) else {
                throw HealthCardError(.configuration, "\(Quote.text(entry.rid)) is not a rid (1 to 24 base64url characters)")
            }
            changes.append((entry, crl.add(entry, narrow: narrow)))
        }
        let changed = changes.contains { if case .alreadyRevoked = $0.change { return false } else { return true } }
        if changed {
            crl.ctr += 1
            try store.replace(crl)
            // Read back: an entry is reported revoked only when the list on disk revokes it.
            let written = try store.list(kid: kid)
            for (entry, _) in changes where !(written?.entries.contains { CRL.covers($0, entry) && $0.rid == entry.rid } ?? false) {
                throw HealthCardError(
                    .io,
                    "\(store.location(kid: kid)) was changed by another program while revoke wrote it: it does not hold "
                        + "\(entry.text) (ctr \(written.map { String($0.ctr) } ?? "none")). Run the same revoke again")
            }
        }
        var wroteKeySet = false
        if crl.ctr >= 1, KeySetFile.crlVersions(kid: kid, in: keySet).contains(where: { $0 != crl.ctr }) {
            let updated = try KeySetFile.settingCRLVersion(crl.ctr, kid: kid, in: keySet, source: keySetPath)
            try FileIO.writeAtomically(KeySetFile.bytes(updated), to: keySetPath, access: .published)
            wroteKeySet = true
        }
        return RevocationResult(kid: kid, changes: changes, ctr: crl.ctr, wroteCRL: changed, wroteKeySet: wroteKeySet)
    }
}
