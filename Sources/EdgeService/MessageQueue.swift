/// One encoded line (JSON text and its newline), shared by every client
/// queue it is in. A class, so the pool can tell when no queue holds it any
/// more and reuse its bytes.
final class Line {
    var bytes: [UInt8]
    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }
}

/// Encoded lines for reuse: in steady state (clients reading) encoding a
/// sample allocates nothing - on the loop thread too, which delivers when
/// the service thread is idle. A line is free when only the pool holds it.
/// Beyond ``maximumLines`` (clients backed up), lines are allocated and
/// freed as before rather than kept.
struct LinePool {
    private var lines: [Line] = []
    private var cursor = 0
    static let maximumLines = 512
    static let lineCapacity = 512
    /// A pooled line that grew beyond this (a long reply) gives its buffer
    /// back when it is reused, so the pool never keeps one reply's peak.
    static let maximumKeptCapacity = 4096

    /// A line holding `bytes`. A long one (a history page) gets a line of
    /// its own that the pool does not keep: its memory goes when the last
    /// queue drops it.
    mutating func line(_ bytes: UnsafeBufferPointer<UInt8>) -> Line {
        if bytes.count > Self.maximumKeptCapacity {
            let line = Line(capacity: bytes.count)
            line.bytes.append(contentsOf: bytes)
            return line
        }
        let line = free() ?? grow()
        if line.bytes.capacity > Self.maximumKeptCapacity {
            line.bytes = []
            line.bytes.reserveCapacity(max(Self.lineCapacity, bytes.count))
        } else {
            line.bytes.removeAll(keepingCapacity: true)
        }
        line.bytes.append(contentsOf: bytes)
        return line
    }

    private mutating func free() -> Line? {
        // A few looks from the cursor: a free line is almost always next.
        var looks = min(lines.count, 8)
        while looks > 0 {
            let i = cursor
            cursor = (cursor + 1) % lines.count
            looks -= 1
            if isKnownUniquelyReferenced(&lines[i]) { return lines[i] }
        }
        return nil
    }

    private mutating func grow() -> Line {
        let line = Line(capacity: Self.lineCapacity)
        if lines.count < Self.maximumLines { lines.append(line) }
        return line
    }
}

/// A client's bounded queue of encoded lines. Full → the oldest *sample*
/// is dropped and counted: a slow client loses old samples, never the
/// loop's deadline or another client's data, and never what it cannot do
/// without - its version line, the replies to its requests, `connection`
/// events (a device that stopped and a client that missed being told so
/// would show it as connected) and the shutdown line. Only when no sample
/// is queued at all (a client that sends requests and never reads) does the
/// oldest line of any kind go, so the bound holds. Order is kept. Slots are
/// preallocated; pushing a shared encoded line only retains it (the bytes
/// are encoded once per sample and fanned out to every subscriber).
/// ``bytes`` counts what the queued lines hold, for the service's byte
/// bounds (``ServiceConfiguration/maxQueuedBytesPerClient``).
struct MessageQueue {
    private var slots: [Line?]
    /// Whether the line in the slot of the same index may be shed (a sample).
    private var shed: [Bool]
    private var head = 0
    private(set) var count = 0
    /// Queued lines that are samples.
    private(set) var sampleCount = 0
    /// Bytes of the queued lines (a line shared with other queues counts in each).
    private(set) var bytes = 0
    var capacity: Int { slots.count }

    init(capacity: Int) {
        slots = Array(repeating: nil, count: max(1, capacity))
        shed = Array(repeating: false, count: max(1, capacity))
    }

    /// Appends a line (`sample`: one that may be shed when the queue is
    /// full); returns true if a line was dropped to make room.
    mutating func push(_ line: Line, sample: Bool = false) -> Bool {
        var dropped = false
        if count == slots.count {
            dropOldest(sampleOnly: sampleCount > 0)
            dropped = true
        }
        let i = (head + count) % slots.count
        slots[i] = line
        shed[i] = sample
        if sample { sampleCount += 1 }
        count += 1
        bytes += line.bytes.count
        return dropped
    }

    /// Drops the oldest sample (false when none is queued).
    mutating func shedOldestSample() -> Bool {
        guard sampleCount > 0 else { return false }
        dropOldest(sampleOnly: true)
        return true
    }

    /// Removes the oldest sample (or, with `sampleOnly` false, the oldest
    /// line): the lines before it move up one slot, keeping the order.
    private mutating func dropOldest(sampleOnly: Bool) {
        var k = 0
        if sampleOnly { while !shed[(head + k) % slots.count] { k += 1 } }
        var i = (head + k) % slots.count
        if shed[i] { sampleCount -= 1 }
        bytes -= slots[i]?.bytes.count ?? 0
        while k > 0 {
            let previous = (i + slots.count - 1) % slots.count
            slots[i] = slots[previous]
            shed[i] = shed[previous]
            i = previous
            k -= 1
        }
        slots[head] = nil
        shed[head] = false
        head = (head + 1) % slots.count
        count -= 1
    }

    mutating func popFirst() -> Line? {
        guard count > 0 else { return nil }
        let line = slots[head]
        bytes -= line?.bytes.count ?? 0
        slots[head] = nil
        if shed[head] { sampleCount -= 1; shed[head] = false }
        head = (head + 1) % slots.count
        count -= 1
        return line
    }

    /// Empties the queue; returns how many lines were discarded.
    mutating func removeAll() -> Int {
        let n = count
        while count > 0 { _ = popFirst() }
        return n
    }
}
