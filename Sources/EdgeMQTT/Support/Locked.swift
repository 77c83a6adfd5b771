#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, with `Mutex`'s `withLock`. The bridge's
/// threads (the agent client's reader, the broker thread, libmosquitto's)
/// share state through it rather than `Synchronization.Mutex`, whose futex
/// ThreadSanitizer does not see: under TSan every access through a `Mutex`
/// from two threads was reported as a race (CI, `.ci/run`'s TSan suite).
public final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
