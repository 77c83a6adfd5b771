#if canImport(Glibc)
import Glibc
#endif

/// Signals the agent handles: blocked in every thread, taken synchronously by
/// the main thread with `sigtimedwait`, so no async-signal-safety games.
enum AgentSignals {
    static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    static func block() {
        var set = sigset_t()
        sigemptyset(&set)
        for s in handled { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `timeout` seconds for one of the handled signals.
    static func wait(timeout: Double) -> Int32? {
        var set = sigset_t()
        sigemptyset(&set)
        for s in handled { sigaddset(&set, s) }
        var ts = timespec(tv_sec: Int(timeout), tv_nsec: Int((timeout - Double(Int(timeout))) * 1e9))
        let r = sigtimedwait(&set, nil, &ts)
        return r > 0 ? r : nil
    }
}
