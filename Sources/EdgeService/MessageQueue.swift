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

    /// A line holding `bytes`.
    mutating func line(_ bytes: UnsafeBufferPointer<UInt8>) -> Line {
        let line = free() ?? grow()
        line.bytes.removeAll(keepingCapacity: true)
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

/// A client's bounded queue of encoded lines. Full → the oldest line is
/// dropped and counted: a slow client loses old samples, never the loop's
/// deadline or another client's data. Slots are preallocated; pushing a
/// shared encoded line only retains it (the bytes are encoded once per sample
/// and fanned out to every subscriber).
struct MessageQueue {
    private var slots: [Line?]
    private var head = 0
    private(set) var count = 0
    var capacity: Int { slots.count }

    init(capacity: Int) {
        slots = Array(repeating: nil, count: capacity)
    }

    /// Appends a line; returns true if the oldest line was dropped to make room.
    mutating func push(_ line: Line) -> Bool {
        var dropped = false
        if count == slots.count {
            slots[head] = nil
            head = (head + 1) % slots.count
            count -= 1
            dropped = true
        }
        slots[(head + count) % slots.count] = line
        count += 1
        return dropped
    }

    mutating func popFirst() -> Line? {
        guard count > 0 else { return nil }
        let line = slots[head]
        slots[head] = nil
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
