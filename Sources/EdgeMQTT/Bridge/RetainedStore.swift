import EdgeValues

/// One retained message the broker should hold.
public struct RetainedEntry: Sendable, Equatable {
    public var topic: String
    /// Empty: removes what the broker retains (a Home Assistant entity's removal).
    public var payload: [UInt8]
    public var group: TopicGroup
    public init(topic: String, payload: [UInt8], group: TopicGroup) {
        self.topic = topic; self.payload = payload; self.group = group
    }
    public init(topic: String, text: String, group: TopicGroup) {
        self.init(topic: topic, payload: Array(text.utf8), group: group)
    }
}

/// The retained messages the bridge wants the broker to hold, with a
/// generation per entry so the broker thread publishes each change once,
/// and everything again after a reconnect (the broker may have restarted
/// without its retained store) or when Home Assistant comes online.
public final class RetainedStore: Sendable {
    struct Slot: Sendable {
        var entry: RetainedEntry
        var generation: UInt64
        /// Set by ``replacePlan(_:)`` (false: set by ``set(_:)``).
        var planned: Bool
    }
    struct State: Sendable {
        var slots: [String: Slot] = [:]
        var generation: UInt64 = 0
    }
    private let state = Locked(State())
    private let wakeup: Wakeup

    public init(wakeup: Wakeup) { self.wakeup = wakeup }

    /// Makes the planned entries exactly `entries` (the bridge's retained
    /// plan); entries set with ``set(_:)`` are kept. An entry whose payload
    /// did not change keeps its generation (it is not published again).
    public func replacePlan(_ entries: [RetainedEntry]) {
        let changed = state.withLock { s -> Bool in
            var changed = false
            var keep = Set<String>()
            for e in entries {
                keep.insert(e.topic)
                if let old = s.slots[e.topic], old.entry == e { 
                    s.slots[e.topic]!.planned = true
                    continue
                }
                s.generation += 1
                s.slots[e.topic] = Slot(entry: e, generation: s.generation, planned: true)
                changed = true
            }
            for (topic, slot) in s.slots where slot.planned && !keep.contains(topic) {
                s.slots[topic] = nil
            }
            return changed
        }
        if changed { wakeup.signal() }
    }

    /// Sets one entry outside the plan (the bridge's counters).
    public func set(_ entry: RetainedEntry) {
        let changed = state.withLock { s -> Bool in
            if let old = s.slots[entry.topic], old.entry == entry { return false }
            s.generation += 1
            s.slots[entry.topic] = Slot(entry: entry, generation: s.generation, planned: false)
            return true
        }
        if changed { wakeup.signal() }
    }

    /// The entries not yet published at their current generation, given
    /// what was published (`published[topic]` = generation), in publishing
    /// order: state, then discovery, then the status topic last, so Home
    /// Assistant has the entities before it is told the node is online.
    public func pending(published: [String: UInt64], statusTopic: String) -> [(RetainedEntry, UInt64)] {
        state.withLock { s in
            var out: [(RetainedEntry, UInt64)] = []
            for (topic, slot) in s.slots where published[topic] != slot.generation {
                out.append((slot.entry, slot.generation))
            }
            func rank(_ e: RetainedEntry) -> Int {
                if e.topic == statusTopic { return 3 }
                return e.group == .discovery ? 2 : 1
            }
            out.sort { (rank($0.0), $0.0.topic) < (rank($1.0), $1.0.topic) }
            return out
        }
    }

    /// Bumped by every change; equal to a value seen before means nothing
    /// changed since (the broker thread then skips ``pending(published:statusTopic:)``).
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Every entry, by topic (tests, status).
    public var entries: [String: RetainedEntry] {
        state.withLock { s in s.slots.mapValues(\.entry) }
    }
}
