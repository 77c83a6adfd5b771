import EdgeValues
#if canImport(Glibc)
import Glibc
#endif

/// Paced handler calls (``DeliveryPacing``) for a queue whose thread may
/// wait: an app's concurrent `OperationQueue` (not the main queue, not one
/// limited to one operation at a time). Instead of the ``PacingThread``
/// waking at each due time only to add one operation per call to the queue
/// (which wakes a queue thread in turn: two thread wake-ups and one
/// `Operation` per sample), one operation runs the calls of a delivery
/// burst on the queue itself, in order, each at its due time, waiting on
/// the queue's thread in between; it ends when no call is left, and the
/// next burst adds the next one. At 100 Hz with the agent's 20 ms delivery
/// that is half an operation and about 1.5 wake-ups of a queue thread per
/// sample, and no other thread of the library's.
///
/// The wait holds one thread of the process's dispatch pool (the app's
/// other operations run on the others), so it is bounded: at most
/// ``WaitSlot/limit`` queue threads of the process wait at once (one, and
/// none on a single processor, where the pool's one thread must stay free).
/// When the slot is taken (several managers, each with its queue) the
/// operation ends instead and the ``PacingThread`` adds the next one at
/// the next call's due time. On the main queue or a queue running one
/// operation at a time a wait would hold the app's own work back, so those
/// get ``PacedDelivery`` instead.
///
/// Calls are made one at a time, in the order submitted (never two calls
/// of one update at once, even on a concurrent queue). ``cancel()`` drops
/// the calls not yet made and wakes a waiting operation, which then ends.
final class QueuePacedDelivery: PacingTarget, @unchecked Sendable {
    /// The mutex and the CLOCK_MONOTONIC condition an operation waits on.
    private let lock = ConditionLock()
    private let settings: DeliveryPacing.Settings
    // Guarded by `lock`.
    private var state = DeliveryPacing.State()
    private var pending: [(dueNs: UInt64, call: () -> Void)] = []
    private var head = 0
    /// An operation of ours is on the queue or running, or the pacing
    /// thread is asked to add one (``handedOff``).
    private var running = false
    /// The pacing thread adds the next operation at the next due time.
    private var handedOff = false
    /// ``close()`` was called: submissions are dropped.
    private var closed = false
    private let now: @Sendable () -> UInt64
    /// Adds one operation to the queue.
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Asks the pacing thread for one ``fire(until:)`` at or after a time (nil: none).
    private let wake: @Sendable (UInt64?) -> Void
    /// Takes a wait slot (true) or finds them all taken; `release` gives it back.
    private let slot: (take: @Sendable () -> Bool, release: @Sendable () -> Void)
    /// A test's virtual wait (it advances the clock to the time given);
    /// nil: a CLOCK_MONOTONIC wait that ``cancel()`` cuts short.
    private let virtualWait: (@Sendable (UInt64) -> Void)?

    /// `register` is called with the new delivery (the pacing thread
    /// keeps a weak reference to it).
    init(settings: DeliveryPacing.Settings = .init(), now: @escaping @Sendable () -> UInt64,
         enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
         wake: @escaping @Sendable (UInt64?) -> Void,
         slot: (take: @Sendable () -> Bool, release: @Sendable () -> Void) = (WaitSlot.take, WaitSlot.release),
         virtualWait: (@Sendable (UInt64) -> Void)? = nil, register: ((QueuePacedDelivery) -> Void)? = nil) {
        self.settings = settings; self.now = now; self.enqueue = enqueue; self.wake = wake
        self.slot = slot; self.virtualWait = virtualWait
        register?(self)
    }

    /// The queue threads of this process that may wait for a due time at once.
    enum WaitSlot {
        private static let lock = NSLock()
        nonisolated(unsafe) private static var taken = 0
        /// One, none on a single processor.
        static let limit = ProcessInfo.processInfo.activeProcessorCount >= 2 ? 1 : 0
        @Sendable static func take() -> Bool {
            lock.withLock {
                guard taken < limit else { return false }
                taken += 1
                return true
            }
        }
        @Sendable static func release() { lock.withLock { taken -= 1 } }
    }

    /// Calls on `queue` in operations of its own, on the real clock. `slot`:
    /// the process's wait slot (tests give one of their own, so other
    /// deliveries in the same process cannot take it).
    static func on(_ queue: OperationQueue,
                   slot: (take: @Sendable () -> Bool, release: @Sendable () -> Void) = (WaitSlot.take, WaitSlot.release))
        -> QueuePacedDelivery
    {
        let q = UncheckedSendable(queue)
        let thread = PacingThread.shared
        let key = PacingThread.Key()
        return QueuePacedDelivery(now: { monotonicNowNs() }, enqueue: { run in q.value.addOperation(run) },
                                  wake: { at in thread.set(key, dueNs: at) }, slot: slot,
                                  register: { d in thread.register(key, d) })
    }

    /// Whether a queue's thread may wait for the next due time: a queue
    /// that runs several operations at once and is not the main queue.
    static func canWait(on queue: OperationQueue) -> Bool {
        queue !== OperationQueue.main && queue.maxConcurrentOperationCount != 1
    }

    /// A sample captured at `captureNs`: `call` runs on the queue when it is due.
    func submit(captureNs: UInt64, _ call: @escaping () -> Void) {
        let arrival = now()
        add(due: { DeliveryPacing.update(&state, settings, captureNs: captureNs, arrivalNs: arrival) }, call: call)
    }

    /// `call` after every call submitted before it, without waiting otherwise.
    func submitUnpaced(_ call: @escaping () -> Void) {
        let arrival = now()
        add(due: { max(arrival, state.last?.dueNs ?? 0) }, call: call)
    }

    private func add(due: () -> UInt64, call: @escaping () -> Void) {
        lock.lock()
        guard !closed else { lock.unlock(); return }
        pending.append((due(), call))
        let start = !running
        running = true
        lock.unlock()
        if start { enqueue { [self] in drain() } }
    }

    /// The queue's operation: every call in order at its due time, then
    /// ends (or, when no wait slot is free, hands the next due time to the
    /// pacing thread and ends).
    private func drain() {
        lock.lock()
        while head < pending.count {
            let due = pending[head].dueNs
            if due > now() {
                if let virtualWait {
                    lock.unlock()
                    virtualWait(due)
                    lock.lock()
                } else if slot.take() {
                    _ = lock.wait(untilNs: due)
                    slot.release()
                } else {
                    handedOff = true
                    lock.unlock()
                    wake(due)
                    return
                }
                continue   // a cancel may have emptied the list
            }
            let call = pending[head].call
            head += 1
            lock.unlock()
            call()
            lock.lock()
        }
        pending.removeAll(keepingCapacity: true)
        head = 0
        running = false
        lock.unlock()
    }

    /// The pacing thread's wake-up (a hand-off's due time): the next
    /// operation goes on the queue.
    func fire(until t: UInt64) {
        lock.lock()
        let go = handedOff
        handedOff = false
        lock.unlock()
        if go { enqueue { [self] in drain() } }
    }

    /// Drops the calls not yet made and starts the pacing afresh.
    func cancel() {
        lock.lock()
        pending.removeAll()
        head = 0
        state = DeliveryPacing.State()
        let stopWake = handedOff
        if handedOff { handedOff = false; running = false }
        lock.broadcast()
        lock.unlock()
        if stopWake { wake(nil) }
    }

    /// ``cancel()``, for good: what is submitted afterwards is dropped (a
    /// sample that was on its way when the updates stopped). A call being
    /// made is the queue's: it ends before the queue's next operation.
    func close() {
        lock.withLock { closed = true }
        cancel()
    }

    /// Calls waiting for their time.
    var waiting: Int {
        lock.lock()
        defer { lock.unlock() }
        return pending.count - head
    }
}
