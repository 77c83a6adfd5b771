#if canImport(Glibc)
import Glibc
#endif

/// A thread that calls `work` every `periodNs` (CLOCK_MONOTONIC, absolute
/// deadlines) until ``stop()``, then once more. Between periods it sleeps on
/// a condition variable, so it wakes once a period and ``stop()`` wakes it at
/// once (the recorders used to nap 50 ms at a time to notice a stop: twenty
/// wake-ups a second each, for a commit every two seconds).
///
/// The recorders' flushing threads (``HistoryRecorder``,
/// ``AccelerometerRecorder``).
final class PeriodicThread: @unchecked Sendable {
    private let periodNs: Int64
    private let work: () -> Void
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Under `mutex`.
    private var stopping = false
    private var thread: pthread_t?

    init(periodNs: Int64, work: @escaping () -> Void) {
        self.periodNs = max(periodNs, 1_000_000); self.work = work
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

    /// Starts the thread; false when the system would not make one (then
    /// nothing calls `work` but ``stop()``).
    @discardableResult func start() -> Bool {
        let box = Unmanaged.passRetained(self)
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { arg in
            Unmanaged<PeriodicThread>.fromOpaque(arg!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        if rc == 0 { thread = t } else { box.release() }
        return rc == 0
    }

    private func run() {
        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        while true {
            let ns = Int64(next.tv_nsec) + periodNs
            next.tv_sec += Int(ns / 1_000_000_000); next.tv_nsec = Int(ns % 1_000_000_000)
            pthread_mutex_lock(mutex)
            while !stopping && pthread_cond_timedwait(cond, mutex, &next) != ETIMEDOUT {}
            let stop = stopping
            pthread_mutex_unlock(mutex)
            if stop { return }
            work()
        }
    }

    /// Wakes the thread, waits for it to end (a `work` in progress
    /// finishes), then calls `work` once more on the caller's thread.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(cond)
        pthread_mutex_unlock(mutex)
        if let t = thread { pthread_join(t, nil); thread = nil }
        work()
    }
}
