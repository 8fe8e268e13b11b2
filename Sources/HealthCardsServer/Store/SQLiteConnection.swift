internal import CSQLite
import HealthCardsCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite connection (`sqlite3 *`), owned here and closed in `close`/`deinit`, with its prepared
/// statements (`sqlite3_stmt *`, finalized with it).
///
/// Opened in multi-thread mode (`SQLITE_OPEN_NOMUTEX`: the pool lends a connection to one thread at a time),
/// in WAL mode (readers never wait for the writer; a process killed at any point leaves every committed
/// transaction and nothing of an uncommitted one), with a busy timeout so that writers from several threads
/// and processes queue instead of failing, foreign keys on, temporary tables in memory (the server writes
/// no file but the database and its `-wal`/`-shm`), and `trusted_schema` off.
final class SQLiteConnection: SQLConnection {
    let dialect = SQLDialect.sqlite
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// `PRAGMA synchronous` outside durable transactions: FULL for operator commands, NORMAL for the server.
    private let synchronous: String
    private var inDurable = false
    /// The writer lock of the pool this connection belongs to, held from `BEGIN IMMEDIATE` to its end.
    private let writers: WriterLock?
    private var holdsWriters = false
    /// The last statement `query` ran ended with SQLite's busy status (another connection held the lock past the
    /// busy timeout).
    private var lastStepBusy = false
    /// The server's checkpointer's wake-up, raised by a commit that leaves `Database.restartFrames` frames or more
    /// in the log (kept here: SQLite's WAL hook holds it unretained). Nil: SQLite checkpoints by itself.
    private let checkpointSignal: CheckpointSignal?
    let path: String
    var isBroken: Bool { db == nil }

    /// Opens (and with `create`, makes) the database file.
    /// - Parameters:
    ///   - path: the database file. A new one is made with mode 0600 before SQLite opens it (SQLite gives
    ///     its `-wal` and `-shm` files the database's mode).
    ///   - create: make the file when it is missing; otherwise a missing file is an error.
    ///   - busyTimeoutMilliseconds: how long a statement waits for another writer before `.unavailable`.
    ///   - fullSync: `synchronous=FULL` (every commit flushed to disk) rather than NORMAL (WAL: durable across a
    ///     crash of the process, possibly not across a power failure for the last commits).
    /// - Throws: `StoreError(.configuration)` for a path that is not a regular file, `.unavailable`/`.failed`
    ///   from SQLite.
    ///   - writers: the lock all connections of one process to this file share for writing, so that their writers
    ///     queue on it instead of on SQLite's busy handler, which sleeps (1 ms, then more) before each retry; the
    ///     busy timeout is then only for writers in other processes.
    ///   - checkpointSignal: nil for SQLite's own WAL checkpoint, run by the commit that passes 1000 pages (in that
    ///     request's time); the signal of the pool's checkpointer thread (`Database`, server role) instead.
    init(
        path: String, create: Bool, busyTimeoutMilliseconds: Int32, fullSync: Bool, writers: WriterLock? = nil,
        checkpointSignal: CheckpointSignal? = nil
    )
        throws(StoreError)
    {
        self.path = path
        self.checkpointSignal = checkpointSignal
        self.writers = writers
        self.synchronous = fullSync ? "FULL" : "NORMAL"
        guard sqlite3_threadsafe() != 0 else {
            throw StoreError(.configuration, "this SQLite library was built without thread support")
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw StoreError(
                    .configuration,
                    "the SQLite database \(path) is not a regular file (a link, a folder or a device); give the path of a database file"
                )
            }
        } else if create {
            // O_EXCL: never take over a file another process made between the check and here.
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd < 0 && errno != EEXIST {
                throw StoreError(
                    .configuration, "cannot create the SQLite database \(path): \(String(cString: strerror(errno)))")
            }
            if fd >= 0 {
                var made = stat()
                if fstat(fd, &made) == 0 { createdFile = (made.st_dev, made.st_ino) }
                Glibc.close(fd)
            }
        } else {
            throw StoreError(.configuration, "there is no SQLite database at \(path)")
        }
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            removeCreatedFile()
            // SQLite refuses a path through a symbolic link (opened with SQLITE_OPEN_NOFOLLOW).
            if status == SQLITE_CANTOPEN | (6 << 8) {  // SQLITE_CANTOPEN_SYMLINK
                throw StoreError(
                    .configuration,
                    "the SQLite database \(path) is reached through a symbolic link (a linked folder), which is "
                        + "refused; give the database's real path")
            }
            throw StoreError(.configuration, "cannot open the SQLite database \(path): \(message)")
        }
        db = handle
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        sqlite3_extended_result_codes(handle, 1)
        do {
            try configure()
        } catch {
            close()
            removeCreatedFile()
            throw error
        }
        createdFile = nil
    }

    /// The empty file this connection made for a new database, while it is not yet a database.
    private var createdFile: (dev: dev_t, ino: ino_t)?

    /// Removes the file `init` made when the database could not be opened in it: no empty file left behind. Only
    /// that file (the same device and inode, still empty), never one another process put there since.
    private func removeCreatedFile() {
        guard let made = createdFile else { return }
        createdFile = nil
        var now = stat()
        guard lstat(path, &now) == 0, now.st_dev == made.dev, now.st_ino == made.ino, now.st_size == 0 else { return }
        unlink(path)
    }

    private func configure() throws(StoreError) {
        let mode = try scalar("PRAGMA journal_mode=WAL")?.text?.lowercased()
        guard mode == "wal" else {
            throw StoreError(.failed, "the SQLite database \(path) cannot be put in WAL mode (it is \(mode ?? "?"))")
        }
        // No mmap: in WAL mode SQLite drops a connection's whole mapping at the first read after another
        // connection's commit (`sqlite3OsUnfetch` in `pagerBeginReadTransaction`), and the server's writer commits
        // all the time: each location GET paid an munmap (a TLB shootdown on every core) and page faults, 5 % of its
        // CPU by perf. Reads are preads from the page cache instead. (It was kept once for fear that preads made
        // `WriteAheadLogBoundTests` fail; that test's failures were the checkpointer starved of CPU, which the
        // writer's own restart now bounds.)
        try execute(
            "PRAGMA synchronous=\(synchronous); PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY; PRAGMA trusted_schema=OFF; "
                + "PRAGMA mmap_size=0"
                + (checkpointSignal == nil
                    ? "" : "; PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=\(Database.walSizeLimitBytes)"))
        if let checkpointSignal, let db {
            // After each commit: the frames now in the log. Replaces the automatic checkpoint (turned off above).
            sqlite3_wal_hook(
                db,
                { context, db, _, frames in
                    guard frames >= Database.restartFrames, let context else { return SQLITE_OK }
                    let signal = Unmanaged<CheckpointSignal>.fromOpaque(context).takeUnretainedValue()
                    signal.raise()
                    // The hard bound: a log past three quarters of its limit is restarted here, by the writer that
                    // grew it, before its next commit (the checkpointer's thread, starved of the CPU on a loaded
                    // machine, let it reach 85 MB in a test). It waits 250 ms at most for readers of the old log,
                    // and after a try that failed, the checkpointer's and the writers' alike, it waits for the
                    // shared backoff (a reader that stays keeps the log growing, as the docs say, and must not cost
                    // every commit the wait).
                    if frames >= Database.writerRestartFrames, let db, signal.mayTryRestart() {
                        let started = Clock.monotonicSeconds()
                        sqlite3_busy_timeout(db, Int32(Database.restartWaitMilliseconds * 5))
                        let status = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_RESTART, nil, nil)
                        sqlite3_busy_timeout(db, signal.busyTimeoutMilliseconds)
                        signal.restartTried(succeeded: status == SQLITE_OK, started: started)
                    }
                    return SQLITE_OK
                }, Unmanaged.passUnretained(checkpointSignal).toOpaque())
        }
    }

    deinit { close() }

    func close() {
        releaseWriters()
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    /// The error for SQLite status `code` on the current connection. Busy and locked (another writer held
    /// the lock past the timeout), I/O errors and a full disk are `.unavailable`: a later try may succeed.
    private func error(_ code: Int32, _ what: String) -> StoreError {
        var message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection"
        let primary = code & 0xFF
        if primary == SQLITE_BUSY {
            message +=
                " (another program holds the database's write lock, e.g. an open transaction in an sqlite3 "
                + "session or a link being made or updated; try again when it ends)"
        }
        let transient = [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL]
        return StoreError(transient.contains(primary) ? .unavailable : .failed, "SQLite \(what): \(message)")
    }

    private func prepared(_ sql: String) throws(StoreError) -> OpaquePointer {
        guard let db else { throw StoreError(.unavailable, "the SQLite connection is closed") }
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status, "cannot prepare a statement") }
        statements[sql] = statement
        return statement
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> [[SQLValue]] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in parameters.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, position)
            case .integer(let number): status = sqlite3_bind_int64(statement, position, number)
            case .text(let text):
                var copy = text
                status = copy.withUTF8 { bytes in
                    guard let base = bytes.baseAddress, !bytes.isEmpty else {
                        return CSQLite_bind_text(statement, position, "", 0)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        CSQLite_bind_text(statement, position, $0, Int32(bytes.count))
                    }
                }
            }
            guard status == SQLITE_OK else { throw error(status, "cannot bind a parameter") }
        }
        var rows: [[SQLValue]] = []
        lastStepBusy = false
        while true {
            let status = sqlite3_step(statement)
            if status & 0xFF == SQLITE_BUSY { lastStepBusy = true }
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status, "a statement failed") }
            let columns = sqlite3_column_count(statement)
            var row: [SQLValue] = []
            row.reserveCapacity(Int(columns))
            for column in 0..<columns {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: row.append(.null)
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                default:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if let text = sqlite3_column_text(statement, column) {
                        row.append(
                            .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)))
                    } else {
                        row.append(.text(""))
                    }
                }
            }
            rows.append(row)
        }
        return rows
    }

    func execute(_ sql: String) throws(StoreError) {
        guard let db else { throw StoreError(.unavailable, "the SQLite connection is closed") }
        let status = sqlite3_exec(db, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw error(status, "a statement failed") }
    }

    func begin(write: Bool, durable: Bool) throws(StoreError) {
        if write, let writers {
            // Refused before queueing for the lock and while waiting for it: a write behind one the database
            // refused would wait the busy timeout in vain too (`GroupCommit`, `WriterLock.noteBusy`).
            guard writers.acquire(refusable: true) else { throw Self.writesRefused }
            holdsWriters = true
        }
        do throws(StoreError) {
            if durable && synchronous != "FULL" {
                try execute("PRAGMA synchronous=FULL")
                inDurable = true
            }
            // Prepared once and kept (`query`), as COMMIT is: `sqlite3_exec` parsed them again for every
            // transaction, about 7,000 instructions each.
            do throws(StoreError) { _ = try query(write ? "BEGIN IMMEDIATE" : "BEGIN", []) } catch {
                // Another program held the write lock for the whole busy timeout: the pool's other writes are
                // refused at once from now on, instead of each waiting the timeout in line (`WriterLock.noteBusy`).
                if write, lastStepBusy { writers?.noteBusy() }
                throw error
            }
        } catch {
            restoreSynchronous()
            releaseWriters()
            throw error
        }
    }

    /// A server write refused while the database is not taking writes (`WriterLock.refuseWrites`).
    static let writesRefused = StoreError(
        .unavailable,
        "the database is not taking writes (its write lock is held, e.g. by another program's open transaction, or "
            + "the disk is full); nothing was written: try again later")

    func commit() throws(StoreError) {
        defer {
            restoreSynchronous()
            if let db, sqlite3_get_autocommit(db) != 0 { releaseWriters() }
        }
        _ = try query("COMMIT", [])
    }

    func rollback() {
        if let db, sqlite3_get_autocommit(db) == 0 { sqlite3_exec(db, "ROLLBACK", nil, nil, nil) }
        restoreSynchronous()
        releaseWriters()
    }

    private func releaseWriters() {
        guard holdsWriters else { return }
        holdsWriters = false
        writers?.unlock()
    }

    private func restoreSynchronous() {
        guard inDurable, let db else { return }
        inDurable = false
        sqlite3_exec(db, "PRAGMA synchronous=\(synchronous)", nil, nil, nil)
    }

    /// The SQLite library's version, e.g. "3.40.1".
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

/// Wakes the server's checkpointer thread before its interval is up (`Database`); closed with the pool.
final class CheckpointSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var raised = false
    private var closed = false

    init(busyTimeoutMilliseconds: Int32) {
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// The busy timeout the connections use outside a checkpoint (restored after the writer's own restart).
    let busyTimeoutMilliseconds: Int32
    // When a restart of the log may be tried next, shared by the checkpointer and the writers' own restarts, guarded
    // by `mutex`: after a try that failed (a reader kept the old log past the wait) the next waits 20 ms, then twice
    // as long each time, and at least four times what the failed try waited, at most `maxRestartBackoff` seconds; a
    // restart that succeeds clears it. Each failed try held
    // this process's writers for its wait: without the backoff, a `sqlite3` session inside a transaction cut the
    // server to 1-6 % of its rate (a trial, 2026-12-06).
    private var nextRestart = 0.0
    private var restartBackoff = 0.0
    static let maxRestartBackoff = 2.0
    /// Restarts tried, and the seconds writers were held for tries that failed (`restartStatistics`).
    private var restartTries = 0
    private var failedRestartSeconds = 0.0

    /// Whether a restart may be tried now.
    func mayTryRestart() -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return Clock.monotonicSeconds() >= nextRestart
    }

    /// Records a try that began at `started` (monotonic seconds).
    func restartTried(succeeded: Bool, started: Double) {
        let now = Clock.monotonicSeconds()
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        restartTries += 1
        if succeeded {
            restartBackoff = 0
            nextRestart = 0
        } else {
            failedRestartSeconds += now - started
            // Twice the last backoff, and at least four times what this try held the writers: a try that waited
            // out its 250 ms is not followed by another 20 ms later (writers held at most a fifth of the time).
            restartBackoff = min(
                Self.maxRestartBackoff, max(restartBackoff == 0 ? 0.02 : restartBackoff * 2, 4 * (now - started)))
            nextRestart = now + restartBackoff
        }
    }

    /// (restarts tried, seconds held by the failed ones) (tests).
    var restartStatistics: (tries: Int, failedSeconds: Double) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (restartTries, failedRestartSeconds)
    }

    func raise() {
        pthread_mutex_lock(mutex)
        raised = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until raised or `microseconds` passed (monotonic clock). - Returns: false once closed.
    func wait(microseconds: UInt32) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(microseconds) * 1000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !raised && !closed {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        raised = false
        return !closed
    }
}

/// A mutex the SQLite connections of one pool take for writing (see `SQLiteConnection.init`).
final class WriterLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Broadcast when the lock is released or writes start being refused.
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var held = false
    /// The server's writes are refused at once (`GroupCommit`: its last batch found the database unavailable, e.g.
    /// another process holds the write lock), except on the group commit's own writer thread, which tries again.
    private let refusing = Atomic<Bool>(false)
    /// The group commit's writer thread (`pthread_self()`), 0 before it starts.
    private let exempt = Atomic<UInt>(0)
    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }
    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    /// Takes the lock, waiting for it.
    func lock() { _ = acquire(refusable: false) }

    /// Takes the lock, waiting for it; a refusable caller (a write that may be refused) gives up, returning false,
    /// when writes are refused before or while it waits (`refusesThisThread`).
    func acquire(refusable: Bool) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if refusable && refusesThisThread { return false }
            guard held else { break }
            pthread_cond_wait(changed, mutex)
        }
        held = true
        return true
    }

    func unlock() {
        pthread_mutex_lock(mutex)
        held = false
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// Sets whether writes on other threads than the exempt one are refused; waiting writers are woken to see it.
    func refuseWrites(_ on: Bool) {
        refusing.store(on, ordering: .sequentiallyConsistent)
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }
    /// Called (by `noteBusy`) when a write on a thread other than the exempt one found the database's write lock held
    /// past the busy timeout: the pool's group commit starts refusing and trying again (`Database`, server role).
    nonisolated(unsafe) var onBusy: (() -> Void)?
    /// A write of this pool waited the busy timeout in vain: refuse the next ones at once (the group commit's writer
    /// tries the database again and opens it), unless the write was the group commit's own, which does that itself.
    func noteBusy() {
        guard exempt.load(ordering: .sequentiallyConsistent) != UInt(pthread_self()) else { return }
        refuseWrites(true)
        onBusy?()
    }
    /// Makes the calling thread the one whose writes are never refused (the group commit's writer).
    func exemptThisThread() { exempt.store(UInt(pthread_self()), ordering: .sequentiallyConsistent) }
    /// True when a write on the calling thread is to be refused now.
    var refusesThisThread: Bool {
        refusing.load(ordering: .sequentiallyConsistent)
            && exempt.load(ordering: .sequentiallyConsistent) != UInt(pthread_self())
    }
}
