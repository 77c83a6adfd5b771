#if canImport(Glibc)
import Glibc
#endif
import EdgeValues

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
    private let lock = ConditionLock()
    /// Under `lock`.
    private var stopping = false
    private var thread: pthread_t?

    init(periodNs: Int64, work: @escaping () -> Void) {
        self.periodNs = max(periodNs, 1_000_000); self.work = work
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
        var next = monotonicNowNs()
        while true {
            next &+= UInt64(periodNs)
            let stop = lock.withLock {
                // wait returns false at the deadline; true when woken (a stop, or spuriously)
                while !stopping && lock.wait(untilNs: next) {}
                return stopping
            }
            if stop { return }
            work()
        }
    }

    /// Wakes the thread, waits for it to end (a `work` in progress
    /// finishes), then calls `work` once more on the caller's thread.
    func stop() {
        lock.withLock { stopping = true }
        lock.broadcast()
        if let t = thread { pthread_join(t, nil); thread = nil }
        work()
    }
}
