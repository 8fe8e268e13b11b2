#if canImport(Glibc)
    import Glibc
#endif

/// Reads by key that arrive together, made as one statement: the server's reads of link rows on PostgreSQL, where
/// each statement is a round trip to a backend process that spends far more on the statement than on the rows (a
/// link-row read cost the backend about 16 µs of CPU, most of a location GET's database cost; eight ids in one
/// statement cost about as much as one, by `pgbench` on this project's machine, 2026-12-06).
///
/// Leader and followers, as in a group commit: a read joins the batch that is still being collected (or starts
/// one); the first reader of the oldest batch waiting to be sent sends it when fewer than `maxInFlight` batches
/// are in flight, and hands every reader of its batch its row. A batch is sent only after each of its reads
/// arrived, so a read never answers from before it was asked: a link deactivated or updated before a request
/// arrived is read as such, exactly as with a statement of its own.
final class CoalescedReads<Value>: @unchecked Sendable {
    /// The most keys in one statement.
    let maxBatch: Int
    /// The most statements in flight at once.
    let maxInFlight: Int
    /// Reads the values of up to `maxBatch` distinct keys; a key without a value is left out.
    private let read: ([String]) throws -> [String: Value]

    private final class Batch {
        var keys: [String] = []
        var values: [String: Value] = [:]
        var failure: (any Error)?
        var done = false
        let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        init() { pthread_cond_init(finished, nil) }
        deinit {
            pthread_cond_destroy(finished)
            finished.deallocate()
        }
    }

    // Guarded by `mutex`: batches collected and not yet sent, oldest first; statements in flight.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var waiting: [Batch] = []
    private var inFlight = 0
    private var statements = 0

    init(maxBatch: Int = 16, maxInFlight: Int = 2, read: @escaping ([String]) throws -> [String: Value]) {
        self.maxBatch = max(1, maxBatch)
        self.maxInFlight = max(1, maxInFlight)
        self.read = read
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Statements made so far (tests).
    var statementsMade: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return statements
    }

    /// The value of `key` as read after this call began, or nil when there is none.
    /// - Throws: what the batch's read threw (every read of that batch gets the same error).
    func value(_ key: String) throws -> Value? {
        pthread_mutex_lock(mutex)
        let batch: Batch
        if let last = waiting.last, last.keys.count < maxBatch {
            batch = last
        } else {
            batch = Batch()
            waiting.append(batch)
        }
        if !batch.keys.contains(key) { batch.keys.append(key) }
        while !batch.done {
            if inFlight < maxInFlight, waiting.first === batch {
                // This batch is the oldest waiting and a statement may go: this reader sends it.
                waiting.removeFirst()
                inFlight += 1
                pthread_mutex_unlock(mutex)
                var values: [String: Value] = [:]
                var failure: (any Error)?
                do { values = try read(batch.keys) } catch { failure = error }
                pthread_mutex_lock(mutex)
                statements += 1
                inFlight -= 1
                batch.values = values
                batch.failure = failure
                batch.done = true
                pthread_cond_broadcast(batch.finished)
                // The next batch may go now: wake one of its readers, who sends it (waking them all would put all
                // but one back to sleep: a context switch each for nothing).
                if let next = waiting.first { pthread_cond_signal(next.finished) }
                break
            }
            pthread_cond_wait(batch.finished, mutex)
        }
        let value = batch.values[key]
        let failure = batch.failure
        pthread_mutex_unlock(mutex)
        if let failure { throw failure }
        return value
    }
}
