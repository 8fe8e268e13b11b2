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
    let writers = WriterLock()
    /// The server's one writer of group-committed access records (`Role.server`; nil for an operator's command),
    /// shared by every store on this pool, so a flush (a clean stop, `audit`) commits every record queued by any
    /// of them. Stopped (flushed) by `close()`.
    private(set) var groupCommit: GroupCommit?
    /// The server's SQLite checkpointer's wake-up (nil for an operator's command and PostgreSQL).
    private let checkpointSignal: CheckpointSignal?

    /// How long the server's writes wait while the database's write lock is held (by another process: an open
    /// `BEGIN IMMEDIATE`, a long `link update`): SQLite's busy timeout of each statement, and the most a manifest's
    /// grant queued for the group commit waits to be taken into a batch (`GroupCommit.perform`). Tests shorten them.
    package struct WriteWaits: Sendable {
        /// Milliseconds a SQLite statement waits for another process's writer before `.unavailable`.
        package var busyTimeoutMilliseconds: Int32
        /// Seconds a write queued for the group commit waits to be taken into a batch before `.unavailable`.
        package var queuedSeconds: Double
        package init(
            busyTimeoutMilliseconds: Int32 = Database.busyTimeoutMilliseconds,
            queuedSeconds: Double = Database.queuedWriteSeconds
        ) {
            self.busyTimeoutMilliseconds = max(1, busyTimeoutMilliseconds)
            self.queuedSeconds = max(0.001, queuedSeconds)
        }
    }

    /// See `WriteWaits`.
    package let writeWaits: WriteWaits

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
    public convenience init(
        url: DatabaseURL, role: Role, create: Bool, maxConnections: Int = 8, checkoutTimeoutSeconds: Int = 5,
        now: Int64
    ) throws(HealthCardError) {
        try self.init(
            url: url, role: role, create: create, maxConnections: maxConnections,
            checkoutTimeoutSeconds: checkoutTimeoutSeconds, writeWaits: WriteWaits(), now: now)
    }

    /// `init(url:role:create:maxConnections:checkoutTimeoutSeconds:now:)` with other `writeWaits` (tests).
    package init(
        url: DatabaseURL, role: Role, create: Bool, maxConnections: Int = 8, checkoutTimeoutSeconds: Int = 5,
        writeWaits: WriteWaits, now: Int64
    ) throws(HealthCardError) {
        self.url = url
        self.writeWaits = writeWaits
        if role == .server, case .sqlite = url {
            checkpointSignal = CheckpointSignal(busyTimeoutMilliseconds: writeWaits.busyTimeoutMilliseconds)
        } else {
            checkpointSignal = nil
        }
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
        do {
            first = try Self.connect(
                url, role: role, create: create, writers: writers, signal: checkpointSignal, waits: writeWaits)
        } catch {
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
        if let checkpointSignal { startCheckpointer(checkpointSignal) }
        if role == .server {
            let commits = GroupCommit(database: self, deadlineSeconds: writeWaits.queuedSeconds)
            groupCommit = commits
            // Not retained by the lock: the pool owns both, and stops the group commit before it goes.
            writers.onBusy = { [unowned(unsafe) commits] in commits.noteUnavailable() }
        }
    }

    /// The server's SQLite write-ahead log is checkpointed on a thread of its own, not by whichever request's commit
    /// passes SQLite's 1000-page mark: every `checkpointIntervalMicroseconds`, and at once when a commit leaves
    /// `restartFrames` frames or more in the log (SQLite's WAL hook wakes it). First PASSIVE (it never waits for,
    /// nor blocks, readers and writers, and copies nearly every frame); then, with `restartFrames` or more in the
    /// log, RESTART with this process's writers held back: it copies the frames written since and waits (at most
    /// `restartWaitMilliseconds`) for readers of the old log, so that the next commit writes the log from its start
    /// again.
    /// Without it the log never restarts while requests keep writing (each PASSIVE checkpoint trails the newest
    /// commit) and grows without bound: 1.2 GB in 6 s of manifest requests on one link. With it the log holds
    /// about one checkpoint's worth of commits, and `journal_size_limit` truncates it back after a burst. The
    /// thread ends when the database is closed.
    public static let checkpointIntervalMicroseconds: UInt32 = 1_000_000
    /// Frames (pages of 4 KiB) in the log from which a checkpoint also restarts it: 4 MiB.
    public static let restartFrames: Int32 = 1024
    /// Bytes the write-ahead log file is truncated to when it is restarted after growing past them.
    public static let walSizeLimitBytes: Int64 = 64 << 20
    /// Frames in the log past which the writer that commits restarts it itself (three quarters of the limit).
    static let writerRestartFrames = Int32(walSizeLimitBytes * 3 / 4 / 4096)

    private final class Weak: @unchecked Sendable {
        weak var database: Database?
        let signal: CheckpointSignal
        init(_ database: Database, _ signal: CheckpointSignal) {
            self.database = database
            self.signal = signal
        }
    }

    private func startCheckpointer(_ signal: CheckpointSignal) {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Weak(self, signal)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let weak = Unmanaged<Weak>.fromOpaque(argument).takeRetainedValue()
                while weak.signal.wait(microseconds: Database.checkpointIntervalMicroseconds) {
                    guard let database = weak.database, !database.isClosed else { return nil }
                    database.checkpoint()
                }
                return nil
            }, box)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Weak>.fromOpaque(box).release()
        }
    }

    /// Milliseconds a RESTART waits for readers of the old log and other processes' writers, this process's
    /// writers held back meanwhile. A reader that stays longer (`sqlite3 .backup`, another process's long read)
    /// makes the RESTART give up, and the next one is tried after 20 ms, then twice as long after each that gave
    /// up, at most a second apart: while such a reader stays, requests wait at most this long a second, never the
    /// busy timeout (5 s) at every commit, and the log grows until the reader is done, as it must while a reader
    /// still needs it.
    public static let restartWaitMilliseconds = 50
    /// Milliseconds a SQLite statement waits for another process's writer before `.unavailable` (the default of
    /// `WriteWaits`).
    package static let busyTimeoutMilliseconds: Int32 = 5000
    /// Seconds a manifest's grant queued for the group commit waits to be taken into a batch before `.unavailable`
    /// (the default of `WriteWaits`): the same 5 s as an access record's wait for room in a full queue.
    package static let queuedWriteSeconds: Double = 5
    /// When the checkpointer may try a RESTART again (monotonic seconds), and the seconds it waited last after
    /// one gave up; its thread alone reads and writes them.
    /// One round of the checkpointer (see `checkpointIntervalMicroseconds`).
    private func checkpoint() {
        guard let signal = checkpointSignal else { return }
        _ = try? withConnection { c throws(StoreError) in
            // One row: busy (0/1), frames in the log, frames copied into the database.
            let row = try c.query("PRAGMA wal_checkpoint(PASSIVE)", []).first
            // Past half the size limit the restart waits 5 times as long for readers (a reader preempted inside its
            // transaction on a loaded machine outlasts 50 ms). After a try that failed, the next waits for the
            // backoff shared with the writers' own restarts (`CheckpointSignal.mayTryRestart`): a reader that keeps
            // the old log must not have this process's writers held at every round.
            guard case .integer(let frames)? = row?.count == 3 ? row?[1] : nil, frames >= Database.restartFrames,
                signal.mayTryRestart()
            else { return }
            let pressing = frames * 4096 >= Database.walSizeLimitBytes / 2
            writers.lock()
            defer { writers.unlock() }
            let started = Clock.monotonicSeconds()
            try c.execute("PRAGMA busy_timeout=\(Database.restartWaitMilliseconds * (pressing ? 5 : 1))")
            defer { try? c.execute("PRAGMA busy_timeout=\(writeWaits.busyTimeoutMilliseconds)") }
            let busy = try c.query("PRAGMA wal_checkpoint(RESTART)", []).first?.first == .integer(1)
            signal.restartTried(succeeded: !busy, started: started)
        }
    }

    /// (restarts of the log tried, seconds this process's writers were held by those that failed) (tests).
    package var restartStatistics: (tries: Int, failedSeconds: Double) {
        checkpointSignal?.restartStatistics ?? (0, 0)
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

    private static func connect(
        _ url: DatabaseURL, role: Role, create: Bool, writers: WriterLock, signal: CheckpointSignal?,
        waits: WriteWaits
    ) throws(StoreError)
        -> SQLConnection
    {
        switch url {
        case .sqlite(let path):
            return try SQLiteConnection(
                path: path, create: create, busyTimeoutMilliseconds: waits.busyTimeoutMilliseconds,
                fullSync: role == .operatorCommand,
                writers: writers, checkpointSignal: signal)
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
                    return try Self.connect(
                        url, role: role, create: false, writers: writers, signal: checkpointSignal, waits: writeWaits)
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
            // A connection broken by the server going away (a PostgreSQL restart): the idle ones were made to the
            // same server and are broken too, though nothing says so until each is used. Closed with it, so the
            // next request opens a new connection instead of each of the next requests failing on an old one (an
            // idle server answered 503 to its next 11 requests after a restart).
            let dropped = connection.isBroken ? idle : []
            if connection.isBroken { idle.removeAll() }
            open -= 1 + dropped.count
            pthread_mutex_unlock(mutex)
            connection.close()
            for other in dropped { other.close() }
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
        checkpointSignal?.close()
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
