import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// `LinkStore` on a `Database`: the same statements on SQLite and PostgreSQL.
public final class DatabaseLinkStore: LinkStore, @unchecked Sendable {
    // Immutable; `Database` is safe to share.
    public let database: Database
    /// The server's writer (`Database.Role.server`): access records are group-committed through it, and on SQLite
    /// a manifest's grant runs in its batches. nil for an operator's command (every write its own transaction).
    /// The pool's one writer, shared by every store made on it.
    var groupCommit: GroupCommit? { database.groupCommit }
    /// Location files by link, content version and position: a version's files never change (an update raises
    /// the version), so a location GET reads its file from here after the first.
    let files = FileCache.make()
    /// Location tickets (not single-use) as granted or first read: a ticket never changes once written (only its
    /// link does, which a location GET still reads every time), so a GET of a cached ticket reads its link's row
    /// only, not the ticket's and its manifest record's (two large tables, one descent each).
    let tickets = TicketCache.make()
    /// The server's reads of a link's row on PostgreSQL (when no row is kept in `linkRows`), those that arrive
    /// together made as one statement (`CoalescedReads`); nil on SQLite (a read there is a call into this process,
    /// not a round trip) and for an operator's command.
    let linkReads: CoalescedReads<StoredLink>?
    /// The server's link rows read on PostgreSQL, each kept `linkRowSeconds` from the moment its read was sent
    /// (`KeptLinkRow.until`, on the monotonic clock); nil where `linkReads` is nil. A link with a passcode is never
    /// kept: its remaining attempts are read fresh every time.
    let linkRows: BoundedCache<String, KeptLinkRow>?

    /// A link's row as read, and until when it may stand for the row (monotonic seconds).
    struct KeptLinkRow: Sendable {
        var link: StoredLink
        var until: Double
    }

    /// Seconds a server on PostgreSQL answers from a link's row it read, counted from the moment the read was sent
    /// (before the database took its snapshot). Each request read the row before; on this project's machine a
    /// statement per one or two requests held PostgreSQL at half of SQLite's rate (docs/performance.md).
    public static let linkRowSeconds = 0.1
    /// Seconds `replaceFiles` and `deactivate` wait after their commit on PostgreSQL before they return: twice
    /// `linkRowSeconds`, so that once they return no server instance still answers from a row read before the
    /// change (a row read before the commit was sent before it, and is dropped `linkRowSeconds` after that).
    public static let changeSettleSeconds = 2 * linkRowSeconds

    public init(database: Database) {
        self.database = database
        if database.role == .server, database.dialect == .postgresql {
            let rows = BoundedCache<String, KeptLinkRow>(maxBytes: 1 << 16, maxCount: 1 << 14) { _ in 1 }
            linkRows = rows
            linkReads = CoalescedReads(maxBatch: Self.linkReadSizes.last ?? 1) { [database] ids in
                let sent = Clock.monotonicSeconds()
                let found = try database.withConnection { c in try Self.links(ids: ids, c) }
                for (id, link) in found where !link.needsPasscode {
                    // Not over a row kept from a later read (two statements may be in flight).
                    let until = sent + Self.linkRowSeconds
                    if (rows[id]?.until ?? 0) < until { rows[id] = KeptLinkRow(link: link, until: until) }
                }
                return found
            }
        } else {
            linkReads = nil
            linkRows = nil
        }
    }

    /// A link's row without its files. For the server on PostgreSQL: a kept one still within its `linkRowSeconds`,
    /// else read with the reads arriving now (`linkReads`); elsewhere a statement of its own. `version`: the content
    /// version the request holds (a manifest's, a location's); a kept row of an earlier version was read before an
    /// update the request has already seen (its manifest read the link afresh, or another instance sealed its
    /// location), so the row is read again rather than refusing a link that is open.
    private func linkRow(_ id: String, version: Int64? = nil) throws -> StoredLink? {
        guard let linkReads else {
            return try database.withConnection { c in try Self.link(id: id, withFiles: false, c) }
        }
        if let kept = linkRows?[id], kept.until > Clock.monotonicSeconds(), kept.link.version >= version ?? 0 {
            return kept.link
        }
        return try linkReads.value(id)
    }

    /// After a change to a link committed on PostgreSQL: waits until no server instance can still answer from the
    /// row as it was before (`changeSettleSeconds`). Nothing to wait for on SQLite, whose server reads every time.
    private func settleChange() {
        guard database.dialect == .postgresql else { return }
        var wait = timespec(
            tv_sec: Int(Self.changeSettleSeconds),
            tv_nsec: Int((Self.changeSettleSeconds - Self.changeSettleSeconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&wait, &left) == -1 && errno == EINTR { wait = left }
    }

    /// The numbers of ids a statement of `links(ids:)` is prepared for (fewer ids repeat the last).
    static let linkReadSizes = [1, 2, 4, 8, 16]

    /// The rows of the links `ids` (at most `linkReadSizes.last`), in one statement, by id.
    static func links(ids: [String], _ c: SQLConnection) throws -> [String: StoredLink] {
        guard let last = ids.last else { return [:] }
        guard let size = linkReadSizes.first(where: { $0 >= ids.count }), let sql = selectLinks[size] else {
            throw StoreError(.failed, "\(ids.count) link ids in one read (at most \(linkReadSizes.last ?? 1))")
        }
        let parameters = (ids + Array(repeating: last, count: size - ids.count)).map { SQLValue.text($0) }
        var links: [String: StoredLink] = [:]
        for row in try c.query(sql, parameters) {
            let link = try Self.link(row)
            links[link.id] = link
        }
        return links
    }

    /// Commits every access record queued so far (a clean stop).
    /// - Returns: the records that could not be committed within `seconds` (0 after a clean flush).
    @discardableResult
    public func flush(seconds: Int) -> Int { groupCommit?.flush(seconds: seconds) ?? 0 }

    /// Access records committed by the group commit so far, and the batches that held them (tests, metrics).
    public var groupCommitted: (records: Int, batches: Int) {
        groupCommit?.committed ?? (0, 0)
    }

    static let linkColumns =
        "id, flags, label, exp, created_at, updated_at, active, deactivated_at, passcode, max_attempts, remaining_attempts, version"

    /// One link's row by id (a request reads it each time: the text made once, not interpolated per call).
    static let selectLink = "SELECT \(linkColumns) FROM hc_links WHERE id = ?"
    /// `links(ids:)`'s statements by their number of ids.
    static let selectLinks: [Int: String] = Dictionary(
        uniqueKeysWithValues: linkReadSizes.map { size in
            (
                size,
                "SELECT \(linkColumns) FROM hc_links WHERE id IN (\(Array(repeating: "?", count: size).joined(separator: ", ")))"
            )
        })

    /// `linkColumns` of `hc_links l`.
    static let qualifiedLinkColumns = linkColumns.split(separator: ",").map { "l." + $0.drop { $0 == " " } }.joined(
        separator: ", ")

    static func link(_ row: [SQLValue]) throws(StoreError) -> StoredLink {
        guard row.count == 12, let id = row[0].text, let flags = row[1].text, let created = row[4].integer,
            let updated = row[5].integer
        else { throw StoreError(.failed, "a link row is not what this program writes") }
        var passcode: PasscodeHash?
        if let stored = row[8].text {
            guard let hash = PasscodeHash(stored: stored) else {
                throw StoreError(.failed, "a link's passcode hash is not one this program writes")
            }
            passcode = hash
        }
        var link = StoredLink(
            id: id, flags: flags, label: row[2].text, exp: row[3].integer, createdAt: created, updatedAt: updated,
            active: row[6].bool, deactivatedAt: row[7].integer, passcode: passcode,
            maxAttempts: row[9].integer.map { Int($0) }, remainingAttempts: row[10].integer.map { Int($0) })
        link.version = row[11].integer ?? 1
        return link
    }

    static func file(_ row: [SQLValue]) throws(StoreError) -> StoredFile {
        guard row.count == 5, let position = row[0].integer, let type = row[1].text, let jwe = row[3].text,
            let updated = row[4].integer
        else { throw StoreError(.failed, "a link file row is not what this program writes") }
        return StoredFile(
            position: Int(position), contentType: type, fhirVersion: row[2].text, jwe: jwe, lastUpdated: updated)
    }

    public func create(_ link: StoredLink) throws {
        try database.withConnection { c in
            try c.transaction(write: true, durable: true) {
                _ = try c.query(
                    "INSERT INTO hc_links (\(Self.linkColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        .text(link.id), .text(link.flags), .optional(link.label), .optional(link.exp),
                        .integer(link.createdAt), .integer(link.updatedAt), .flag(link.active),
                        .optional(link.deactivatedAt), .optional(link.passcode?.stored),
                        .optional(link.maxAttempts.map(Int64.init)), .optional(link.remainingAttempts.map(Int64.init)),
                        .integer(link.version),
                    ])
                try Self.insertFiles(link.files, linkID: link.id, c)
            }
        }
    }

    static func insertFiles(_ files: [StoredFile], linkID: String, _ c: SQLConnection) throws {
        for file in files {
            _ = try c.query(
                "INSERT INTO hc_link_files (link_id, position, content_type, fhir_version, jwe, last_updated) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    .text(linkID), .integer(Int64(file.position)), .text(file.contentType), .optional(file.fhirVersion),
                    .text(file.jwe), .integer(file.lastUpdated),
                ])
        }
    }

    public func replaceFiles(linkID: String, files: [StoredFile], now: Int64) throws -> Bool {
        let replaced = try database.withConnection { c in
            try c.transaction(write: true, durable: true) {
                let updated = try c.query(
                    "UPDATE hc_links SET updated_at = ?, version = version + 1 WHERE id = ? AND active = 1 RETURNING id",
                    [.integer(now), .text(linkID)])
                guard !updated.isEmpty else { return false }
                _ = try c.query("DELETE FROM hc_link_files WHERE link_id = ?", [.text(linkID)])
                try Self.insertFiles(files, linkID: linkID, c)
                return true
            }
        }
        if replaced { settleChange() }
        return replaced
    }

    public func deactivate(linkID: String, now: Int64) throws -> Bool {
        let found = try database.withConnection { c in
            try c.transaction(write: true, durable: true) {
                guard try c.scalar("SELECT active FROM hc_links WHERE id = ?", [.text(linkID)]) != nil else {
                    return false
                }
                _ = try c.query(
                    "UPDATE hc_links SET active = 0, deactivated_at = ? WHERE id = ? AND active = 1",
                    [.integer(now), .text(linkID)])
                _ = try c.query("DELETE FROM hc_tickets WHERE link_id = ?", [.text(linkID)])
                _ = try c.query("DELETE FROM hc_polls WHERE link_id = ?", [.text(linkID)])
                return true
            }
        }
        if found { settleChange() }
        return found
    }

    public func link(id: String, withFiles: Bool) throws -> StoredLink? {
        if !withFiles { return try linkRow(id) }
        return try database.withConnection { c in try Self.link(id: id, withFiles: true, c) }
    }

    /// One link (with its files: one statement, so one snapshot and, on PostgreSQL, one round trip).
    static func link(id: String, withFiles: Bool, _ c: SQLConnection) throws -> StoredLink? {
        guard withFiles else {
            return try c.query(selectLink, [.text(id)]).first.map {
                row throws -> StoredLink in try Self.link(row)
            }
        }
        let rows = try c.query(
            """
            SELECT \(qualifiedLinkColumns), f.position, f.content_type, f.fhir_version, f.jwe, f.last_updated
            FROM hc_links l LEFT JOIN hc_link_files f ON f.link_id = l.id WHERE l.id = ? ORDER BY f.position
            """, [.text(id)])
        guard let first = rows.first else { return nil }
        var link = try Self.link(Array(first.prefix(12)))
        for row in rows where row.count == 17 && row[12] != .null {
            link.files.append(try Self.file(Array(row.suffix(5))))
        }
        return link
    }

    /// Runs a write: on SQLite in a transaction holding the write lock (writers queue on the pool's lock); on
    /// PostgreSQL a single statement runs as it is (it is atomic on its own), in a transaction when `durable`.
    static func write<T>(_ c: SQLConnection, durable: Bool = false, _ body: () throws -> T) throws -> T {
        if c.dialect == .sqlite || durable { return try c.transaction(write: true, durable: durable, body) }
        return try body()
    }

    public func links() throws -> [StoredLink] {
        try database.withConnection { c in
            try c.query("SELECT \(Self.linkColumns) FROM hc_links ORDER BY created_at, id", []).map {
                row throws -> StoredLink in
                try Self.link(row)
            }
        }
    }

    public func fileCounts() throws -> [String: Int] {
        try database.withConnection { c in
            var counts: [String: Int] = [:]
            for row in try c.query("SELECT link_id, count(*) FROM hc_link_files GROUP BY link_id", []) {
                if let id = row[0].text, let n = row[1].integer { counts[id] = Int(n) }
            }
            return counts
        }
    }

    public func audit(linkID: String?) throws -> [AuditEntry] {
        let columns = "seq, at, link_id, kind, recipient, outcome, status, detail, grant_id"
        // Records this store queued are committed first: it reads what it was given.
        groupCommit?.flush()
        var entries = try database.withConnection { c in
            let rows =
                try linkID.map {
                    try c.query("SELECT \(columns) FROM hc_audit WHERE link_id = ? ORDER BY seq", [.text($0)])
                } ?? c.query("SELECT \(columns) FROM hc_audit ORDER BY seq", [])
            return try rows.map { row throws -> AuditEntry in
                guard row.count == 9, let at = row[1].integer, let kind = row[3].text, let outcome = row[5].text,
                    let status = row[6].integer
                else { throw StoreError(.failed, "an audit row is not what this program writes") }
                return AuditEntry(
                    sequence: row[0].integer, at: at, linkID: row[2].text, kind: kind, recipient: row[4].text,
                    outcome: outcome, status: Int(status), detail: row[7].text, grant: row[8].text)
            }
        }
        Self.fillRecipients(&entries)
        return entries
    }

    /// A sealed location's record holds its manifest's grant, not the recipient: it gets the recipient of the
    /// manifest record with the same grant (same link: in every listing that holds the location's record, unless
    /// the manifest's record was pruned first).
    static func fillRecipients(_ entries: inout [AuditEntry]) {
        struct Key: Hashable {
            var linkID: String?
            var grant: String
        }
        var recipients: [Key: String] = [:]
        for entry in entries where entry.kind == "manifest" {
            if let grant = entry.grant, let recipient = entry.recipient {
                recipients[Key(linkID: entry.linkID, grant: grant)] = recipient
            }
        }
        guard !recipients.isEmpty else { return }
        for index in entries.indices where entries[index].recipient == nil {
            if let grant = entries[index].grant {
                entries[index].recipient = recipients[Key(linkID: entries[index].linkID, grant: grant)]
            }
        }
    }

    public func spendAttempt(linkID: String, now: Int64) throws -> Int? {
        try database.withConnection { c in
            // One statement: parallel wrong passcodes, in any number of processes, each take exactly one attempt, and
            // none is taken below zero.
            try c.transaction(write: true, durable: true) {
                try c.query(
                    "UPDATE hc_links SET remaining_attempts = remaining_attempts - 1 WHERE id = ? AND active = 1 AND remaining_attempts > 0 RETURNING remaining_attempts",
                    [.text(linkID)]
                ).first?.first?.integer.map { Int($0) }
            }
        }
    }

    /// The columns `auditValues` fills, in its order.
    static let auditColumns = "at, link_id, kind, recipient, outcome, status, detail, grant_id"

    static func insertAudit(_ entry: AuditEntry, _ c: SQLConnection) throws {
        _ = try c.query(
            "INSERT INTO hc_audit (\(auditColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", auditValues(entry))
    }

    /// The condition under which a link opens at `?` (now).
    static let opens =
        "active = 1 AND (exp IS NULL OR exp > ?) AND (passcode IS NULL OR remaining_attempts > 0)"

    public func grant(linkID: String, version: Int64, tickets: [LocationTicket], audit: AuditEntry, now: Int64) throws
        -> Bool
    {
        let granted: Bool
        if database.dialect == .sqlite, let groupCommit {
            // In the writer's next batch: one commit for every manifest (and access record) of that moment; the
            // answer waits for it.
            granted = try groupCommit.perform { c in try Self.grant(linkID, version, tickets, audit, now, c) }
        } else {
            granted = try database.withConnection { c in
                if c.dialect == .postgresql {
                    return try Self.grantInOneStatement(linkID, version, tickets, audit, now, c)
                }
                return try c.transaction(write: true) { try Self.grant(linkID, version, tickets, audit, now, c) }
            }
        }
        // Committed: the locations' first GETs need not read their tickets back.
        if granted {
            for ticket in tickets where !ticket.singleUse {
                self.tickets[ticket.hash] = TicketCache.Ticket(
                    linkID: linkID, position: ticket.position, version: ticket.version, expiresAt: ticket.expiresAt,
                    recipient: audit.recipient)
            }
        }
        return granted
    }

    /// `grant`'s check and writes, inside a write transaction (its own, or a group commit's batch).
    static func grant(
        _ linkID: String, _ version: Int64, _ tickets: [LocationTicket], _ audit: AuditEntry, _ now: Int64,
        _ c: SQLConnection
    ) throws -> Bool {
        guard
            try c.scalar(
                "SELECT 1 FROM hc_links WHERE id = ? AND version = ? AND \(Self.opens)",
                [.text(linkID), .integer(version), .integer(now)]) != nil
        else { return false }
        let seq = try c.scalar(
            "INSERT INTO hc_audit (\(auditColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            Self.auditValues(audit))
        guard !tickets.isEmpty else { return true }
        // All of a manifest's locations in one statement.
        let rows = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: tickets.count).joined(separator: ", ")
        var parameters: [SQLValue] = []
        for ticket in tickets {
            parameters += [
                .text(ticket.hash), .text(linkID), .integer(Int64(ticket.position)),
                .integer(ticket.expiresAt), .flag(ticket.singleUse), .integer(ticket.version), seq ?? .null,
            ]
        }
        _ = try c.query(
            "INSERT INTO hc_tickets (hash, link_id, position, expires_at, single_use, version, grant_seq) VALUES \(rows)",
            parameters)
        return true
    }

    static func auditValues(_ entry: AuditEntry) -> [SQLValue] {
        [
            .integer(entry.at), .optional(entry.linkID), .text(entry.kind), .optional(entry.recipient),
            .text(entry.outcome), .integer(Int64(entry.status)), .optional(entry.detail), .optional(entry.grant),
        ]
    }

    /// `grant` on PostgreSQL: the check and the inserts as one statement (data-modifying CTEs), one round trip.
    static func grantInOneStatement(
        _ linkID: String, _ version: Int64, _ tickets: [LocationTicket], _ audit: AuditEntry, _ now: Int64,
        _ c: SQLConnection
    ) throws -> Bool {
        var sql = """
            WITH ok AS (SELECT id FROM hc_links WHERE id = ? AND version = ? AND \(opens)),
            a AS (INSERT INTO hc_audit (\(auditColumns))
            SELECT ?::bigint, ok.id, ?::text, ?::text, ?::text, ?::bigint, ?::text, ?::text FROM ok RETURNING seq)
            """
        var parameters: [SQLValue] = [.text(linkID), .integer(version), .integer(now)]
        parameters += [
            .integer(audit.at), .text(audit.kind), .optional(audit.recipient), .text(audit.outcome),
            .integer(Int64(audit.status)), .optional(audit.detail), .optional(audit.grant),
        ]
        if !tickets.isEmpty {
            let rows = Array(repeating: "(?::text, ?::bigint, ?::bigint, ?::bigint, ?::bigint)", count: tickets.count)
            sql += """
                , t AS (INSERT INTO hc_tickets (hash, link_id, position, expires_at, single_use, version, grant_seq)
                SELECT v.hash, ok.id, v.position, v.expires_at, v.single_use, v.version, a.seq FROM ok, a,
                (VALUES \(rows.joined(separator: ", "))) AS v (hash, position, expires_at, single_use, version))
                """
            for ticket in tickets {
                parameters += [
                    .text(ticket.hash), .integer(Int64(ticket.position)), .integer(ticket.expiresAt),
                    .flag(ticket.singleUse), .integer(ticket.version),
                ]
            }
        }
        sql += " SELECT count(*) FROM ok"
        return try c.scalar(sql, parameters)?.integer == 1
    }

    public func redeem(ticketHash: String, manifestTicket: (hash: String, position: Int)?, now: Int64) throws -> (
        link: StoredLink, file: StoredFile, recipient: String?
    )? {
        // A cached ticket (its own row, else its manifest's): only the link is read, for its state and version.
        if let (ticket, position) = cachedTicket(ticketHash, manifestTicket) {
            guard ticket.expiresAt > now else { return nil }
            return try database.withConnection { c in
                guard let link = try Self.link(id: ticket.linkID, withFiles: false, c),
                    let file = try openFile(link, version: ticket.version, position: position, now: now, c)
                else { return nil }
                return (link, file, ticket.recipient)
            }
        }
        return try database.withConnection { c in
            // The ticket, its link and the recipient of the manifest that gave it (its access record; tickets of
            // schema 3 still hold their own) in one statement: one snapshot, one round trip on PostgreSQL.
            let found = try c.query(
                """
                SELECT \(Self.qualifiedLinkColumns), t.position, t.single_use, COALESCE(t.recipient, a.recipient),
                t.version, t.hash, t.expires_at FROM hc_tickets t JOIN hc_links l ON l.id = t.link_id
                LEFT JOIN hc_audit a ON a.seq = t.grant_seq
                WHERE (t.hash = ? OR (t.hash = ? AND t.position = -1)) AND t.expires_at > ?
                """,
                [.text(ticketHash), .text(manifestTicket?.hash ?? ticketHash), .integer(now)])
            // A file's own row, else its manifest's (the position from the location).
            guard
                let row = found.first(where: { $0.count == 18 && $0[12].integer != -1 })
                    ?? found.first(where: { $0.count == 18 && $0[12].integer == -1 }),
                let stored = row[12].integer, let version = row[15].integer
            else { return nil }
            var position = stored
            if position == -1 {
                guard let manifestTicket else { return nil }
                position = Int64(manifestTicket.position)
            }
            let link = try Self.link(Array(row.prefix(12)))
            if row[13].bool {
                // Of parallel uses, exactly one deletes the row.
                guard link.state(at: now) == .active, link.version == version else { return nil }
                let taken = try Self.write(c) {
                    try c.query("DELETE FROM hc_tickets WHERE hash = ? RETURNING link_id", [.text(ticketHash)])
                }
                guard !taken.isEmpty else { return nil }
            } else if let hash = row[16].text, let expiresAt = row[17].integer {
                tickets[hash] = TicketCache.Ticket(
                    linkID: link.id, position: Int(stored), version: version, expiresAt: expiresAt,
                    recipient: row[14].text)
            }
            guard let file = try openFile(link, version: version, position: position, now: now, c) else { return nil }
            return (link, file, row[14].text)
        }
    }

    public func admit(linkID: String, version: Int64, audit: AuditEntry, now: Int64) throws -> Bool {
        guard let link = try linkRow(linkID, version: version), link.state(at: now) == .active, link.version == version
        else { return false }
        try record(audit)
        return true
    }

    public func locationFile(linkID: String, version: Int64, position: Int, now: Int64) throws -> (
        link: StoredLink, file: StoredFile
    )? {
        if linkReads != nil {
            // The link's row kept or read with others arriving now; its file from the cache, else on a connection.
            guard let link = try linkRow(linkID, version: version),
                let file = try openFile(link, version: version, position: Int64(position), now: now, nil)
            else { return nil }
            return (link, file)
        }
        return try database.withConnection { c in
            guard let link = try Self.link(id: linkID, withFiles: false, c),
                let file = try openFile(link, version: version, position: Int64(position), now: now, c)
            else { return nil }
            return (link, file)
        }
    }

    /// The cached ticket a location names (its own row, else its manifest's row and the location's position).
    private func cachedTicket(_ ticketHash: String, _ manifestTicket: (hash: String, position: Int)?)
        -> (TicketCache.Ticket, Int64)?
    {
        if let own = tickets[ticketHash], own.position != -1 { return (own, Int64(own.position)) }
        if let manifestTicket, let shared = tickets[manifestTicket.hash], shared.position == -1 {
            return (shared, Int64(manifestTicket.position))
        }
        return nil
    }

    /// The file at `position` of `link`'s content `version`, if the link still opens at `now` and is still at that
    /// version (a location of an earlier version answers nil: never a file of another version).
    /// (`c` nil: the file, when not cached, is read on a connection taken from the pool for it.)
    private func openFile(_ link: StoredLink, version: Int64, position: Int64, now: Int64, _ c: SQLConnection?) throws
        -> StoredFile?
    {
        guard link.state(at: now) == .active, link.version == version else { return nil }
        let key = FileCache.Key(linkID: link.id, version: version, position: Int(position))
        if let file = files[key] { return file }
        // The file only if the link is still at the ticket's version (one statement: one snapshot).
        func fileRow(_ c: SQLConnection) throws -> [SQLValue]? {
            try c.query(
                """
                SELECT f.position, f.content_type, f.fhir_version, f.jwe, f.last_updated FROM hc_link_files f
                JOIN hc_links l ON l.id = f.link_id WHERE f.link_id = ? AND f.position = ? AND l.version = ?
                """, [.text(link.id), .integer(position), .integer(version)]
            ).first
        }
        guard let fileRow = try c.map(fileRow) ?? database.withConnection(fileRow) else { return nil }
        let file = try Self.file(fileRow)
        files[key] = file
        return file
    }

    public func poll(linkID: String, recipientHash: String, now: Int64, interval: Int64) throws -> Int64? {
        try database.withConnection { c in
            try Self.write(c) { () throws -> Int64? in
                let taken = try c.query(
                    """
                    INSERT INTO hc_polls (link_id, recipient_hash, last_at) VALUES (?, ?, ?)
                    ON CONFLICT (link_id, recipient_hash) DO UPDATE SET last_at = excluded.last_at
                    WHERE hc_polls.last_at <= ? RETURNING last_at
                    """,
                    [.text(linkID), .text(recipientHash), .integer(now), .integer(now - interval)])
                guard taken.isEmpty else { return nil }
                let last =
                    try c.scalar(
                        "SELECT last_at FROM hc_polls WHERE link_id = ? AND recipient_hash = ?",
                        [.text(linkID), .text(recipientHash)])?.integer ?? now
                return max(1, last + interval - now)
            }
        }
    }

    public func record(_ entry: AuditEntry) throws {
        if let groupCommit { return try groupCommit.record(entry) }
        try database.withConnection { c in try Self.write(c) { try Self.insertAudit(entry, c) } }
    }

    public func purge(now: Int64, pollsBefore: Int64) throws {
        try database.withConnection { c in
            try c.transaction(write: true) {
                _ = try c.query("DELETE FROM hc_tickets WHERE expires_at <= ?", [.integer(now)])
                _ = try c.query("DELETE FROM hc_polls WHERE last_at < ?", [.integer(pollsBefore)])
            }
        }
    }

    public func pruneAudit(before: Int64) throws -> Int {
        groupCommit?.flush()
        return try database.withConnection { c in
            try c.transaction(write: true) {
                // Never the newest row: SQLite's rowid then never goes back (a sequence number is never reused).
                let condition = "at < ? AND seq < (SELECT max(seq) FROM hc_audit)"
                let count =
                    try c.scalar("SELECT count(*) FROM hc_audit WHERE \(condition)", [.integer(before)])?
                    .integer ?? 0
                if count > 0 { _ = try c.query("DELETE FROM hc_audit WHERE \(condition)", [.integer(before)]) }
                return Int(count)
            }
        }
    }

    public func isReachable() -> Bool { database.isReachable() }

    /// Free bytes below which a SQLite database counts as unable to write: a full disk lets a small write reuse
    /// the room a failed bigger one left in the write-ahead log, so a one-row probe alone would still pass while
    /// every link request fails.
    public static let minimumFreeBytes: UInt64 = 1 << 20

    public func canWrite(now: Int64) -> Bool {
        if case .sqlite(let path) = database.url {
            var fs = statvfs()
            if statvfs(path, &fs) == 0, UInt64(fs.f_bavail) * UInt64(fs.f_frsize) < Self.minimumFreeBytes {
                return false
            }
        }
        return
            (try? database.withConnection { c in
                try c.transaction(write: true) {
                    _ = try c.query(
                        "INSERT INTO hc_settings (name, value) VALUES ('health_written_at', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        [.text(String(now))])
                }
            }) != nil
    }

    public func setting(_ name: String) throws -> String? {
        try database.withConnection { c in
            try c.scalar("SELECT value FROM hc_settings WHERE name = ?", [.text(name)])?.text
        }
    }

    public func deleteSettings(prefix: String, except: [String]) throws {
        try database.withConnection { c in
            try c.transaction(write: true) {
                // By the prefix's bytes (substr), not LIKE: its `_` and `%` are no wildcards here.
                let kept =
                    except.isEmpty ? "" : " AND name NOT IN (" + except.map { _ in "?" }.joined(separator: ", ") + ")"
                _ = try c.query(
                    "DELETE FROM hc_settings WHERE substr(name, 1, ?) = ?" + kept,
                    [.integer(Int64(prefix.utf8.count)), .text(prefix)] + except.map { .text($0) })
            }
        }
    }

    public func settingOnce(_ name: String, _ value: String) throws -> String {
        try database.withConnection { c in
            try c.transaction(write: true, durable: true) {
                _ = try c.query(
                    "INSERT INTO hc_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                    [.text(name), .text(value)])
                return try c.scalar("SELECT value FROM hc_settings WHERE name = ?", [.text(name)])?.text ?? value
            }
        }
    }
}

/// Location tickets by the hash their row is found by (a file's own, or a manifest's shared row at position -1),
/// up to `maxCount` of them: what a location GET needs of a ticket besides its link's current row.
enum TicketCache {
    struct Ticket: Sendable {
        var linkID: String
        /// As stored: the file's position, or -1 for a manifest's shared row.
        var position: Int
        var version: Int64
        /// Seconds since 1970 after which it answers 404.
        var expiresAt: Int64
        /// The recipient of the manifest that gave it (for the GET's access record).
        var recipient: String?
    }
    static let maxCount = 65_536
    static func make() -> BoundedCache<String, Ticket> {
        BoundedCache(maxBytes: 16 << 20, maxCount: maxCount) {
            160 + $0.linkID.utf8.count + ($0.recipient?.utf8.count ?? 0)
        }
    }
}

/// The encrypted files location GETs answered, by link, content version and position, up to `maxBytes` of JWE.
enum FileCache {
    struct Key: Hashable, Sendable {
        var linkID: String
        var version: Int64
        var position: Int
    }
    static let maxBytes = 32 << 20
    static func make() -> BoundedCache<Key, StoredFile> { BoundedCache(maxBytes: maxBytes) { $0.jwe.utf8.count } }
}
