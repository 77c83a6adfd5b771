// What the wearer is doing (Core Motion's CMMotionActivity): stationary,
// walking, running, cycling, automotive or unknown, with a confidence, from
// hand-designed orientation-free features and fixed thresholds. No learned
// parameters.
//
// Features over trailing windows, decided every `hopSeconds` (0.25 s):
//   std       standard deviation of |a| over `windowSeconds` (2.56 s), m/s²
//   stdShort  the same over the last `shortSeconds` (0.5 s): stillness is
//             recognised within a second of it starting
//   per, T    periodicity and step period of the band-passed |a|
//             (PeriodEstimator over the window)
//   hf, hfStd share of the variance of |a| above 5 Hz, and its std (engine
//             and road vibration)
//   gyrShort  mean |ω| over the last `shortSeconds`, rad/s (when there is a gyroscope)
//   gyr, turn mean |ω| over the window, and |mean ω| (a rotation about a
//             steady axis: a vehicle turning; a limb's swing or a fidget
//             goes back and forth, its mean vector is small)
//   walking   the pedometer is counting (StepDetector.isWalking) and its cadence
//   impacts   the pedometer's impact regularity (heel strikes in the rhythm)
// Rules (thresholds from textbook values: a still device shows < 0.3 m/s² of
// std, walking 1-3 m/s², running > 5 m/s² at ≥ 2.5 steps/s; pedalling
// 0.6-1.5 Hz turns a thigh ±15-25°, mean |ω| ≥ 0.8 rad/s, with no heel strike;
// a car's vibration sits above 5 Hz, it turns at 0.05-0.5 rad/s about a
// steady axis for seconds):
//   stdShort < stillStd and gyrShort < stillGyro     → stationary (high < ½ stillStd, else medium)
//   the pedometer counts, cadence ≥ 2.5, std ≥ 5     → running (high)
//   the pedometer counts                             → walking (high)
//   gyr ≥ cyclingGyro, rhythmic, no impacts, for
//     cyclingConfirmSeconds (net)                    → cycling (medium)
//   per > 0.3, std ≥ 5, step ≥ 2.5/s                 → running (medium)
//   per > 0.3, std ≥ 0.8, 1.2-2.8 steps/s            → walking (medium)
//   vehicle-like: no trusted gait period, std < 2.5, gyr < handledGyro and
//     (vibration: hfStd ≥ vibrationStd and hf ≥ 0.1, or a steady turn for
//     ≥ 2 s: turn ≥ 0.05 rad/s and ≥ 0.8 gyr)         → automotive once in a vehicle (unknown before)
//   std < 0.8, aperiodic, gyr < handledGyro           → stationary (low): someone seated who fidgets
//   0.8 ≤ std < 7                                    → walking (low)
//   otherwise                                        → unknown (low)
// In a vehicle: vehicle-like windows add their time to a score, other
// windows without a gait take half of theirs off; at `vehicleConfirmSeconds`
// the wearer is in a vehicle, and stays so (stationary windows too: a car
// waiting at a light is `automotive` with the `stationary` flag, as Core
// Motion reports it) until the pedometer counts, cycling is seen, or
// nothing vehicle-like came for `vehicleMemorySeconds`. After cycling,
// vehicle-like and low-confidence windows (freewheeling on a rough road)
// stay cycling for `cyclingMemorySeconds`.
// A new label replaces the current one when two decisions in a row agree
// (stationary at high confidence at once); `startDate` is the time of the first
// of them.
//
// Latency: a change is reported 0.25-0.5 s after the window shows it; stillness
// within about 1 s of the last movement; a car after 5 s of driving.
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
        public var shortSeconds = 0.5
        /// Time between decisions, s. Two agreeing decisions switch to a new
        /// label, so this sets the latency: 0.25 s decides a stillness (from
        /// the short window clearing) within about 1 s of the last movement
        /// (0.5 s took up to 1.5 s; issue 18: the seconds after sitting down).
        public var hopSeconds = 0.25
        /// First decision after this much data, s.
        public var firstDecisionSeconds = 0.5
        public var stillStd = 0.3
        public var stillGyro = 0.4
        /// In a vehicle, how long without vehicle-like motion before leaving it, s.
        public var vehicleMemorySeconds = 300.0
        /// Vehicle-like time (net of the other windows' half) before automotive, s.
        public var vehicleConfirmSeconds = 5.0
        /// Vibration std above 5 Hz from which a window is vehicle-like, m/s²
        /// (an MPU-6050's noise there is about 0.03).
        public var vibrationStd = 0.08
        /// Kurtosis of the vibration above which it is jolts (steps), not a vehicle's.
        public var vibrationKurtosis = 5.0
        /// A steady turn (|mean ω|, rad/s) and how long it must last, s.
        public var turnRadS = 0.05
        public var turnSeconds = 2.0
        /// Mean |ω| above which the board is handled or on a limb, never in a vehicle's mount, rad/s.
        public var handledGyro = 0.6
        /// Mean |ω| of a thigh turning pedals, rad/s.
        public var cyclingGyro = 0.8
        public var cyclingMemorySeconds = 30.0
        /// Pedalling time (net of the other windows' half) before cycling, s:
        /// a ride lasts minutes; a few seconds of a swinging limb without
        /// heel strikes (standing up, turning round) are not one.
        public var cyclingConfirmSeconds = 5.0
        /// Impact regularity below which a rhythm has no heel strikes.
        public var impactRegularity = 0.4
        public var period = PeriodEstimator.Settings(windowSeconds: 2.56, maxLagSeconds: 1.25)
        public init() {}
        public init(sampleRateHz: Double) { self.sampleRateHz = sampleRateHz }
    }

    public struct State: Sendable {
        var mag: Ring, magHF: Ring, bp: Ring, gyr: Ring
        var gx: Ring, gy: Ring, gz: Ring
        var hp = BiquadState(), lp = BiquadState(), hf = BiquadState()
        var started = false
        var t0 = 0.0, nextGrid = 0.0, nextHop = 0.0
        var scratch: [Double]
        var hasCandidate = false, candidate = ActivityKind.unknown, candidateTime = 0.0
        var lastVehicle = -1e9, lastCycling = -1e9
        var vehicleScore = 0.0, inVehicle = false
        var cyclingScore = 0.0
        var turnSince: Double?
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
                      gx: Ring(capacity: n), gy: Ring(capacity: n), gz: Ring(capacity: n),
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

    /// Feeds one sample: accelerometer (m/s²), gyroscope (rad/s, NaN without
    /// one), the pedometer's output for the same sample and its gait period.
    @discardableResult
    public mutating func update(t: Double, ax: Double, ay: Double, az: Double,
                                gx: Double, gy: Double, gz: Double,
                                steps: StepOutput, gait: GaitPeriod = GaitPeriod()) -> ActivityOutput {
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
        let gyroMagnitude = (gx * gx + gy * gy + gz * gz).squareRoot()
        while t >= state.nextGrid {
            state.mag.append(m); state.magHF.append(hf); state.bp.append(bp); state.gyr.append(gyroMagnitude)
            state.gx.append(gx); state.gy.append(gy); state.gz.append(gz)
            state.nextGrid += 1 / PeriodEstimator.Settings.gridHz
        }
        if t >= state.nextHop {
            state.nextHop += settings.hopSeconds
            if state.nextHop < t { state.nextHop = t + settings.hopSeconds }
            decide(t: t, steps: steps, gait: gait)
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

    /// Kurtosis (E[(x−μ)⁴]/σ⁴) of the newest `count` values of a ring; 0 when flat.
    static func kurtosis(_ r: Ring, last count: Int) -> Double {
        let n = min(count, r.count)
        guard n > 3 else { return 0 }
        let mean = stats(r, last: n).mean
        var m2 = 0.0, m4 = 0.0
        for i in (r.count - n)..<r.count { let d = (r[i] - mean) * (r[i] - mean); m2 += d; m4 += d * d }
        m2 /= Double(n); m4 /= Double(n)
        return m2 > 1e-18 ? m4 / (m2 * m2) : 0
    }

    mutating func decide(t: Double, steps: StepOutput, gait: GaitPeriod) {
        let grid = PeriodEstimator.Settings.gridHz
        let all = state.mag.count
        let std = Self.stats(state.mag, last: all).std
        let stdShort = Self.stats(state.mag, last: Int(settings.shortSeconds * grid)).std
        let hfStd = Self.stats(state.magHF, last: all).std
        let hfShare = std > 1e-9 ? min(1, hfStd * hfStd / (std * std)) : 0
        // stillness is judged on the short window alone (gyroscope too)
        let gyr = Self.stats(state.gyr, last: Int(settings.shortSeconds * grid)).mean   // NaN without a gyroscope
        let gyrLong = Self.stats(state.gyr, last: all).mean
        let wx = Self.stats(state.gx, last: all).mean, wy = Self.stats(state.gy, last: all).mean
        let wz = Self.stats(state.gz, last: all).mean
        let turn = (wx * wx + wy * wy + wz * wz).squareRoot()
        let period = PeriodEstimator.estimate(state.bp, settings.period, scratch: &state.scratch)
        let per = period.periodicity
        let stepRate = period.stepSeconds > 0 ? 1 / period.stepSeconds : 0
        let gyroStill = !(gyr >= settings.stillGyro)              // true when NaN
        let handled = gyrLong >= settings.handledGyro             // false when NaN
        // a turn about a steady axis, sustained
        if turn >= settings.turnRadS && turn >= 0.8 * gyrLong && !handled {
            if state.turnSince == nil { state.turnSince = t }
        } else {
            state.turnSince = nil
        }
        let steadyTurn = state.turnSince.map { t - $0 >= settings.turnSeconds } ?? false
        // a vehicle's vibration is steady (an engine's sine, road noise: kurtosis 1.5-3); heel
        // strikes are jolts, a few tens of ms each step (kurtosis ≫ 3)
        let vibration = hfStd >= settings.vibrationStd && hfShare >= 0.1
            && Self.kurtosis(state.magHF, last: all) < settings.vibrationKurtosis
        // no gait: neither counting nor a stride that repeats (the pedometer's period is
        // trusted a few seconds into a walk, before it counts; a car's bounce never earns it)
        let vehicleLike = !steps.isWalking && !(gait.stepSeconds > 0) && std < 2.5 && !handled
            && (vibration || steadyTurn)
        // pedalling: a limb swinging in a rhythm without heel strikes
        let pedalling = !steps.isWalking && gyrLong >= settings.cyclingGyro && std < 7
            && gait.stepSeconds > 0 && !(gait.impactRegularity >= settings.impactRegularity)

        var kind = ActivityKind.unknown, confidence = ActivityConfidence.low
        if stdShort < settings.stillStd && gyroStill {
            kind = .stationary
            confidence = stdShort < settings.stillStd / 2 && !(gyr >= settings.stillGyro / 2) ? .high : .medium
        } else if steps.isWalking {
            kind = steps.cadence >= 2.5 && std >= 5 ? .running : .walking
            confidence = .high
        } else if pedalling && state.cyclingScore + settings.hopSeconds >= settings.cyclingConfirmSeconds {
            kind = .cycling; confidence = .medium
        } else if vehicleLike {
            kind = .automotive
        } else if per > 0.3 && std >= 5 && stepRate >= 2.5 {
            kind = .running; confidence = .medium
        } else if per > 0.3 && std >= 0.8 && stepRate >= 1.2 && stepRate <= 2.8 && !state.inVehicle {
            kind = .walking; confidence = .medium
        } else if std < 0.8 && !handled {
            kind = .stationary          // seated and fidgeting: small, aperiodic, no gait
        } else if std >= 0.8 && std < 7 {
            kind = .walking
        }
        // pedalling for a while is cycling; then coasting on a rough road: still cycling
        state.cyclingScore = pedalling ? min(state.cyclingScore + settings.hopSeconds, 2 * settings.cyclingConfirmSeconds)
            : max(0, state.cyclingScore - settings.hopSeconds / 2)
        if kind == .cycling { state.lastCycling = t; state.inVehicle = false; state.vehicleScore = 0 }
        if t - state.lastCycling <= settings.cyclingMemorySeconds && confidence == .low
            && kind != .running { kind = .cycling }
        // the vehicle: entered on enough vehicle-like time, left on foot
        if kind == .automotive {
            state.lastVehicle = t
            state.vehicleScore = min(state.vehicleScore + settings.hopSeconds, 2 * settings.vehicleConfirmSeconds)
            if state.vehicleScore >= settings.vehicleConfirmSeconds { state.inVehicle = true }
        } else if kind != .stationary {
            state.vehicleScore = max(0, state.vehicleScore - settings.hopSeconds / 2)
        }
        if steps.isWalking || t - state.lastVehicle > settings.vehicleMemorySeconds {
            state.inVehicle = false; state.vehicleScore = 0
        }
        let stoppedInVehicle = state.inVehicle && kind == .stationary
        if state.inVehicle && (kind == .stationary || kind == .unknown || kind == .walking) {
            kind = .automotive          // waiting at a light, or jolted: still in the car
        } else if kind == .automotive && !state.inVehicle {
            kind = .unknown             // not yet sure it is a vehicle
        }

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
        if newKind == .automotive && stoppedInVehicle { flags.insert(.stationary) }
        if newKind != state.output.kind || flags != state.output.flags || newConfidence != state.output.confidence {
            state.output.changed = true
        }
        state.output.kind = newKind; state.output.flags = flags; state.output.confidence = newConfidence
    }
}
