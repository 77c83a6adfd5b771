import EdgeValues
import Foundation
@testable import EdgeActivity

/// Physically generated IMU recordings (accelerometer m/s² as a sensor reports
/// specific force, gyroscope rad/s, both in the board's frame) with known step
/// times, for placements and motions the shared recordings do not hold.
/// Fixed seeds: the same arguments give the same samples.
///
/// Walking: a world frame (x forward, y left, z up). Heel strikes alternate
/// right (even k, the side of the pocket or of the swinging hand) and left,
/// each step lasting T·(1 + 2 % noise), T = 1/cadence. The pelvis moves
/// vertically with the step (an inverted pendulum: the centre of mass rises
/// h = 15 mm at 1 step/s, 25 mm at 2.2 steps/s; acceleration h·(2π/T)²), fore
/// and aft at 0.6 of that, sideways once per stride (0.5 m/s²); each heel
/// strike adds an upward impact, a 15 ms (σ) Gaussian pulse peaking 40 ms
/// after contact at 12 m/s² (1.2 g) at 1.8 steps/s, scaling with the square
/// of cadence, which reaches the board at `farSide` of its strength from the
/// far leg (through the pelvis) and at a placement's share (`impactScale`:
/// damped by an arm or a bag). A pocket's side of the pelvis also rises and
/// drops once a stride (pelvic list). A limb (thigh, upper arm, hand) swings once per stride
/// about the lateral axis, angle θ0·cos(2π s) + θ1·cos(4π s + 0.6) (s = stride
/// phase, thigh flexion ±20° at 1.8 steps/s, arm ±17°), and carries the board
/// at `limbLength` from the joint (hip, shoulder) and `offset` in front (+) or
/// behind (−) the limb's axis. The board is mounted on the limb in a fixed
/// orientation drawn from the seed. The board's acceleration is the second
/// derivative of its position (numerical, 1 ms central difference; the swing
/// grows over the first stride and dies over the last); the
/// specific force is that plus gravity, rotated into the board's frame.
/// MPU-6050-like white noise: 0.04 m/s², 0.005 rad/s per sample.
struct GaitModel {
    enum Placement: String, CaseIterable {
        case backPocket, frontPocket, swingingHand, armband, handHeld
    }
    var placement = Placement.backPocket
    var rateHz = 100.0
    var cadence = 1.8          // steps/s
    var farSide = 0.35         // impact strength from the far leg relative to the near leg
    var seconds = 120.0
    var seed: UInt64 = 1
    /// Pelvic list seen at a pocket: vertical amplitude, m, once a stride.
    var listMeters = 0.007
    /// The centre of mass's rise per step, m; nil: a walk's (15 mm at 1
    /// step/s, 25 mm at 2.2). A run bounces 30-50 mm (6-10 cm peak to peak:
    /// Cavagna et al., J. Physiol. 1976, the vertical excursion of running).
    var bounceMeters: Double? = nil

    struct Recording {
        var t: [Double] = [], a: [SIMD3<Double>] = [], g: [SIMD3<Double>] = [], steps: [Double] = []
    }

    /// Limb geometry per placement: joint-to-board distance m, offset m, swing amplitude rad.
    var limb: (length: Double, offset: Double, theta0: Double, theta1: Double, impactScale: Double) {
        let k = (cadence / 1.8).squareRoot()
        switch placement {
        case .backPocket: return (0.12, -0.13, 0.35 * k, 0.05, 0.3)
        case .frontPocket: return (0.20, 0.07, 0.35 * k, 0.05, 1)
        case .swingingHand: return (0.65, 0, -0.30 * k, 0.03, 0.5)
        case .armband: return (0.15, 0.05, -0.20 * k, 0.02, 0.8)
        case .handHeld: return (0, 0, 0, 0, 0.6)
        }
    }

    func generate() -> Recording {
        var rng = SplitMix64(seed: seed)
        // heel strikes
        var strikes: [Double] = []
        var ts = 1.0 + rng.uniform() * 0.5
        while ts < seconds - 1 { strikes.append(ts); ts += (1 / cadence) * (1 + 0.02 * rng.gaussian()) }
        let mount = randomRotation(&rng)
        let L = limb
        let h = bounceMeters ?? 0.015 + 0.00833 * (cadence - 1)   // m, centre-of-mass rise per step
        let impact = 12 * (cadence / 1.8) * (cadence / 1.8)
        let gravity = 9.80665
        // the step index and phase at time t
        func stepAt(_ t: Double) -> (k: Int, u: Double, T: Double)? {
            guard let first = strikes.first, t >= first, t < strikes.last! else { return nil }
            var lo = 0, hi = strikes.count - 1
            while hi - lo > 1 { let m = (lo + hi) / 2; if strikes[m] <= t { lo = m } else { hi = m } }
            let T = strikes[lo + 1] - strikes[lo]
            return (lo, (t - strikes[lo]) / T, T)
        }
        // limb angle (rad) at t: stride phase from the near-side strikes
        func angle(_ t: Double) -> Double {
            guard let s = stepAt(t) else { return 0 }
            let strideStart = s.k % 2 == 0 ? s.k : s.k - 1
            guard strideStart >= 0 else { return 0 }
            // the last stride, which has no strike to end it, lasts as long
            // as the one before it (returning 0 there made the angle jump
            // while the envelope was still open: a jump of θ over the 1 ms
            // of the second difference is an acceleration of thousands of g)
            let strideEnd = strideStart + 2 < strikes.count ? strikes[strideStart + 2]
                : strikes[strideStart] + (strideStart >= 2 ? strikes[strideStart] - strikes[strideStart - 2] : 2 * s.T)
            let phase = (t - strikes[strideStart]) / (strideEnd - strikes[strideStart])
            // the swing grows over the first stride and dies over the last one
            let ramp = 2 / cadence
            let e = min(1, (t - strikes[0]) / ramp, (strikes[strikes.count - 1] - t) / ramp)
            let env = 0.5 * (1 - cos(.pi * max(0, e)))
            return env * (L.theta0 * cos(2 * .pi * phase) + L.theta1 * cos(4 * .pi * phase + 0.6))
        }
        // board position relative to the pelvis, world frame
        func position(_ t: Double) -> SIMD3<Double> {
            let th = angle(t)
            let x = L.offset, z = -L.length
            return SIMD3(x * cos(th) - z * sin(th), 0, x * sin(th) + z * cos(th))
        }
        // pelvis acceleration, world frame, without impacts
        func pelvis(_ t: Double) -> SIMD3<Double> {
            guard let s = stepAt(t) else { return .zero }
            let w = 2 * Double.pi / s.T
            let av = h * w * w
            let side = s.k % 2 == 0 ? 1.0 : -1.0
            return SIMD3(0.6 * av * sin(2 * .pi * s.u + 0.5), 0.5 * side * sin(.pi * s.u), av * cos(2 * .pi * s.u))
        }
        var rec = Recording()
        rec.steps = strikes
        let n = Int(seconds * rateHz)
        rec.t.reserveCapacity(n); rec.a.reserveCapacity(n); rec.g.reserveCapacity(n)
        let d = 1e-3
        var lastStrike = 0
        for i in 0..<n {
            let t = Double(i) / rateHz
            let pa = (position(t + d) - 2 * position(t) + position(t - d)) / (d * d)
            var aw = pelvis(t) + pa
            // the pocket's side of the pelvis rises and drops once a stride
            // (pelvic list, about ±4° over the 0.1 m to the pocket: ±7 mm)
            if placement == .backPocket || placement == .frontPocket, let s = stepAt(t) {
                let strideStart = s.k % 2 == 0 ? s.k : s.k - 1
                if strideStart >= 0 && strideStart + 2 < strikes.count {
                    let S = strikes[strideStart + 2] - strikes[strideStart]
                    let phase = (t - strikes[strideStart]) / S
                    aw.z += listMeters * pow(2 * .pi / S, 2) * cos(2 * .pi * phase)
                }
            }
            // impacts of the last few strikes
            while lastStrike < strikes.count && strikes[lastStrike] <= t - 0.3 { lastStrike += 1 }
            var k = lastStrike
            while k < strikes.count && strikes[k] <= t {
                let tau = t - strikes[k]
                let near = k % 2 == 0 ? 1.0 : farSide
                let u = (tau - 0.04) / 0.015
                aw.z += L.impactScale * near * impact * exp(-0.5 * u * u)
                k += 1
            }
            let th = angle(t)
            let thDot = (angle(t + d) - angle(t - d)) / (2 * d)
            // world → limb: rotation by −θ about y
            let f = aw + SIMD3(0, 0, gravity)
            let fl = SIMD3(f.x * cos(th) + f.z * sin(th), f.y, -f.x * sin(th) + f.z * cos(th))
            let wl = SIMD3(0, -thDot, 0)
            rec.t.append(t)
            rec.a.append(mul(transpose(mount), fl) + noise3(&rng, 0.04))
            rec.g.append(mul(transpose(mount), wl) + noise3(&rng, 0.005))
        }
        return rec
    }
}

/// Motions without walking: a board in a car through city traffic, and a
/// board shaken and fidgeted in a hand.
enum NoGaitModel {
    /// A windshield-mounted board in city traffic: drive-off at 1.5 m/s², cruise, brake at 2 m/s²,
    /// stop at a light (5-25 s, idling); turns at 0.1-0.3 rad/s; the body's heave
    /// on its suspension, a resonance at 1.2 Hz with damping ratio 0.25 (a
    /// passenger car's 1-1.5 Hz, 0.2-0.4) driven by road roughness in proportion
    /// to speed (≈ 0.6 m/s² RMS at 14 m/s); pitch at 1.5 Hz; engine vibration at
    /// 25-30 Hz (0.3 m/s², 0.15 while idling).
    static func car(seconds: Double = 300, rateHz: Double = 100, seed: UInt64 = 5) -> GaitModel.Recording {
        var rng = SplitMix64(seed: seed)
        let mount = randomRotation(&rng)
        let dt = 1 / rateHz
        var rec = GaitModel.Recording()
        var v = 0.0, phaseTimer = 0.0, mode = 3, accel = 0.0, yawRate = 0.0, turnTimer = 0.0
        var heave = 0.0, heaveV = 0.0, pitch = 0.0, pitchV = 0.0, engine = 0.0
        let wn = 2 * Double.pi * 1.2, zeta = 0.25, wp = 2 * Double.pi * 1.5
        var t = 0.0
        while t < seconds {
            phaseTimer -= dt
            if phaseTimer <= 0 {
                mode = (mode + 1) % 4      // 0 drive off, 1 cruise, 2 brake, 3 stopped
                switch mode {
                case 0: accel = 1.5; phaseTimer = 4 + 4 * rng.uniform()
                case 1: accel = 0; phaseTimer = 10 + 30 * rng.uniform()
                case 2: accel = -2; phaseTimer = v / 2
                default: accel = 0; v = 0; phaseTimer = 5 + 20 * rng.uniform()
                }
            }
            v = max(0, v + accel * dt)
            turnTimer -= dt
            if turnTimer <= 0 { yawRate = v > 3 && rng.uniform() < 0.3 ? (rng.uniform() < 0.5 ? -1 : 1) * (0.1 + 0.2 * rng.uniform()) : 0; turnTimer = 3 + 5 * rng.uniform() }
            // suspension: x'' = −2ζωn x' − ωn² x + road
            let road = 0.0043 * v * rng.gaussian() / dt.squareRoot() * wn * wn * 0.1
            let hAcc = -2 * zeta * wn * heaveV - wn * wn * heave + road
            heaveV += hAcc * dt; heave += heaveV * dt
            let pAcc = -2 * zeta * wp * pitchV - wp * wp * pitch + 0.2 * road / 9.8
            pitchV += pAcc * dt; pitch += pitchV * dt
            engine += 2 * .pi * (v > 0 ? 30 : 25) * dt
            let vib = (v > 0 ? 0.3 : 0.15) * sin(engine)
            let aw = SIMD3(accel, v * yawRate, hAcc + vib) + SIMD3(0, 0, 9.80665)
            let w = SIMD3(0, pitchV, yawRate)
            rec.t.append(t)
            rec.a.append(mul(transpose(mount), aw) + noise3(&rng, 0.04))
            rec.g.append(mul(transpose(mount), w) + noise3(&rng, 0.005))
            t += dt
        }
        return rec
    }

    /// A board shaken in a hand: the wrist rocks it (rotation about a
    /// drifting axis) and the hand moves it back and forth, at a rate that
    /// wanders over 1.5-6 Hz (a random walk, ±1 Hz per second) with a
    /// strength that wanders over 2-12 m/s², in bursts of 2-8 s with 1-3 s
    /// of holding it nearly still between them.
    static func shaken(seconds: Double = 180, rateHz: Double = 100, seed: UInt64 = 9) -> GaitModel.Recording {
        var rng = SplitMix64(seed: seed)
        let dt = 1 / rateHz
        var rec = GaitModel.Recording()
        var f = 3.0, amp = 6.0, phase = 0.0, burst = 0.0, rest = 0.0
        var axis = SIMD3<Double>(0, 0, 1)
        var t = 0.0
        while t < seconds {
            if burst <= 0 && rest <= 0 { burst = 2 + 6 * rng.uniform(); rest = 1 + 2 * rng.uniform() }
            let shaking = burst > 0
            if shaking { burst -= dt } else { rest -= dt }
            f = min(6, max(1.5, f + 1.0 * dt.squareRoot() * rng.gaussian()))
            amp = min(12, max(2, amp + 3 * dt.squareRoot() * rng.gaussian()))
            axis = axis + 0.3 * dt.squareRoot() * SIMD3(rng.gaussian(), rng.gaussian(), rng.gaussian())
            axis /= (axis * axis).sum().squareRoot()
            phase += 2 * .pi * f * dt
            let s = shaking ? 1.0 : 0.05
            let lin = s * amp * sin(phase)
            let rate = s * amp / 3 * cos(phase)          // rad/s
            let g = SIMD3<Double>(0, 0.6, 0.8) * 9.80665
            rec.t.append(t)
            rec.a.append(g + SIMD3(lin * 0.8, lin * 0.5, lin * 0.3) + noise3(&rng, 0.04))
            rec.g.append(axis * rate + noise3(&rng, 0.005))
            t += dt
        }
        return rec
    }
}

/// A rotation matrix (rows) drawn uniformly (a random unit quaternion).
func randomRotation(_ rng: inout SplitMix64) -> [SIMD3<Double>] {
    var q = SIMD4(rng.gaussian(), rng.gaussian(), rng.gaussian(), rng.gaussian())
    q /= (q * q).sum().squareRoot()
    let (w, x, y, z) = (q.x, q.y, q.z, q.w)
    return [SIMD3(1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
            SIMD3(2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
            SIMD3(2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))]
}

func transpose(_ m: [SIMD3<Double>]) -> [SIMD3<Double>] {
    [SIMD3(m[0].x, m[1].x, m[2].x), SIMD3(m[0].y, m[1].y, m[2].y), SIMD3(m[0].z, m[1].z, m[2].z)]
}

func mul(_ m: [SIMD3<Double>], _ v: SIMD3<Double>) -> SIMD3<Double> {
    SIMD3((m[0] * v).sum(), (m[1] * v).sum(), (m[2] * v).sum())
}

func noise3(_ rng: inout SplitMix64, _ sigma: Double) -> SIMD3<Double> {
    SIMD3(rng.gaussian(), rng.gaussian(), rng.gaussian()) * sigma
}

/// Runs the pipeline (pedometer with the gyroscope) over a recording; the final step count.
func pipelineSteps(_ r: GaitModel.Recording, rateHz: Double = 100, gyro: Bool = true) -> Int {
    var p = FitnessPipeline(FitnessSettings(sampleRateHz: rateHz))
    var steps = 0
    for i in r.t.indices {
        let g = gyro ? r.g[i] : SIMD3(Double.nan, .nan, .nan)
        steps = p.update(t: r.t[i], ax: r.a[i].x, ay: r.a[i].y, az: r.a[i].z, gx: g.x, gy: g.y, gz: g.z).steps.steps
    }
    return steps
}
