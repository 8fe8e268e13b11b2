import HealthCardsCore

/// One signed card as the server keeps it: the batch's compact JWS (never re-signed here) and what
/// revocation and replacement need.
public struct StoredCard: Sendable, Equatable {
    /// The person's id as the batch knew it (the report's `id`), normalized as the batch does
    /// (`PatientIdentity.normalize`).
    public var patient: String
    /// The batch output folder the card came from.
    public var source: String
    /// 0-based place among the cards the folder holds for this person.
    public var position: Int
    /// When the run wrote its report, seconds since 1970.
    public var runAt: Int64
    public var kid: String?
    public var rid: String?
    /// The card's `nbf`, seconds since 1970.
    public var nbf: Int64
    /// The card's `vc.type` URIs, sorted.
    public var types: [String]
    public var jws: String

    public init(
        patient: String, source: String, position: Int, runAt: Int64, kid: String?, rid: String?, nbf: Int64,
        types: [String], jws: String
    ) {
        self.patient = patient
        self.source = source
        self.position = position
        self.runAt = runAt
        self.kid = kid
        self.rid = rid
        self.nbf = nbf
        self.types = types
        self.jws = jws
    }
}

/// One batch output as read for import (`CardImport`): its people, their cards, and the rids its report
/// says the site's revocation list already revoked.
public struct CardRun: Sendable {
    public var source: String
    /// When the run wrote its report, seconds since 1970.
    public var runAt: Int64
    /// Every person the run issued for (normalized ids), also those whose cards are all revoked.
    public var people: Set<String>
    public var cards: [StoredCard]
    /// (kid, rid) pairs a report line says are revoked (`"revoked": true`, `revokedBy`).
    public var revoked: Set<[String]>
    /// Cards left out because their signature is not the issuer's (`CardImport.read` with a verifier).
    public var refused: [RefusedCard] = []
    /// People whose record the run rejected because a revocation list revokes them (report lines `"revoked": true`):
    /// they are not served.
    public var revokedPeople: Set<String> = []

    public init(source: String, runAt: Int64, people: Set<String>, cards: [StoredCard], revoked: Set<[String]>) {
        self.source = source
        self.runAt = runAt
        self.people = people
        self.cards = cards
        self.revoked = revoked
    }
}

/// A card `CardImport.read` left out: its signature does not verify with the issuer's keys.
public struct RefusedCard: Sendable, Equatable {
    /// The `.smart-health-card` file, relative to the output folder.
    public var file: String
    /// The credential's index in the file's `verifiableCredential` list, from 0.
    public var index: Int
    /// The rule broken (`SIG_INVALID`, `KID_UNKNOWN`, …).
    public var code: RuleCode
    /// What was found, in words.
    public var reason: String

    public init(file: String, index: Int, code: RuleCode, reason: String) {
        self.file = file
        self.index = index
        self.code = code
        self.reason = reason
    }
}

/// What one import did.
public struct CardImportOutcome: Sendable, Equatable {
    /// False when the database already holds a newer run of this folder (nothing was changed).
    public var loaded: Bool
    public var people: Int
    public var cards: Int
    /// Cards of older runs (of this folder, or of other folders with the same `vc.type` list) replaced.
    public var replaced: Int
    /// Cards removed or left out because a revocation list or the report revokes their rid.
    public var revoked: Int
    /// People the run's report marks revoked (their record was refused, so they get no card of this run).
    public var revokedPeople = 0

    public init(loaded: Bool, people: Int = 0, cards: Int = 0, replaced: Int = 0, revoked: Int = 0) {
        self.loaded = loaded
        self.people = people
        self.cards = cards
        self.replaced = replaced
        self.revoked = revoked
    }
}

/// Where the server keeps the cards it serves through `$health-cards-issue`.
///
/// The promises: `load` is one transaction (a run is in whole or not at all); a newer run of a folder
/// replaces the older one's cards, and a person's cards from older runs of other folders with the same
/// `vc.type` list; an older run than the one stored changes nothing; a revoked card is never stored.
public protocol CardStore: Sendable {
    /// Loads a run.
    /// - Parameters:
    ///   - revokes: whether a key's revocation list revokes a card (kid, rid, nbf seconds); asked for the new
    ///     cards and for those already stored. What it throws rolls the import back.
    /// - Throws: `HealthCardError` with a `STORE_…` code when the database fails; what `revokes` throws.
    func load(_ run: CardRun, now: Int64, revokes: (String, String, Int64) throws -> Bool) throws -> CardImportOutcome
    /// The cards of a person (normalized id), in run and file order; nil for a person no run issued for.
    func cards(patient: String) throws -> [StoredCard]?
    /// Records one access (kind `health-cards-issue`; `detail` says the types and the count, never a card).
    func record(_ entry: AuditEntry) throws
}

/// `CardStore` on a `Database`: the same statements on SQLite and PostgreSQL.
public final class DatabaseCardStore: CardStore, @unchecked Sendable {
    // Immutable; `Database` is safe to share.
    public let database: Database
    /// Access records go where the links' do (the pool's group commit on a server).
    private let accessRecords: DatabaseLinkStore

    public init(database: Database) {
        self.database = database
        accessRecords = DatabaseLinkStore(database: database)
    }

    /// The PostgreSQL advisory lock key an import holds ("hcCRD" as digits).
    static let importLockKey: Int64 = 0x6863_4352_4400

    public func load(_ run: CardRun, now: Int64, revokes: (String, String, Int64) throws -> Bool) throws
        -> CardImportOutcome
    {
        try database.withConnection { c in
            try c.transaction(write: true, durable: true) {
                // Imports take turns (instances that all start with --cards): SQLite's write lock already makes them,
                // PostgreSQL's row locks would not (a second import's deletes miss the first one's new rows).
                if c.dialect == .postgresql {
                    _ = try c.query("SELECT pg_advisory_xact_lock(?)", [.integer(Self.importLockKey)])
                }
                if let stored = try c.scalar("SELECT run_at FROM hc_card_runs WHERE source = ?", [.text(run.source)])?
                    .integer, stored > run.runAt
                {
                    return CardImportOutcome(loaded: false)
                }
                var outcome = CardImportOutcome(loaded: true, people: run.people.count)
                outcome.revokedPeople = run.revokedPeople.count
                // Cards already stored that the report revokes: removed first, so they count as revoked, not as
                // replaced by this run (which gives their person no card).
                for pair in run.revoked {
                    let gone = try c.query(
                        "DELETE FROM hc_cards WHERE kid = ? AND rid = ? RETURNING position", [.text(pair[0]), .text(pair[1])])
                    outcome.revoked += gone.count
                }
                let before =
                    try c.scalar("SELECT count(*) FROM hc_cards WHERE source = ?", [.text(run.source)])?.integer ?? 0
                _ = try c.query("DELETE FROM hc_cards WHERE source = ?", [.text(run.source)])
                _ = try c.query("DELETE FROM hc_card_people WHERE source = ?", [.text(run.source)])
                _ = try c.query(
                    """
                    INSERT INTO hc_card_runs (source, run_at, imported_at) VALUES (?, ?, ?)
                    ON CONFLICT (source) DO UPDATE SET run_at = excluded.run_at, imported_at = excluded.imported_at
                    """, [.text(run.source), .integer(run.runAt), .integer(now)])
                outcome.replaced = Int(before)
                for person in run.people.sorted() {
                    _ = try c.query(
                        "INSERT INTO hc_card_people (patient, source) VALUES (?, ?)", [.text(person), .text(run.source)])
                }
                // A person's cards of older runs of other folders with the same vc.type list: this run reissued them.
                var replacedKinds = Set<[String]>()
                for card in run.cards where replacedKinds.insert([card.patient, card.types.joined(separator: " ")]).inserted {
                    let gone = try c.query(
                        "DELETE FROM hc_cards WHERE patient = ? AND types = ? AND run_at < ? AND source <> ? RETURNING position",
                        [
                            .text(card.patient), .text(card.types.joined(separator: " ")), .integer(run.runAt),
                            .text(run.source),
                        ])
                    outcome.replaced += gone.count
                }
                for card in run.cards {
                    if let kid = card.kid, let rid = card.rid,
                        try run.revoked.contains([kid, rid]) || revokes(kid, rid, card.nbf)
                    {
                        outcome.revoked += 1
                        continue
                    }
                    _ = try c.query(
                        """
                        INSERT INTO hc_cards (patient, source, position, run_at, kid, rid, nbf, types, jws)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                        [
                            .text(card.patient), .text(run.source), .integer(Int64(card.position)),
                            .integer(run.runAt), .optional(card.kid), .optional(card.rid), .integer(card.nbf),
                            .text(card.types.joined(separator: " ")), .text(card.jws),
                        ])
                    outcome.cards += 1
                }
                // Cards already stored that a revocation list now revokes.
                let stored = try c.query(
                    "SELECT patient, source, position, kid, rid, nbf FROM hc_cards WHERE rid IS NOT NULL AND kid IS NOT NULL", [])
                for row in stored {
                    guard let kid = row[3].text, let rid = row[4].text, let nbf = row[5].integer,
                        try revokes(kid, rid, nbf)
                    else { continue }
                    _ = try c.query(
                        "DELETE FROM hc_cards WHERE patient = ? AND source = ? AND position = ?", [row[0], row[1], row[2]])
                    outcome.revoked += 1
                }
                return outcome
            }
        }
    }

    public func cards(patient: String) throws -> [StoredCard]? {
        try database.withConnection { c in
            guard try c.scalar("SELECT 1 FROM hc_card_people WHERE patient = ?", [.text(patient)]) != nil else {
                return nil
            }
            let rows = try c.query(
                """
                SELECT patient, source, position, run_at, kid, rid, nbf, types, jws FROM hc_cards WHERE patient = ?
                ORDER BY run_at, source, position
                """, [.text(patient)])
            return try rows.map { row throws(StoreError) -> StoredCard in
                guard row.count == 9, let patient = row[0].text, let source = row[1].text, let position = row[2].integer,
                    let runAt = row[3].integer, let nbf = row[6].integer, let types = row[7].text, let jws = row[8].text
                else { throw StoreError(.failed, "a card row is not what this program writes") }
                return StoredCard(
                    patient: patient, source: source, position: Int(position), runAt: runAt, kid: row[4].text,
                    rid: row[5].text, nbf: nbf, types: types.split(separator: " ").map(String.init), jws: jws)
            }
        }
    }

    public func record(_ entry: AuditEntry) throws {
        try accessRecords.record(entry)
    }
}
