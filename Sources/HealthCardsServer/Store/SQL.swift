import HealthCardsCore

/// A value bound to or read from a statement. The schema holds integers and text only (hashes and ids as
/// base64url text), so SQLite and PostgreSQL read and write the same values.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }
    /// An integer column used as a flag: true for a non-zero integer.
    public var bool: Bool { (integer ?? 0) != 0 }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// `.text`, or `.null` for nil.
    public static func optional(_ text: String?) -> SQLValue { text.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for nil.
    public static func optional(_ value: Int64?) -> SQLValue { value.map { .integer($0) } ?? .null }
    /// 1 or 0.
    public static func flag(_ value: Bool) -> SQLValue { .integer(value ? 1 : 0) }
}

/// Why a database operation failed, inside this package. A client never sees it: the public store API
/// (`Database`, `DatabaseLinkStore`, `CardStore`) throws it as `HealthCardError` (`healthCardError`), whose code
/// keeps the reason (`STORE_UNAVAILABLE`, `STORE_FAILED`, `STORE_SCHEMA`, `STORE_CANNOT_OPEN`).
package struct StoreError: Error, Sendable, CustomStringConvertible, Equatable {
    package enum Reason: Sendable, Equatable {
        /// The database cannot be reached now (PostgreSQL down or restarting, a connection lost, SQLite busy
        /// past its timeout): a server answers 503 and tries again on the next request.
        case unavailable
        /// The database refused the statement or its data is not what this program wrote.
        case failed
        /// The schema is newer than this program, or could not be migrated.
        case schema
        /// The database cannot be opened as given (a path that is not a file, a URL that is not PostgreSQL's).
        case configuration
    }

    package var reason: Reason
    /// What failed, without parameters (which may be passcode hashes or link ids) or credentials.
    package var message: String

    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    package var description: String { message }

    /// The toolkit's error for this failure, with the same message: `.io` (a database is a file or a service)
    /// with code `STORE_UNAVAILABLE`, `STORE_FAILED` or `STORE_SCHEMA`; `.configuration` with
    /// `STORE_CANNOT_OPEN` for a database that cannot be opened as given.
    package var healthCardError: HealthCardError {
        switch reason {
        case .unavailable: return HealthCardError(.io, code: .storeUnavailable, message)
        case .failed: return HealthCardError(.io, code: .storeFailed, message)
        case .schema: return HealthCardError(.io, code: .storeSchema, message)
        case .configuration: return HealthCardError(.configuration, code: .storeCannotOpen, message)
        }
    }

    /// The codes a `StoreError` becomes: an error with one of them came from the database.
    package static let codes: Set<RuleCode> = [.storeUnavailable, .storeFailed, .storeSchema, .storeCannotOpen]

    /// The pool or its writer is closed: the server is stopping (503, the next instance answers).
    static let closed = StoreError(.unavailable, "the database is closed (the server is stopping)")

    /// The error of `error` when it says the database cannot be reached now (a `StoreError`, or the
    /// `HealthCardError` with code `STORE_UNAVAILABLE` it became at the store's API): a server answers 503 with
    /// Retry-After. Nil for any other error.
    package static func unavailable(_ error: any Error) -> HealthCardError? {
        let bridged = (error as? StoreError)?.healthCardError ?? (error as? HealthCardError)
        return bridged?.code == .storeUnavailable ? bridged : nil
    }
}

/// The two SQL dialects the store speaks; statements are written once with `?` placeholders and the
/// dialects differ only in DDL and in how a placeholder is spelled (`$1` for PostgreSQL).
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgresql
}

/// One connection, used by one thread at a time (the pool lends it). Statements are prepared once per
/// connection and kept.
protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// True once the connection failed in a way that needs a new one (a lost PostgreSQL connection).
    var isBroken: Bool { get }
    /// Runs one statement with `?` placeholders bound to `parameters`; returns its rows.
    func query(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> [[SQLValue]]
    /// Runs statements without parameters or results (DDL, several separated by `;`).
    func execute(_ sql: String) throws(StoreError)
    /// Starts a transaction: `write` takes the write lock at once (SQLite `BEGIN IMMEDIATE`, so two writers
    /// never deadlock upgrading a read lock); `durable` flushes the commit to disk even where the server's
    /// connections otherwise trade the last moments before a power failure for speed.
    func begin(write: Bool, durable: Bool) throws(StoreError)
    func commit() throws(StoreError)
    /// Rolls back; never throws (a broken connection is discarded by the pool).
    func rollback()
    func close()
}

extension SQLConnection {
    /// Runs `body` in a transaction; commits when it returns, rolls back when it throws.
    func transaction<T>(write: Bool, durable: Bool = false, _ body: () throws -> T) throws -> T {
        try begin(write: write, durable: durable)
        do {
            let value = try body()
            try commit()
            return value
        } catch {
            rollback()
            throw error
        }
    }

    /// The first column of the first row, when there is one.
    func scalar(_ sql: String, _ parameters: [SQLValue] = []) throws(StoreError) -> SQLValue? {
        try query(sql, parameters).first?.first
    }
}
