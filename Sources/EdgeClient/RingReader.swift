#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims
import EdgeProtocol

/// The client's reader of the agent's shared-memory rings (docs/protocol.md,
/// "Shared-memory rings"): one thread for every ring the process maps. It
/// sleeps in one futex_waitv(2) on all the rings' wake words (the agent
/// wakes it once per delivery, whatever the number of readers), copies the
/// new records, and hands each sample to ``AgentClient``. Nothing it does
/// can slow the agent: it only reads, and a reader that falls more than a
/// ring behind loses the oldest samples and counts them (sequence numbers).
final class RingReader: @unchecked Sendable {
    /// Why a ring offered could not be read.
    enum MapFailure: Error, Equatable {
        /// The descriptor failed the checks (seals, size, header): errno.
        case refused(Int32)
    }

    private struct Mapped {
        let stream: StreamName
        let fd: Int32
        let base: UnsafeRawPointer
        let length: Int
        let inode: UInt64
        /// The next record to read.
        var next: UInt64
        /// The wake word's value this reader last passed a wake on for: at
        /// most one relay per delivery, so a chain of relays ends.
        var relayed: UInt32 = 0
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var rings: [Mapped] = []
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
        for r in rings { unmap(r) }
        control.deallocate()
    }

    /// Streams read from a ring now.
    var streams: [StreamName] { lock.withLock { rings.map(\.stream) } }

    /// Maps the ring `fd` (passed by the agent) for `stream`, reading from
    /// record `start`, and takes the descriptor over (closed on failure too).
    /// The same ring again (an interval change) keeps the mapping. Starts the
    /// thread on first use.
    func add(_ stream: StreamName, fd: Int32, start: UInt64) -> Result<Void, MapFailure> {
        var st = stat()
        guard fstat(fd, &st) == 0 else { let e = errno; Glibc.close(fd); return .failure(.refused(e)) }
        let inode = UInt64(st.st_ino)
        lock.lock(); defer { lock.unlock() }
        if let i = rings.firstIndex(where: { $0.stream == stream }) {
            if rings[i].inode == inode { Glibc.close(fd); return .success(()) }
            unmap(rings.remove(at: i))
        }
        var base: UnsafeRawPointer?
        var length = 0
        let r = edge_ring_map_reader(fd, SampleRingFormat.layoutID, UInt32(SampleRingFormat.recordBytes),
                                     UInt32(stream.index), &base, &length)
        guard r == 0, let base else { Glibc.close(fd); return .failure(.refused(-r)) }
        guard rings.count < Self.maximumRings else {
            edge_ring_unmap(base, length); Glibc.close(fd); return .failure(.refused(EMFILE))
        }
        rings.append(Mapped(stream: stream, fd: fd, base: base, length: length, inode: inode, next: start))
        if thread == nil && !stopped {
            do { thread = try ClientThread(name: "edge-client-ring") { [self] in run() } } catch {
                unmap(rings.removeLast())
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
            unmap(rings.remove(at: i))
            edge_ring_poke(control)
        }
    }

    /// Stops reading every ring (the connection ended).
    func removeAll() {
        lock.withLock {
            for r in rings { unmap(r) }
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
        removeAll()
    }

    /// At most this many rings at once (one wait covers them all): one per stream.
    static let maximumRings = StreamName.count

    private func unmap(_ r: Mapped) {
        edge_ring_unmap(r.base, r.length)
        Glibc.close(r.fd)
    }

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
                seen[n] = edge_ring_wake_word(base)
                bases[n] = base
                n += 1
                let written = edge_ring_write_seq(base)
                var next = rings[i].next
                let slots = UInt64(edge_ring_slot_count(base))
                let stream = rings[i].stream
                if written > next {
                    if written - next > slots {
                        lostCounts[stream.index] += Int(written - slots - next)
                        anyLost = true
                        next = written - slots
                    }
                    while next < written {
                        if edge_ring_read(base, next, record) == 0 {
                            batch.append(record.load(as: Sample.self))
                        } else {
                            lostCounts[stream.index] += 1
                            anyLost = true
                        }
                        next += 1
                    }
                    rings[i].next = next
                }
                if edge_ring_is_closed(base) != 0 && edge_ring_write_seq(base) == next {
                    closedStreams[stream.index] = true
                    anyClosed = true
                    unmap(rings.remove(at: i))
                    n -= 1
                    continue
                }
                i += 1
            }
            if let w = wokenBy {
                if let k = rings.firstIndex(where: { $0.base == w }) {
                    let word = edge_ring_wake_word(w)
                    if word != rings[k].relayed {
                        rings[k].relayed = word
                        _ = edge_ring_relay(w)
                    }
                }
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
                        edge_ring_wait_any(b.baseAddress, s.baseAddress, count, control, controlSeen, 1000)
                    }
                }
                if r > 0 && Int(r) <= n { wokenBy = bases[Int(r) - 1] }
            }
        }
    }
}
