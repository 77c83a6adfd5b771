import Dispatch
import EdgeValues

/// When each sample of a paced update reaches its handler: at its capture
/// time plus one latency, so handler calls come at the samples' own spacing
/// (Apple calls a motion handler about once per update interval), not in
/// the bursts the agent's socket delivers them in (every 20 ms, several
/// samples back to back at 100 or 200 Hz).
///
/// The latency is the largest lag (arrival − capture) of the samples
/// captured in the last ``Settings/windowNs`` (two half-window buckets), so
/// no sample is due before it has arrived and, while the lags keep their
/// pattern, every call is exactly its capture spacing after the previous
/// one. It rises at once with a larger lag; once a larger lag has left the
/// window it comes down by 1/8 of the sample spacing per sample (a late
/// wake-up of the agent does not delay the calls for long, and the calls
/// stay paced while it comes down). It never exceeds
/// ``Settings/maximumLatencyNs``: a later sample (after a stall) is due on
/// arrival. No two samples are due closer than a quarter of their capture
/// spacing, so a backlog is caught up at four times the rate, still paced.
/// Pure: times in, times out (CLOCK_MONOTONIC ns, the clock of every
/// sample's `timestamp_ns`); ``PacedDelivery`` runs it on a timer.
enum DeliveryPacing {
    struct Settings: Sendable {
        /// The most latency pacing adds, ns.
        var maximumLatencyNs: UInt64 = 100_000_000
        /// How far back (capture time) a lag still counts, ns.
        var windowNs: UInt64 = 200_000_000
        /// The latency comes down by the capture spacing divided by this, per sample.
        var decayDivisor: UInt64 = 8
        /// Two samples are due at least their capture spacing divided by this apart.
        var minimumGapDivisor: UInt64 = 4
    }

    struct State: Sendable {
        /// The latency added to a sample's capture time, ns.
        var latencyNs: UInt64 = 0
        /// The largest lag in the current and the previous half window, ns,
        /// and where the current half window began (capture time).
        var bucketMaxNs: UInt64 = 0, previousBucketMaxNs: UInt64 = 0
        var bucketStartNs: UInt64?
        /// Capture and due time of the last sample, ns.
        var last: (captureNs: UInt64, dueNs: UInt64)?
    }

    /// The time the sample captured at `captureNs`, arriving at `arrivalNs`,
    /// is due at its handler (never before it arrived, never before the
    /// previous sample's).
    static func update(_ state: inout State, _ settings: Settings, captureNs: UInt64, arrivalNs: UInt64) -> UInt64 {
        let lag = arrivalNs > captureNs ? arrivalNs - captureNs : 0
        let spacing: UInt64 = state.last.map { captureNs > $0.captureNs ? captureNs - $0.captureNs : 0 } ?? 0
        // the window's largest lag
        let half = max(settings.windowNs / 2, 1)
        if let start = state.bucketStartNs, captureNs >= start {
            if captureNs - start >= 2 * half {
                state.previousBucketMaxNs = 0; state.bucketMaxNs = 0; state.bucketStartNs = captureNs
            } else if captureNs - start >= half {
                state.previousBucketMaxNs = state.bucketMaxNs; state.bucketMaxNs = 0; state.bucketStartNs = start + half
            }
        } else if state.bucketStartNs == nil {
            state.bucketStartNs = captureNs
        }
        state.bucketMaxNs = max(state.bucketMaxNs, lag)
        let target = min(max(state.bucketMaxNs, state.previousBucketMaxNs), settings.maximumLatencyNs)
        if target >= state.latencyNs {
            state.latencyNs = target
        } else {
            let step = spacing / max(settings.decayDivisor, 1)
            state.latencyNs = max(target, state.latencyNs - min(state.latencyNs, step))
        }
        var due = max(captureNs &+ state.latencyNs, arrivalNs)
        if let last = state.last {
            due = max(due, last.dueNs &+ spacing / max(settings.minimumGapDivisor, 1))
        }
        state.last = (captureNs, due)
        return due
    }
}

/// Runs ``DeliveryPacing`` for one update: each submitted call runs when
/// its sample is due, in the order submitted. Time comes from `now` and
/// wake-ups from `wake` (a timer on the library's pacing queue; a test
/// passes a virtual clock): `wake(t)` asks for one ``fire()`` at or after
/// `t` (replacing any earlier request), `wake(nil)` for none; it is called
/// under the delivery's lock, so it must not call back. ``fire()`` calls
/// must not overlap (the timer's queue is serial).
final class PacedDelivery: @unchecked Sendable {
    private let lock = NSLock()
    private let settings: DeliveryPacing.Settings
    private var state = DeliveryPacing.State()
    private var pending: [(dueNs: UInt64, call: () -> Void)] = []
    private var head = 0
    private let now: @Sendable () -> UInt64
    private let wake: @Sendable (UInt64?) -> Void

    init(settings: DeliveryPacing.Settings = .init(), now: @escaping @Sendable () -> UInt64,
         wake: @escaping @Sendable (UInt64?) -> Void) {
        self.settings = settings; self.now = now; self.wake = wake
    }

    /// A sample captured at `captureNs`: `call` runs when it is due.
    func submit(captureNs: UInt64, _ call: @escaping () -> Void) {
        let arrival = now()
        lock.withLock {
            let due = DeliveryPacing.update(&state, settings, captureNs: captureNs, arrivalNs: arrival)
            pending.append((due, call))
            if pending.count - head == 1 { wake(due) }
        }
    }

    /// `call` after every call submitted before it (an error after the
    /// samples it follows), without waiting otherwise.
    func submitUnpaced(_ call: @escaping () -> Void) {
        let arrival = now()
        lock.withLock {
            let due = max(arrival, state.last?.dueNs ?? 0)
            pending.append((due, call))
            if pending.count - head == 1 { wake(due) }
        }
    }

    /// Runs every call that is due, in order; asks for the next wake-up.
    func fire() {
        let t = now()
        let ready: [() -> Void] = lock.withLock {
            var ready: [() -> Void] = []
            while head < pending.count, pending[head].dueNs <= t {
                ready.append(pending[head].call)
                head += 1
            }
            if head == pending.count {
                pending.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64, head * 2 > pending.count {
                pending.removeFirst(head)
                head = 0
            }
            wake(head < pending.count ? pending[head].dueNs : nil)
            return ready
        }
        for call in ready { call() }
    }

    /// Drops the calls not yet made and starts the pacing afresh.
    func cancel() {
        lock.withLock {
            pending.removeAll()
            head = 0
            state = DeliveryPacing.State()
            wake(nil)
        }
    }

    /// Calls waiting for their time.
    var waiting: Int { lock.withLock { pending.count - head } }
}

extension PacedDelivery {
    /// A delivery on the real clock: a timer (no leeway) on the library's
    /// serial pacing queue.
    static func onTimer() -> PacedDelivery {
        let timer = DispatchSource.makeTimerSource(queue: pacingQueue)
        let box = TimerBox(timer)
        let delivery = PacedDelivery(now: { monotonicNowNs() }, wake: { at in box.arm(at) })
        let weakDelivery = WeakBox(delivery)
        timer.setEventHandler { weakDelivery.value?.fire() }
        timer.resume()
        return delivery
    }

    /// Where paced calls are handed to their queues (one thread, in order).
    static let pacingQueue = DispatchQueue(label: "CoreMotion.pacing", qos: .userInteractive)
}

/// The timer of one ``PacedDelivery``: armed for one absolute
/// CLOCK_MONOTONIC time, cancelled with its delivery.
final class TimerBox: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    init(_ timer: any DispatchSourceTimer) { self.timer = timer }
    deinit { timer.cancel() }

    func arm(_ atNs: UInt64?) {
        guard let atNs else {
            timer.schedule(deadline: .distantFuture, leeway: .nanoseconds(0))
            return
        }
        let now = monotonicNowNs()
        let delay = atNs > now ? Int(min(atNs - now, 3_600_000_000_000)) : 0
        timer.schedule(deadline: .now() + .nanoseconds(delay), leeway: .nanoseconds(0))
    }
}
