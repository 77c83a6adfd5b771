import Testing
@testable import EdgeFusion

/// Test-side noise, written independently of the benchmark's: xorshift64*
/// and Marsaglia's polar method, seeded, deterministic.
struct TestGaussian {
    var s: UInt64
    var spare: Double? = nil
    init(seed: UInt64) { s = seed == 0 ? 0x9E37_79B9 : seed }
    mutating func uniform() -> Double {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27
        return Double((s &* 0x2545_F491_4F6C_DD1D) >> 11) / 9_007_199_254_740_992
    }
    mutating func next() -> Double {
        if let v = spare { spare = nil; return v }
        while true {
            let u = 2 * uniform() - 1, v = 2 * uniform() - 1
            let q = u * u + v * v
            if q > 0 && q < 1 {
                let f = (-2 * log(q) / q).squareRoot()
                spare = v * f
                return u * f
            }
        }
    }
}

/// Synthetic sensors: baro σ 1.3 Pa at 26 Hz (BMP280 UHR, IIR off), accel
/// 400 µg/√Hz at 200 Hz (MPU-6050), optional constant accel bias. Baro
/// samples fall on the IMU tick at or after each 1/26 s instant.
struct SyntheticRun {
    var baseAltitude = 250.0
    var baroSigma = 1.3
    var accelDensity = 400e-6 * 9.80665
    var accelBias = 0.0
    var imuRate = 200.0
    var baroRate = 26.0
    var seed: UInt64 = 42

    /// Calls `sample(t, estimate, baseline)` after every IMU tick.
    func run(duration: Double, truth: (Double) -> (h: Double, a: Double),
             filter: inout AltitudeFilter, baseline: inout BarometricAltimeter,
             start: Int = 0, stop: Int? = nil,
             sample: (Double, AltitudeFilter.Output, Double) -> Void) {
        var noise = TestGaussian(seed: seed)
        let dt = 1 / imuRate
        let accelSigma = accelDensity * (imuRate / 2).squareRoot()
        let steps = Int((duration * imuRate).rounded())
        var baroIndex = 0.0
        for i in 0...steps {
            let t = Double(i) * dt
            // Noise is drawn for every tick so that a run split at `start`
            // sees the same samples as an uninterrupted one.
            let na = noise.next()
            let baroDue = t + 1e-9 >= baroIndex / baroRate
            let np = baroDue ? noise.next() : 0
            if baroDue { baroIndex += 1 }
            guard i >= start, i < (stop ?? Int.max) else { continue }
            if i > 0 {
                filter.updateAccel(verticalAcceleration: truth(t - dt / 2).a + accelBias + accelSigma * na, dt: dt)
            }
            if baroDue {
                let p = PressureAltitude.pressure(altitude: baseAltitude + truth(t).h) + baroSigma * np
                filter.updateBarometer(pressure: p)
                baseline.updateBarometer(pressure: p)
            }
            sample(t, filter.output, baseline.relativeAltitude)
        }
    }
}

func minimumJerk(start: Double, duration: Double, height: Double) -> (Double) -> (h: Double, a: Double) {
    { t in
        if t <= start { return (0, 0) }
        if t >= start + duration { return (height, 0) }
        let s = (t - start) / duration
        return (height * (10 * s * s * s - 15 * s * s * s * s + 6 * s * s * s * s * s),
                height / (duration * duration) * (60 * s - 180 * s * s + 120 * s * s * s))
    }
}

struct Stats {
    var n = 0.0, sum = 0.0, sumSq = 0.0, maxAbs = 0.0
    mutating func add(_ x: Double) { n += 1; sum += x; sumSq += x * x; maxAbs = max(maxAbs, abs(x)) }
    var mean: Double { sum / n }
    var rmsAboutMean: Double { (sumSq / n - mean * mean).squareRoot() }
}

@Suite struct AltitudeFilterTests {
    @Test func accelerationBeforeTheFirstBarometerSampleIsIgnored() {
        var f = AltitudeFilter()
        f.updateAccel(verticalAcceleration: 5, dt: 0.01)
        #expect(f.state == AltitudeFilter.State())
        #expect(f.output.relativeAltitudeAccuracy == .infinity)
        f.updateBarometer(pressure: 95_461)
        #expect(f.output.relativeAltitude == 0)
        #expect(abs(f.output.absoluteAltitude - 500) < 0.2)
        let before = f.state
        f.updateAccel(verticalAcceleration: .nan, dt: 0.01)
        f.updateAccel(verticalAcceleration: 1, dt: 0)
        f.updateAccel(verticalAcceleration: 1, dt: -1)
        f.updateBarometer(pressure: .infinity)
        f.updateBarometer(pressure: 0)
        #expect(f.state == before)
    }

    @Test func verticalAccelerationFromAttitude() {
        let g = standardGravity
        #expect(AltitudeFilter.verticalAcceleration(attitude: .identity, specificForce: Vector3(0, 0, g)) == 0)
        // Board on its side (sensor Y up): rotate sensor→earth by −90° about X.
        let q = Quaternion(axis: Vector3(1, 0, 0), angle: .pi / 2)
        let up = q.conjugate.rotate(Vector3(0, 0, g + 1))
        #expect(abs(AltitudeFilter.verticalAcceleration(attitude: q, specificForce: up) - 1) < 1e-12)
    }

    @Test func staticConvergence() {
        var f = AltitudeFilter(settings: .init(seaLevelPressureUncertainty: 0, pressureAccuracy: 0))
        var b = BarometricAltimeter()
        var stats = Stats(), velocity = Stats()
        SyntheticRun(baseAltitude: 500, seed: 7).run(duration: 40, truth: { _ in (0, 0) }, filter: &f, baseline: &b) { t, out, _ in
            if t >= 20 { stats.add(out.relativeAltitude); velocity.add(out.verticalVelocity) }
        }
        let out = f.output
        #expect(abs(stats.mean) < 0.25)          // the reference is one noisy sample (σ ≈ 11 cm)
        #expect(stats.rmsAboutMean < 0.05)      // issue target: ≤ 5 cm RMS at rest
        #expect(velocity.maxAbs < 0.1)
        #expect(abs(out.absoluteAltitude - 500) < 0.1)
        #expect(out.absoluteAltitudeAccuracy < 0.05)
        #expect(out.relativeAltitudeAccuracy > 0.09 && out.relativeAltitudeAccuracy < 0.15)
        #expect(abs(out.accelerationBias) < 0.01)
    }

    @Test func accuracyIncludesSeaLevelPressureUncertainty() {
        var f = AltitudeFilter(settings: .init(seaLevelPressureUncertainty: 1000, pressureAccuracy: 0))
        f.updateBarometer(pressure: 95_461)
        // ∂h/∂p0 ≈ 0.0835 m/Pa at 500 m: ≈ 83 m for 10 hPa.
        #expect(abs(f.output.absoluteAltitudeAccuracy - 83.5) < 1.5)
        var g = AltitudeFilter(settings: .init(seaLevelPressureUncertainty: 0, pressureAccuracy: 100))
        g.updateBarometer(pressure: 95_461)
        #expect(abs(g.output.absoluteAltitudeAccuracy - 8.7) < 0.3)
    }

    @Test func constantAccelerometerBiasDoesNotMakeAltitudeDrift() {
        // 0.3 m/s² (≈ 31 mg): integrated alone it would run away by ½·b·t² = 2 km in 120 s.
        var f = AltitudeFilter()
        var b = BarometricAltimeter()
        var late = Stats()
        SyntheticRun(accelBias: 0.3, seed: 11).run(duration: 120, truth: { _ in (0, 0) }, filter: &f, baseline: &b) { t, out, _ in
            if t >= 60 { late.add(out.relativeAltitude) }
        }
        #expect(abs(late.mean) < 0.25)
        #expect(late.maxAbs < 0.4)
        #expect(late.rmsAboutMean < 0.05)
        #expect(abs(f.output.accelerationBias - 0.3) < 0.02)
        #expect(abs(f.output.verticalVelocity) < 0.05)
    }

    @Test func tracksAStepAndARamp() {
        var f = AltitudeFilter()
        var b = BarometricAltimeter()
        var restMean = Stats()
        var afterLift = Stats()
        let lift = minimumJerk(start: 20, duration: 3, height: 3)
        SyntheticRun(accelBias: 0.05, seed: 3).run(duration: 30, truth: lift, filter: &f, baseline: &b) { t, out, _ in
            if t >= 10 && t < 20 { restMean.add(out.relativeAltitude) }
            if t >= 24 { afterLift.add(out.relativeAltitude - restMean.mean - 3) }
        }
        #expect(abs(afterLift.mean) < 0.03)
        #expect(afterLift.maxAbs < 0.12)

        // Ramp: climb at 1 m/s for 10 s after 10 s of rest (an acceleration
        // impulse of 1 m/s over one tick at each end).
        var g = AltitudeFilter()
        var c = BarometricAltimeter()
        var velocity = Stats(), error = Stats()
        let dt = 1 / 200.0
        let ramp: (Double) -> (h: Double, a: Double) = { t in
            let h = min(max(t - 10, 0), 10)
            let a = (abs(t - 10) < dt / 2 ? 1 / dt : 0) - (abs(t - 20) < dt / 2 ? 1 / dt : 0)
            return (h, a)
        }
        SyntheticRun(seed: 5).run(duration: 20, truth: ramp, filter: &g, baseline: &c) { t, out, _ in
            if t >= 12 && t < 19.9 { velocity.add(out.verticalVelocity - 1); error.add(out.relativeAltitude - (t - 10)) }
        }
        #expect(abs(velocity.mean) < 0.03)
        #expect(velocity.maxAbs < 0.1)
        #expect(error.maxAbs < 0.3)
        #expect(abs(error.mean) < 0.15)
    }

    @Test func stateHandOverGivesIdenticalOutput() {
        let settings = AltitudeFilter.Settings()
        let lift = minimumJerk(start: 5, duration: 3, height: 3)
        let run = SyntheticRun(accelBias: 0.1, seed: 99)
        let duration = 12.0, half = 1200
        var whole = AltitudeFilter(settings: settings), b1 = BarometricAltimeter()
        var expected: [AltitudeFilter.Output] = []
        run.run(duration: duration, truth: lift, filter: &whole, baseline: &b1) { _, out, _ in expected.append(out) }

        var first = AltitudeFilter(settings: settings), b2 = BarometricAltimeter()
        var got: [AltitudeFilter.Output] = []
        run.run(duration: duration, truth: lift, filter: &first, baseline: &b2, stop: half) { _, out, _ in got.append(out) }
        // Hand over: a new filter from the coefficients and a copy of the state.
        var second = AltitudeFilter(coefficients: first.coefficients, state: first.state)
        var b3 = BarometricAltimeter(coefficients: b2.coefficients, state: b2.state)
        run.run(duration: duration, truth: lift, filter: &second, baseline: &b3, start: half) { _, out, _ in got.append(out) }
        #expect(got.count == expected.count)
        #expect(got == expected)
        #expect(second.state == whole.state)
        #expect(b3.state == b1.state)
    }

    @Test func fusedBeatsBarometerOnlyOnNoiseAndLag() {
        // Side by side on the same samples: fused vs baro through a 1st-order
        // low-pass, τ = 0.5 s (the documented baseline).
        var f = AltitudeFilter()
        var b = BarometricAltimeter(settings: .init(timeConstant: 0.5, sampleRate: 26))
        // A long rest: the fused error wanders slowly, so a short window
        // under-samples it and the comparison would hinge on the seed.
        let liftStart = 120.0, liftEnd = 123.0
        let lift = minimumJerk(start: liftStart, duration: 3, height: 3)
        var fRest = Stats(), bRest = Stats()
        var fT90 = Double.nan, bT90 = Double.nan
        SyntheticRun(accelBias: 0.05, seed: 2024).run(duration: 130, truth: lift, filter: &f, baseline: &b) { t, out, base in
            if t >= 30 && t < liftStart { fRest.add(out.relativeAltitude); bRest.add(base) }
            if t >= liftStart {
                if fT90.isNaN && out.relativeAltitude - fRest.mean >= 2.7 { fT90 = t - liftEnd }
                if bT90.isNaN && base - bRest.mean >= 2.7 { bT90 = t - liftEnd }
            }
        }
        #expect(fRest.rmsAboutMean <= 0.05)         // issue: ≤ 5 cm RMS at rest
        #expect(fT90 <= 0.3)                         // issue: 90 % ≤ 0.3 s after the lift ends
        #expect(fRest.rmsAboutMean < 0.95 * bRest.rmsAboutMean)
        #expect(fT90 < bT90 - 0.3)                  // the low-pass lags by ≈ τ
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
