import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// The hand-over between the batch's reading thread and its workers: a FIFO of numbered jobs and
/// a table of finished results, under one mutex with two condition variables. Results are taken
/// back in job order, so the report keeps input order whatever order the workers finish in.
///
/// Jobs and results are `Sendable` values: nothing crosses threads by reference. Every stored property
/// is read and written only with `mutex` held, which is what makes the class safe to share.
final class BatchPipe<Job: Sendable, Output: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let jobAdded = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let resultAdded = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [(Int, Job)] = []
    private var head = 0
    private var results: [Int: Output] = [:]
    private var closed = false
    /// Jobs submitted and not yet discarded: results 0 ..< submitted will come.
    private(set) var submitted = 0

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(jobAdded, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(resultAdded, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(jobAdded)
        pthread_cond_destroy(resultAdded)
        pthread_mutex_destroy(mutex)
        jobAdded.deallocate()
        resultAdded.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Queues a job; returns its number.
    @discardableResult
    func submit(_ job: Job) -> Int {
        locked {
            let number = submitted
            submitted += 1
            queue.append((number, job))
            pthread_cond_signal(jobAdded)
            return number
        }
    }

    /// A worker's next job; nil once the pipe is closed and empty.
    func take() -> (Int, Job)? {
        locked {
            while head == queue.count && !closed { pthread_cond_wait(jobAdded, mutex) }
            guard head < queue.count else { return nil }
            let job = queue[head]
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    /// A worker hands back the result of job `number`.
    func finish(_ number: Int, _ output: Output) {
        locked {
            results[number] = output
            pthread_cond_broadcast(resultAdded)
        }
    }

    /// The result of job `number`, waiting at most `seconds` for it.
    func result(_ number: Int, wait seconds: Double) -> Output? {
        locked {
            if results[number] == nil {
                var deadline = timespec()
                clock_gettime(CLOCK_MONOTONIC, &deadline)
                let nanos = Int(deadline.tv_nsec) + Int(seconds * 1e9)
                deadline.tv_sec += nanos / 1_000_000_000
                deadline.tv_nsec = nanos % 1_000_000_000
                while results[number] == nil {
                    if pthread_cond_timedwait(resultAdded, mutex, &deadline) == ETIMEDOUT { break }
                }
            }
            return results.removeValue(forKey: number)
        }
    }

    /// Drops the jobs no worker has started (on interruption or a write failure); the jobs already
    /// taken still finish. Returns how many were dropped.
    @discardableResult
    func discardWaiting() -> Int {
        locked {
            let dropped = queue.count - head
            queue.removeAll()
            head = 0
            submitted -= dropped
            return dropped
        }
    }

    /// No more jobs: idle workers return.
    func close() {
        locked {
            closed = true
            pthread_cond_broadcast(jobAdded)
        }
    }
}

/// A POSIX thread running a closure.
///
/// `thread` is written once, by `pthread_create` in `init`, before the object is shared; `join` is
/// called by the thread that made it. The body is `@Sendable`: it captures only what may be used from
/// another thread (the pipe, a `Handoff`).
final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()
    private let body: @Sendable () -> Void

    /// - Parameter stackBytes: the thread's stack size in bytes (nil: the system's default).
    /// - Throws: `HealthCardError(.io)` when the system cannot start a thread (the body never runs).
    init(stackBytes: Int? = nil, _ body: @escaping @Sendable () -> Void) throws {
        self.body = body
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackBytes, pthread_attr_setstacksize(&attributes, stackBytes) != 0 {
            throw HealthCardError(.io, "cannot start a worker thread: a stack of \(stackBytes) bytes is not one the system allows")
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, &attributes, { raw in
            guard let raw else { return nil }
            let me = Unmanaged<WorkerThread>.fromOpaque(raw).takeRetainedValue()
            me.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<WorkerThread>.fromOpaque(context).release()
            throw HealthCardError(.io, "cannot start a worker thread: \(OS.errorText(status))")
        }
    }

    func join() { pthread_join(thread, nil) }
}

/// Passes a value that is not `Sendable` (a worker with its `CardIssuer`: a zlib stream and a signing
/// context) from the thread that made it to the one thread that uses it. The compiler checks the
/// hand-over: `init` takes the value `sending` (its maker keeps no reference), `take` gives it out once.
final class Handoff<Value>: Sendable {
    private let slot: Mutex<Value?>

    init(_ value: sending Value) { slot = Mutex(value) }

    /// The value, the first time; nil after.
    func take() -> sending Value? { slot.withLock { $0.take() } }
}
