import HealthCardsCore

/// The database schema and its migrations. Every table's name starts with `hc_`, so the tables can share a
/// PostgreSQL database with others.
///
/// `hc_schema_version` holds one row per step applied (version, time). Opening a database applies the missing
/// steps in one transaction (under an advisory lock on PostgreSQL, so instances starting together migrate
/// once); a database whose newest step is above `version` was upgraded by a newer program and is refused.
/// A new step is appended to `steps` and never edited once released.
enum Schema {
    /// The version this program writes and reads.
    static let version = 5

    /// The PostgreSQL advisory lock key the migration holds ("hcSHL" as digits).
    static let migrationLockKey: Int64 = 0x6863_5348_4C00

    /// Step `n` (1-based) for a dialect.
    static func steps(_ dialect: SQLDialect) -> [[String]] {
        let integer = dialect == .sqlite ? "INTEGER" : "BIGINT"
        // Audit rows are deleted only oldest first and never the newest (pruning keeps it), so SQLite's rowid alone
        // increases (AUTOINCREMENT would write its counter too).
        let serial = dialect == .sqlite ? "INTEGER PRIMARY KEY" : "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
        return [
            // 1: links, their files, the access record.
            [
                "CREATE TABLE hc_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
                // A link: the manifest URL's last segment (43 base64url characters) is its id. No key is ever stored.
                """
                CREATE TABLE hc_links (
                    id TEXT PRIMARY KEY,
                    flags TEXT NOT NULL,
                    label TEXT,
                    exp \(integer),
                    created_at \(integer) NOT NULL,
                    updated_at \(integer) NOT NULL,
                    active \(integer) NOT NULL,
                    deactivated_at \(integer),
                    passcode TEXT,
                    max_attempts \(integer),
                    remaining_attempts \(integer),
                    CHECK (passcode IS NULL OR remaining_attempts IS NOT NULL)
                )
                """,
                // The link's files as compact JWEs, in manifest order.
                """
                CREATE TABLE hc_link_files (
                    link_id TEXT NOT NULL REFERENCES hc_links(id) ON DELETE CASCADE,
                    position \(integer) NOT NULL,
                    content_type TEXT NOT NULL,
                    fhir_version TEXT,
                    jwe TEXT NOT NULL,
                    last_updated \(integer) NOT NULL,
                    PRIMARY KEY (link_id, position)
                )
                """,
                // Every access: kind (manifest, file, direct, later others), outcome and status. `link_id` is null
                // for an access that names no link; `subject` is reserved for a hash of a person's id.
                """
                CREATE TABLE hc_audit (
                    seq \(serial),
                    at \(integer) NOT NULL,
                    link_id TEXT,
                    kind TEXT NOT NULL,
                    recipient TEXT,
                    outcome TEXT NOT NULL,
                    status \(integer) NOT NULL,
                    subject TEXT,
                    detail TEXT
                )
                """,
                "CREATE INDEX hc_audit_link ON hc_audit (link_id, seq)",
            ],
            // 2: a manifest's location URLs and the polling of long-term links.
            [
                // A manifest's location URL: the SHA-256 of its secret segment, the file it opens, until when, and the
                // recipient of the manifest that gave it (for the access record).
                """
                CREATE TABLE hc_tickets (
                    hash TEXT PRIMARY KEY,
                    link_id TEXT NOT NULL REFERENCES hc_links(id) ON DELETE CASCADE,
                    position \(integer) NOT NULL,
                    expires_at \(integer) NOT NULL,
                    single_use \(integer) NOT NULL,
                    recipient TEXT
                )
                """,
                "CREATE INDEX hc_tickets_expiry ON hc_tickets (expires_at)",
                // The last manifest request of each recipient of a long-term link (by a hash of the recipient).
                """
                CREATE TABLE hc_polls (
                    link_id TEXT NOT NULL REFERENCES hc_links(id) ON DELETE CASCADE,
                    recipient_hash TEXT NOT NULL,
                    last_at \(integer) NOT NULL,
                    PRIMARY KEY (link_id, recipient_hash)
                )
                """,
                "CREATE INDEX hc_polls_age ON hc_polls (last_at)",
            ],
            // 3: the cards of batch outputs (`cards import`, `serve --cards`), for `$health-cards-issue`.
            [
                // One batch output folder imported: its path, the time its report was written (seconds), when
                // it was imported.
                """
                CREATE TABLE hc_card_runs (
                    source TEXT PRIMARY KEY,
                    run_at \(integer) NOT NULL,
                    imported_at \(integer) NOT NULL
                )
                """,
                // A person a run issued for (the batch's normalized id), so that a person whose cards are all
                // revoked is still known (an empty answer, not 404).
                """
                CREATE TABLE hc_card_people (
                    patient TEXT NOT NULL,
                    source TEXT NOT NULL REFERENCES hc_card_runs(source) ON DELETE CASCADE,
                    PRIMARY KEY (patient, source)
                )
                """,
                // One signed card (a compact JWS, never re-signed here) and what revocation and replacement need:
                // the key, the rid, nbf (seconds) and the card's vc.type list (sorted, space-separated).
                """
                CREATE TABLE hc_cards (
                    patient TEXT NOT NULL,
                    source TEXT NOT NULL REFERENCES hc_card_runs(source) ON DELETE CASCADE,
                    position \(integer) NOT NULL,
                    run_at \(integer) NOT NULL,
                    kid TEXT,
                    rid TEXT,
                    nbf \(integer) NOT NULL,
                    types TEXT NOT NULL,
                    jws TEXT NOT NULL,
                    PRIMARY KEY (patient, source, position)
                )
                """,
                "CREATE INDEX hc_cards_rid ON hc_cards (kid, rid)",
            ],
            // 4: bounded storage and versioned locations.
            [
                // A long-term link's content version, raised by every update: a location names the version its
                // manifest handed out and opens only that one (never a file of another version).
                "ALTER TABLE hc_links ADD COLUMN version \(integer) NOT NULL DEFAULT 1",
                "ALTER TABLE hc_tickets ADD COLUMN version \(integer) NOT NULL DEFAULT 1",
                // The manifest's access record (hc_audit.seq) that gave a location: its recipient is read from there,
                // not copied into every location (new locations leave `recipient` null).
                "ALTER TABLE hc_tickets ADD COLUMN grant_seq \(integer)",
                // Pruning the access record by age (`serve --audit-days`, `link audit --prune`).
                "CREATE INDEX hc_audit_at ON hc_audit (at)",
            ],
            // 5: sealed locations (no row a manifest): the grant shared by a manifest's record and its locations'.
            ["ALTER TABLE hc_audit ADD COLUMN grant_id TEXT"],
        ]
    }

    /// Creates the version table when missing and applies the missing steps.
    /// - Throws: `StoreError(.schema)` when the database is newer than this program or holds `hc_` tables
    ///   without a version table; what the database throws.
    /// - Parameter target: the version to reach (tests make older databases with it).
    static func migrate(_ connection: SQLConnection, now: Int64, upTo target: Int = version) throws(StoreError) {
        let integer = connection.dialect == .sqlite ? "INTEGER" : "BIGINT"
        // SQLite, already at the target (every start but the first): read, not written, so that a command that
        // only reads (`links`, `audit`) opens the database while another program holds its write lock. PostgreSQL
        // takes its migration lock first as before (its writers do not lock readers out; and instances starting
        // together on an empty database were seen to race a check made before that lock).
        if connection.dialect == .sqlite {
            let found: Int
            do { found = try connection.transaction(write: false) { try currentVersion(connection) } } catch {
                throw (error as? StoreError) ?? StoreError(.failed, "\(error)")
            }
            if target > 0 && found == target { return }
        }
        do {
            try connection.transaction(write: true, durable: true) {
                if connection.dialect == .postgresql {
                    _ = try connection.query("SELECT pg_advisory_xact_lock(?)", [.integer(migrationLockKey)])
                }
                if !(try tableExists("hc_schema_version", connection)) {
                    if try tableExists("hc_links", connection) {
                        throw StoreError(
                            .schema,
                            "the database holds hc_ tables but no hc_schema_version table: it was not made by this program"
                        )
                    }
                    try connection.execute(
                        "CREATE TABLE hc_schema_version (version \(integer) PRIMARY KEY, applied_at \(integer) NOT NULL)"
                    )
                }
                let current = try connection.scalar("SELECT MAX(version) FROM hc_schema_version")?.integer ?? 0
                guard current <= version else {
                    throw StoreError(
                        .schema,
                        "the database's schema is version \(current), newer than this program's (\(version)): a newer "
                            + "healthcards upgraded it. Run that version (a database is never downgraded)")
                }
                let steps = steps(connection.dialect)
                for step in Int(current)..<max(Int(current), target) {
                    for statement in steps[step] { try connection.execute(statement) }
                    _ = try connection.query(
                        "INSERT INTO hc_schema_version (version, applied_at) VALUES (?, ?)",
                        [.integer(Int64(step + 1)), .integer(now)])
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.failed, "\(error)")
        }
    }

    static func tableExists(_ name: String, _ connection: SQLConnection) throws(StoreError) -> Bool {
        switch connection.dialect {
        case .sqlite:
            return try connection.scalar(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)])?
                .integer ?? 0 > 0
        case .postgresql:
            return try connection.scalar("SELECT to_regclass(?)::text", [.text(name)]).map { $0 != .null } ?? false
        }
    }

    /// The newest step applied (0 for an empty database).
    static func currentVersion(_ connection: SQLConnection) throws(StoreError) -> Int {
        guard try tableExists("hc_schema_version", connection) else { return 0 }
        return Int(try connection.scalar("SELECT MAX(version) FROM hc_schema_version")?.integer ?? 0)
    }
}
