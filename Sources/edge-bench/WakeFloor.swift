// `edge-bench coremotion`'s floor (set-up F): what the thread wake-ups a
// paced delivery cannot avoid cost on this machine, measured in the same
// run as the library, so the library's CPU per sample can be given as a
// multiple of it.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Three threads and nothing else. "Agent" wakes on absolute deadlines
/// once per delivery interval (it stands in for the agent's delivery and is
/// not counted) and wakes "reader"; "reader" (the client's reader thread)
/// wakes "handler" with the delivery's k samples; "handler" (the queue
/// thread running the app's handler) makes the first call at once and each
/// further one at its sample's spacing, sleeping on CLOCK_MONOTONIC in
/// between. Per delivery: one wake-up of the reader and k of the handler,
/// the fewest any reader thread plus paced calls on another thread can
/// take. The reader's CPU per sample is the floor of R (raw EdgeClient:
/// one wake-up per delivery); reader plus handler the floor of A.
final class WakeFloor: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var readerCondition = pthread_cond_t()
    private var handlerCondition = pthread_cond_t()
    // Guarded by `mutex`.
    private var deliveries = 0, readerSeen = 0
    private var handed = 0, handlerSeen = 0
    private var stopped = false
    private(set) var readerTid: pid_t = 0, handlerTid: pid_t = 0
    private let lock = NSLock()
    private var callsInWindow = 0
    private let deliveryNs: UInt64, spacingNs: UInt64, perDelivery: Int
    let windowStart: UInt64, windowEnd: UInt64
    private var threads: [Thread] = []
    private let done = DispatchGroup()

    init(deliveryNs: UInt64, spacingNs: UInt64, windowStart: UInt64, windowEnd: UInt64) {
        self.deliveryNs = max(deliveryNs, spacingNs)
        self.spacingNs = spacingNs
        perDelivery = max(1, Int(self.deliveryNs / spacingNs))
        self.windowStart = windowStart; self.windowEnd = windowEnd
        pthread_mutex_init(&mutex, nil)
        for c in [withUnsafeMutablePointer(to: &readerCondition) { $0 }, withUnsafeMutablePointer(to: &handlerCondition) { $0 }] {
            var a = pthread_condattr_t()
            pthread_condattr_init(&a)
            pthread_condattr_setclock(&a, CLOCK_MONOTONIC)
            pthread_cond_init(c, &a)
            pthread_condattr_destroy(&a)
        }
    }

    /// Calls the handler thread made inside the window.
    var calls: Int { lock.withLock { callsInWindow } }

    func start() {
        for (name, which) in [("floor-agent", 0), ("floor-reader", 1), ("floor-handler", 2)] {
            done.enter()
            let t = Thread { [self] in
                switch which {
                case 0: agent()
                case 1: reader()
                default: handler()
                }
                done.leave()
            }
            t.name = name
            threads.append(t)
            t.start()
        }
        while pthreadTids() == nil { usleep(1000) }
    }

    private func pthreadTids() -> (pid_t, pid_t)? {
        pthread_mutex_lock(&mutex); defer { pthread_mutex_unlock(&mutex) }
        return readerTid != 0 && handlerTid != 0 ? (readerTid, handlerTid) : nil
    }

    func stop() {
        pthread_mutex_lock(&mutex)
        stopped = true
        pthread_cond_broadcast(&readerCondition)
        pthread_cond_broadcast(&handlerCondition)
        pthread_mutex_unlock(&mutex)
        done.wait()
    }

    private static func sleep(until t: UInt64) {
        var ts = timespec(tv_sec: Int(t / 1_000_000_000), tv_nsec: Int(t % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    private func agent() {
        var next = monotonicNanoseconds() + deliveryNs
        while true {
            Self.sleep(until: next)
            next += deliveryNs
            pthread_mutex_lock(&mutex)
            if stopped { pthread_mutex_unlock(&mutex); return }
            deliveries += 1
            pthread_mutex_unlock(&mutex)
            pthread_cond_signal(&readerCondition)
        }
    }

    private func reader() {
        pthread_mutex_lock(&mutex)
        readerTid = Self.threadID()
        while true {
            while deliveries == readerSeen && !stopped { pthread_cond_wait(&readerCondition, &mutex) }
            if stopped { pthread_mutex_unlock(&mutex); return }
            readerSeen = deliveries
            handed += perDelivery
            pthread_mutex_unlock(&mutex)
            pthread_cond_signal(&handlerCondition)
            pthread_mutex_lock(&mutex)
        }
    }

    private func handler() {
        pthread_mutex_lock(&mutex)
        handlerTid = Self.threadID()
        while true {
            while handed == handlerSeen && !stopped { pthread_cond_wait(&handlerCondition, &mutex) }
            if stopped { pthread_mutex_unlock(&mutex); return }
            let n = handed - handlerSeen
            handlerSeen = handed
            pthread_mutex_unlock(&mutex)
            var due = monotonicNanoseconds()
            for i in 0..<n {
                if i > 0 {
                    due += spacingNs
                    Self.sleep(until: due)
                }
                let now = monotonicNanoseconds()
                if now >= windowStart && now < windowEnd { lock.withLock { callsInWindow += 1 } }
            }
            pthread_mutex_lock(&mutex)
        }
    }

    /// This thread's kernel id: /proc/thread-self links to "PID/task/TID".
    static func threadID() -> pid_t {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard n > 0 else { return -1 }
        let text = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { pid_t($0) } ?? -1
    }

    /// On-CPU time of one thread of this process, ns (/proc/self/task/TID/schedstat).
    static func threadCPUNanoseconds(_ tid: pid_t) -> UInt64 {
        guard let text = readTextFile("/proc/self/task/\(tid)/schedstat"),
              let first = text.split(separator: " ").first, let ns = UInt64(first) else { return 0 }
        return ns
    }
}
