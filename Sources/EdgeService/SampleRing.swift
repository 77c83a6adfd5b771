import Synchronization
import EdgeProtocol

/// Single-producer / single-consumer ring of samples in plain memory.
///
/// The producer (the loop thread) never blocks, never allocates and never
/// takes a lock: it copies the sample into a slot and publishes the new tail
/// with a release store. When the consumer (the service thread) is so far
/// behind that the ring is full, the new sample is dropped and counted as an
/// overrun — the loop's deadline wins over completeness.
final class SampleRing: @unchecked Sendable {
    let capacity: Int
    private let mask: Int
    private let storage: UnsafeMutablePointer<Sample>
    /// Next slot the consumer reads (written by the consumer only).
    private let head = Atomic<Int>(0)
    /// Next slot the producer writes (written by the producer only).
    private let tail = Atomic<Int>(0)
    /// Samples accepted.
    let published = Atomic<Int>(0)
    /// Samples dropped because the ring was full.
    let overruns = Atomic<Int>(0)

    init(minimumCapacity: Int) {
        var c = 2
        while c < minimumCapacity { c <<= 1 }
        capacity = c
        mask = c - 1
        storage = .allocate(capacity: c)
        storage.initialize(repeating: .accelerometer(AccelerometerSample(timestampNs: 0, acceleration: .zero)),
                           count: c)
    }

    deinit {
        storage.deinitialize(count: capacity)
        storage.deallocate()
    }

    /// Producer side. Returns false (and counts an overrun) when full.
    @inline(__always)
    func push(_ sample: Sample) -> Bool {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        if t &- h >= capacity {
            overruns.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        storage[t & mask] = sample
        tail.store(t &+ 1, ordering: .releasing)
        published.wrappingAdd(1, ordering: .relaxed)
        return true
    }

    /// Consumer side: hands at most `limit` samples to `body`, oldest first,
    /// and frees their slots. Returns how many were consumed.
    @discardableResult
    func drain(limit: Int, _ body: (Sample) -> Void) -> Int {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        let n = min(t &- h, limit)
        if n <= 0 { return 0 }
        for i in 0..<n { body(storage[(h &+ i) & mask]) }
        head.store(h &+ n, ordering: .releasing)
        return n
    }

    /// Whether samples wait (consumer side).
    var isEmpty: Bool { tail.load(ordering: .acquiring) == head.load(ordering: .relaxed) }
}
