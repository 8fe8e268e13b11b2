import HealthCardsCore

/// A SMART Health Link as the server stores it: its id, flags, limits and encrypted files, never its key.
public struct StoredLink: Sendable, Equatable {
    /// The manifest URL's last segment: 32 random bytes, base64url (43 characters).
    public var id: String
    /// The payload's `flag`: letters of `L`, `P`, `U` in alphabetical order (or empty).
    public var flags: String
    public var label: String?
    /// Seconds since 1970 after which the link answers 404 (the payload's `exp`), or nil for never.
    public var exp: Int64?
    public var createdAt: Int64
    public var updatedAt: Int64
    public var active: Bool
    public var deactivatedAt: Int64?
    /// The passcode's hash, for `P` links.
    public var passcode: PasscodeHash?
    /// Wrong passcodes allowed in the link's lifetime, and how many are left (`P` links).
    public var maxAttempts: Int?
    public var remainingAttempts: Int?
    /// The files in manifest order (empty when read without them).
    public var files: [StoredFile]
    /// The content's version: 1 at creation, raised by every `replaceFiles`. A location opens only the files of the
    /// version its manifest handed out.
    public var version: Int64 = 1

    public init(
        id: String, flags: String, label: String? = nil, exp: Int64? = nil, createdAt: Int64, updatedAt: Int64? = nil,
        active: Bool = true, deactivatedAt: Int64? = nil, passcode: PasscodeHash? = nil, maxAttempts: Int? = nil,
        remainingAttempts: Int? = nil, files: [StoredFile] = []
    ) {
        self.id = id
        self.flags = flags
        self.label = label
        self.exp = exp
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.active = active
        self.deactivatedAt = deactivatedAt
        self.passcode = passcode
        self.maxAttempts = maxAttempts
        self.remainingAttempts = remainingAttempts ?? maxAttempts
        self.files = files
    }

    public var isLongTerm: Bool { flags.contains("L") }
    public var needsPasscode: Bool { flags.contains("P") }
    /// Flag `U`: the URL is the one file, fetched with GET.
    public var isDirect: Bool { flags.contains("U") }

    /// What the link answers at `now` (seconds since 1970).
    public func state(at now: Int64) -> LinkState {
        if !active { return .deactivated }
        if let exp, now >= exp { return .expired }
        if needsPasscode && (remainingAttempts ?? 0) <= 0 { return .disabled }
        return .active
    }
}

/// Whether a link opens.
public enum LinkState: String, Sendable {
    case active
    /// `link deactivate`.
    case deactivated
    /// Past its `exp`.
    case expired
    /// No wrong passcode left: disabled for good.
    case disabled
}

/// One encrypted file of a link.
public struct StoredFile: Sendable, Equatable {
    /// 0-based place in the manifest.
    public var position: Int
    /// The manifest's `contentType` (the JWE's `cty`), e.g. `application/smart-health-card`.
    public var contentType: String
    /// The manifest's `fhirVersion`, for FHIR content (`4.0.1`).
    public var fhirVersion: String?
    /// The compact JWE.
    public var jwe: String
    /// Seconds since 1970 the content was last replaced (the manifest's `lastUpdated`).
    public var lastUpdated: Int64

    public init(position: Int, contentType: String, fhirVersion: String? = nil, jwe: String, lastUpdated: Int64) {
        self.position = position
        self.contentType = contentType
        self.fhirVersion = fhirVersion
        self.jwe = jwe
        self.lastUpdated = lastUpdated
    }
}

/// A manifest's `location` URL as stored: the SHA-256 of its secret segment (base64url), never the segment. It
/// does not hold the recipient: a file fetched is recorded with the recipient of the manifest's own access record
/// (the ticket points at it), so a long recipient is stored once per manifest, not once per file.
public struct LocationTicket: Sendable, Equatable {
    public var hash: String
    /// The file's 0-based position, or -1: the row of a whole manifest, whose location names the position.
    public var position: Int
    /// Seconds since 1970 after which it answers 404.
    public var expiresAt: Int64
    /// Consumed by its first use.
    public var singleUse: Bool
    /// The link's content version the manifest handed out: the location opens that version's file only.
    public var version: Int64

    public init(hash: String, position: Int, expiresAt: Int64, singleUse: Bool, version: Int64 = 1) {
        self.hash = hash
        self.position = position
        self.expiresAt = expiresAt
        self.singleUse = singleUse
        self.version = version
    }
}

/// One access, as recorded (the Kill-the-Clipboard profile: senders audit every access, with the recipient
/// and the time). Never holds a key, a passcode or file contents.
public struct AuditEntry: Sendable, Equatable {
    /// The record's number (increasing), once stored.
    public var sequence: Int64?
    /// Seconds since 1970.
    public var at: Int64
    public var linkID: String?
    /// `manifest` (a manifest request), `file` (a location URL), `direct` (a `U` link's GET).
    public var kind: String
    /// The recipient as the request gave it.
    public var recipient: String?
    /// What happened: `served`, `wrong-passcode`, `no-passcode`, `not-active`, `rate-limited`, …
    public var outcome: String
    /// The HTTP status answered.
    public var status: Int
    /// A short note (no secret).
    public var detail: String?
    /// The grant of a manifest whose locations are sealed (`SealedLocation`, 14 base64url characters): held by the
    /// manifest's record and by the records of its locations' GETs. A location's record does not copy the
    /// recipient; `audit(linkID:)` gives it the recipient of its manifest's record.
    public var grant: String?

    public init(
        sequence: Int64? = nil, at: Int64, linkID: String?, kind: String, recipient: String?, outcome: String,
        status: Int, detail: String? = nil, grant: String? = nil
    ) {
        self.sequence = sequence
        self.at = at
        self.linkID = linkID
        self.kind = kind
        self.recipient = recipient
        self.outcome = outcome
        self.status = status
        self.detail = detail
        self.grant = grant
    }
}

/// Where links live: what the operator's commands change and what the server reads and counts.
///
/// Every method is one transaction. Implementations must make `spendAttempt`, `grant`, `redeem` and `poll`
/// exact under parallel calls from several threads and several processes sharing the database (each is one
/// atomic statement, or a transaction holding the write lock).
public protocol LinkStore: Sendable {
    /// Stores a new link with its files.
    /// - Throws: `HealthCardError` with code `STORE_FAILED` when the id exists.
    func create(_ link: StoredLink) throws
    /// Replaces all files of an active link (a long-term link's update), sets `updatedAt` and raises its `version`
    /// (locations of the earlier version answer 404 from then on). Returns once no server can still answer from
    /// the link as it was (`DatabaseLinkStore.changeSettleSeconds` after the commit on PostgreSQL).
    /// - Returns: false when there is no such active link.
    func replaceFiles(linkID: String, files: [StoredFile], now: Int64) throws -> Bool
    /// Deactivates a link for good and drops its location URLs. Returns once no server can still answer from the
    /// link as it was (`DatabaseLinkStore.changeSettleSeconds` after the commit on PostgreSQL).
    /// - Returns: false when there is no such link; true also when it was deactivated before.
    func deactivate(linkID: String, now: Int64) throws -> Bool
    /// One link, with its files when `withFiles`. (The server's store on PostgreSQL answers without files from a
    /// row read at most `DatabaseLinkStore.linkRowSeconds` before, except for a link with a passcode.)
    func link(id: String, withFiles: Bool) throws -> StoredLink?
    /// Every link, oldest first, without files.
    func links() throws -> [StoredLink]
    /// The number of files of every link, by id.
    func fileCounts() throws -> [String: Int]
    /// Access records, oldest first: of one link, or of all.
    func audit(linkID: String?) throws -> [AuditEntry]

    /// Counts one wrong passcode: `remaining_attempts - 1` where it is above 0, in one atomic statement.
    /// - Returns: the attempts left after this one, or nil when none were left (the link is disabled).
    func spendAttempt(linkID: String, now: Int64) throws -> Int?
    /// Gives location URLs for a manifest and records the access, if the link still opens at `now` (active, not
    /// expired, attempts left) and its content is still `version` (the one the manifest was made of): the check
    /// and the writes are one transaction.
    /// - Returns: false when the link no longer opens or was updated meanwhile (nothing was written).
    func grant(linkID: String, version: Int64, tickets: [LocationTicket], audit: AuditEntry, now: Int64) throws -> Bool
    /// Records a manifest whose locations are sealed (nothing to store for them) if the link still opens at `now`
    /// and its content is still `version`: the link's row is read, then the record is stored or queued as `record`
    /// does. A deactivation or update that commits after the read is a request answered just before it. (On the
    /// server's store on PostgreSQL the row may be one read up to `DatabaseLinkStore.linkRowSeconds` before.)
    /// - Returns: false when the link no longer opens or was updated (nothing was recorded).
    func admit(linkID: String, version: Int64, audit: AuditEntry, now: Int64) throws -> Bool
    /// The file a sealed location opens: the link's row is read for its state and version (nil when it no longer
    /// opens at `now` or is no longer at `version`: never a file of another version), as `admit` reads it.
    func locationFile(linkID: String, version: Int64, position: Int, now: Int64) throws -> (
        link: StoredLink, file: StoredFile
    )?
    /// The file a location URL opens, if its ticket is live at `now`, the link still opens and its content is still
    /// the ticket's version (a location of an earlier version answers nil: never a file of another version); a
    /// single-use ticket is consumed (exactly one of parallel uses gets the file). The recipient is the one of the
    /// manifest that gave the location.
    ///
    /// `manifestTicket` names the row of a manifest whose locations share one row (position -1) and the position
    /// this location opens: a location is looked up by its own hash or by that row's, in one statement.
    func redeem(ticketHash: String, manifestTicket: (hash: String, position: Int)?, now: Int64) throws -> (
        link: StoredLink, file: StoredFile, recipient: String?
    )?
    /// Records a long-term link's manifest request by one recipient (a hash of it) if its last one is at least
    /// `interval` seconds old.
    /// - Returns: nil when the request may go ahead, or the seconds to wait (≥ 1).
    func poll(linkID: String, recipientHash: String, now: Int64, interval: Int64) throws -> Int64?
    /// Records one access: committed before it returns, or (the server's store) queued for the next group commit,
    /// which a clean stop flushes (`flush`); a crash loses at most the records queued then (docs/server.md).
    func record(_ entry: AuditEntry) throws
    /// Commits every access record queued so far; waits at most `seconds`.
    /// - Returns: the records still not committed (0 after a clean flush).
    @discardableResult
    func flush(seconds: Int) -> Int
    /// Drops expired location URLs and poll records older than `pollsBefore`.
    func purge(now: Int64, pollsBefore: Int64) throws
    /// Deletes access records older than `before` (seconds since 1970), oldest first, never the newest one.
    /// - Returns: the records deleted.
    func pruneAudit(before: Int64) throws -> Int

    /// Whether the store answers now (a health check).
    func isReachable() -> Bool
    /// Whether the store can commit a write now (a health check: a full disk or a read-only file fails it).
    func canWrite(now: Int64) -> Bool

    /// A stored setting (`base_url`), or nil.
    func setting(_ name: String) throws -> String?
    /// Stores a setting if it is not set yet.
    /// - Returns: the value now stored (the earlier one, when it was set).
    func settingOnce(_ name: String, _ value: String) throws -> String
    /// Deletes the settings whose names start with `prefix`, except those named in `except`.
    func deleteSettings(prefix: String, except: [String]) throws
}

extension LinkStore {
    /// A store that commits every record at once has nothing to flush.
    @discardableResult
    public func flush(seconds: Int) -> Int { 0 }
}
