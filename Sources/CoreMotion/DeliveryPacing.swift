import EdgeValues
#if canImport(Glibc)
import Glibc
#endif

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
/// sample's `timestamp_ns`); ``PacedDelivery`` runs it, woken by ``PacingThread``.
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
/// wake-ups from `wake` (the library's ``PacingThread``; a test passes a
/// virtual clock): `wake(t)` asks for one ``fire()`` at or after `t`
/// (replacing any earlier request), `wake(nil)` for none; it is called
/// under the delivery's lock, so it must not call back. ``fire()`` calls
/// must not overlap (one thread makes them).
final class PacedDelivery: PacingTarget, @unchecked Sendable {
    /// Its mutex, and a condition on which ``cancel()`` waits for calls
    /// being made on another thread.
    private let lock = ConditionLock()
    private let settings: DeliveryPacing.Settings
    private var state = DeliveryPacing.State()
    private var pending: [(dueNs: UInt64, call: () -> Void)] = []
    private var head = 0
    /// The threads making calls now (``fire(until:)``, or ``submit`` making
    /// a call due at once): a due call must wait for them, and ``cancel()``
    /// returns only once they are done.
    private var makers: [pthread_t] = []
    /// Bumped by each ``cancel()``: a thread making calls stops before the
    /// next one once it changed.
    private var cancels = 0
    /// ``close()`` was called: submissions are dropped.
    private var closed = false
    private let now: @Sendable () -> UInt64
    private let wake: @Sendable (UInt64?) -> Void

    /// `register` is called with the new delivery (the pacing thread
    /// keeps a weak reference to it).
    init(settings: DeliveryPacing.Settings = .init(), now: @escaping @Sendable () -> UInt64,
         wake: @escaping @Sendable (UInt64?) -> Void, register: ((PacedDelivery) -> Void)? = nil) {
        self.settings = settings; self.now = now; self.wake = wake
        register?(self)
    }

    /// A sample captured at `captureNs`: `call` runs when it is due. A
    /// call already due with none before it waiting or being made runs at
    /// once, on this thread (no wake-up of the pacing thread for it: at
    /// 100 Hz with the agent's 20 ms delivery, the first call of each burst).
    func submit(captureNs: UInt64, _ call: @escaping () -> Void) {
        let arrival = now()
        lock.lock()
        guard !closed else { lock.unlock(); return }
        let due = DeliveryPacing.update(&state, settings, captureNs: captureNs, arrivalNs: arrival)
        if due <= arrival && head == pending.count && makers.isEmpty {
            makers.append(pthread_self())
            lock.unlock()
            call()
            doneMaking()
            return
        }
        pending.append((due, call))
        if pending.count - head == 1 { wake(due) }
        lock.unlock()
    }

    /// `call` after every call submitted before it (an error after the
    /// samples it follows), without waiting otherwise.
    func submitUnpaced(_ call: @escaping () -> Void) {
        let arrival = now()
        lock.withLock {
            guard !closed else { return }
            let due = max(arrival, state.last?.dueNs ?? 0)
            pending.append((due, call))
            if pending.count - head == 1 { wake(due) }
        }
    }

    /// Runs every call that is due, in order; asks for the next wake-up.
    func fire() { fire(until: now()) }

    /// Runs every call due at or before `t`, in order; asks for the next
    /// wake-up. A ``cancel()`` meanwhile stops it before the next call.
    func fire(until t: UInt64) {
        lock.lock()
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
        guard !ready.isEmpty else { lock.unlock(); return }
        makers.append(pthread_self())
        let began = cancels
        lock.unlock()
        for call in ready {
            guard lock.withLock({ cancels == began }) else { break }
            call()
        }
        doneMaking()
    }

    private func doneMaking() {
        lock.withLock {
            let me = pthread_self()
            if let i = makers.firstIndex(where: { pthread_equal($0, me) != 0 }) { makers.remove(at: i) }
            lock.broadcast()
        }
    }

    /// Drops the calls not yet made and starts the pacing afresh. When it
    /// returns no call submitted before it is made any more: a call being
    /// made on another thread is waited for (one made on this thread, which
    /// is cancelling from inside it, is not).
    func cancel() {
        lock.withLock {
            pending.removeAll()
            head = 0
            state = DeliveryPacing.State()
            cancels += 1
            wake(nil)
            let me = pthread_self()
            while makers.contains(where: { pthread_equal($0, me) == 0 }) { lock.wait(untilNs: .max) }
        }
    }

    /// ``cancel()``, for good: what is submitted afterwards is dropped (a
    /// sample that was on its way when the updates stopped).
    func close() {
        lock.withLock { closed = true }
        cancel()
    }

    /// Calls waiting for their time.
    var waiting: Int { lock.withLock { pending.count - head } }

    /// How many times it was cancelled (for tests).
    var cancelCount: Int { lock.withLock { cancels } }
}

extension PacedDelivery {
    /// A delivery on the real clock, woken by the library's pacing thread.
    static func onPacingThread() -> PacedDelivery {
        let thread = PacingThread.shared
        let key = PacingThread.Key()
        return PacedDelivery(now: { monotonicNowNs() }, wake: { at in thread.set(key, dueNs: at) }, register: { d in
            thread.register(key, d)
        })
    }
}

/// What the ``PacingThread`` wakes: it makes (or hands on) every call due by `t`.
protocol PacingTarget: AnyObject, Sendable {
    func fire(until t: UInt64)
}

/// The one thread that makes every paced call of the process when it is
/// due: it sleeps on a CLOCK_MONOTONIC condition until the earliest wake-up
/// any ``PacedDelivery`` asked for, then fires every delivery due by then
/// (and those due within ``coalesceNs`` after: the managers of one process
/// at one rate share a wake-up). A new wake-up wakes it only when it is
/// earlier than the one it sleeps for, so at a steady rate it wakes once
/// per sample time and nothing else wakes it.
final class PacingThread: @unchecked Sendable {
    static let shared = PacingThread()
    /// Calls due this soon after the earliest are made in the same wake-up, ns.
    static let coalesceNs: UInt64 = 250_000

    /// Identifies one delivery's wake-up (made before the delivery exists).
    final class Key: @unchecked Sendable {}

    private struct Entry {
        weak var delivery: (any PacingTarget)?
        var dueNs: UInt64?
    }

    /// A mutex and a CLOCK_MONOTONIC condition on the heap (stored inline
    /// and passed by `&`, they would be at an address Swift does not promise
    /// to keep).
    private let lock = ConditionLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// What the thread sleeps until (nil: not sleeping; `.max`: no wake-up asked for).
    private var sleepingUntil: UInt64?
    private var started = false

    private init() {}

    func register(_ key: Key, _ delivery: any PacingTarget) {
        lock.lock()
        entries[ObjectIdentifier(key), default: Entry()].delivery = delivery
        lock.unlock()
    }

    /// The wake-up `key`'s delivery asks for (nil: none).
    func set(_ key: Key, dueNs: UInt64?) {
        lock.lock()
        let id = ObjectIdentifier(key)
        guard let due = dueNs else {
            entries[id]?.dueNs = nil
            lock.unlock()
            return
        }
        entries[id, default: Entry()].dueNs = due
        if !started {
            started = true
            let t = Thread { [self] in run() }
            t.name = "CoreMotion.pacing"
            t.qualityOfService = .userInteractive
            t.start()
        }
        let signal = sleepingUntil.map { due < $0 } ?? false
        if signal { sleepingUntil = due }   // one signal per earlier wake-up
        lock.unlock()
        // after the unlock: the thread woken does not block on the mutex again
        if signal { lock.broadcast() }   // one waiter: the pacing thread
    }

    private func run() {
        var dueNow: [(ObjectIdentifier, any PacingTarget)] = []
        var gone: [ObjectIdentifier] = []
        lock.lock()
        while true {
            let now = monotonicNowNs()
            dueNow.removeAll(keepingCapacity: true)
            gone.removeAll(keepingCapacity: true)
            var earliest = UInt64.max
            // read first, change after: changing the dictionary while
            // iterating it would copy it on every wake-up
            for (id, e) in entries {
                guard let d = e.delivery else { gone.append(id); continue }   // its delivery is gone
                guard let due = e.dueNs else { continue }
                if due <= now &+ Self.coalesceNs {
                    dueNow.append((id, d))
                } else {
                    earliest = min(earliest, due)
                }
            }
            for id in gone { entries[id] = nil }
            if !dueNow.isEmpty {
                for (id, _) in dueNow { entries[id]?.dueNs = nil }   // the delivery's fire asks again
                lock.unlock()
                for (_, d) in dueNow { d.fire(until: now &+ Self.coalesceNs) }
                lock.lock()
                continue
            }
            sleepingUntil = earliest
            lock.wait(untilNs: earliest)   // .max: until woken
            sleepingUntil = nil
        }
    }
}
