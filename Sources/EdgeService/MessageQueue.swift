/// A client's bounded queue of encoded lines. Full → the oldest line is
/// dropped and counted: a slow client loses old samples, never the loop's
/// deadline or another client's data. Slots are preallocated; pushing a
/// shared encoded line only retains it (the bytes are encoded once per sample
/// and fanned out to every subscriber).
struct MessageQueue {
    private var slots: [[UInt8]]
    private var head = 0
    private(set) var count = 0
    var capacity: Int { slots.count }

    init(capacity: Int) {
        slots = Array(repeating: [], count: capacity)
    }

    /// Appends a line; returns true if the oldest line was dropped to make room.
    mutating func push(_ line: [UInt8]) -> Bool {
        var dropped = false
        if count == slots.count {
            slots[head] = []
            head = (head + 1) % slots.count
            count -= 1
            dropped = true
        }
        slots[(head + count) % slots.count] = line
        count += 1
        return dropped
    }

    mutating func popFirst() -> [UInt8]? {
        guard count > 0 else { return nil }
        let line = slots[head]
        slots[head] = []
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
