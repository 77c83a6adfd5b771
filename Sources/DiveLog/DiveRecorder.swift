// Submersion samples → dives in the store, committed once a second.
import EdgeProtocol

public final class DiveRecorder: @unchecked Sendable {
    public let store: DiveStore
    public let settings: DiveSettings
    public let water: String
    /// Unix time = monotonic time + this, ns.
    public let unixOffsetNanoseconds: Int64
    var state = DiveDetectorState()
    var current: Int64?
    var pending: [DiveSample] = []
    var lastCommit: Double?
    /// A dive left open by a logger that stopped mid-dive, to continue or close.
    var open: (record: DiveStore.DiveRecord, last: DiveSample?)?
    /// What happened, for the person running it.
    public internal(set) var log: [String] = []

    public init(store: DiveStore, settings: DiveSettings = DiveSettings(), water: String,
                unixOffsetNanoseconds: Int64) throws(DiveLogError) {
        self.store = store; self.settings = settings; self.water = water
        self.unixOffsetNanoseconds = unixOffsetNanoseconds
        if let r = try store.openDive() { open = (r, try store.samples(dive: r.number).last) }
    }

    public var currentDive: Int64? { current }

    /// One sample from the agent.
    public func feed(_ x: SubmersionSample) throws(DiveLogError) {
        if let o = open {
            open = nil
            let lastMono = o.record.startMonotonicNanoseconds &+ UInt64(max(0, (o.last?.time ?? 0)) * 1e9)
            let gap = Double(Int64(bitPattern: x.timestampNs &- lastMono)) / 1e9
            if gap >= 0, gap < settings.surfaceEndSeconds, x.state == .submerged || gap < settings.surfaceEndSeconds / 2 {
                // The same dive goes on (the logger or the agent came back mid-dive).
                current = o.record.number
                var depths = try store.samples(dive: o.record.number)
                depths.removeAll { !$0.depth.isFinite }
                state = .resuming(start: o.record.startMonotonicNanoseconds, lastSampleTime: o.last?.time ?? 0,
                                  maxDepth: depths.map(\.depth).max() ?? 0, safetyStop: 0)
                lastCommit = o.last?.time
                log.append("continuing dive \(o.record.number) after a gap of \(Int(gap.rounded())) s")
            } else {
                try store.close(dive: o.record.number)
                log.append("dive \(o.record.number) was left open; closed at its last sample")
            }
        }
        for action in DiveDetector.update(&state, x, settings) {
            switch action {
            case let .start(at, surface):
                let unix = Int64(bitPattern: at) &+ unixOffsetNanoseconds
                current = try store.beginDive(startUnixNanoseconds: unix, startMonotonicNanoseconds: at,
                                              surfacePressure: surface, water: water)
                lastCommit = nil
                log.append("dive \(current!) started at \(ISO8601.format(unixSeconds: unix / 1_000_000_000))")
            case .record(let s):
                pending.append(s)
                if let c = lastCommit, s.time - c < 1 { continue }
                try commit()
            case .end(let at):
                guard let n = current else { continue }
                _ = at
                let stored = try store.samples(dive: n).last?.time ?? 0
                let end = pending.last?.time ?? stored
                try store.append(dive: n, pending, end: end)
                pending.removeAll()
                log.append("dive \(n) ended (\(Int(end.rounded())) s)")
                current = nil
                lastCommit = nil
            }
        }
    }

    func commit() throws(DiveLogError) {
        guard let n = current, !pending.isEmpty else { return }
        try store.append(dive: n, pending)
        lastCommit = pending.last!.time
        pending.removeAll()
    }

    /// The input ended (an imported file): a dive whose diver is already at
    /// the surface ends there; one still under water stays open.
    public func finishInput() throws(DiveLogError) {
        if let n = current, state.surfacedAt != nil {
            let stored = try store.samples(dive: n).last?.time ?? 0
            try store.append(dive: n, pending, end: pending.last?.time ?? stored)
            pending.removeAll()
            log.append("dive \(n) ended at the end of the input")
            current = nil
            state = DiveDetectorState()
        } else {
            try commit()
        }
    }

    /// Writes what is pending (the dive stays open: it continues if the
    /// agent comes back, or is closed when the next dive starts).
    public func flush() throws(DiveLogError) { try commit() }
}
