#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a pthread mutex, with `Mutex`'s `withLock`. The server's threads are libmicrohttpd's and its
/// own pthreads: ThreadSanitizer sees a pthread mutex order their accesses, but not the futex of the standard
/// library's `Mutex` on Linux, so a `Mutex` whose value lives inside an object shared by request threads was
/// reported as a race (`make test`'s ThreadSanitizer run of ServerLimitsTests).
final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
