// Step detection wherever the board is carried: orientation-free (the
// magnitudes of the specific force and, when there is one, of the angular
// rate), causal, one sample at a time, at any rate from 25 Hz up.
//
//  1. |a| band-passed (Butterworth high-pass 0.6 Hz, low-pass 3.5 Hz: walking
//     and running cadences are 1-3.5 steps/s) into x.
//  2. A step candidate is a local maximum of x (confirmed one sample later)
//     above max(kRms · RMS of x over the last ~2 s, floorMs2), after x went
//     below zero since the previous step (one step = one oscillation).
//  3. The gait period T (GaitPeriodEstimator: half the stride found in the
//     5 s autocorrelation of |a| and |ω|, every 0.25 s; trusted when the
//     stride repeats, R(2T) ≥ 0.5) sets a refractory time of
//     refractoryFraction · T, which rejects the second bump of a heel strike,
//     and marks an interval near 2 T (3 T) as two (three) steps whose bumps
//     were too weak to see (a thigh, a wrist or a bag often shows the stride
//     more than the step; a back pocket sees one leg's impacts).
//  4. Regulation: steps are counted only once `regulationSteps` candidates
//     came at regular intervals (each within ±regularity of their median, or
//     each stride, a pair of intervals, within ±regularity of theirs; agreeing
//     with the period T), T has held for `rhythmSeconds` and the last
//     `steadyStrideCount` strides carry alike energy (steadyStrides); they are
//     then counted at once (the resume event). A gap longer than
//     max(pauseSeconds, 2.5 × the last interval), an interval out of rhythm
//     (±walkingRegularity of T), strides of unlike strength or a period no
//     longer trusted end the walk (the pause event). This is what rejects
//     a board shaken by hand or riding in a car.
//  5. Heel strikes: when the board turns like a limb (band-passed |ω| RMS ≥
//     impactGateGyroRadS), a walk starts and goes on only while the envelope
//     of |a| above impactHighPassHz repeats with the gait
//     (GaitPeriod.impactRegularity ≥ impactRegularity): a thigh turning a
//     bicycle's pedals swings like a walking one, with no foot striking.
//
// Latency: while walking a step is counted one sample after the peak of the
// band-passed magnitude, which trails the foot strike by the filters' group
// delay (about 0.1 s at 1.8 steps/s) plus up to a quarter period; the first
// steps of a walk are counted together once the rhythm is established (about
// 5-7 s; the run's earlier steps in the same rhythm are counted then too); a
// pause is reported `pauseSeconds` (2 s) after the last step.

public struct StepOutput: Sendable, Equatable {
    /// Steps since the detector started (never decreases).
    public var steps = 0
    /// Steps added by this sample (0 most of the time).
    public var newSteps = 0
    /// steps/s over the trailing cadence window (0 when not walking).
    public var cadence = 0.0
    /// Distance since start, m (from the stride model).
    public var distanceMeters = 0.0
    /// A pause or resume happened at this sample.
    public var event: PedometerEventType?
    /// True while counting (between resume and pause).
    public var isWalking = false
    /// Time of the first step of the walk being counted, s (set at its resume).
    public var walkStartTime = 0.0
    public init() {}
}

public struct StepDetector: Sendable {
    public struct Settings: Sendable, Equatable {
        public var sampleRateHz = 100.0
        public var highPassHz = 0.6
        public var lowPassHz = 3.5
        /// Threshold on x: max(kRms · RMS, floorMs2).
        public var kRms = 0.6
        public var floorMs2 = 0.25
        /// Time constant of the RMS, s.
        public var rmsSeconds = 2.0
        /// Shortest step interval, s (4 steps/s).
        public var minIntervalSeconds = 0.25
        /// Refractory time as a share of the gait period.
        public var refractoryFraction = 0.6
        /// Regular candidates needed before counting.
        public var regulationSteps = 4
        /// Each interval within ± this share of the median.
        public var regularity = 0.25
        /// While walking, each interval within ± this share of the period T (of
        /// the previous interval while T is not trusted)
        /// (else the walk ends: a shaken board loses its rhythm).
        public var walkingRegularity = 0.4
        /// A gap longer than max(this, 2.5 × last interval) is a pause, s.
        public var pauseSeconds = 2.0
        /// Strides compared in strength before a walk is counted, and the
        /// largest RMS ratio between them (steadyStrides).
        public var steadyStrideCount = 4
        public var steadyStrideRatio = 1.5
        /// How long the gait period must have held before a walk is counted, s.
        public var rhythmSeconds = 3.0
        /// Window of the cadence, s.
        public var cadenceSeconds = 6.0
        public var stride = StrideModel()
        public var gait = GaitPeriodEstimator.Settings()
        public var periodHopSeconds = 0.25
        /// The impact envelope: |a| high-passed here, Hz (4th order: two
        /// Butterworth sections; well above the gait's band and its first
        /// harmonics, where a heel strike's jolt still is), squared and
        /// averaged over `impactSeconds`.
        public var impactHighPassHz = 10.0
        public var impactSeconds = 0.05
        /// When the board turns this much (band-passed |ω| RMS, rad/s: a
        /// limb swinging), a walk needs impacts in its rhythm
        /// (`GaitPeriod.impactRegularity` ≥ `impactRegularity`): a thigh
        /// turning the pedals of a bicycle swings as a walking one does,
        /// without a foot striking the ground.
        public var impactGateGyroRadS = 0.5
        public var impactRegularity = 0.4
        public init() {}
        public init(sampleRateHz: Double, stride: StrideModel = StrideModel()) {
            self.sampleRateHz = sampleRateHz; self.stride = stride
        }
    }

    public struct State: Sendable {
        var hp = BiquadState(), lp = BiquadState()
        var hpG = BiquadState(), lpG = BiquadState()   // |ω|
        var gyroStarted = false
        var msG = 0.0                                   // mean square of band-passed |ω|, (rad/s)²
        var started = false
        var x1 = 0.0, x2 = 0.0, t1 = 0.0      // x and t one and two samples ago
        var ms = 0.0                            // mean square of x
        var wentBelowZero = true
        var lastPeak = -1e9, lastInterval = 0.0
        var walkStart = 0.0                     // time of the first step of the walk being counted
        var rhythmSince = 0.0                   // since when the gait period has been trusted and steady
        var walking = false
        var pending: [Double] = []              // candidate times while searching
        var pendingUnits: [Int] = []            // steps each pending interval stands for
        var stepTimes: Ring                      // counted step times (cadence)
        var grid: Ring                           // x on the 50 Hz grid
        var gridGyro: Ring                       // band-passed |ω| on the same grid
        var hpI = BiquadState(), hpI2 = BiquadState(), impact = 0.0    // high-passed |a|, its squared average (m/s²)²
        var gridImpact: Ring                     // the impact envelope on the same grid
        var xg = 0.0
        var nextGrid = 0.0, nextHop = 0.0
        var scratch: [Double]
        public internal(set) var period = GaitPeriod()
        public internal(set) var output = StepOutput()
    }

    public private(set) var settings: Settings
    private(set) var hpC: BiquadCoefficients, lpC: BiquadCoefficients, msAlpha: Double
    private(set) var hpIC: BiquadCoefficients, impactAlpha: Double
    public private(set) var state: State

    public init(_ settings: Settings = Settings()) {
        precondition(settings.sampleRateHz >= 10, "StepDetector: sample rate must be at least 10 Hz")
        self.settings = settings
        hpC = .highPass(hz: settings.highPassHz, sampleRateHz: settings.sampleRateHz)
        lpC = .lowPass(hz: settings.lowPassHz, sampleRateHz: settings.sampleRateHz)
        msAlpha = 1 / (settings.rmsSeconds * settings.sampleRateHz)
        hpIC = .highPass(hz: min(settings.impactHighPassHz, 0.4 * settings.sampleRateHz), sampleRateHz: settings.sampleRateHz)
        impactAlpha = min(1, 1 / (settings.impactSeconds * settings.sampleRateHz))
        let gridCount = settings.gait.gridCount
        var pending = [Double](); pending.reserveCapacity(Self.runCapacity + 2)
        var units = [Int](); units.reserveCapacity(Self.runCapacity + 2)
        state = State(pending: pending, pendingUnits: units, stepTimes: Ring(capacity: 64), grid: Ring(capacity: gridCount),
                      gridGyro: Ring(capacity: gridCount), gridImpact: Ring(capacity: gridCount), scratch: [Double](repeating: 0, count: settings.gait.maxLag + 4))
    }

    /// Goes on at another sample rate (the IMU's rate changed): the filters
    /// take the new rate's coefficients and keep their state; everything
    /// else (the walk being recognised, the counts, the period on its 50 Hz
    /// grid) is on time stamps and carries on.
    public mutating func setSampleRate(_ hz: Double) {
        precondition(hz >= 10, "StepDetector: sample rate must be at least 10 Hz")
        settings.sampleRateHz = hz
        hpC = .highPass(hz: settings.highPassHz, sampleRateHz: hz)
        lpC = .lowPass(hz: settings.lowPassHz, sampleRateHz: hz)
        msAlpha = 1 / (settings.rmsSeconds * hz)
        hpIC = .highPass(hz: min(settings.impactHighPassHz, 0.4 * hz), sampleRateHz: hz)
        impactAlpha = min(1, 1 / (settings.impactSeconds * hz))
    }

    /// Whether the current rhythm may be a walk as far as impacts go: a
    /// board that turns like a limb needs heel strikes in the rhythm.
    var impactsAgree: Bool {
        !(state.msG.squareRoot() >= settings.impactGateGyroRadS) || state.period.impactRegularity >= settings.impactRegularity
    }

    /// The current step period, s, if trusted: half a stride that repeats
    /// (GaitPeriodEstimator).
    var trustedPeriod: Double? {
        state.period.stepSeconds > 0 ? state.period.stepSeconds : nil
    }

    /// Feeds one sample taken at `t` seconds: accelerometer m/s² and
    /// gyroscope rad/s (NaN without one), any frame.
    @discardableResult
    public mutating func update(t: Double, ax: Double, ay: Double, az: Double,
                                gx: Double = .nan, gy: Double = .nan, gz: Double = .nan) -> StepOutput {
        let m = (ax * ax + ay * ay + az * az).squareRoot()
        let w = (gx * gx + gy * gy + gz * gz).squareRoot()
        if w.isFinite {
            if !state.gyroStarted {
                state.gyroStarted = true
                state.hpG.settle(at: w, hpC); state.lpG.settle(at: 0, lpC)
            }
            state.xg = state.lpG.step(state.hpG.step(w, hpC), lpC)
        } else {
            state.xg = 0
        }
        state.msG += msAlpha * (state.xg * state.xg - state.msG)
        state.output.newSteps = 0
        state.output.event = nil
        guard m.isFinite else { return state.output }
        if !state.started {
            state.started = true
            state.hp.settle(at: m, hpC)
            state.lp.settle(at: 0, lpC)
            state.hpI.settle(at: m, hpIC); state.hpI2.settle(at: 0, hpIC)
            state.nextGrid = t; state.nextHop = t + settings.periodHopSeconds
            state.t1 = t
        }
        let x = state.lp.step(state.hp.step(m, hpC), lpC)
        let jolt = state.hpI2.step(state.hpI.step(m, hpIC), hpIC)
        state.impact += impactAlpha * (jolt * jolt - state.impact)
        // one knock (the board bumped, dropped on a table) must not deafen the
        // detector for the RMS's time constant: a sample adds at most (4 RMS)²
        state.ms += msAlpha * (min(x * x, 16 * state.ms + settings.floorMs2 * settings.floorMs2) - state.ms)
        while t >= state.nextGrid {
            state.grid.append(x)
            state.gridGyro.append(state.xg)
            state.gridImpact.append(state.impact)
            state.nextGrid += 1 / PeriodEstimator.Settings.gridHz
        }
        if t >= state.nextHop {
            state.nextHop += settings.periodHopSeconds
            if state.nextHop < t { state.nextHop = t + settings.periodHopSeconds }
            let before = state.period.stepSeconds
            state.period = GaitPeriodEstimator.estimate(acc: state.grid, gyro: state.gridGyro, gyroRms: state.msG.squareRoot(),
                                                        impacts: state.gridImpact, settings.gait, scratch: &state.scratch)
            let now = state.period.stepSeconds
            // how long the same rhythm has held (±regularity from one estimate to the next)
            if now == 0 || before == 0 || abs(now - before) > settings.regularity * before { state.rhythmSince = t }
        }
        // a local maximum at the previous sample
        if state.x1 >= state.x2 && state.x1 > x {
            candidate(at: state.t1, value: state.x1)
        }
        if x < 0 { state.wentBelowZero = true }
        // a walk ends after a long gap
        if state.walking && t - state.lastPeak > max(settings.pauseSeconds, 2.5 * state.lastInterval) {
            state.walking = false
            state.pending.removeAll(keepingCapacity: true)
            state.pendingUnits.removeAll(keepingCapacity: true)
            state.output.event = .pause
        }
        state.x2 = state.x1; state.x1 = x; state.t1 = t
        state.output.isWalking = state.walking
        state.output.cadence = state.walking ? cadence(now: t) : 0
        return state.output
    }

    mutating func candidate(at tp: Double, value v: Double) {
        let threshold = max(settings.kRms * state.ms.squareRoot(), settings.floorMs2)
        guard v > threshold, state.wentBelowZero else { return }
        let T = trustedPeriod
        let refractory = max(settings.minIntervalSeconds, settings.refractoryFraction * (T ?? 0))
        let d = tp - state.lastPeak
        guard d >= refractory else { return }
        state.wentBelowZero = false
        let gapLimit = max(settings.pauseSeconds, 2.5 * state.lastInterval)
        // how many steps this interval stands for: two or three when it spans as many periods
        var units = 1
        if let T, d >= 1.6 * T && d <= 3.5 * T { units = d <= 2.6 * T ? 2 : 3 }
        state.lastPeak = tp
        if state.walking {
            let per = d / Double(units)
            let ref = T ?? 0
            // in rhythm: this step, or the stride it ends (a limb's two humps a
            // stride need not be evenly spaced)
            let inRhythm = abs(per - ref) <= settings.walkingRegularity * ref
                || (units == 1 && abs(per + state.lastInterval - 2 * ref) <= settings.regularity * 2 * ref)
            if let T, d <= gapLimit && inRhythm && impactsAgree && steadyStrides(stepSeconds: T, since: state.walkStart, now: tp) {
                state.lastInterval = per
                count(units, endingAt: tp, interval: d)
                return
            }
            // out of rhythm, or the stride no longer repeats (a walk repeats
            // stride after stride; a car's bouncing does not for long): the
            // walk ends here; this candidate may start the next
            state.walking = false
            state.output.event = .pause
            state.pending.removeAll(keepingCapacity: true)
            state.pendingUnits.removeAll(keepingCapacity: true)
            state.pending.append(tp); state.pendingUnits.append(1)
            return
        }
        if d > gapLimit || state.pending.isEmpty {
            state.pending.removeAll(keepingCapacity: true)
            state.pendingUnits.removeAll(keepingCapacity: true)
            state.pending.append(tp); state.pendingUnits.append(1)
            return
        }
        state.pending.append(tp); state.pendingUnits.append(units)
        state.lastInterval = d / Double(units)
        let n = settings.regulationSteps
        if state.pending.count > Self.runCapacity {
            state.pending.removeFirst(); state.pendingUnits.removeFirst()
            state.pendingUnits[0] = 1
        }
        guard state.pending.count >= n, let median = regular(last: n) else { return }
        // commit the run: the regular candidates, and those before them that
        // kept the same rhythm (seen before the period could be trusted)
        var first = state.pending.count - n
        // earlier intervals may span as many steps as the run's own do, no
        // more (a run of step peaks does not make a pause before it two steps)
        var runUnits = 1
        for i in (first + 1)..<state.pending.count { runUnits = max(runUnits, state.pendingUnits[i]) }
        while first > 0 {
            let d = state.pending[first] - state.pending[first - 1]
            let units = min(runUnits, max(1, Int((d / median).rounded())))
            guard abs(d / Double(units) - median) <= settings.regularity * median else { break }
            state.pendingUnits[first] = units
            first -= 1
        }
        state.walking = true
        state.walkStart = state.pending[first]
        state.output.walkStartTime = state.walkStart
        state.output.event = .resume
        count(1, endingAt: state.pending[first], interval: 0)
        for i in (first + 1)..<state.pending.count {
            count(state.pendingUnits[i], endingAt: state.pending[i], interval: state.pending[i] - state.pending[i - 1])
        }
        state.pending.removeAll(keepingCapacity: true)
        state.pendingUnits.removeAll(keepingCapacity: true)
    }

    /// Candidates kept while searching (the run counted when it turns regular).
    static let runCapacity = 16

    /// The median interval per step of the newest `n` pending candidates, if
    /// each interval is within ±regularity of it and the signal's own period
    /// agrees; nil otherwise. No allocation (n ≤ 8 intervals in an InlineArray
    /// on the stack; no unsafe pointer).
    func regular(last n: Int) -> Double? {
        let k = min(n - 1, 8)
        var v = InlineArray<8, Double>(repeating: 0)
        let base = state.pending.count - k
        for j in 0..<k {
            let i = base + j
            v[j] = (state.pending[i] - state.pending[i - 1]) / Double(state.pendingUnits[i])
        }
        // strides: each pair of consecutive intervals (two humps of one
        // limb's swing may be unevenly spaced while the stride is regular)
        var stridesRegular = k >= 3
        var unitCount = 0
        for j in 0..<k { unitCount += state.pendingUnits[base + j] }
        let strideMean = 2 * (state.pending[state.pending.count - 1] - state.pending[base - 1]) / Double(max(unitCount, 1))
        for j in 0..<(k - 1) where abs(v[j] + v[j + 1] - strideMean) > settings.regularity * strideMean { stridesRegular = false }
        // insertion sort of k values
        for a in 1..<max(k, 1) { var b = a; while b > 0 && v[b - 1] > v[b] { v.swapAt(b - 1, b); b -= 1 } }
        let median = stridesRegular ? strideMean / 2 : v[k / 2]
        guard median >= settings.minIntervalSeconds && median <= 1.25 * settings.gait.maxStepSeconds else { return nil }
        if !stridesRegular {
            for j in 0..<k where abs(v[j] - median) > settings.regularity * median { return nil }
        }
        // and the signal itself is periodic at that interval
        guard let T = trustedPeriod, abs(median - T) <= settings.regularity * T else { return nil }
        // the rhythm has held for a while (a car's bouncing looks periodic for a moment)
        guard state.pending[state.pending.count - 1] - state.rhythmSince >= settings.rhythmSeconds else { return nil }
        // with heel strikes in it when the board swings like a limb
        guard impactsAgree else { return nil }
        // and its strides are alike in strength
        guard steadyStrides(stepSeconds: T, since: -.infinity, now: state.pending[state.pending.count - 1]) else { return nil }
        return median
    }

    /// Whether the last `steadyStrideCount` strides (2T each, on the grid,
    /// those after `since` only; true when fewer than two fit)
    /// carry alike energy: RMS max/min ≤ `steadyStrideRatio`. A walk keeps its
    /// strength stride after stride (a few % to 10 % apart); a resonance driven
    /// by noise (a car's body on its suspension, 1-1.5 Hz) has a Rayleigh
    /// envelope and does not, however periodic it looks over a few seconds.
    func steadyStrides(stepSeconds T: Double, since: Double, now: Double) -> Bool {
        let g = state.grid
        let len = Int((2 * T * GaitPeriodEstimator.Settings.gridHz).rounded())
        guard len > 0 else { return true }
        let fit = min(Double(settings.steadyStrideCount), ((now - since) / (2 * T)).rounded(.down))
        let k = min(Int(fit), g.count / len)
        guard k >= 2 else { return true }
        var lo = Double.infinity, hi = 0.0
        for s in 0..<k {
            var e = 0.0
            let end = g.count - s * len
            for i in (end - len)..<end { e += g[i] * g[i] }
            lo = min(lo, e); hi = max(hi, e)
        }
        return hi <= settings.steadyStrideRatio * settings.steadyStrideRatio * lo
    }

    mutating func count(_ units: Int, endingAt tp: Double, interval: Double) {
        for k in 0..<units {
            let ts = tp - interval * Double(units - 1 - k) / Double(units)
            state.stepTimes.append(ts)
        }
        state.output.steps += units
        state.output.newSteps += units
        let c = cadence(now: tp)
        let cad = c > 0 ? c : (interval > 0 ? Double(units) / interval : 0)
        state.output.distanceMeters += Double(units) * settings.stride.stepLength(cadence: cad)
    }

    /// (n − 1) / (t_last − t_first) over the counted steps of the last window.
    func cadence(now t: Double) -> Double {
        let r = state.stepTimes
        guard r.count >= 2 else { return 0 }
        let last = r[r.count - 1]
        var first = last, n = 1
        var i = r.count - 2
        while i >= 0 && r[i] > t - settings.cadenceSeconds { first = r[i]; n += 1; i -= 1 }
        return n >= 2 && last > first ? Double(n - 1) / (last - first) : 0
    }
}
