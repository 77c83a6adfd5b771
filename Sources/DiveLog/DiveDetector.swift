// Dives from submersion samples: when one starts and ends, what is logged,
// ascent rate and the safety-stop timer. Pure: Settings, State, update.
import EdgeProtocol

public struct DiveSettings: Sendable, Equatable {
    /// A dive ends after this long at the surface, s (a shorter surface
    /// interval continues the dive). Default 60 s.
    public var surfaceEndSeconds = 60.0
    /// Logging interval, s (≤ 1: at least 1 Hz). Samples are logged on a
    /// time grid: a reading within 1/16 interval of its due time is taken,
    /// and so is the last reading before a late one, so no two logged
    /// points of a dive are further apart than interval + interval/16 while
    /// readings arrive at least that often (see ``DiveDetector``).
    public var sampleIntervalSeconds = 1.0
    /// Ascent faster than this is a warning, m/min (default 10, the common
    /// recreational limit).
    public var ascentRateLimitMetresPerMinute = 10.0
    /// Ascent rate is measured over this window, s.
    public var ascentWindowSeconds = 4.0
    /// The safety-stop band, m, and how long it takes, s (3 minutes at
    /// 3–6 m after a dive deeper than `safetyStopAfterDepthMetres`).
    public var safetyStopBand: ClosedRange<Double> = 3...6
    public var safetyStopSeconds = 180.0
    public var safetyStopAfterDepthMetres = 10.0
    public init() {}
}

/// One logged point of a dive.
public struct DiveSample: Sendable, Equatable {
    /// Seconds since the dive started.
    public var time: Double
    /// m, positive down; NaN when the agent withheld it (past the maximum
    /// depth, sensor range).
    public var depth: Double
    public var temperature: Double
    public var pressure: Double
    /// m/min, positive upward.
    public var ascentRate: Double
    public var ascentWarning: Bool
    public init(time: Double, depth: Double, temperature: Double, pressure: Double, ascentRate: Double, ascentWarning: Bool) {
        self.time = time; self.depth = depth; self.temperature = temperature; self.pressure = pressure
        self.ascentRate = ascentRate; self.ascentWarning = ascentWarning
    }
}

public enum DiveAction: Sendable, Equatable {
    /// A dive starts at this monotonic time with this surface pressure.
    case start(atNanoseconds: UInt64, surfacePressure: Double)
    case record(DiveSample)
    /// The dive ended (the diver surfaced) at this monotonic time.
    case end(atNanoseconds: UInt64)
}

public struct DiveDetectorState: Sendable, Equatable {
    public var diveStart: UInt64?
    public var surfacedAt: UInt64?
    public var lastRecorded: Double?
    public var recent: [(t: Double, depth: Double)] = []
    public var maxDepth = 0.0
    public var safetyStop = 0.0
    public var lastTime: Double?
    /// Dive time (s) from which the next logged sample is due; nil: the next reading.
    public var nextDue: Double?
    public init() {}
    public static func == (a: Self, b: Self) -> Bool {
        a.diveStart == b.diveStart && a.surfacedAt == b.surfacedAt && a.lastRecorded == b.lastRecorded
            && a.recent.map(\.t) == b.recent.map(\.t) && a.recent.map(\.depth) == b.recent.map(\.depth)
            && a.maxDepth == b.maxDepth && a.safetyStop == b.safetyStop && a.lastTime == b.lastTime
            && a.nextDue == b.nextDue
    }
    /// Resumes a dive (after a restart of the logger) that started at `start`.
    /// The next sample is logged one interval after the last stored one.
    public static func resuming(start: UInt64, lastSampleTime: Double, maxDepth: Double, safetyStop: Double,
                                interval: Double = DiveSettings().sampleIntervalSeconds) -> Self {
        var s = Self()
        s.diveStart = start; s.lastRecorded = lastSampleTime; s.maxDepth = maxDepth; s.safetyStop = safetyStop
        s.nextDue = lastSampleTime + interval
        return s
    }
}

/// When a dive starts and ends and which readings are logged.
///
/// A dive starts with a `submerged` reading and ends `surfaceEndSeconds`
/// after the diver surfaced (`notSubmerged`); a shorter surface interval is
/// part of the dive and logged like the rest. A reading whose state is
/// `unknown` (the depth sensor stopped or restarted) neither surfaces the
/// diver nor is logged: the dive stays open across a sensor outage.
///
/// Logging is on a time grid, like the protocol's ``Decimator``: a reading
/// within `interval/16` of its due time is logged and the due time advances
/// by one interval (from the grid, or from an early reading), so capture
/// jitter does not stretch the spacing. With readings every 0.34 s a grid
/// alone would still take 1.02 s steps at best; with readings every 0.30 s
/// it would take 1.2 s steps. So a reading is also logged early when the
/// next one, expected one reading period later, would come later than
/// `due + interval/16`: logged points are then never more than
/// interval + interval/16 apart while readings arrive that often.
public enum DiveDetector {
    public static func update(_ st: inout DiveDetectorState, _ x: SubmersionSample, _ s: DiveSettings) -> [DiveAction] {
        var out: [DiveAction] = []
        let ns = x.timestampNs
        if st.diveStart == nil {
            guard x.state == .submerged else { return [] }
            st.diveStart = ns
            st.lastRecorded = nil; st.recent = []; st.maxDepth = 0; st.safetyStop = 0; st.lastTime = nil; st.nextDue = nil
            out.append(.start(atNanoseconds: ns, surfacePressure: x.surfacePressure))
        }
        let start = st.diveStart!
        let t = Double(Int64(bitPattern: ns &- start)) / 1e9
        switch x.state {
        case .unknown:
            // No depth to log, and not a surfacing: the dive goes on when the sensor is back.
            return out
        case .notSubmerged:
            if st.surfacedAt == nil {
                st.surfacedAt = ns
                out.append(.record(logged(&st, x, t: t, s)))   // the moment it surfaced
            } else if due(st, t: t, s) {
                out.append(.record(logged(&st, x, t: t, s)))   // the surface interval, on the grid
            } else {
                track(&st, x, t: t, s)
            }
            if Double(ns &- st.surfacedAt!) / 1e9 >= s.surfaceEndSeconds {
                out.append(.end(atNanoseconds: st.surfacedAt!))
                st = DiveDetectorState()
            }
            return out
        case .submerged:
            st.surfacedAt = nil
            if due(st, t: t, s) { out.append(.record(logged(&st, x, t: t, s))) } else { track(&st, x, t: t, s) }
            return out
        }
    }

    /// Whether the reading at dive time `t` is logged (see the type's notes).
    static func due(_ st: DiveDetectorState, t: Double, _ s: DiveSettings) -> Bool {
        guard let due = st.nextDue else { return true }
        let tolerance = s.sampleIntervalSeconds / 16
        if t + tolerance >= due { return true }
        // The next reading, one period on, would be late: take this one.
        if let last = st.lastTime, t > last, t + (t - last) > due + tolerance { return true }
        return false
    }

    /// A logged sample; advances the grid.
    static func logged(_ st: inout DiveDetectorState, _ x: SubmersionSample, t: Double, _ s: DiveSettings) -> DiveSample {
        let tolerance = s.sampleIntervalSeconds / 16
        var next = (st.nextDue.map { min(t, $0) } ?? t) + s.sampleIntervalSeconds
        if next + tolerance <= t { next = t + s.sampleIntervalSeconds }   // after a gap: a new grid
        st.nextDue = next
        st.lastRecorded = t
        return sample(&st, x, t: t, s)
    }

    /// Ascent-rate window and safety-stop timer, for every reading.
    static func track(_ st: inout DiveDetectorState, _ x: SubmersionSample, t: Double, _ s: DiveSettings) {
        let dt = st.lastTime.map { max(0, t - $0) } ?? 0
        st.lastTime = t
        guard x.depth.isFinite else { return }
        st.maxDepth = max(st.maxDepth, x.depth)
        st.recent.append((t, x.depth))
        while let first = st.recent.first, t - first.t > s.ascentWindowSeconds { st.recent.removeFirst() }
        if st.maxDepth > s.safetyStopAfterDepthMetres, s.safetyStopBand.contains(x.depth) { st.safetyStop += dt }
    }

    static func sample(_ st: inout DiveDetectorState, _ x: SubmersionSample, t: Double, _ s: DiveSettings) -> DiveSample {
        track(&st, x, t: t, s)
        var rate = 0.0
        if let first = st.recent.first, let last = st.recent.last, last.t - first.t > 0.5 {
            rate = (first.depth - last.depth) / (last.t - first.t) * 60
        }
        return DiveSample(time: t, depth: x.depth, temperature: x.temperature, pressure: x.pressure,
                          ascentRate: rate, ascentWarning: rate > s.ascentRateLimitMetresPerMinute)
    }
}

/// What `list` and `show` report for a dive, computed from its samples.
public struct DiveSummary: Sendable, Equatable {
    public var number: Int64
    /// Start, Unix time, ns.
    public var startUnixNanoseconds: Int64
    public var durationSeconds: Double
    public var maxDepth: Double
    /// Time-weighted mean depth, m.
    public var meanDepth: Double
    public var minTemperature: Double
    public var surfacePressure: Double
    public var water: String
    public var ascentWarnings: Int
    public var maxAscentRate: Double
    public var safetyStopSeconds: Double
    public var sampleCount: Int
    /// False while the dive is still being logged (or the logger stopped mid-dive).
    public var complete: Bool

    public static func compute(number: Int64, startUnixNanoseconds: Int64, endSeconds: Double?, surfacePressure: Double,
                               water: String, complete: Bool, samples: [DiveSample], _ s: DiveSettings = DiveSettings()) -> DiveSummary {
        let depths = samples.filter { $0.depth.isFinite }
        var area = 0.0, span = 0.0
        for (a, b) in zip(depths, depths.dropFirst()) {
            let dt = b.time - a.time
            area += (a.depth + b.depth) / 2 * dt
            span += dt
        }
        var stop = 0.0, deepest = 0.0
        for (a, b) in zip(samples, samples.dropFirst()) where a.depth.isFinite {
            deepest = max(deepest, a.depth)
            if deepest > s.safetyStopAfterDepthMetres, s.safetyStopBand.contains(a.depth) { stop += b.time - a.time }
        }
        let temps = samples.map(\.temperature).filter(\.isFinite)
        return DiveSummary(number: number, startUnixNanoseconds: startUnixNanoseconds,
                           durationSeconds: endSeconds ?? samples.last?.time ?? 0,
                           maxDepth: depths.map(\.depth).max() ?? .nan,
                           meanDepth: span > 0 ? area / span : (depths.first?.depth ?? .nan),
                           minTemperature: temps.min() ?? .nan, surfacePressure: surfacePressure, water: water,
                           ascentWarnings: samples.filter(\.ascentWarning).count,
                           maxAscentRate: samples.map(\.ascentRate).max() ?? 0, safetyStopSeconds: stop,
                           sampleCount: samples.count, complete: complete)
    }
}
