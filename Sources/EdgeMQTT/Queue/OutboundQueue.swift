#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol
import EdgeValues
import CEdgeShims

/// One MQTT message waiting to be published.
public struct OutboundMessage: Sendable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: Int32
    public var retain: Bool
    public var group: TopicGroup
    /// The stream it came from, for the per-stream counters.
    public var stream: StreamName?
    /// CLOCK_MONOTONIC capture time of the sample it carries, ns (0: none).
    public var captureNs: UInt64

    public init(topic: String, payload: [UInt8], qos: Int, retain: Bool, group: TopicGroup,
                stream: StreamName? = nil, captureNs: UInt64 = 0) {
        self.topic = topic; self.payload = payload; self.qos = Int32(qos); self.retain = retain
        self.group = group; self.stream = stream; self.captureNs = captureNs
    }
}

/// Wakes the broker thread's poll(2): a non-blocking pipe, readable while
/// a wake-up is pending.
public final class Wakeup: @unchecked Sendable {
    /// The end to poll.
    public let fd: Int32
    private let writeFD: Int32
    /// A word bumped (and its futex waiter woken) by every ``signal()``:
    /// what a thread that sleeps on the agent's shared-memory rings instead
    /// of in poll(2) waits on as well (``PolledFeed/waitForRings(control:controlSeen:timeoutMs:)``).
    /// Load it (``controlValue``) before polling `fd`: a signal after the
    /// load changes it, one before made `fd` readable.
    public let control: UnsafeMutablePointer<UInt32>

    public init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe: \(String(cString: strerror(errno)))")
        for f in fds {
            _ = fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK)
            _ = fcntl(f, F_SETFD, FD_CLOEXEC)
        }
        fd = fds[0]
        writeFD = fds[1]
        control = .allocate(capacity: 1)
        control.initialize(to: 0)
    }
    deinit { close(fd); close(writeFD); control.deallocate() }

    /// Makes `fd` readable (never blocks: a full pipe is already readable)
    /// and bumps ``control``.
    public func signal() {
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
        edge_ring_poke(control)
    }

    /// ``control`` now.
    public var controlValue: UInt32 { edge_ring_load_word(control) }

    /// Clears pending wake-ups.
    public func drain() {
        var buf = [UInt8](repeating: 0, count: 256)
        while buf.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// The bounded queue between the agent's socket (the feed thread pushes)
/// and the broker (the broker thread pops).
///
/// It never blocks the producer: when full, the **oldest** message is
/// dropped and counted, so a broker that is slow or away costs the oldest
/// samples, never the reading of the agent's socket (which would make the
/// agent drop this client's lines instead, and delay nothing else but would
/// hide where the loss happened). The counts say how many were dropped in
/// all and since the broker was last connected.
public final class OutboundQueue: Sendable {
    struct State {
        var ring: [OutboundMessage?]
        var head = 0
        var count = 0
        var pushed = 0
        var dropped = 0
        var droppedSinceMark = 0
        var highWater = 0
        /// The thread that pops (``setConsumerThread()``): its own pushes
        /// wake nothing, it publishes them in the same turn.
        var consumer: pthread_t?
    }
    private let state: Locked<State>
    public let capacity: Int
    public let wakeup: Wakeup

    public init(capacity: Int, wakeup: Wakeup = Wakeup()) {
        precondition(capacity >= 1)
        self.capacity = capacity
        self.wakeup = wakeup
        state = Locked(State(ring: Array(repeating: nil, count: capacity)))
    }

    /// Adds `message`; drops the oldest when full. Returns true when one was dropped.
    @discardableResult
    public func push(_ message: OutboundMessage) -> Bool {
        let me = pthread_self()
        let (wake, dropped) = state.withLock { s -> (Bool, Bool) in
            let wake = s.count == 0 && s.consumer.map({ pthread_equal($0, me) == 0 }) ?? true
            var dropped = false
            if s.count == capacity {
                s.ring[s.head] = nil
                s.head = (s.head + 1) % capacity
                s.count -= 1
                s.dropped += 1
                s.droppedSinceMark += 1
                dropped = true
            }
            s.ring[(s.head + s.count) % capacity] = message
            s.count += 1
            s.pushed += 1
            s.highWater = max(s.highWater, s.count)
            return (wake, dropped)
        }
        if wake { wakeup.signal() }
        return dropped
    }

    /// Makes the calling thread the one that pops: what it pushes itself
    /// does not signal ``wakeup`` (it is awake, and flushes after pushing).
    public func setConsumerThread() {
        let me = pthread_self()
        state.withLock { $0.consumer = me }
    }

    /// The oldest message, removed; nil when empty.
    public func pop() -> OutboundMessage? {
        state.withLock { s in
            guard s.count > 0 else { return nil }
            let m = s.ring[s.head]
            s.ring[s.head] = nil
            s.head = (s.head + 1) % capacity
            s.count -= 1
            return m
        }
    }

    /// Puts `message` back at the front (a publish that could not be sent).
    /// If the queue filled up meanwhile, the message is the one dropped.
    public func pushFront(_ message: OutboundMessage) {
        state.withLock { s in
            guard s.count < capacity else {
                s.dropped += 1
                s.droppedSinceMark += 1
                return
            }
            s.head = (s.head - 1 + capacity) % capacity
            s.ring[s.head] = message
            s.count += 1
        }
    }

    /// Messages waiting now.
    public var queued: Int { state.withLock { $0.count } }

    public struct Counts: Sendable, Hashable {
        /// Messages waiting.
        public var queued: Int
        /// Messages ever added.
        public var pushed: Int
        /// Oldest messages dropped because the queue was full.
        public var dropped: Int
        /// Dropped since ``markBrokerConnected()``.
        public var droppedSinceMark: Int
        /// Most messages ever waiting at once.
        public var highWater: Int
    }

    public var counts: Counts {
        state.withLock { Counts(queued: $0.count, pushed: $0.pushed, dropped: $0.dropped,
                                droppedSinceMark: $0.droppedSinceMark, highWater: $0.highWater) }
    }

    /// Returns the drops since the last mark and starts counting again (the
    /// broker thread calls it on every connection, to report what was lost
    /// while the broker was away).
    public func markBrokerConnected() -> Int {
        state.withLock { s in
            let n = s.droppedSinceMark
            s.droppedSinceMark = 0
            return n
        }
    }
}
