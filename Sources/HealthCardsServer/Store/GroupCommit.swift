import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// Group commit of the server's writes: one writer thread commits, in one transaction, every access record
/// queued since its last commit and every waiting write (a manifest's grant on SQLite), so that a burst of
/// requests costs one commit (one set of WAL pages, one lock round) instead of one each.
///
/// - An **access record** (`record`) is queued and the request goes on: the record is committed with the next
///   batch. A batch of records only waits `gatherSeconds` (2 ms) for more once the writer is free, unless a
///   statement's worth (`rowsPerStatement`) is queued first: under load one statement carries many records
///   instead of two or three (on PostgreSQL each statement is a round trip and a commit). A record thus waits at
///   most the commit before it and 2 ms. At most `capacity` records are queued or being committed; a request
///   that finds the queue full waits for room (back-pressure: it is answered later, never without its record),
///   and after `waitSeconds` of a full queue (the database is not taking writes) it gets
///   `StoreError(.unavailable)` (503 with `Retry-After`).
///   `flush` (a clean stop: SIGTERM, SIGINT, `LinkService.stop`) returns once every queued record is committed.
///   A crash of the process (`kill -9`) loses at most the records queued and not yet committed: at most
///   `capacity`, in practice those of the last commit's few milliseconds.
/// - A **waiting write** (`perform`) runs inside the batch's transaction and its caller gets its result only
///   once that transaction committed (its batch does not wait to gather, nor does the batch a `flush` waits
///   for): it is as durable as a transaction of its own, and its answer is never given before it. Its wait is
///   bounded (another process holding the write lock must not stall the server's request threads, which also
///   serve reads): a write still *queued* (not yet taken into a batch) after
///   `deadlineSeconds` is taken out of the queue and its caller gets `StoreError(.unavailable)` (503 with
///   `Retry-After`); its body never runs, so nothing is committed for an answer already given. A write already
///   *taken* into a batch waits for that batch's outcome, whatever the deadline: its body may have run, and its
///   caller is answered by what the transaction did (never 503 for a committed grant). A batch waits at most
///   SQLite's busy timeout (`Database.WriteWaits.busyTimeoutMilliseconds`) for another process's write lock,
///   after this process's own writes ahead of it on the pool's writer lock (each bounded by that timeout too). So
///   a waiting write is answered within about `deadlineSeconds` + one busy timeout (10 s by default), with the
///   pool's other writes idle; never an unbounded wait.
///
/// A batch that fails (the database busy past its timeout, a full disk) is rolled back: its waiting writes get
/// the error, its records are queued again at the front and retried (after a pause that grows to a second).
/// When it failed as unavailable (busy, full disk), the waiting writes queued while it ran get the same error at
/// once rather than a batch of their own: the database has just refused writes for a whole busy timeout, so a
/// new batch would most likely wait that long again for the same answer, holding a request thread (which could
/// serve reads meanwhile) for up to twice the timeout. A lock released at that very moment costs those callers
/// one retry (`Retry-After`), nothing more; the records are kept and retried.
///
/// For the same reason, after such a failure and until a batch commits again, a new waiting write is refused at
/// once with `.unavailable` instead of queueing: the database has not taken a write since the failure, and a
/// request thread blocked for another busy timeout serves nothing else (libmicrohttpd's threads each serve
/// several connections). The writer itself tries the database again: the records retried, or with none, an
/// empty write transaction, after a pause that grows from 50 ms to a second. As soon as one commits, writes
/// queue again as usual.
final class GroupCommit: @unchecked Sendable {
    /// A write whose caller waits for its commit.
    final class Waiter {
        let body: (SQLConnection) throws -> Bool
        // Guarded by the queue's mutex.
        var result: Result<Bool, Error>?
        /// Taken into a batch by the writer: its body may run, its caller waits for the batch's outcome.
        var taken = false
        init(_ body: @escaping (SQLConnection) throws -> Bool) { self.body = body }
    }

    enum Job {
        case record(AuditEntry)
        case wait(Waiter)
    }

    /// Most access records queued or being committed (the most a crash can lose).
    static let defaultCapacity = 1024
    /// Seconds the writer waits for more records before a batch of records only (`gatherSeconds`).
    static let defaultGatherSeconds = 0.002
    /// Most records in one multi-row `INSERT`.
    static let rowsPerStatement = 32
    /// The error of a waiting write still queued after `deadlineSeconds`.
    static func notTaken(_ seconds: Double) -> StoreError {
        let shown = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        return StoreError(
            .unavailable,
            "the database did not take this write within \(shown) s (its write lock stayed held, e.g. by another "
                + "program's open transaction); nothing was written: try again later")
    }

    /// The pool that owns this writer (`Database.groupCommit`): not retained, which would be a cycle; the pool stops
    /// the writer (joining its thread) in `close()`, which its `deinit` calls, before its memory goes, so the
    /// writer never outlives it. `unowned(unsafe)` because that stop runs inside the pool's `deinit`, where a
    /// checked `unowned` reference would trap.
    unowned(unsafe) let database: Database
    let capacity: Int
    let waitSeconds: Int
    /// Seconds a waiting write (`perform`) stays queued, not yet taken into a batch, before `.unavailable`.
    let deadlineSeconds: Double
    /// Seconds the writer waits for more records before it commits a batch of records only, unless
    /// `rowsPerStatement` are queued first.
    let gatherSeconds: Double
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Signalled when a job is queued (the writer waits on it).
    private let queued = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Broadcast after each batch (waiting writes, full-queue waits and flushes wait on it).
    private let done = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var jobs: [Job] = []
    /// Records queued or in the batch being written.
    private var records = 0
    /// Jobs taken by the writer and not yet settled.
    private var writing = 0
    private var stopping = false
    /// The writer is waiting for more records before a batch of records only (see `gatherSeconds`).
    private var gathering = false
    /// A waiting write or a flush is queued: the writer stops gathering.
    private var hurry = false
    /// The last batch failed with the database unavailable (busy, full disk), and none has committed since.
    private var lastBatchUnavailable = false
    /// The writer stopped itself (`stop()` on its own thread): it commits nothing more.
    private var stoppedByWriter = false
    private var thread: pthread_t?
    /// Batches committed, records committed (read through `committed`).
    private var batches = 0
    /// Batches rolled back.
    private var failedBatches = 0
    private var committedRecords = 0

    /// Records committed and the batches that held them, so far (tests and metrics).
    var committed: (records: Int, batches: Int) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (committedRecords, batches)
    }

    /// Another write of the pool (a wrong passcode's count, a poll, the health check) found the database's write
    /// lock held past the busy timeout: refuse new waiting writes as after a failed batch, and wake the writer to
    /// try the database itself (an empty transaction), whose commit opens it again.
    func noteUnavailable() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !stopping else { return }
        // The writer may not run yet (no record or grant so far): it is the one that tries the database again.
        guard (try? startLocked()) != nil else { return }
        lastBatchUnavailable = true
        pthread_cond_signal(queued)
    }

    /// Jobs queued and not yet taken, jobs in the batch being written, batches rolled back so far, and whether new
    /// waiting writes are refused (the last batch found the database unavailable) (tests).
    var backlog: (queued: Int, inBatch: Int, failedBatches: Int, refusing: Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (jobs.count, writing, failedBatches, lastBatchUnavailable)
    }

    init(
        database: Database, capacity: Int = GroupCommit.defaultCapacity, waitSeconds: Int = 5,
        deadlineSeconds: Double = Database.queuedWriteSeconds,
        gatherSeconds: Double = GroupCommit.defaultGatherSeconds
    ) {
        self.database = database
        self.gatherSeconds = max(0, gatherSeconds)
        self.capacity = max(1, capacity)
        self.waitSeconds = max(1, waitSeconds)
        self.deadlineSeconds = max(0.001, deadlineSeconds)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(queued, &attributes)
        pthread_cond_init(done, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        stop()
        pthread_cond_destroy(done)
        pthread_cond_destroy(queued)
        pthread_mutex_destroy(mutex)
        done.deallocate()
        queued.deallocate()
        mutex.deallocate()
    }

    /// `seconds` from now on the monotonic clock (the conditions' clock).
    private func deadline(_ seconds: Double) -> timespec {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        let whole = seconds.rounded(.down)
        t.tv_sec += Int(whole)
        t.tv_nsec += Int((seconds - whole) * 1e9)
        if t.tv_nsec >= 1_000_000_000 {
            t.tv_sec += 1
            t.tv_nsec -= 1_000_000_000
        }
        return t
    }

    /// Starts the writer at the first job (the mutex is held).
    private func startLocked() throws(StoreError) {
        guard thread == nil else { return }
        guard !stopping else { throw StoreError.closed }
        var handle = pthread_t()
        // The writer holds the queue until it ends (`stop` joins it).
        let box = Unmanaged.passUnretained(self).toOpaque()
        let created = pthread_create(
            &handle, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<GroupCommit>.fromOpaque(argument).takeUnretainedValue().write()
                return nil
            }, box)
        guard created == 0 else { throw StoreError(.unavailable, "cannot start the database writer thread") }
        thread = handle
    }

    /// Queues an access record; returns at once unless `capacity` records are already waiting (then it waits for
    /// room, up to `waitSeconds`).
    func record(_ entry: AuditEntry) throws(StoreError) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        try startLocked()
        var limit = deadline(Double(waitSeconds))
        while records >= capacity && !stopping {
            if pthread_cond_timedwait(done, mutex, &limit) == ETIMEDOUT && records >= capacity {
                throw StoreError(
                    .unavailable,
                    "\(capacity) access records stayed queued for \(waitSeconds) s: the database is not taking writes")
            }
        }
        guard !stopping else { throw StoreError.closed }
        jobs.append(.record(entry))
        records += 1
        if !gathering || records >= Self.rowsPerStatement { pthread_cond_signal(queued) }
    }

    /// Runs `body` in the next batch's transaction and returns its result once that transaction committed.
    /// - Throws: `StoreError(.unavailable)` when it is still queued after `deadlineSeconds` (`body` never runs
    ///   then), or its batch's error (rolled back: nothing of `body` is kept).
    func perform(_ body: @escaping (SQLConnection) throws -> Bool) throws -> Bool {
        let waiter = Waiter(body)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        try startLocked()
        guard !stopping else { throw StoreError.closed }
        if lastBatchUnavailable {
            // The database refused the last batch, and the writer is trying it again (see the type's comment).
            throw SQLiteConnection.writesRefused
        }
        jobs.append(.wait(waiter))
        hurry = true
        pthread_cond_signal(queued)
        var limit = deadline(deadlineSeconds)
        while waiter.result == nil {
            if waiter.taken {
                // In a batch: answered by its outcome (the batch is bounded by the busy timeout).
                pthread_cond_wait(done, mutex)
            } else if pthread_cond_timedwait(done, mutex, &limit) == ETIMEDOUT && waiter.result == nil
                && !waiter.taken
            {
                // Out of the queue under the mutex: the writer can no longer take it, its body never runs.
                jobs.removeAll { job in
                    if case .wait(let queued) = job { return queued === waiter }
                    return false
                }
                throw Self.notTaken(deadlineSeconds)
            }
        }
        return try waiter.result!.get()
    }

    /// Waits until every record queued before the call is committed, or `seconds` passed.
    /// - Returns: the records still not committed (0 after a clean flush).
    @discardableResult
    func flush(seconds: Int = 10) -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var limit = deadline(Double(seconds))
        if records > 0 {
            // Not gathering for the records asked for.
            hurry = true
            pthread_cond_signal(queued)
        }
        while (records > 0 || writing > 0) && thread != nil {
            if pthread_cond_timedwait(done, mutex, &limit) == ETIMEDOUT { break }
        }
        return records
    }

    /// Flushes, then ends the writer; later jobs are refused.
    /// - Returns: the records that could not be committed.
    @discardableResult
    func stop(seconds: Int = 10) -> Int {
        // The writer itself may end up here: a job it ran held the last reference to the pool (or its store), which
        // is then released on the writer's thread. It cannot wait for its own batch nor join itself: it stops
        // taking work (`stoppedByWriter`: nothing more is committed, the pool is going) and detaches.
        pthread_mutex_lock(mutex)
        let byWriter = thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        let pending = records
        pthread_mutex_unlock(mutex)
        let left = byWriter ? pending : flush(seconds: seconds)
        pthread_mutex_lock(mutex)
        stopping = true
        if byWriter { stoppedByWriter = true }
        pthread_cond_broadcast(queued)
        pthread_cond_broadcast(done)
        let handle = thread
        pthread_mutex_unlock(mutex)
        if let handle { if byWriter { pthread_detach(handle) } else { pthread_join(handle, nil) } }
        pthread_mutex_lock(mutex)
        thread = nil
        pthread_mutex_unlock(mutex)
        return left
    }

    /// The writer: takes everything queued, commits it in one transaction, settles it, again.
    private func write() {
        var pause: UInt32 = 0
        database.writers.exemptThisThread()
        pthread_mutex_lock(mutex)
        while true {
            // After a batch the database refused, the writer tries again even with nothing queued (an empty
            // transaction), so that new writes, refused meanwhile, are taken again once it commits.
            while jobs.isEmpty && !stopping && !lastBatchUnavailable { pthread_cond_wait(queued, mutex) }
            if gatherSeconds > 0 && !hurry && !stopping && !lastBatchUnavailable && pause == 0 {
                // Records only so far: more arrive while the writer waits, and a batch of many costs about what a
                // batch of one does. Record calls do not wake it (each wake is a context switch) until a statement's
                // worth is queued; a waiting write or a flush does at once.
                gathering = true
                var limit = deadline(gatherSeconds)
                while !hurry && !stopping && records < Self.rowsPerStatement {
                    if pthread_cond_timedwait(queued, mutex, &limit) == ETIMEDOUT { break }
                }
                gathering = false
            }
            hurry = false
            if stopping && (jobs.isEmpty || pause > 0 || stoppedByWriter) {
                // Stopping: what is still queued after a failed try is failed, not retried for ever.
                for case .wait(let waiter) in jobs {
                    waiter.result = .failure(
                        StoreError.closed)
                }
                jobs.removeAll()
                pthread_cond_broadcast(done)
                break
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            for case .wait(let waiter) in batch { waiter.taken = true }
            writing = batch.count
            pthread_mutex_unlock(mutex)
            let outcome = commit(batch)
            pthread_mutex_lock(mutex)
            writing = 0
            var written = 0
            switch outcome {
            case .success(let results):
                for (job, result) in zip(batch, results) {
                    switch job {
                    case .record: written += 1
                    case .wait(let waiter): waiter.result = .success(result)
                    }
                }
                records -= written
                committedRecords += written
                batches += 1
                pause = 0
                lastBatchUnavailable = false
                // Not after `stop` on this thread: the batch's end released the pool's last reference (its temporary
                // retain of `database` for the commit), so the pool is gone (a test saw this crash).
                if !stoppedByWriter { database.writers.refuseWrites(false) }
            case .failure(let error):
                var again: [Job] = []
                for job in batch {
                    switch job {
                    case .record: again.append(job)
                    case .wait(let waiter): waiter.result = .failure(error)
                    }
                }
                failedBatches += 1
                lastBatchUnavailable = StoreError.unavailable(error) != nil
                // The server's other writes (a wrong passcode's count, a poll, a single-use location, the health
                // check) are refused at once too, instead of each waiting the busy timeout in line.
                if !stoppedByWriter { database.writers.refuseWrites(lastBatchUnavailable) }
                if lastBatchUnavailable {
                    // Waiting writes queued while this batch waited in vain: answered now (see the type's comment).
                    var kept: [Job] = []
                    for job in jobs {
                        if case .wait(let waiter) = job {
                            waiter.result = .failure(error)
                        } else {
                            kept.append(job)
                        }
                    }
                    jobs = kept
                }
                jobs.insert(contentsOf: again, at: 0)
                pause = min(1_000_000, max(50_000, pause * 2))
            }
            pthread_cond_broadcast(done)
            if pause > 0 && !stopping {
                pthread_mutex_unlock(mutex)
                usleep(pause)
                pthread_mutex_lock(mutex)
            }
        }
        pthread_mutex_unlock(mutex)
    }

    /// One transaction: the records as multi-row `INSERT`s, the waiting writes in queue order.
    /// - Returns: each job's result (true for a record), or the error that rolled the batch back.
    private func commit(_ batch: [Job]) -> Result<[Bool], Error> {
        do {
            return .success(
                try database.withConnection { c in
                    // Records only, in one statement, on PostgreSQL: the statement is atomic on its own, so it runs
                    // without BEGIN and COMMIT (two round trips a batch, a third of the writer's statements).
                    if c.dialect == .postgresql, batch.count <= Self.rowsPerStatement {
                        let entries = batch.compactMap { job -> AuditEntry? in
                            if case .record(let entry) = job { return entry }
                            return nil
                        }
                        if entries.count == batch.count {
                            try Self.insert(entries, c)
                            return Array(repeating: true, count: entries.count)
                        }
                    }
                    return try c.transaction(write: true) {
                        var results: [Bool] = []
                        results.reserveCapacity(batch.count)
                        var pending: [AuditEntry] = []
                        func insertPending() throws {
                            try Self.insert(pending, c)
                            pending.removeAll(keepingCapacity: true)
                        }
                        for job in batch {
                            switch job {
                            case .record(let entry):
                                pending.append(entry)
                                results.append(true)
                            case .wait(let waiter):
                                // Records queued before it are written before it (access records stay in order).
                                try insertPending()
                                results.append(try waiter.body(c))
                            }
                        }
                        try insertPending()
                        return results
                    }
                })
        } catch {
            return .failure(error)
        }
    }

    /// Access records in multi-row `INSERT`s of at most `rowsPerStatement` rows (one statement for a batch that fits).
    static func insert(_ entries: [AuditEntry], _ c: SQLConnection) throws {
        var start = 0
        while start < entries.count {
            let chunk = entries[start..<min(entries.count, start + rowsPerStatement)]
            var parameters: [SQLValue] = []
            parameters.reserveCapacity(chunk.count * 8)
            for entry in chunk { parameters += DatabaseLinkStore.auditValues(entry) }
            _ = try c.query(insertStatements[chunk.count - 1], parameters)
            start += chunk.count
        }
    }

    /// The insert of 1 to `rowsPerStatement` records, made once (a batch's text was built each time).
    static let insertStatements: [String] = (1...rowsPerStatement).map { count in
        "INSERT INTO hc_audit (\(DatabaseLinkStore.auditColumns)) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", ")
    }
}
