import EdgeValues
import Foundation
@testable import EdgeActivity

/// Synthetic accelerometer signals with known steps: a gait is a sequence
/// of foot strikes, each a smooth bump of vertical acceleration (a raised
/// cosine lasting 60 % of the step, amplitude `amplitude`), plus an optional
/// second, smaller bump (heel then toe), left/right asymmetry, white noise,
/// and gravity along an arbitrary axis (the board's orientation).
struct SyntheticGait {
    var rateHz = 100.0
    var cadence = 1.8                 // steps/s
    var amplitude = 2.5               // m/s², peak of a strike
    var alternate = 1.0               // amplitude of every other step relative to the first
    var secondBump = 0.0              // heel-toe second bump, relative amplitude, 0.3 step later
    var noise = 0.05                  // m/s² white, per axis
    var gravityAxis = SIMD3<Double>(0.3, 0.9, 0.3)
    var seed: UInt64 = 1

    /// Samples from `t0` for `seconds`; walking when `walking(t)`; returns the
    /// true step times too.
    func samples(seconds: Double, t0: Double = 0, walking: (Double) -> Bool = { _ in true })
        -> (t: [Double], a: [SIMD3<Double>], steps: [Double]) {
        var rng = SplitMix(seed: seed)
        let n = Int(seconds * rateHz)
        let g = gravityAxis / (gravityAxis * gravityAxis).sum().squareRoot()
        var ts = [Double](), acc = [SIMD3<Double>](), steps = [Double]()
        let period = 1 / cadence
        var nextStep = t0 + period, k = 0
        var strikes: [(Double, Double)] = []     // (time, amplitude)
        for i in 0..<n {
            let t = t0 + Double(i) / rateHz
            while t >= nextStep {
                if walking(nextStep) {
                    let amp = amplitude * (k % 2 == 0 ? 1 : alternate)
                    strikes.append((nextStep, amp))
                    if secondBump > 0 { strikes.append((nextStep + 0.3 * period, amp * secondBump)) }
                    steps.append(nextStep); k += 1
                }
                nextStep += period
            }
            var v = 0.0
            let width = 0.6 * period
            for (ts0, amp) in strikes.suffix(4) where t >= ts0 && t < ts0 + width {
                v += amp * 0.5 * (1 - cos(2 * .pi * (t - ts0) / width))
            }
            // the bump has mean zero over a step: subtract its average
            if walking(t) { v -= amplitude * (1 + alternate) / 2 * 0.5 * 0.6 * (1 + secondBump) }
            let a = g * (9.80665 + v) + SIMD3(rng.gaussian(), rng.gaussian(), rng.gaussian()) * noise
            ts.append(t); acc.append(a)
        }
        return (ts, acc, steps)
    }
}

typealias SplitMix = SplitMix64

/// Runs a step detector over samples; the output at each sample.
func runSteps(_ d: inout StepDetector, _ s: (t: [Double], a: [SIMD3<Double>], steps: [Double])) -> [StepOutput] {
    var out = [StepOutput]()
    for i in s.t.indices { out.append(d.update(t: s.t[i], ax: s.a[i].x, ay: s.a[i].y, az: s.a[i].z)) }
    return out
}
