import HealthCardsCore
import HealthCardsVerify
import Synchronization

/// One revocation list, indexed by rid for the lookup a batch makes for every record.
public struct IndexedRevocationList: Sendable {
    /// The list.
    public let crl: CRL
    /// Where it is (`RevocationListStore.location`), for messages.
    public let location: String
    /// The index in `crl.entries` of each rid's first entry. Every record of a batch is looked up, and a list
    /// may hold a million rids (`InputBudget.crlFileBytes`): scanned per record, that was 30 ms a record.
    private let firstEntry: [String: Int]

    public init(crl: CRL, location: String) {
        self.crl = crl
        self.location = location
        var firstEntry: [String: Int] = [:]
        firstEntry.reserveCapacity(crl.entries.count)
        for (index, entry) in crl.entries.enumerated() where firstEntry[entry.rid] == nil {
            firstEntry[entry.rid] = index
        }
        self.firstEntry = firstEntry
    }

    /// The first entry of the list that revokes a card with `rid` and `nbf` (seconds): the rid's entry without a
    /// timestamp, or with one after `nbf`. Nil when the list does not revoke it.
    public func entry(revoking rid: String, nbf: Int64) -> CRL.Entry? {
        guard let first = firstEntry[rid] else { return nil }
        return crl.entries[first...].first { $0.rid == rid && $0.revokes(nbfSeconds: nbf) }
    }
}

/// Why a card must not be signed: a list of the site revokes its person.
public struct RevocationRefusal: Sendable, Equatable {
    /// The key whose list revokes the person (the signing key, or another key of the site).
    public var kid: String
    /// The person's rid under that key.
    public var rid: String
    /// The entry that revokes it.
    public var entry: CRL.Entry
    /// The report's message: which entry, in which list, and how the person gets a valid card.
    public var message: String
}

/// The revocation lists of every key an issuer's site publishes, as `issue --site` reads them: a person whose
/// cards a list revokes is not signed a new card, whichever published key's list it is.
///
/// A person's rid depends on the key (HMAC of the id keyed by the secret and the kid, digest section 8), so after
/// a key rotation a revoked person's new card would carry a rid no list names, and verify. With the rid secret
/// the batch derives the person's rid under each published key and looks it up in that key's list; an entry
/// applies by the same rule as on the signing key's own list (`rid` revokes every card, `rid.T` those with
/// `nbf` before T), so `revoke --before T --narrow` on the old key lets a corrected card through.
///
/// The lists and the key set are read again whenever their revision changes (`RevocationListStore.revision`,
/// asked before each record): a revocation that lands while a batch runs refuses the records signed after it
/// (those signed before carry the rid it revokes). If the signing key is dropped from the key set meanwhile
/// (`site --drop-kid`, a compromised key), the rest of the batch is not signed at all.
public final class SiteRevocations: Sendable {
    /// The site.
    public let site: IssuerSite
    /// The key that signs this run's cards.
    public let signingKid: String
    /// Where the lists are.
    let store: any RevocationListStore

    /// What the lists and the key set said when last read.
    public struct Snapshot: Sendable {
        /// The kids the site's key set publishes.
        public var kids: [String]
        /// The list of each published kid that has one.
        public var lists: [String: IndexedRevocationList]
        /// False once the signing key is no longer in the site's key set.
        public var signingKeyPublished: Bool
    }

    private struct State: Sendable {
        var keySetRevision: String
        var listRevisions: [String: String]
        var snapshot: Snapshot
    }
    private let state: Mutex<State>

    /// Reads the site's key set and the lists of its keys.
    /// - Parameters:
    ///   - store: the lists (the site's files unless given).
    /// - Throws: `HealthCardError(.validation)` for a malformed list, `.key` for a malformed key set, `.io`.
    public init(site: IssuerSite, signingKid: String, store: (any RevocationListStore)? = nil) throws {
        self.site = site
        self.signingKid = signingKid
        let store = store ?? site.revocationLists
        self.store = store
        let state = try Self.read(site: site, store: store, signingKid: signingKid, previous: nil)
        self.state = Mutex(state)
    }

    /// The lists as they are now: read again when the key set or a list changed since the last call.
    /// - Throws: as `init`, when a list changed into something that cannot be read.
    public func current() throws -> Snapshot {
        try state.withLock { state throws -> Snapshot in
            if FileRevision.of(site.keySetPath) == state.keySetRevision,
                state.listRevisions.allSatisfy({ store.revision(kid: $0.key) == $0.value })
            {
                return state.snapshot
            }
            state = try Self.read(site: site, store: store, signingKid: signingKid, previous: state)
            return state.snapshot
        }
    }

    private static func read(site: IssuerSite, store: any RevocationListStore, signingKid: String, previous: State?)
        throws
        -> State
    {
        let keySetRevision = FileRevision.of(site.keySetPath)
        var kids = previous?.snapshot.kids ?? []
        if previous == nil || keySetRevision != previous?.keySetRevision {
            kids = try IssuerSite.publishedKids(keySetAt: site.keySetPath).reduce(into: [String]()) {
                if !$0.contains($1) { $0.append($1) }
            }
        }
        // The signing key's list is read whether or not the key is still published, for its own cards.
        let watched = kids.contains(signingKid) ? kids : [signingKid] + kids
        var revisions: [String: String] = [:]
        var lists: [String: IndexedRevocationList] = [:]
        for kid in watched {
            // The revision before the read: a list replaced during the read is read again next time.
            let revision = store.revision(kid: kid)
            revisions[kid] = revision
            if let old = previous, old.listRevisions[kid] == revision, let list = old.snapshot.lists[kid] {
                lists[kid] = list
            } else if let crl = try store.list(kid: kid) {
                lists[kid] = IndexedRevocationList(crl: crl, location: store.location(kid: kid))
            }
        }
        return State(
            keySetRevision: keySetRevision, listRevisions: revisions,
            snapshot: Snapshot(kids: kids, lists: lists, signingKeyPublished: kids.contains(signingKid)))
    }
}

extension SiteRevocations.Snapshot {
    /// The list of the signing key `kid`, if it has one.
    public func list(kid: String) -> IndexedRevocationList? { lists[kid] }

    /// Why a card for the person `ridFrom`, with `rid` under the signing key and `nbf`, must not be signed, or nil
    /// when no list of the site revokes them.
    /// - Parameters:
    ///   - signingKid: the key that would sign it.
    ///   - secret: the rid secret, to derive the person's rid under the site's other keys.
    ///   - now: seconds since 1970, for the times the message suggests.
    /// - Throws: `HealthCardError(.key)` when a rid cannot be derived (HMAC failed).
    public func refusal(
        rid: String, ridFrom: String, nbf: Int64, signingKid: String, secret: RIDSecret, site: String, now: Int64
    ) throws -> RevocationRefusal? {
        if let list = lists[signingKid], let entry = list.entry(revoking: rid, nbf: nbf) {
            return RevocationRefusal(
                kid: signingKid, rid: rid, entry: entry,
                message: Self.sameKey(list, entry: entry, rid: rid, ridFrom: ridFrom, nbf: nbf, site: site, now: now))
        }
        for kid in kids where kid != signingKid {
            guard let list = lists[kid], !list.crl.entries.isEmpty else { continue }
            let other = try RID.derive(secret: secret, kid: kid, patientID: ridFrom)
            guard let entry = list.entry(revoking: other, nbf: nbf) else { continue }
            return RevocationRefusal(
                kid: kid, rid: other, entry: entry,
                message: Self.otherKey(
                    list, entry: entry, rid: other, newRid: rid, ridFrom: ridFrom, nbf: nbf, signingKid: signingKid,
                    site: site, now: now))
        }
        return nil
    }

    /// The narrowed revocation that lets a corrected card of `ridFrom` through, from `now` on, in words.
    static func narrowCommand(site: String, ridFrom: String, now: Int64, key: String) -> String {
        "narrow the entry in site \(site) to the cards of id \(Quote.text(ridFrom)) issued before \(now), with key \(key), "
            + "the revocation secret and the report"
    }

    private static func sameKey(
        _ list: IndexedRevocationList, entry: CRL.Entry, rid: String, ridFrom: String, nbf: Int64, site: String,
        now: Int64
    ) -> String {
        guard let before = entry.before else {
            return
                "vc.rid \(rid) (of id \(Quote.text(ridFrom))) is revoked by the entry '\(entry.text)' in \(list.location), which "
                + "revokes every card of this person signed by key \(list.crl.kid), those issued from now on included: every "
                + "verifier that checks the list would reject this card, so it was not signed. To give the person a "
                + "corrected card, revoke only the cards issued before it: \(narrowCommand(site: site, ridFrom: ridFrom, now: now, key: list.crl.kid)) (or a "
                + "time just after the bad card's nbf), then run this again"
        }
        let when =
            before > now
            ? "run this again from then on" : "leave the issuance time (nbf) unset (or give one at or after \(before))"
        return "vc.rid \(rid) (of id \(Quote.text(ridFrom))) is revoked for cards issued before \(before) "
            + "(\(Clock.describe(before))) by the entry '\(entry.text)' in \(list.location), and this card's nbf \(nbf) is before "
            + "that: every verifier that checks the list would reject it, so it was not signed. To issue it, \(when)"
    }

    private static func otherKey(
        _ list: IndexedRevocationList, entry: CRL.Entry, rid: String, newRid: String, ridFrom: String, nbf: Int64,
        signingKid: String, site: String, now: Int64
    ) -> String {
        let which =
            entry.before.map {
                "for cards issued before \($0) (\(Clock.describe($0))), and this card's nbf \(nbf) is before that"
            }
            ?? "for every card, those issued from now on included"
        let fix =
            entry.before.map { before in
                before > now
                    ? "run this again from \(before) on, or narrow the entry: "
                        + narrowCommand(site: site, ridFrom: ridFrom, now: now, key: "OLD-KEY")
                        + " (OLD-KEY: key \(list.crl.kid), its public half is enough)"
                    : "leave the issuance time (nbf) unset (or give one at or after \(before))"
            }
            ?? "narrow the old key's entry to the cards issued before now (they stay revoked): "
            + narrowCommand(site: site, ridFrom: ridFrom, now: now, key: "OLD-KEY")
            + " (OLD-KEY: key \(list.crl.kid), its public half is enough), then run this again"
        return
            "this person (id \(Quote.text(ridFrom))) is revoked under key \(list.crl.kid), which signed their earlier "
            + "cards: the entry '\(entry.text)' in \(list.location) revokes vc.rid \(rid) \(which). A card signed now by key "
            + "\(signingKid) would carry vc.rid \(newRid), which no list names, so it would verify although the person's "
            + "cards were revoked: it was not signed. If the person is to get a new card, \(fix)"
    }
}
