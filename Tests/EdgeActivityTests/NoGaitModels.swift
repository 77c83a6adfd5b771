import EdgeValues
import Foundation
@testable import EdgeActivity

extension NoGaitModel {
    /// A phone in the trouser pocket of someone seated who fidgets: the
    /// thigh is still but for, at random every 2-10 s, one of
    ///  - a shift of the leg: the thigh tilts by 5-20° about a random
    ///    horizontal axis over 0.4-1.2 s (a raised-cosine angle profile,
    ///    peak rate up to about 0.8 rad/s) and stays there;
    ///  - a jiggling knee: the thigh rocks ±1-3° at 4-6 Hz for 2-5 s;
    ///  - shifting on the seat: a sideways push of the pelvis, 0.5-1.5 m/s²
    ///    peak over 0.3-0.6 s (a full sine period: it moves and stops).
    /// The accelerometer sees gravity in the thigh's changing frame plus the
    /// push; the gyroscope the thigh's rate. MPU-6050-like noise.
    static func fidgeting(seconds: Double = 300, rateHz: Double = 100, seed: UInt64 = 41) -> GaitModel.Recording {
        var rng = SplitMix64(seed: seed)
        let mount = randomRotation(&rng)
        let dt = 1 / rateHz
        var rec = GaitModel.Recording()
        // the thigh's attitude as a rotation vector about world-horizontal axes (small angles)
        var tilt = SIMD3<Double>(0.05, 0, 0)        // rad, seated: thigh near horizontal in the model's frame
        var next = 2 + 8 * rng.uniform()
        var event = 0, evStart = 0.0, evLen = 0.0, evAxis = SIMD3<Double>(1, 0, 0), evAmp = 0.0, evF = 5.0
        var t = 0.0
        while t < seconds {
            var rate = SIMD3<Double>(0, 0, 0), push = SIMD3<Double>(0, 0, 0)
            if event == 0 && t >= next {
                event = 1 + Int(rng.uniform() * 3); evStart = t
                let phi = 2 * Double.pi * rng.uniform()
                evAxis = SIMD3(cos(phi), sin(phi), 0)
                switch event {
                case 1: evLen = 0.4 + 0.8 * rng.uniform(); evAmp = (5 + 15 * rng.uniform()) * .pi / 180 * (rng.uniform() < 0.5 ? -1 : 1)
                case 2: evLen = 2 + 3 * rng.uniform(); evAmp = (1 + 2 * rng.uniform()) * .pi / 180; evF = 4 + 2 * rng.uniform()
                default: evLen = 0.3 + 0.3 * rng.uniform(); evAmp = 0.5 + rng.uniform()
                }
            }
            if event != 0 {
                let u = (t - evStart) / evLen
                switch event {
                case 1: rate = evAxis * evAmp * 0.5 * .pi / evLen * sin(.pi * u)        // d/dt of amp·(1−cos πu)/2
                case 2: rate = evAxis * evAmp * 2 * .pi * evF * cos(2 * .pi * evF * (t - evStart))
                default: push = SIMD3(evAxis.y, -evAxis.x, 0) * evAmp * sin(2 * .pi * u)
                }
                if u >= 1 { event = 0; next = t + 2 + 8 * rng.uniform() }
            }
            tilt += rate * dt
            // gravity (world up) seen in the tilted thigh frame: rotate by −tilt (small-angle)
            let up = SIMD3<Double>(0, 0, 9.80665) + push
            let f = up - cross(tilt, up)
            rec.t.append(t)
            rec.a.append(mul(transpose(mount), f) + noise3(&rng, 0.04))
            rec.g.append(mul(transpose(mount), rate) + noise3(&rng, 0.005))
            t += dt
        }
        return rec
    }

    /// A phone in a front trouser pocket on a bicycle: the thigh swings
    /// once per pedal turn, hip angle θ(t) = A·sin(2π f t) about the
    /// lateral axis, A = 20° (hip flexion range of cycling ±15-25°), f =
    /// `cadenceHz` (60-90 rpm: 1-1.5 Hz), the board 0.2 m from the hip, so
    /// it moves on an arc (acceleration from the numerical second derivative
    /// of its position, 1 ms); no heel strikes. The bicycle rolls at 5 m/s
    /// with road vibration (white, 0.4 m/s² RMS per axis above a few Hz),
    /// speeds up and slows (±0.5 m/s² for a few seconds) and turns (yaw
    /// rates 0.1-0.3 rad/s). The rider freewheels (thigh still) 20 % of the time.
    static func cycling(seconds: Double = 240, cadenceHz: Double = 1.25, rateHz: Double = 100, seed: UInt64 = 51) -> GaitModel.Recording {
        var rng = SplitMix64(seed: seed)
        let mount = randomRotation(&rng)
        let dt = 1 / rateHz
        let A = 20 * Double.pi / 180, L = 0.2, d = 1e-3
        var rec = GaitModel.Recording()
        var phase = 0.0, amp = 1.0, freewheel = 0.0, next = 5 + 10 * rng.uniform()
        var along = 0.0, yaw = 0.0, segment = 0.0
        var t = 0.0
        func theta(_ ph: Double, _ a: Double) -> Double { a * A * sin(ph) }
        while t < seconds {
            if freewheel > 0 { freewheel -= dt; amp = max(0, amp - dt / 0.5) } else { amp = min(1, amp + dt / 0.5) }
            if t >= next { freewheel = 2 + 4 * rng.uniform(); next = t + freewheel + 10 + 15 * rng.uniform() }
            segment -= dt
            if segment <= 0 {
                segment = 2 + 4 * rng.uniform()
                along = (rng.uniform() - 0.5) * 1.0
                yaw = rng.uniform() < 0.3 ? (rng.uniform() < 0.5 ? -1 : 1) * (0.1 + 0.2 * rng.uniform()) : 0
            }
            let w = 2 * Double.pi * cadenceHz
            // the board on the thigh: position relative to the hip (x forward, z up)
            func pos(_ dtau: Double) -> SIMD3<Double> {
                let th = theta(phase + w * dtau, amp)
                return SIMD3(L * cos(th), 0, L * sin(th))
            }
            let pa = (pos(d) - 2 * pos(0) + pos(-d)) / (d * d)
            let th = theta(phase, amp)
            let thDot = amp * A * w * cos(phase)
            let aw = pa + SIMD3(along, 5 * yaw, 0) + SIMD3(rng.gaussian(), rng.gaussian(), rng.gaussian()) * 0.4
            let f = aw + SIMD3(0, 0, 9.80665)
            // world → thigh: rotation by θ about the lateral (y) axis
            let fl = SIMD3(f.x * cos(th) + f.z * sin(th), f.y, -f.x * sin(th) + f.z * cos(th))
            let wl = SIMD3(-sin(th) * yaw, thDot, cos(th) * yaw)
            rec.t.append(t)
            rec.a.append(mul(transpose(mount), fl) + noise3(&rng, 0.04))
            rec.g.append(mul(transpose(mount), wl) + noise3(&rng, 0.005))
            phase += w * dt
            t += dt
        }
        return rec
    }
}

func cross(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> SIMD3<Double> {
    SIMD3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
}

/// Runs the pipeline over a recording; the activity at each sample.
func pipelineActivity(_ r: GaitModel.Recording, gyro: Bool = true) -> (kinds: [ActivityKind], flags: [ActivityFlags], steps: Int) {
    var p = FitnessPipeline(FitnessSettings(sampleRateHz: 100))
    var kinds: [ActivityKind] = [], flags: [ActivityFlags] = []
    kinds.reserveCapacity(r.t.count); flags.reserveCapacity(r.t.count)
    for i in r.t.indices {
        let g = gyro ? r.g[i] : SIMD3(Double.nan, .nan, .nan)
        let o = p.update(t: r.t[i], ax: r.a[i].x, ay: r.a[i].y, az: r.a[i].z, gx: g.x, gy: g.y, gz: g.z)
        kinds.append(o.activity.kind); flags.append(o.activity.flags)
    }
    return (kinds, flags, p.output.steps.steps)
}

func share(_ kinds: [ActivityKind], _ k: ActivityKind, from: Int = 0) -> Double {
    let s = kinds[from...]
    return Double(s.filter { $0 == k }.count) / Double(max(s.count, 1))
}
