#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims
import EdgeProtocol
import EdgeValues

/// The client's reader of the agent's shared-memory rings (docs/protocol.md,
/// "Shared-memory rings"): one thread for every ring the process maps. It
/// sleeps in one futex_waitv(2) on all the rings' wake words (the agent
/// wakes it once per delivery, whatever the number of readers), copies the
/// new records, and hands each sample to ``AgentClient``. Nothing it does
/// can slow the agent: it only reads, and a reader that falls more than a
/// ring behind loses the oldest samples and counts them (sequence numbers).
final class RingReader: @unchecked Sendable {
    typealias MapFailure = SampleRing.MapFailure

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var rings: [SampleRing] = []
    /// Rings let go of by another thread, unmapped by the reader's thread
    /// (at the top of its loop) or after it ended: the thread may be about
    /// to read a ring's wake word when another thread removes the ring
    /// (without futex_waitv, before Linux 5.16, that read is in user
    /// space), so only the thread that reads a mapping may unmap it.
    private var retired: [SampleRing] = []
    private var stopped = false
    private var thread: ClientThread?
    /// Bumped (and its waiter woken) when the set of rings changes or the
    /// reader stops.
    private let control = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)

    /// Each sample read, on the reader's thread.
    private let deliver: @Sendable (Sample) -> Void
    /// Samples a stream lost (the reader fell a ring behind), on the reader's thread.
    private let lost: @Sendable (StreamName, Int) -> Void
    /// The agent closed a stream's ring (it let go of it: unsubscribed or stopping).
    private let closed: @Sendable (StreamName) -> Void

    init(deliver: @escaping @Sendable (Sample) -> Void, lost: @escaping @Sendable (StreamName, Int) -> Void,
         closed: @escaping @Sendable (StreamName) -> Void) {
        self.deliver = deliver; self.lost = lost; self.closed = closed
        control.initialize(to: 0)
    }

    deinit {
        for r in rings { r.unmap() }
        for r in retired { r.unmap() }
        control.deallocate()
    }

    /// Streams read from a ring now.
    var streams: [StreamName] { lock.withLock { rings.map(\.stream) } }

    /// Maps the ring `fd` (passed by the agent) for `stream`, reading from
    /// record `start`, and takes the descriptor over (closed on failure too).
    /// The same ring again (an interval change) keeps the mapping. Starts the
    /// thread on first use.
    func add(_ stream: StreamName, fd: Int32, start: UInt64) -> Result<Void, MapFailure> {
        guard let inode = SampleRing.inode(of: fd) else { let e = errno; Glibc.close(fd); return .failure(.refused(e)) }
        lock.lock(); defer { lock.unlock() }
        if let i = rings.firstIndex(where: { $0.stream == stream }) {
            if rings[i].inode == inode { Glibc.close(fd); return .success(()) }
            retired.append(rings.remove(at: i))
        }
        guard rings.count < Self.maximumRings else { Glibc.close(fd); return .failure(.refused(EMFILE)) }
        let ring: SampleRing
        switch SampleRing.map(stream, fd: fd, start: start) {
        case .success(let r): ring = r
        case .failure(let e): return .failure(e)
        }
        rings.append(ring)
        if thread == nil && !stopped {
            do { thread = try ClientThread(name: "edge-client-ring") { [self] in run() } } catch {
                rings.removeLast().unmap()
                return .failure(.refused(EAGAIN))
            }
        }
        edge_ring_poke(control)
        return .success(())
    }

    /// Stops reading `stream`'s ring (unsubscribed, or served as lines again).
    func remove(_ stream: StreamName) {
        lock.withLock {
            guard let i = rings.firstIndex(where: { $0.stream == stream }) else { return }
            retired.append(rings.remove(at: i))
            edge_ring_poke(control)
        }
    }

    /// Stops reading every ring (the connection ended).
    func removeAll() {
        lock.withLock {
            retired += rings
            rings.removeAll()
            edge_ring_poke(control)
        }
    }

    /// Ends the thread (joined) and unmaps everything.
    func stop() {
        let t: ClientThread? = lock.withLock {
            stopped = true
            edge_ring_poke(control)
            defer { thread = nil }
            return thread
        }
        t?.join()
        // The thread has ended: nobody reads the mappings now.
        lock.withLock {
            for r in rings + retired { r.unmap() }
            rings.removeAll()
            retired.removeAll()
        }
    }

    /// At most this many rings at once (one wait covers them all): one per stream.
    static let maximumRings = StreamName.count

    private func run() {
        let recordBytes = SampleRingFormat.recordBytes
        let record = UnsafeMutableRawPointer.allocate(byteCount: recordBytes, alignment: 8)
        defer { record.deallocate() }
        var batch: [Sample] = []
        batch.reserveCapacity(2 * SampleRingFormat.slotCount)
        var bases = [UnsafeRawPointer?](repeating: nil, count: Self.maximumRings)
        var seen = [UInt32](repeating: 0, count: Self.maximumRings)
        var lostCounts = [Int](repeating: 0, count: StreamName.count)
        var closedStreams = [Bool](repeating: false, count: StreamName.count)
        /// The ring whose wake ended the last wait: the wake is passed on to
        /// the next reader (edge_ring_signal wakes one), once per delivery.
        /// Not only when this pass found news: a reader can read a delivery
        /// just before it sleeps and then take the agent's wake meant for
        /// another, which would otherwise sleep to the next delivery.
        var wokenBy: UnsafeRawPointer?
        while true {
            lock.lock()
            // Only this thread waits on the rings' words, and it is not
            // waiting now: what others let go of can be unmapped.
            for r in retired { r.unmap() }
            retired.removeAll()
            if stopped { lock.unlock(); return }
            let controlSeen = edge_ring_load_word(control)
            batch.removeAll(keepingCapacity: true)
            var anyLost = false, anyClosed = false
            var n = 0
            var i = 0
            while i < rings.count {
                let base = rings[i].base
                // The wake word before the sequence: a record written after
                // this read changes the word, so the wait below returns.
                seen[n] = rings[i].wakeWord
                bases[n] = base
                n += 1
                let stream = rings[i].stream
                let lostNow = rings[i].read(into: record) { batch.append($0) }
                if lostNow > 0 {
                    lostCounts[stream.index] += lostNow
                    anyLost = true
                }
                if rings[i].isFinished {
                    closedStreams[stream.index] = true
                    anyClosed = true
                    rings.remove(at: i).unmap()
                    n -= 1
                    continue
                }
                i += 1
            }
            if let w = wokenBy {
                if let k = rings.firstIndex(where: { $0.base == w }) { rings[k].relayWake() }
                wokenBy = nil
            }
            lock.unlock()
            for s in batch { deliver(s) }
            if anyLost {
                for k in lostCounts.indices where lostCounts[k] > 0 {
                    lost(StreamName.allCases.first { $0.index == k }!, lostCounts[k])
                    lostCounts[k] = 0
                }
            }
            if anyClosed {
                for k in closedStreams.indices where closedStreams[k] {
                    closed(StreamName.allCases.first { $0.index == k }!)
                    closedStreams[k] = false
                }
            }
            if batch.isEmpty && !anyClosed {
                let count = Int32(n)
                let r = bases.withUnsafeBufferPointer { b in
                    seen.withUnsafeBufferPointer { s in
                        SampleRing.waitAny(b.baseAddress!, seen: s.baseAddress!, count: Int(count), control: control,
                                           controlSeen: controlSeen, timeoutMs: 1000)
                    }
                }
                if r > 0 && Int(r) <= n { wokenBy = bases[Int(r) - 1] }
            }
        }
    }
}
