#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a pthread mutex, with `Synchronization.Mutex`'s
/// `withLock`. The project's one lock for state shared between threads.
///
/// Why not `Synchronization.Mutex`: its contended path parks on a futex
/// inside the (uninstrumented) standard library, so ThreadSanitizer does not
/// see the release and reports the guarded accesses as races — it did, in
/// `.ci/run`'s TSan suite, in the bridge (`RetainedStore`) and then in the
/// history recorder, each time only when the lock happened to be contended.
/// ThreadSanitizer intercepts `pthread_mutex_lock`/`unlock`, so accesses
/// through `Locked` are ordered for it as they are for the machine.
/// Uncontended, a pthread mutex costs about as much as the futex one.
///
/// `Value` must not be empty (`Void`, an empty struct): a zero-size stored
/// property shares its address with the next field, and ThreadSanitizer
/// then reports the mutex pointer's unguarded read against the guarded
/// access of the value (it did, for a `Locked<Void>`). Guard a real value,
/// such as a counter.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        precondition(MemoryLayout<Value>.size > 0, "Locked<\(Value.self)>: guard a value that is not empty (see Locked's documentation)")
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` if the lock is free now, nil if another thread holds it
    /// (`pthread_mutex_trylock`): for a real-time thread that must not wait.
    @inline(__always)
    public func withLockIfAvailable<R>(_ body: (inout Value) throws -> R) rethrows -> R? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
