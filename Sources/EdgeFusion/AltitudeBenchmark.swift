// Side-by-side benchmark of the altitude filters on synthetic data: a rest
// period, then a smooth lift (minimum-jerk profile), then a hold. Pure and
// deterministic (seeded noise): the integrator wires `run` to a CLI command
// and to the simulator. Definitions of the figures: docs/altitude.md.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

public enum AltitudeBenchmark {
    /// The scenario and the sensors. Defaults: BMP280 ultra high resolution,
    /// IIR off (1.3 Pa RMS, DS Table 8) at 26 Hz; MPU-6050 400 µg/√Hz at 200 Hz.
    public struct Scenario: Sendable, Equatable {
        /// Pressure altitude of the start, m.
        public var startAltitude: Double = 100
        /// Rest before the lift, s. Noise is measured over its last three quarters.
        public var restDuration: Double = 120
        /// Lift height, m, and duration, s (minimum-jerk profile).
        public var liftHeight: Double = 3
        public var liftDuration: Double = 3
        /// Hold after the lift, s.
        public var holdDuration: Double = 10
        /// Barometer: rate Hz, RMS noise Pa.
        public var baroRate: Double = 26
        public var pressureNoise: Double = 1.3
        /// Accelerometer: rate Hz, noise density µg/√Hz, constant vertical bias m/s².
        public var imuRate: Double = 200
        public var accelerationNoiseDensity: Double = 400
        public var accelerationBias: Double = 0.05
        /// Noise seed.
        public var seed: UInt64 = 0x5EED_A171
        public init() {}
    }

    /// Figures of one filter.
    public struct Figures: Sendable, Equatable {
        public var name: String
        /// RMS of relative altitude about its mean over the last three quarters of
        /// the rest period (from ¼ of it on, so the filters have settled), cm.
        public var restNoiseRMS: Double
        /// First time relative altitude (minus its rest mean) reaches 90 % of
        /// the lift, seconds after the lift ends (negative: before). Noisy run.
        public var time90: Double
        /// The same on a noise-free run of the same scenario: the filter's
        /// deterministic lag.
        public var time90NoiseFree: Double
        /// Relative altitude error at the end of the hold, noise-free run, cm.
        public var finalErrorNoiseFree: Double
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var scenario: Scenario
        /// Time constant of the low-pass baseline, s.
        public var baselineTimeConstant: Double
        public var raw: Figures
        public var lowPass: Figures
        public var fused: Figures
        /// When the truth itself reaches 90 %, s after the lift ends (−0.74 s
        /// for a 3 s minimum-jerk lift).
        public var truthTime90: Double

        public var description: String {
            var out = "altitude benchmark: rest \(fmt(scenario.restDuration, 0)) s, lift \(fmt(scenario.liftHeight, 1)) m over \(fmt(scenario.liftDuration, 1)) s (minimum jerk), hold \(fmt(scenario.holdDuration, 0)) s\n"
            out += "  baro \(fmt(scenario.baroRate, 0)) Hz σ \(fmt(scenario.pressureNoise, 2)) Pa; accel \(fmt(scenario.imuRate, 0)) Hz \(fmt(scenario.accelerationNoiseDensity, 0)) µg/√Hz, bias \(fmt(scenario.accelerationBias, 3)) m/s²\n"
            out += "  truth reaches 90 % at \(fmt(truthTime90, 2)) s after the lift ends\n"
            out += "  filter                        rest noise RMS   t90 (noisy)   t90 (noise-free)   final error\n"
            for f in [raw, lowPass, fused] {
                out += "  " + pad(f.name, 30) + pad(fmt(f.restNoiseRMS, 2) + " cm", 17)
                    + pad(fmt(f.time90, 3) + " s", 14) + pad(fmt(f.time90NoiseFree, 3) + " s", 19)
                    + fmt(f.finalErrorNoiseFree, 2) + " cm\n"
            }
            return out
        }
    }

    /// Runs the scenario through the raw barometric height, the low-pass
    /// baseline (time constant `baselineTimeConstant`, s) and the fused
    /// `AltitudeFilter` (`settings`), side by side on the same samples.
    public static func measure(scenario: Scenario = Scenario(),
                               settings: AltitudeFilter.Settings = AltitudeFilter.Settings(),
                               baselineTimeConstant: Double = 0.5) -> Report {
        let noisy = simulate(scenario, settings: settings, tau: baselineTimeConstant, noise: true)
        let clean = simulate(scenario, settings: settings, tau: baselineTimeConstant, noise: false)
        func figures(_ i: Int, _ name: String) -> Figures {
            Figures(name: name, restNoiseRMS: noisy[i].restRMS * 100, time90: noisy[i].t90,
                    time90NoiseFree: clean[i].t90, finalErrorNoiseFree: clean[i].finalError * 100)
        }
        return Report(scenario: scenario, baselineTimeConstant: baselineTimeConstant,
                      raw: figures(0, "raw baro height"),
                      lowPass: figures(1, "baro low-pass τ \(fmt(baselineTimeConstant, 2)) s"),
                      fused: figures(2, "fused (AltitudeFilter)"),
                      truthTime90: truthTime90(scenario))
    }

    /// The report as text.
    public static func run(scenario: Scenario = Scenario(),
                           settings: AltitudeFilter.Settings = AltitudeFilter.Settings(),
                           baselineTimeConstant: Double = 0.5) -> String {
        measure(scenario: scenario, settings: settings, baselineTimeConstant: baselineTimeConstant).description
    }

    // MARK: - simulation

    struct Track {
        var sum = 0.0, sumSq = 0.0, count = 0.0
        var restMean = 0.0
        var restRMS = 0.0
        var t90 = Double.nan
        var finalError = 0.0
    }

    /// Minimum-jerk lift: height (m) and acceleration (m/s²) at `t` seconds.
    static func truth(_ sc: Scenario, _ t: Double) -> (h: Double, a: Double) {
        let t0 = sc.restDuration, T = sc.liftDuration, H = sc.liftHeight
        if t <= t0 { return (0, 0) }
        if t >= t0 + T { return (H, 0) }
        let s = (t - t0) / T
        let h = H * s * s * s * (10 - 15 * s + 6 * s * s)
        let a = H / (T * T) * s * (60 - 180 * s + 120 * s * s)
        return (h, a)
    }

    static func truthTime90(_ sc: Scenario) -> Double {
        // Bisection on the monotonic lift profile.
        var lo = sc.restDuration, hi = sc.restDuration + sc.liftDuration
        for _ in 0..<60 {
            let mid = (lo + hi) / 2
            if truth(sc, mid).h >= 0.9 * sc.liftHeight { hi = mid } else { lo = mid }
        }
        return hi - (sc.restDuration + sc.liftDuration)
    }

    static func simulate(_ sc: Scenario, settings: AltitudeFilter.Settings, tau: Double, noise: Bool) -> [Track] {
        var rng = Noise(seed: sc.seed)
        let p0 = settings.seaLevelPressure
        var raw = BarometricAltimeter(settings: .init(seaLevelPressure: p0, timeConstant: 0, sampleRate: sc.baroRate))
        var lowPass = BarometricAltimeter(settings: .init(seaLevelPressure: p0, timeConstant: tau, sampleRate: sc.baroRate))
        var fused = AltitudeFilter(settings: settings)
        let dt = 1 / sc.imuRate
        let accelSigma = noise ? sc.accelerationNoiseDensity * 1e-6 * standardGravity * (sc.imuRate / 2).squareRoot() : 0
        let baroSigma = noise ? sc.pressureNoise : 0
        let total = sc.restDuration + sc.liftDuration + sc.holdDuration
        let steps = Int((total * sc.imuRate).rounded())
        let restStart = sc.restDuration / 4, liftStart = sc.restDuration, liftEnd = sc.restDuration + sc.liftDuration
        var tracks = [Track](repeating: Track(), count: 3)
        var nextBaro = 0.0
        var baroCount = 0.0
        for i in 0...steps {
            let t = Double(i) * dt
            if i > 0 {
                let a = truth(sc, t - dt / 2).a + sc.accelerationBias + accelSigma * rng.gaussian()
                fused.updateAccel(verticalAcceleration: a, dt: dt)
            }
            if t + 1e-9 >= nextBaro {
                let p = PressureAltitude.pressure(altitude: sc.startAltitude + truth(sc, t).h, seaLevelPressure: p0)
                    + baroSigma * rng.gaussian()
                raw.updateBarometer(pressure: p)
                lowPass.updateBarometer(pressure: p)
                fused.updateBarometer(pressure: p)
                baroCount += 1
                nextBaro = baroCount / sc.baroRate
            }
            let outs = [raw.relativeAltitude, lowPass.relativeAltitude, fused.output.relativeAltitude]
            for k in 0..<3 {
                let y = outs[k]
                if t >= restStart && t < liftStart {
                    tracks[k].sum += y; tracks[k].sumSq += y * y; tracks[k].count += 1
                } else if t >= liftStart {
                    if tracks[k].count > 0 {
                        let mean = tracks[k].sum / tracks[k].count
                        tracks[k].restMean = mean
                        tracks[k].restRMS = max(0, tracks[k].sumSq / tracks[k].count - mean * mean).squareRoot()
                        tracks[k].count = 0
                    }
                    if tracks[k].t90.isNaN && y - tracks[k].restMean >= 0.9 * sc.liftHeight {
                        tracks[k].t90 = t - liftEnd
                    }
                    tracks[k].finalError = y - sc.liftHeight
                }
            }
        }
        return tracks
    }
}

extension AltitudeBenchmark {
/// SplitMix64 + Box–Muller: deterministic Gaussian noise for the benchmark.
struct Noise {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    mutating func uniform() -> Double { (Double(next() >> 11) + 1) / 9_007_199_254_740_992 }
    mutating func gaussian() -> Double {
        let u1 = uniform(), u2 = uniform()
        return (-2 * log(u1)).squareRoot() * mathCos(2 * Double.pi * u2)
    }
}

/// Fixed-point text for a Double without Foundation (no String(format:)).
static func fmt(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return x.isNaN ? "n/a" : (x > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let n = (abs(x) * scale).rounded()
    let whole = Int(n / scale), frac = Int(n - Double(whole) * scale)
    var s = (x < 0 && n != 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        var f = String(frac)
        while f.count < decimals { f = "0" + f }
        s += "." + f
    }
    return s
}

static func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}
}
