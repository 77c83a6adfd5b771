#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EdgeProtocol
import EdgeValues

/// The agent's sensor recorder (Core Motion's `CMSensorRecorder`): while
/// some user's recording window is open it takes the accelerometer samples
/// the engine publishes (on the loop thread: a short lock, no I/O),
/// decimated to 50 Hz by capture time, and commits them to its
/// ``AccelerometerStore`` every `flushSeconds` on its own thread.
///
/// Windows are kept in the store (written with the next commit), so a
/// recording asked for before the agent stopped goes on when it starts
/// again (Apple: "even if your app is suspended or terminated"). With no window open it takes nothing, and
/// ``demand`` asks the engine for no accelerometer: the IMU is not kept
/// awake for it.
///
/// One connection serves the flushing thread and the service thread's
/// queries, under a lock; a query reads what is committed (samples are
/// readable within `flushSeconds` of their capture).
public final class AccelerometerRecorder: @unchecked Sendable {
    /// Apple's recording rate, Hz (CMSensorRecorder.recordAccelerometer(forDuration:)).
    public static let rateHz = 50.0
    /// The longest window one request opens, s (Apple: 43,200 s, 12 hours).
    public static var maxDurationSeconds: Double { Request.maxRecordingSeconds }

    struct Pending {
        var samples: [(unixNs: Int64, acceleration: Vector3)] = []
        var decimator = Decimator(intervalNs: UInt64(1e9 / AccelerometerRecorder.rateHz))
        var dropped = 0
    }
    private let store: Locked<AccelerometerStore>
    private let pending = Locked(Pending())
    /// Each uid's open window (the service thread's answers to `record`
    /// come from here, with no disk write of their own), and the uids whose
    /// window the next commit writes.
    private let open = Locked<(byUID: [UInt32: RecordingWindow], dirty: Set<UInt32>)>(([:], []))
    public let flushSeconds: Double
    /// Most samples kept in memory while commits fail (then the oldest go).
    public let maxPending: Int
    /// Until when (CLOCK_REALTIME ns) some window is open; 0: none.
    private let activeUntilNs = Atomic<Int64>(0)
    /// Whether samples are taken now (read on the loop thread per sample).
    private let active = Atomic<Bool>(false)
    private let generation = Atomic<Int>(0)
    private let status = Locked<(error: HistoryError?, commits: Int, trimmed: Int, expired: Int, failedInARow: Int)>((nil, 0, 0, 0, 0))
    private let healthHandler = Locked<HealthHandlerBox>(HealthHandlerBox())
    struct HealthHandlerBox { var handler: (@Sendable (String) -> Void)? }
    /// Called (on the flushing or the service thread) with a line for the
    /// agent's log when commits start failing and when they succeed again.
    public var onHealthChange: (@Sendable (String) -> Void)? {
        get { healthHandler.withLock { $0.handler } }
        set { healthHandler.withLock { $0.handler = newValue } }
    }
    let nowUnixNs: @Sendable () -> Int64
    let clockOffsetNs: @Sendable () -> Int64
    /// The flushing thread, while started.
    private var flusher: PeriodicThread?

    /// `nowUnixNs`: the wall clock (windows, retention); `clockOffsetNs`:
    /// CLOCK_REALTIME − CLOCK_MONOTONIC (how a capture time becomes a date).
    /// Tests pass their own.
    public init(store: AccelerometerStore, flushSeconds: Double = 2, maxPending: Int = 100_000,
                nowUnixNs: @escaping @Sendable () -> Int64 = HistoryRecorder.realtimeNs,
                clockOffsetNs: @escaping @Sendable () -> Int64 = realtimeMinusMonotonicNs)
        throws(HistoryError)
    {
        self.flushSeconds = flushSeconds; self.maxPending = maxPending
        self.nowUnixNs = nowUnixNs; self.clockOffsetNs = clockOffsetNs
        activeUntilNs.store(try store.latestWindowEnd() ?? 0, ordering: .relaxed)
        let now = nowUnixNs()
        for w in try store.windows(uid: nil, fromUnixNs: now) { open.withLock { $0.byUID[w.uid] = w } }
        self.store = Locked(store)
        updateActive()
    }

    /// Bumped whenever ``demand`` changes.
    public var demandGeneration: Int { generation.load(ordering: .acquiring) }
    /// What the recorder asks of the engine: the accelerometer at 50 Hz
    /// while a window is open, nothing otherwise.
    public var demand: [StreamName: Double] {
        active.load(ordering: .acquiring) ? [.accelerometer: 1 / Self.rateHz] : [:]
    }
    public var isRecording: Bool { active.load(ordering: .acquiring) }

    /// Sets ``isRecording`` from the windows and the clock; bumps the generation on a change.
    private func updateActive() {
        let on = nowUnixNs() < activeUntilNs.load(ordering: .acquiring)
        if active.exchange(on, ordering: .acquiringAndReleasing) != on {
            generation.add(1, ordering: .releasing)
            if on { pending.withLock { $0.decimator.reset() } }
        }
    }

    /// A sample from the engine (loop thread). Only accelerometer samples
    /// while recording; one per 20 ms of capture time. No allocation while
    /// commits keep up (the flushing thread hands over a reserved buffer);
    /// with `maxPending` waiting (commits failing for half an hour) the
    /// sample is dropped and counted.
    public func offer(_ sample: Sample) {
        guard case .accelerometer(let a) = sample, active.load(ordering: .relaxed) else { return }
        pending.withLock { p in
            guard p.decimator.admit(a.timestampNs) else { return }
            guard p.samples.count < maxPending else { p.dropped += 1; return }
            p.samples.append((Int64(truncatingIfNeeded: a.timestampNs) &+ clockOffsetNs(), a.acceleration))
        }
    }

    /// Opens (or extends) `uid`'s window for `durationSeconds` (at most
    /// ``maxDurationSeconds``) from now. In memory at once (recording
    /// starts now); in the file with the next commit, within `flushSeconds`.
    public func record(uid: UInt32, durationSeconds: Double) -> RecordingWindow {
        let d = min(max(0, durationSeconds), Self.maxDurationSeconds)
        let now = nowUnixNs()
        let w = open.withLock { o -> RecordingWindow in
            let w = RecordingWindow.asked(uid: uid, nowUnixNs: now, durationNs: Int64(d * 1e9), current: o.byUID[uid])
            o.byUID[uid] = w
            o.dirty.insert(uid)
            return w
        }
        _ = activeUntilNs.max(w.endUnixNs, ordering: .acquiringAndReleasing)
        updateActive()
        return w
    }

    /// The samples of `uid`'s windows captured in [from, to] (ns since
    /// 1970), at most `limit`, and where the rest begins: those committed,
    /// so a sample is readable within `flushSeconds` of its capture (the
    /// service thread that asks never waits for a disk sync of its own; it
    /// waits for a commit in progress). While commits fail (a full disk)
    /// the samples waiting in memory are not in the answer until written.
    public func recorded(uid: UInt32, fromUnixNs from: Int64, toUnixNs to: Int64,
                         limit: Int) throws(HistoryError) -> (samples: [RecordedAccelerometerSample], next: Int64?) {
        return try store.withLock { s in
            Result { () throws(HistoryError) -> (samples: [RecordedAccelerometerSample], next: Int64?) in
                var windows = try s.windows(uid: uid, fromUnixNs: from, toUnixNs: to)
                // the open window as asked for, written or not
                if let w = open.withLock({ $0.byUID[uid] }), w.endUnixNs >= from, w.startUnixNs <= to {
                    windows.removeAll { $0.startUnixNs == w.startUnixNs }
                    windows.append(w)
                    windows.sort { $0.startUnixNs < $1.startUnixNs }
                }
                if windows.isEmpty { return ([], nil) }
                return try s.samples(fromUnixNs: max(from, windows[0].startUnixNs), toUnixNs: to, within: windows, limit: limit)
            }
        }.get()
    }

    /// Commits what is pending (and applies retention and the size bound);
    /// false when the commit failed (the samples stay pending, up to
    /// `maxPending`, for the next try).
    @discardableResult
    public func flush() -> Bool {
        updateActive()
        let (ok, message) = store.withLock { s -> (Bool, String?) in
            // The loop thread's next buffer, allocated here: twice a flush's worth.
            var b: [(unixNs: Int64, acceleration: Vector3)] = []
            b.reserveCapacity(Int(2 * flushSeconds * Self.rateHz) + 16)
            let batch = pending.withLock { p -> [(unixNs: Int64, acceleration: Vector3)] in
                swap(&b, &p.samples)
                return b
            }
            let now = nowUnixNs()
            let windows = open.withLock { o -> [RecordingWindow] in
                let w = o.dirty.compactMap { o.byUID[$0] }
                o.dirty = []
                o.byUID = o.byUID.filter { $0.value.endUnixNs >= now }   // closed windows live on in the file only
                return w
            }
            do throws(HistoryError) {
                let r = try s.commit(batch, windows: windows, nowUnixNs: now)
                let failed = status.withLock { st -> Int in
                    st.commits += 1; st.trimmed += r.rowsTrimmedForSize; st.expired += r.rowsExpired; st.error = nil
                    defer { st.failedInARow = 0 }
                    return st.failedInARow
                }
                guard failed > 0 else { return (true, nil) }
                let dropped = pending.withLock { $0.dropped }
                return (true, "sensor recorder: commits resumed after \(failed) failed attempt(s); "
                    + (dropped == 0 ? "nothing was lost" : "\(dropped) sample(s) dropped since the agent started (more waited than fit in memory)"))
            } catch {
                open.withLock { o in for w in windows { o.dirty.insert(w.uid); if o.byUID[w.uid] == nil { o.byUID[w.uid] = w } } }
                pending.withLock { p in
                    p.samples = batch + p.samples
                    if p.samples.count > maxPending {
                        p.dropped += p.samples.count - maxPending
                        p.samples.removeFirst(p.samples.count - maxPending)
                    }
                }
                let first = status.withLock { st -> Bool in st.error = error; st.failedInARow += 1; return st.failedInARow == 1 }
                guard first else { return (false, nil) }
                let kept = pending.withLock { $0.samples.count }
                return (false, "sensor recorder: a commit failed: \(error); \(kept) sample(s) kept in memory and retried every flush (is the disk full? df)")
            }
        }
        if let message { onHealthChange?(message) }
        return ok
    }

    /// The last commit's failure (nil after a success), commits, rows
    /// deleted for the size bound and for the retention.
    public var health: (error: HistoryError?, commits: Int, trimmed: Int, expired: Int) {
        status.withLock { ($0.error, $0.commits, $0.trimmed, $0.expired) }
    }
    /// Samples dropped because more waited in memory than `maxPending`.
    public var dropped: Int { pending.withLock { $0.dropped } }

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

    public func close() { store.withLock { $0.close() } }
}
