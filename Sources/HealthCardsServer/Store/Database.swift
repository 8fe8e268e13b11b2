import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// A database (SQLite file or PostgreSQL) and a pool of connections to it, each lent to one thread at a time.
///
/// The schema is created or upgraded when the database is opened (`Schema`): a version table records each
/// step; a database whose schema is newer than this program is refused. A connection that broke (a
/// PostgreSQL restart) is dropped when it is handed back and a new one is opened on the next request.
public final class Database: @unchecked Sendable {
    /// Who uses the connections, which decides how commits reach the disk.
    public enum Role: Sendable {
        /// An operator's command (`link create`, …): every commit flushed to disk before it returns.
        case operatorCommand
        /// The server: its own records (audit, location URLs) commit without waiting for the flush (durable
        /// across a crash of the server, and for SQLite across a crash of the process; the last moments may be
        /// lost on a power failure); what must never be lost (a wrong-passcode count) asks for a durable commit.
        case server
    }

    public let url: DatabaseURL
    public let role: Role
    /// Most connections open at once.
    public let maxConnections: Int
    /// Seconds a request waits for a free connection before `.unavailable`.
    public let checkoutTimeoutSeconds: Int
    public var dialect: SQLDialect { url.dialect }

    // Guarded by `mutex`.
    private var idle: [SQLConnection] = []
    private var open = 0
    private var closed = false
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let returned = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// SQLite: the writers of this pool queue here rather than sleep in SQLite's busy handler.
    private let writers = WriterLock()
    /// The server's one writer of group-committed access records (`Role.server`; nil for an operator's command),
    /// shared by every store on this pool, so a flush (a clean stop, `audit`) commits every record queued by any
    /// of them. Stopped (flushed) by `close()`.
    private(set) var groupCommit: GroupCommit?

    /// Opens the database and brings its schema to this program's version.
    /// - Parameters:
    ///   - url: where it is.
    ///   - role: see `Role`.
    ///   - create: make a missing SQLite file (mode 0600); PostgreSQL databases are made by their administrator.
    ///   - maxConnections: the pool's size (at least 1): the server's threads, plus one for its maintenance.
    ///   - now: seconds since 1970, recorded with a schema step.
    /// - Throws: `HealthCardError`: `.configuration` with `STORE_CANNOT_OPEN` (no such SQLite file, not a
    ///   file), `.io` with `STORE_UNAVAILABLE` (PostgreSQL cannot be reached) or `STORE_SCHEMA` (newer than this
    ///   program, or not this program's tables).
    public init(
        url: DatabaseURL, role: Role, create: Bool, maxConnections: Int = 8, checkoutTimeoutSeconds: Int = 5,
        now: Int64
    ) throws(HealthCardError) {
        self.url = url
        self.role = role
        self.maxConnections = max(1, maxConnections)
        self.checkoutTimeoutSeconds = max(1, checkoutTimeoutSeconds)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(returned, &attributes)
        pthread_condattr_destroy(&attributes)
        let first: SQLConnection
        do { first = try Self.connect(url, role: role, create: create, writers: writers) } catch {
            throw error.healthCardError
        }
        do {
            try Schema.migrate(first, now: now)
        } catch {
            first.close()
            throw error.healthCardError
        }
        idle.append(first)
        open = 1
        if role == .server, case .sqlite = url { startCheckpointer() }
        if role == .server { groupCommit = GroupCommit(database: self) }
    }

    /// The server's SQLite write-ahead log is checkpointed here, every `checkpointInterval` seconds on a thread of
    /// its own (PASSIVE: it never waits for, nor blocks, readers and writers), not by whichever request's commit
    /// passes SQLite's 1000-page mark. The thread ends once the database is closed or gone.
    public static let checkpointIntervalMicroseconds: UInt32 = 1_000_000

    private final class Weak: @unchecked Sendable {
        weak var database: Database?
        init(_ database: Database) { self.database = database }
    }

    private func startCheckpointer() {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Weak(self)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let weak = Unmanaged<Weak>.fromOpaque(argument).takeRetainedValue()
                while true {
                    usleep(Database.checkpointIntervalMicroseconds)
                    guard let database = weak.database, !database.isClosed else { return nil }
                    _ = try? database.withConnection { c in try c.query("PRAGMA wal_checkpoint(PASSIVE)", []) }
                }
            }, box)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Weak>.fromOpaque(box).release()
        }
    }

    private var isClosed: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return closed
    }

    deinit {
        close()
        pthread_cond_destroy(returned)
        pthread_mutex_destroy(mutex)
        returned.deallocate()
        mutex.deallocate()
    }

    private static func connect(_ url: DatabaseURL, role: Role, create: Bool, writers: WriterLock) throws(StoreError)
        -> SQLConnection
    {
        switch url {
        case .sqlite(let path):
            return try SQLiteConnection(
                path: path, create: create, busyTimeoutMilliseconds: 5000, fullSync: role == .operatorCommand,
                writers: writers, autoCheckpoint: role != .server)
        case .postgresql(let text):
            return try PostgresConnection(url: text, connectTimeoutSeconds: 3, fastCommits: role == .server)
        }
    }

    /// Lends a connection to `body`. Waits up to `checkoutTimeoutSeconds` when all are in use.
    /// - Throws: what `body` throws, a `StoreError` as its `HealthCardError` (the public store API's error);
    ///   `STORE_UNAVAILABLE` when no connection can be had.
    func withConnection<T>(_ body: (SQLConnection) throws -> T) throws -> T {
        do {
            let connection = try checkOut()
            defer { checkIn(connection) }
            return try body(connection)
        } catch let error as StoreError {
            throw error.healthCardError
        }
    }

    private func checkOut() throws(StoreError) -> SQLConnection {
        pthread_mutex_lock(mutex)
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += checkoutTimeoutSeconds
        while true {
            if closed {
                pthread_mutex_unlock(mutex)
                throw StoreError.closed
            }
            if let connection = idle.popLast() {
                pthread_mutex_unlock(mutex)
                return connection
            }
            if open < maxConnections {
                open += 1
                pthread_mutex_unlock(mutex)
                do {
                    return try Self.connect(url, role: role, create: false, writers: writers)
                } catch {
                    pthread_mutex_lock(mutex)
                    open -= 1
                    pthread_cond_signal(returned)
                    pthread_mutex_unlock(mutex)
                    throw error
                }
            }
            if pthread_cond_timedwait(returned, mutex, &deadline) == ETIMEDOUT {
                pthread_mutex_unlock(mutex)
                throw StoreError(
                    .unavailable,
                    "all \(maxConnections) database connections stayed busy for \(checkoutTimeoutSeconds) s")
            }
        }
    }

    private func checkIn(_ connection: SQLConnection) {
        pthread_mutex_lock(mutex)
        if connection.isBroken || closed {
            open -= 1
            pthread_mutex_unlock(mutex)
            connection.close()
            pthread_mutex_lock(mutex)
        } else {
            idle.append(connection)
        }
        pthread_cond_signal(returned)
        pthread_mutex_unlock(mutex)
    }

    /// Closes the idle connections and refuses new checkouts; connections in use close when handed back.
    public func close() {
        groupCommit?.stop()
        pthread_mutex_lock(mutex)
        closed = true
        let connections = idle
        idle.removeAll()
        open -= connections.count
        pthread_cond_broadcast(returned)
        pthread_mutex_unlock(mutex)
        for connection in connections { connection.close() }
    }

    /// Whether a statement runs now (for a health check): `SELECT 1` on a pooled connection.
    public func isReachable() -> Bool {
        (try? withConnection { connection in try connection.scalar("SELECT 1") }) != nil
    }

    /// The SQLite and libpq library versions, for `--version`.
    public static var libraryVersions: [(library: String, version: String)] {
        [("SQLite", SQLiteConnection.libraryVersion), ("libpq", PostgresConnection.libraryVersion)]
    }
}
