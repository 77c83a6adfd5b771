#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EdgeProtocol
import EdgeValues

/// Takes the fitness samples the engine publishes (on the loop thread: a
/// short lock, no I/O) and commits them to the history every
/// `flushSeconds` on its own thread, so the loop never waits on the disk.
/// Pedometer samples carry totals since the agent started; the history
/// stores what each interval added. At most `flushSeconds` (plus the commit)
/// is lost when the agent is killed or the power fails.
///
/// A failing commit (disk full, file removed) keeps the records (up to
/// `maxPending`, then the oldest are dropped and counted) and is retried at
/// the next flush; `health` says what happened. A reader that adds
/// ``withUncommitted(_:)`` to what it reads from the file (the agent's
/// answer to `history` requests does) sees every record at once, while the
/// disk is full too.
public final class HistoryRecorder: @unchecked Sendable {
    struct Pending {
        var pedometer: [PedometerRecord] = []
        var activities: [ActivityRecord] = []
        var events: [PedometerEventRecord] = []
        var interval = PedometerTotals()
        var intervalDirty = false
        var intervalEndNs: Int64 = 0
        var lastTotals: PedometerSample?
        var dropped = 0
    }
    let history: FitnessHistory
    public let flushSeconds: Double
    public let maxPending: Int
    private let state = Locked(Pending())
    private let status = Locked<(error: HistoryError?, commits: Int, dropped: Int)>((nil, 0, 0))
    /// Commits failed in a row (0: the last one succeeded).
    private let failures = Locked(0)
    /// Held across a commit (taking the pending records, writing them,
    /// putting them back when the write fails) and while a reader looks at
    /// what is not in the file yet (``withUncommitted(_:)``), so that a
    /// reader finds every record either in the file or in memory, never in
    /// both and never in neither. It counts the commit attempts.
    private let commitLock = Locked(0)

    /// What is recorded but not in the file yet: the last `flushSeconds`,
    /// and everything since commits began to fail (a full disk).
    public struct Uncommitted: Sendable, Equatable {
        /// Pedometer intervals, the one still open included.
        public var pedometer: [PedometerRecord] = []
        public var activities: [ActivityRecord] = []
        public init(pedometer: [PedometerRecord] = [], activities: [ActivityRecord] = []) {
            self.pedometer = pedometer; self.activities = activities
        }
    }

    /// A change of the recorder's health, for the agent's log.
    public enum HealthChange: Sendable, Equatable, CustomStringConvertible {
        /// A commit failed after one that succeeded: the records stay in
        /// memory (`pending`) and are retried at every flush.
        case failing(HistoryError, pending: Int)
        /// A commit succeeded after `failedCommits` failures; `dropped`
        /// records were lost meanwhile (more than `maxPending` waited).
        case recovered(failedCommits: Int, dropped: Int)

        public var description: String {
            switch self {
            case .failing(let e, let pending):
                return "fitness history: a commit failed: \(e); \(pending) record(s) kept in memory and retried every flush (is the disk full? df)"
            case .recovered(let n, let dropped):
                return "fitness history: commits resumed after \(n) failed attempt(s); " +
                    (dropped == 0 ? "nothing was lost" : "\(dropped) record(s) dropped since the agent started (more waited than fit in memory)")
            }
        }
    }
    /// Called (on the flushing thread) when commits start failing and when
    /// they succeed again: set it before ``start()``.
    public var onHealthChange: (@Sendable (HealthChange) -> Void)? {
        get { healthHandler.withLock { $0.handler } }
        set { healthHandler.withLock { $0.handler = newValue } }
    }
    private let healthHandler = Locked<HealthHandlerBox>(HealthHandlerBox())
    struct HealthHandlerBox { var handler: (@Sendable (HealthChange) -> Void)? }
    /// The flushing thread, while started.
    private var flusher: PeriodicThread?
    /// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns: how a sample's capture
    /// time becomes a date. Read for every record, not once at start: a Pi
    /// has no battery clock and often starts the agent before NTP has set
    /// the time; records made after the clock is set carry the right date
    /// (a query by `Date()` finds them, retention does not remove them).
    let clockOffsetNs: @Sendable () -> Int64
    /// The wall clock, for retention (tests pass their own).
    let nowUnixNs: @Sendable () -> Int64

    /// `clockOffsetNs`: CLOCK_REALTIME − CLOCK_MONOTONIC (tests pass their own).
    public init(history: FitnessHistory, flushSeconds: Double = 2, maxPending: Int = 100_000,
                nowUnixNs: @escaping @Sendable () -> Int64 = HistoryRecorder.realtimeNs,
                clockOffsetNs: @escaping @Sendable () -> Int64 = realtimeMinusMonotonicNs) {
        self.history = history; self.flushSeconds = flushSeconds; self.maxPending = maxPending
        self.nowUnixNs = nowUnixNs
        self.clockOffsetNs = clockOffsetNs
    }

    /// CLOCK_REALTIME − CLOCK_MONOTONIC now, ns.
    public var realtimeOffsetNs: Int64 { clockOffsetNs() }

    public static func realtimeNs() -> Int64 { Int64(realtimeNowNs()) }
    public static func monotonicNs() -> Int64 { Int64(monotonicNowNs()) }

    @inline(__always) func unix(_ monotonicNs: UInt64) -> Int64 { Int64(truncatingIfNeeded: monotonicNs) &+ clockOffsetNs() }

    /// A sample from the engine (other streams are ignored).
    public func offer(_ sample: Sample) {
        switch sample {
        case .pedometer(let p):
            state.withLock { s in
                // totals since the agent started: another start is a new run
                let base = s.lastTotals.flatMap { PedometerTotals.isRestart(p, after: $0) ? nil : $0 }
                s.interval.add(PedometerTotals(added: p, since: base))
                s.intervalDirty = true
                s.intervalEndNs = unix(p.timestampNs)
                s.lastTotals = p
            }
        case .activity(let a):
            state.withLock { s in
                s.activities.append(ActivityRecord(startUnixNs: unix(a.startNs), flags: a.flags, confidence: a.confidence))
                trim(&s)
            }
        case .pedometerEvent(let e):
            state.withLock { s in
                s.events.append(PedometerEventRecord(unixNs: unix(e.timestampNs), type: e.type))
                trim(&s)
            }
        default:
            return
        }
    }

    private func trim(_ s: inout Pending) {
        let n = s.pedometer.count + s.activities.count + s.events.count
        guard n > maxPending else { return }
        if !s.pedometer.isEmpty { s.pedometer.removeFirst() } else if !s.events.isEmpty { s.events.removeFirst() } else { s.activities.removeFirst() }
        s.dropped += 1
    }

    /// Commits what is pending now (the thread calls this every flushSeconds;
    /// tests call it directly). Returns false when the commit failed (kept for the next try).
    @discardableResult
    public func flush() -> Bool {
        let (ok, change) = commitLock.withLock { attempts -> (Bool, HealthChange?) in
            attempts &+= 1
            return commitPending()
        }
        if let change { onHealthChange?(change) }
        return ok
    }

    /// Runs `body` with what is not committed yet, while no commit runs:
    /// a reader of the file that adds these, inside `body`, counts every
    /// record once. (The service thread answers history requests this way.
    /// It waits for a commit in progress; the loop thread never waits here.)
    public func withUncommitted<R>(_ body: (Uncommitted) throws -> R) rethrows -> R {
        try commitLock.withLock { _ in
            // Copies (`map`), made here: sharing the buffers would make the
            // loop thread's next append copy them instead.
            let u = state.withLock { s -> Uncommitted in
                var u = Uncommitted(pedometer: s.pedometer.map { $0 }, activities: s.activities.map { $0 })
                if s.intervalDirty { u.pedometer.append(PedometerRecord(endUnixNs: s.intervalEndNs, totals: s.interval)) }
                return u
            }
            return try body(u)
        }
    }

    /// One commit of what is pending (under `commitLock`): whether it was
    /// written, and the health change to report (outside the lock).
    private func commitPending() -> (Bool, HealthChange?) {
        let batch = state.withLock { s -> Pending in
            if s.intervalDirty {
                s.pedometer.append(PedometerRecord(endUnixNs: s.intervalEndNs, totals: s.interval))
                s.interval = PedometerTotals(); s.intervalDirty = false
                trim(&s)
            }
            var b = Pending()
            swap(&b.pedometer, &s.pedometer); swap(&b.activities, &s.activities); swap(&b.events, &s.events)
            b.dropped = s.dropped; s.dropped = 0
            return b
        }
        do {
            try history.commit(pedometer: batch.pedometer, activities: batch.activities, events: batch.events,
                               nowUnixNs: nowUnixNs())
            let dropped = status.withLock { st -> Int in
                st.commits += 1; st.dropped += batch.dropped; st.error = nil
                return st.dropped
            }
            let failed = failures.withLock { n -> Int in defer { n = 0 }; return n }
            return (true, failed > 0 ? .recovered(failedCommits: failed, dropped: dropped) : nil)
        } catch {
            // put them back in front of what came meanwhile
            state.withLock { s in
                s.pedometer = batch.pedometer + s.pedometer
                s.activities = batch.activities + s.activities
                s.events = batch.events + s.events
                s.dropped += batch.dropped
                while s.pedometer.count + s.activities.count + s.events.count > maxPending { trim(&s) }
            }
            status.withLock { $0.error = error }
            let first = failures.withLock { n -> Bool in n += 1; return n == 1 }
            guard first else { return (false, nil) }
            let pending = state.withLock { $0.pedometer.count + $0.activities.count + $0.events.count }
            return (false, .failing(error, pending: pending))
        }
    }

    /// The last commit's failure (nil after a success), commits, records dropped.
    public var health: (error: HistoryError?, commits: Int, dropped: Int) { status.withLock { $0 } }

    /// Starts the flushing thread (a commit every `flushSeconds`).
    public func start() {
        // The thread keeps the recorder until stop() (as it always did).
        let t = PeriodicThread(periodNs: Int64(flushSeconds * 1e9)) { [self] in _ = self.flush() }
        flusher = t
        t.start()
    }

    /// Stops the thread after a last commit.
    public func stop() {
        if let t = flusher { t.stop(); flusher = nil } else { _ = flush() }
    }
}
