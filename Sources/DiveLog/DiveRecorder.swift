// Submersion samples → dives in the store, committed once a second.
//
// Nothing recorded is lost to a failed write (a full disk, an I/O error, a
// log another process locks): what could not be written stays in memory, in
// order — the start of a dive, its samples, its end — and every write after
// that retries it first. The failure is reported once (``writeFailure``,
// ``log``) and its end too, with how much was written late. Memory is
// bounded: past ``maxPendingSamples`` the oldest unwritten samples are
// dropped and counted (``droppedSamples``), never silently.
import EdgeProtocol
import EdgeValues

public final class DiveRecorder: @unchecked Sendable {
    public let store: DiveStore
    public let settings: DiveSettings
    /// The water named in the log (`--water`); nil: the water the agent's
    /// depths imply (``DiveWater/name(impliedBy:)``), at each dive's start.
    public let water: String?
    /// Unix time = monotonic time + this, ns.
    public let unixOffsetNanoseconds: Int64
    /// At most this many samples wait in memory for the disk (a day at 1 Hz,
    /// ≈ 5 MB); beyond it the oldest are dropped and counted.
    public var maxPendingSamples = 86_400
    var state = DiveDetectorState()

    /// A dive, or the part of one, not yet in the store.
    struct PendingDive {
        /// nil until its row is inserted.
        var number: Int64?
        var startUnix: Int64
        var startMonotonic: UInt64
        var surfacePressure: Double
        var water = "salt"
        var samples: [DiveSample] = []
        /// Dive seconds at which it ended; nil while it goes on.
        var end: Double?
    }
    /// Oldest first; the dive being logged, if any, is the last and has no end.
    var backlog: [PendingDive] = []
    /// Dive time (s) of the last sample of the current dive in the store.
    var lastWritten: Double?
    /// A dive left open by a logger that stopped mid-dive, to continue or close.
    var open: (record: DiveStore.DiveRecord, last: DiveSample?, maxDepth: Double)?
    /// What happened, for the person running it.
    public internal(set) var log: [String] = []
    /// Why the last write failed, while what it held is still in memory; nil when all is written.
    public private(set) var writeFailure: DiveLogError?
    /// Samples dropped because ``maxPendingSamples`` were already waiting.
    public private(set) var droppedSamples = 0
    /// The dive being read is this dive of the log already (the same file
    /// imported again): its samples are not logged a second time.
    public private(set) var skippingDuplicateOf: Int64?

    public init(store: DiveStore, settings: DiveSettings = DiveSettings(), water: String?,
                unixOffsetNanoseconds: Int64) throws(DiveLogError) {
        self.store = store; self.settings = settings; self.water = water
        self.unixOffsetNanoseconds = unixOffsetNanoseconds
        if let r = try store.openDive() {
            let xs = try store.samples(dive: r.number)
            open = (r, xs.last, xs.lazy.map(\.depth).filter(\.isFinite).max() ?? 0)
        }
    }

    /// The number of the dive being logged (nil between dives, or while its
    /// start waits in memory for the disk).
    public var currentDive: Int64? { backlog.last.flatMap { $0.end == nil ? $0.number : nil } }
    /// Samples recorded but not yet written.
    public var pendingSampleCount: Int { backlog.reduce(0) { $0 + $1.samples.count } }

    /// One sample from the agent. A write that fails is kept and retried
    /// (``writeFailure`` says why); this never throws for it.
    public func feed(_ x: SubmersionSample) {
        var event = false, due = false
        if let o = open {
            open = nil
            event = true
            let lastMono = o.record.startMonotonicNanoseconds &+ UInt64(max(0, (o.last?.time ?? 0)) * 1e9)
            let gap = Double(Int64(bitPattern: x.timestampNs &- lastMono)) / 1e9
            if gap >= 0, gap < settings.surfaceEndSeconds, x.state == .submerged || gap < settings.surfaceEndSeconds / 2 {
                // The same dive goes on (the logger or the agent came back mid-dive).
                backlog.append(PendingDive(number: o.record.number, startUnix: o.record.startUnixNanoseconds,
                                           startMonotonic: o.record.startMonotonicNanoseconds,
                                           surfacePressure: o.record.surfacePressure))
                lastWritten = o.last?.time
                state = .resuming(start: o.record.startMonotonicNanoseconds, lastSampleTime: o.last?.time ?? 0,
                                  maxDepth: o.maxDepth, safetyStop: 0, interval: settings.sampleIntervalSeconds)
                log.append("continuing dive \(o.record.number) after a gap of \(Int(gap.rounded())) s")
            } else {
                backlog.append(PendingDive(number: o.record.number, startUnix: o.record.startUnixNanoseconds,
                                           startMonotonic: o.record.startMonotonicNanoseconds,
                                           surfacePressure: o.record.surfacePressure, end: o.last?.time ?? 0))
                log.append("dive \(o.record.number) was left open; closed at its last sample")
            }
        }
        for action in DiveDetector.update(&state, x, settings) {
            if let dup = skippingDuplicateOf {
                // A dive already in the log: nothing of it is logged again.
                if case .end = action { skippingDuplicateOf = nil; log.append("the rest of dive \(dup) skipped (already in the log)") }
                continue
            }
            switch action {
            case let .start(at, surface):
                // The same start on the same clock with the same surface
                // pressure: the same samples, imported or recorded before.
                if let existing = try? store.dive(startMonotonicNanoseconds: at, surfacePressure: surface) {
                    skippingDuplicateOf = existing.number
                    log.append("the dive starting at \(UTCTime.format(unixSeconds: existing.startUnixNanoseconds / 1_000_000_000)) is dive \(existing.number), already in the log (same start time on the agent's clock and the same surface pressure); not logged again")
                    continue
                }
                let unix = Int64(bitPattern: at) &+ unixOffsetNanoseconds
                var d = PendingDive(number: nil, startUnix: unix, startMonotonic: at, surfacePressure: surface)
                d.water = water ?? DiveWater.name(impliedBy: x) ?? "salt"
                backlog.append(d)
                lastWritten = nil
                event = true
            case .record(let s):
                guard !backlog.isEmpty, backlog[backlog.count - 1].end == nil else { continue }
                backlog[backlog.count - 1].samples.append(s)
                bound()
                // Written once what waits spans a second (less 1/16 s), so a
                // crash loses at most a second: one write and sync a second.
                if lastWritten.map({ s.time - $0 >= 1 - 1.0 / 16 }) ?? true { due = true }
            case .end(let at):
                guard let i = backlog.indices.last, backlog[i].end == nil else { continue }
                let end = Double(Int64(bitPattern: at &- backlog[i].startMonotonic)) / 1e9
                // Samples of the last surface interval are past the end: not part of the dive.
                backlog[i].samples.removeAll { $0.time > end + 1e-9 }
                backlog[i].end = end
                event = true
            }
        }
        // A start or an end is written at once.
        if event || due { write() }
    }

    /// Past the bound, the oldest unwritten samples go (counted, said once).
    func bound() {
        var excess = pendingSampleCount - maxPendingSamples
        guard excess > 0 else { return }
        if droppedSamples == 0 {
            log.append("more than \(maxPendingSamples) samples wait for the disk; dropping the oldest (counted)")
        }
        for i in backlog.indices where excess > 0 {
            let k = min(excess, backlog[i].samples.count)
            backlog[i].samples.removeFirst(k)
            excess -= k
            droppedSamples += k
        }
    }

    /// Writes the backlog in order; on a failure keeps the rest and says so.
    func write() {
        let before = pendingSampleCount
        do throws(DiveLogError) {
            while let d = backlog.first {
                var number = d.number
                if number == nil {
                    number = try store.beginDive(startUnixNanoseconds: d.startUnix, startMonotonicNanoseconds: d.startMonotonic,
                                                 surfacePressure: d.surfacePressure, water: d.water)
                    backlog[0].number = number
                    log.append("dive \(number!) started at \(UTCTime.format(unixSeconds: d.startUnix / 1_000_000_000))")
                }
                if !d.samples.isEmpty || d.end != nil {
                    try store.append(dive: number!, d.samples, end: d.end)
                }
                if let end = d.end {
                    backlog.removeFirst()
                    log.append("dive \(number!) ended (\(Int(end.rounded())) s)")
                } else {
                    if let last = d.samples.last { lastWritten = last.time }
                    backlog[0].samples.removeAll()
                    break   // the dive being logged
                }
            }
        } catch {
            if writeFailure == nil {
                log.append("cannot write the dive log (\(error)); keeping what is recorded in memory (\(pendingSampleCount) samples so far) and retrying each second")
            }
            writeFailure = error
            return
        }
        if writeFailure != nil {
            writeFailure = nil
            log.append("the dive log is writable again; wrote the \(before) samples kept in memory"
                       + (droppedSamples > 0 ? " (\(droppedSamples) dropped: more than \(maxPendingSamples) were waiting)" : ""))
        }
    }

    /// The input ended (an imported file): a dive whose diver is already at
    /// the surface ends there; one still under water stays open. Throws
    /// when something recorded could still not be written.
    public func finishInput() throws(DiveLogError) {
        if skippingDuplicateOf != nil {
            skippingDuplicateOf = nil
            state = DiveDetectorState()
        }
        if let i = backlog.indices.last, backlog[i].end == nil, let surfaced = state.surfacedAt {
            let end = Double(Int64(bitPattern: surfaced &- backlog[i].startMonotonic)) / 1e9
            backlog[i].samples.removeAll { $0.time > end + 1e-9 }
            backlog[i].end = end
            log.append("the diver is at the surface at the end of the input")
            state = DiveDetectorState()
        }
        try flush()
    }

    /// Writes what is pending (the dive stays open: it continues if the
    /// agent comes back, or is closed when the next dive starts). Throws the
    /// write error when something recorded is still only in memory.
    public func flush() throws(DiveLogError) {
        write()
        if let e = writeFailure { throw e }
    }

    /// Retries a failed write (for a caller with no new sample, once a second).
    public func retry() {
        if writeFailure != nil { write() }
    }
}

/// The water a log names: the one given, else the one the agent's depths
/// imply. The agent computes depth = (pressure − surface) / (ρ g), with its
/// configured water (`submersion.water`); a sample's three numbers give ρ
/// back. Named when within 1 kg/m³ of fresh (997), EN 13319 (1019.716) or
/// salt (1025) water, else the density itself (a configured value, or
/// TEOS-10's, which varies with depth and latitude).
public enum DiveWater {
    public static func name(impliedBy x: SubmersionSample) -> String? {
        guard x.depth.isFinite, x.depth >= 0.3, x.pressure.isFinite, x.surfacePressure.isFinite else { return nil }
        let rho = (x.pressure - x.surfacePressure) / (standardGravity * x.depth)
        guard rho.isFinite, rho >= 500, rho <= 2000 else { return nil }
        for (name, value) in [("fresh", 997.0), ("en13319", 1019.716), ("salt", 1025.0)] where abs(rho - value) < 1 {
            return name
        }
        return String((rho * 10).rounded() / 10)
    }
}
