// `edge-bench altitude-filter`: the altitude filters alone, side by side on
// synthetic data: a rest period, then a smooth lift (minimum-jerk profile),
// then a hold. Pure and deterministic (seeded noise, no engine, no
// simulated chips; `edge-bench altitude` runs the engine on the simulated
// board instead). Definitions of the figures: docs/altitude.md.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeFusion

enum AltitudeFilterBenchmark {
    static let help = """
    Usage: edge-bench altitude-filter [--tau S]

    The altitude filters alone on synthetic data, side by side on the same
    samples (pure and deterministic: seeded noise, no engine, no simulated
    chips): 120 s rest, a 3 m lift over 3 s on a minimum-jerk curve, 10 s
    hold; barometer 26 Hz with 1.3 Pa RMS white noise (BMP280 ultra high
    resolution, IIR off: Bosch BST-BMP280-DS001-26 rev 1.26 Table 8),
    accelerometer 200 Hz with 400 µg/√Hz and a 0.05 m/s² vertical bias
    (MPU-6050: InvenSense PS-MPU-6000A-00 rev 3.4 §6.2). Rows: the raw
    barometric height, a first-order low-pass of it (time constant --tau),
    and the fused AltitudeFilter. Figures (docs/altitude.md): rest noise RMS
    over the last 90 s of the rest, t90 (first time the relative altitude
    minus its rest mean reaches 90 % of the lift, seconds after the lift
    ends; noisy and noise-free runs), final error at the end of the hold.

    Targets: fused rest noise <= 5 cm RMS; t90 <= 0.3 s after the lift ends;
    quieter than the raw barometer and the low-pass; faster than the low-pass.

    Options:
      --tau S   time constant of the low-pass row, s (default 0.5)
    """

    /// The command: prints the report and the verdicts; true when every target is met.
    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let tau = try o.double("--tau", default: 0.5, in: 0...60)
        try o.finish("altitude-filter")
        let r = measure(baselineTimeConstant: tau)
        say(String(r.description.dropLast()))  // the report ends with a newline
        var t = Table(["target", "measured", "verdict"])
        var ok = true
        func check(_ name: String, _ measured: String, _ pass: Bool) {
            t.add([name, measured, verdict(pass)]); ok = ok && pass
        }
        check("rest noise <= 5 cm RMS", fixed(r.fused.restNoiseRMS, 2) + " cm", r.fused.restNoiseRMS <= 5)
        check("90 % <= 0.3 s after the lift ends", fixed(r.fused.time90, 3) + " s", r.fused.time90 <= 0.3)
        check("quieter than the raw barometer", fixed(r.fused.restNoiseRMS, 2) + " vs " + fixed(r.raw.restNoiseRMS, 2) + " cm",
              r.fused.restNoiseRMS < r.raw.restNoiseRMS)
        check("quieter than the low-pass", fixed(r.fused.restNoiseRMS, 2) + " vs " + fixed(r.lowPass.restNoiseRMS, 2) + " cm",
              r.fused.restNoiseRMS < r.lowPass.restNoiseRMS)
        check("faster than the low-pass", fixed(r.fused.time90, 3) + " vs " + fixed(r.lowPass.time90, 3) + " s",
              r.fused.time90 < r.lowPass.time90)
        say(t.text)
        return ok
    }

    /// The scenario and the sensors. Defaults: BMP280 ultra high resolution,
    /// IIR off (1.3 Pa RMS, DS Table 8) at 26 Hz; MPU-6050 400 µg/√Hz at 200 Hz.
    struct Scenario: Sendable, Equatable {
        /// Pressure altitude of the start, m.
        var startAltitude: Double = 100
        /// Rest before the lift, s. Noise is measured over its last three quarters.
        var restDuration: Double = 120
        /// Lift height, m, and duration, s (minimum-jerk profile).
        var liftHeight: Double = 3
        var liftDuration: Double = 3
        /// Hold after the lift, s.
        var holdDuration: Double = 10
        /// Barometer: rate Hz, RMS noise Pa.
        var baroRate: Double = 26
        var pressureNoise: Double = 1.3
        /// Accelerometer: rate Hz, noise density µg/√Hz, constant vertical bias m/s².
        var imuRate: Double = 200
        var accelerationNoiseDensity: Double = 400
        var accelerationBias: Double = 0.05
        /// Noise seed.
        var seed: UInt64 = 0x5EED_A171
        init() {}
    }

    /// Figures of one filter.
    struct Figures: Sendable, Equatable {
        var name: String
        /// RMS of relative altitude about its mean over the last three quarters of
        /// the rest period (from ¼ of it on, so the filters have settled), cm.
        var restNoiseRMS: Double
        /// First time relative altitude (minus its rest mean) reaches 90 % of
        /// the lift, seconds after the lift ends (negative: before). Noisy run.
        var time90: Double
        /// The same on a noise-free run of the same scenario: the filter's
        /// deterministic lag.
        var time90NoiseFree: Double
        /// Relative altitude error at the end of the hold, noise-free run, cm.
        var finalErrorNoiseFree: Double
    }

    struct Report: Sendable, CustomStringConvertible {
        var scenario: Scenario
        /// Time constant of the low-pass baseline, s.
        var baselineTimeConstant: Double
        var raw: Figures
        var lowPass: Figures
        var fused: Figures
        /// When the truth itself reaches 90 %, s after the lift ends (−0.74 s
        /// for a 3 s minimum-jerk lift).
        var truthTime90: Double

        var description: String {
            var out = "altitude benchmark: rest \(fixed(scenario.restDuration, 0)) s, lift \(fixed(scenario.liftHeight, 1)) m over \(fixed(scenario.liftDuration, 1)) s (minimum jerk), hold \(fixed(scenario.holdDuration, 0)) s\n"
            out += "  baro \(fixed(scenario.baroRate, 0)) Hz σ \(fixed(scenario.pressureNoise, 2)) Pa; accel \(fixed(scenario.imuRate, 0)) Hz \(fixed(scenario.accelerationNoiseDensity, 0)) µg/√Hz, bias \(fixed(scenario.accelerationBias, 3)) m/s²\n"
            out += "  truth reaches 90 % at \(fixed(truthTime90, 2)) s after the lift ends\n"
            out += "  filter                        rest noise RMS   t90 (noisy)   t90 (noise-free)   final error\n"
            for f in [raw, lowPass, fused] {
                out += "  " + pad(f.name, 30) + pad(fixed(f.restNoiseRMS, 2) + " cm", 17)
                    + pad(fixed(f.time90, 3) + " s", 14) + pad(fixed(f.time90NoiseFree, 3) + " s", 19)
                    + fixed(f.finalErrorNoiseFree, 2) + " cm\n"
            }
            return out
        }
    }

    /// Runs the scenario through the raw barometric height, the low-pass
    /// baseline (time constant `baselineTimeConstant`, s) and the fused
    /// `AltitudeFilter` (`settings`), side by side on the same samples.
    static func measure(scenario: Scenario = Scenario(),
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
                      lowPass: figures(1, "baro low-pass τ \(fixed(baselineTimeConstant, 2)) s"),
                      fused: figures(2, "fused (AltitudeFilter)"),
                      truthTime90: truthTime90(scenario))
    }

    /// The report as text.
    static func report(scenario: Scenario = Scenario(),
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

extension AltitudeFilterBenchmark {
/// Deterministic Gaussian noise for the benchmark.
typealias Noise = SplitMix64

static func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}
}
