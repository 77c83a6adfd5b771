#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex with a condition variable on CLOCK_MONOTONIC (pthreads): the
/// client's state lock and what its callers wait on with a bound, and the
/// recorders' flushing thread's sleep (woken at once by a stop).
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond); pthread_mutex_destroy(mutex)
        cond.deallocate(); mutex.deallocate()
    }

    @inline(__always) public func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) public func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always) public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock(); defer { unlock() }
        return try body()
    }

    /// Wakes every waiter (call with the lock held or not).
    public func broadcast() { pthread_cond_broadcast(cond) }

    /// Waits (lock held) until woken or CLOCK_MONOTONIC reaches `deadlineNs`.
    /// Returns false at the deadline.
    @discardableResult
    public func wait(untilNs deadlineNs: UInt64) -> Bool {
        if deadlineNs == .max { pthread_cond_wait(cond, mutex); return true }
        var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex, &ts) != ETIMEDOUT
    }
}
