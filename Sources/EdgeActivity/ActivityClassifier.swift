// What the wearer is doing (Core Motion's CMMotionActivity): stationary,
// walking, running, cycling, automotive or unknown, with a confidence, from
// hand-designed orientation-free features and fixed thresholds. No learned
// parameters.
//
// Features over trailing windows, decided every `hopSeconds` (0.5 s):
//   std       standard deviation of |a| over `windowSeconds` (2.56 s), m/s²
//   stdShort  the same over the last `shortSeconds` (1 s): stillness is
//             recognised within a second of it starting
//   per, T    periodicity and step period of the band-passed |a|
//             (PeriodEstimator over the window)
//   hf        share of the variance of |a| above 5 Hz (engine vibration)
//   gyrShort  mean |ω| over the last `shortSeconds`, rad/s (when there is a gyroscope)
//   walking   the pedometer is counting (StepDetector.isWalking) and its cadence
// Rules (thresholds from textbook values: a still device shows < 0.3 m/s² of
// std, walking 1-3 m/s², running > 5 m/s² at ≥ 2.5 steps/s; pedalling
// 0.6-1.3 Hz; a car's vibration sits above 5 Hz):
//   stdShort < stillStd and gyrShort < stillGyro     → stationary (high < ½ stillStd, else medium)
//   the pedometer counts, cadence ≥ 2.5, std ≥ 5     → running (high)
//   the pedometer counts                             → walking (high)
//   per > 0.3, std ≥ 5, step ≥ 2.5/s                 → running (medium)
//   per > 0.3, std ≥ 0.8, 1.2-2.8 steps/s            → walking (medium)
//   per > 0.3, std < 0.8, 0.6-1.3 Hz                 → cycling (low)
//   std < 2 and hf > 0.4 for vehicleConfirmSeconds   → automotive (low; unknown before)
//   0.8 ≤ std < 7                                    → walking (low)
//   otherwise                                        → unknown (low)
// A new label replaces the current one when two decisions in a row agree
// (stationary at high confidence at once); `startDate` is the time of the first
// of them. In a vehicle seen within `vehicleMemorySeconds`, a stationary
// decision keeps the automotive flag too (a car at a red light).
//
// Latency: a change is reported 0.5-1 s after the window shows it; stillness
// within about 1.5 s of the last movement.
@_exported import EdgeValues

/// One label, as the offline tool writes it.
public enum ActivityKind: String, Sendable, CaseIterable {
    case stationary, walking, running, cycling, automotive, unknown
    public var flag: ActivityFlags {
        switch self {
        case .stationary: .stationary
        case .walking: .walking
        case .running: .running
        case .cycling: .cycling
        case .automotive: .automotive
        case .unknown: .unknown
        }
    }
}

public struct ActivityOutput: Sendable, Equatable {
    public var kind = ActivityKind.unknown
    public var flags = ActivityFlags.unknown
    public var confidence = ActivityConfidence.low
    /// When the current activity began, s (the input's clock).
    public var startTime = 0.0
    /// True at the sample where kind, flags or confidence changed.
    public var changed = false
    public init() {}
}

public struct ActivityClassifier: Sendable {
    public struct Settings: Sendable, Equatable {
        public var sampleRateHz = 100.0
        public var windowSeconds = 2.56
        public var shortSeconds = 1.0
        public var hopSeconds = 0.5
        /// First decision after this much data, s.
        public var firstDecisionSeconds = 0.5
        public var stillStd = 0.3
        public var stillGyro = 0.4
        public var vehicleMemorySeconds = 60.0
        /// Vehicle-like windows needed in a row before automotive, s.
        public var vehicleConfirmSeconds = 5.0
        public var period = PeriodEstimator.Settings(windowSeconds: 2.56, maxLagSeconds: 1.25)
        public init() {}
        public init(sampleRateHz: Double) { self.sampleRateHz = sampleRateHz }
    }

    public struct State: Sendable {
        var mag: Ring, magHF: Ring, bp: Ring, gyr: Ring
        var hp = BiquadState(), lp = BiquadState(), hf = BiquadState()
        var started = false
        var t0 = 0.0, nextGrid = 0.0, nextHop = 0.0
        var scratch: [Double]
        var hasCandidate = false, candidate = ActivityKind.unknown, candidateTime = 0.0
        var lastVehicle = -1e9
        var vehicleSince: Double?
        public internal(set) var output = ActivityOutput()
    }

    public private(set) var settings: Settings
    private(set) var hpC: BiquadCoefficients, lpC: BiquadCoefficients, hfC: BiquadCoefficients
    public private(set) var state: State

    public init(_ settings: Settings = Settings()) {
        precondition(settings.sampleRateHz >= 10, "ActivityClassifier: sample rate must be at least 10 Hz")
        self.settings = settings
        hpC = .highPass(hz: 0.6, sampleRateHz: settings.sampleRateHz)
        lpC = .lowPass(hz: 3.5, sampleRateHz: settings.sampleRateHz)
        hfC = .highPass(hz: min(5.0, 0.4 * settings.sampleRateHz), sampleRateHz: settings.sampleRateHz)
        let n = Int((settings.windowSeconds * PeriodEstimator.Settings.gridHz).rounded())
        state = State(mag: Ring(capacity: n), magHF: Ring(capacity: n), bp: Ring(capacity: n), gyr: Ring(capacity: n),
                      scratch: [Double](repeating: 0, count: Int(settings.period.maxLagSeconds * PeriodEstimator.Settings.gridHz) + 4))
    }

    /// Goes on at another sample rate: new filter coefficients, the state
    /// (windows on the 50 Hz grid, the activity in effect and its start) kept.
    public mutating func setSampleRate(_ hz: Double) {
        precondition(hz >= 10, "ActivityClassifier: sample rate must be at least 10 Hz")
        settings.sampleRateHz = hz
        hpC = .highPass(hz: 0.6, sampleRateHz: hz)
        lpC = .lowPass(hz: 3.5, sampleRateHz: hz)
        hfC = .highPass(hz: min(5.0, 0.4 * hz), sampleRateHz: hz)
    }

    /// Feeds one sample: accelerometer (m/s²), gyroscope magnitude (rad/s,
    /// NaN without a gyroscope) and the pedometer's output for the same sample.
    @discardableResult
    public mutating func update(t: Double, ax: Double, ay: Double, az: Double, gyroMagnitude: Double,
                                steps: StepOutput) -> ActivityOutput {
        state.output.changed = false
        let m = (ax * ax + ay * ay + az * az).squareRoot()
        guard m.isFinite else { return state.output }
        if !state.started {
            state.started = true
            state.hp.settle(at: m, hpC); state.lp.settle(at: 0, lpC); state.hf.settle(at: m, hfC)
            state.t0 = t; state.nextGrid = t; state.nextHop = t + settings.firstDecisionSeconds
            state.output.startTime = t
        }
        let bp = state.lp.step(state.hp.step(m, hpC), lpC)
        let hf = state.hf.step(m, hfC)
        while t >= state.nextGrid {
            state.mag.append(m); state.magHF.append(hf); state.bp.append(bp); state.gyr.append(gyroMagnitude)
            state.nextGrid += 1 / PeriodEstimator.Settings.gridHz
        }
        if t >= state.nextHop {
            state.nextHop += settings.hopSeconds
            if state.nextHop < t { state.nextHop = t + settings.hopSeconds }
            decide(t: t, steps: steps)
        }
        return state.output
    }

    /// Mean and standard deviation of the newest `count` values of a ring.
    static func stats(_ r: Ring, last count: Int) -> (mean: Double, std: Double) {
        let n = min(count, r.count)
        guard n > 0 else { return (.nan, .nan) }
        var s = 0.0, s2 = 0.0
        for i in (r.count - n)..<r.count { s += r[i]; s2 += r[i] * r[i] }
        let mean = s / Double(n)
        return (mean, max(0, s2 / Double(n) - mean * mean).squareRoot())
    }

    mutating func decide(t: Double, steps: StepOutput) {
        let grid = PeriodEstimator.Settings.gridHz
        let all = state.mag.count
        let std = Self.stats(state.mag, last: all).std
        let stdShort = Self.stats(state.mag, last: Int(settings.shortSeconds * grid)).std
        let hfStd = Self.stats(state.magHF, last: all).std
        let hfShare = std > 1e-9 ? min(1, hfStd * hfStd / (std * std)) : 0
        // stillness is judged on the short window alone (gyroscope too)
        let gyr = Self.stats(state.gyr, last: Int(settings.shortSeconds * grid)).mean   // NaN without a gyroscope
        let period = PeriodEstimator.estimate(state.bp, settings.period, scratch: &state.scratch)
        let per = period.periodicity
        let stepRate = period.stepSeconds > 0 ? 1 / period.stepSeconds : 0
        let gyroStill = !(gyr >= settings.stillGyro)              // true when NaN

        var kind = ActivityKind.unknown, confidence = ActivityConfidence.low
        if stdShort < settings.stillStd && gyroStill {
            kind = .stationary
            confidence = stdShort < settings.stillStd / 2 && !(gyr >= settings.stillGyro / 2) ? .high : .medium
        } else if steps.isWalking {
            kind = steps.cadence >= 2.5 && std >= 5 ? .running : .walking
            confidence = .high
        } else if per > 0.3 && std >= 5 && stepRate >= 2.5 {
            kind = .running; confidence = .medium
        } else if per > 0.3 && std >= 0.8 && stepRate >= 1.2 && stepRate <= 2.8 {
            kind = .walking; confidence = .medium
        } else if per > 0.3 && std < 0.8 && stepRate >= 0.6 && stepRate < 1.3 {
            kind = .cycling
        } else if std < 2 && hfShare > 0.4 {
            // a vehicle is recognised over several seconds, not from one shake
            if state.vehicleSince == nil { state.vehicleSince = t }
            kind = t - state.vehicleSince! >= settings.vehicleConfirmSeconds ? .automotive : .unknown
        } else if std >= 0.8 && std < 7 {
            kind = .walking
        }
        if kind == .automotive { state.lastVehicle = t }
        if !(std < 2 && hfShare > 0.4) { state.vehicleSince = nil }

        // two agreeing decisions switch (a sure stillness, or the first decision, at once)
        let current = state.output.kind
        var newKind = current, newConfidence = state.output.confidence
        if kind == current {
            newConfidence = confidence
            state.hasCandidate = false
        } else if state.hasCandidate && state.candidate == kind {
            newKind = kind; newConfidence = confidence
            state.output.startTime = state.candidateTime
            state.hasCandidate = false
        } else if (kind == .stationary && confidence == .high) || current == .unknown {
            newKind = kind; newConfidence = confidence
            state.output.startTime = t
            state.hasCandidate = false
        } else {
            state.hasCandidate = true; state.candidate = kind; state.candidateTime = t
            let c = state.output.confidence.rawValue
            newConfidence = ActivityConfidence(rawValue: c > 0 ? c - 1 : 0)!
        }
        var flags = newKind.flag
        if newKind == .stationary && t - state.lastVehicle <= settings.vehicleMemorySeconds { flags.insert(.automotive) }
        if newKind != state.output.kind || flags != state.output.flags || newConfidence != state.output.confidence {
            state.output.changed = true
        }
        state.output.kind = newKind; state.output.flags = flags; state.output.confidence = newConfidence
    }
}
