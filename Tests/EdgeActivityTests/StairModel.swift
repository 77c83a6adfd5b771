import EdgeValues
import Foundation
@testable import EdgeActivity

/// A stair climb (or descent) as the board and a BMP280 see it, from
/// physics: the IMU is a `GaitModel` walk (the board in a pocket, the
/// wearer starting from standing at the foot of the stairs); the altitude
/// rises by one riser (0.16 m) over each step of a flight and stays put
/// over the `landingSteps` steps of each landing (two flights of half a
/// floor each, a landing between them and one at each floor); the step
/// rate is the climb rate over the riser (0.2 m/s: 1.25 steps/s; 0.15 m/s:
/// 0.94). Pressure p = p0 · (1 − h / 44330 m)^5.255 (BMP280 datasheet
/// §3.6, the inverse of the counter's formula), sampled every `baroSeconds`,
/// with the BMP280's 1.3 Pa RMS noise, its 0.16 Pa resolution (ultra
/// high resolution mode, datasheet table 7) and a weather drift.
struct StairModel {
    var floors = 4                    // > 0 up, < 0 down
    var floorHeightMeters = 3.0
    var climbRate = 0.2               // m/s vertical on a flight
    var riserMeters = 0.16
    var landingSteps = 3
    /// Standing still on each floor's landing (at a door, for breath), s;
    /// 0: the climb goes on without a stop. Each floor is then a walk of its
    /// own (the wearer starts again from standing, 1-1.5 s before the first step).
    var pauseSeconds = 0.0
    var placement = GaitModel.Placement.frontPocket
    var noisePa = 1.3
    var driftPaPerHour = -60.0
    var baroSeconds = 0.04
    var p0 = 100_000.0
    var seed: UInt64 = 1

    struct Recording {
        var imu: GaitModel.Recording
        var baroT: [Double] = [], baroP: [Double] = []
        var altitude: (Double) -> Double
    }

    func generate() -> Recording {
        let perFlight = Int((floorHeightMeters / 2 / riserMeters).rounded())
        let rise = floorHeightMeters / 2 / Double(perFlight) * (floors >= 0 ? 1 : -1)
        // the rise of each step of one floor, in order: flight, landing, flight, landing
        var floorRises: [Double] = []
        for _ in 0..<2 {
            floorRises += Array(repeating: rise, count: perFlight)
            floorRises += Array(repeating: 0, count: landingSteps)
        }
        // one walk for the whole climb, or one a floor with a stop between them
        let walks = pauseSeconds > 0 ? abs(floors) : 1
        let risesPerWalk = Array([[Double]](repeating: floorRises, count: abs(floors) / walks).joined())
        var imu = GaitModel.Recording()
        var segments: [(strikes: [Double], rises: [Double])] = []
        var offset = 0.0
        for k in 0..<walks {
            var g = GaitModel()
            g.placement = placement; g.cadence = climbRate / riserMeters; g.seed = seed &+ UInt64(k)
            g.seconds = 1.5 + Double(risesPerWalk.count + 4) / g.cadence + (pauseSeconds > 0 ? 1 : 12)
            var r = g.generate()
            // standing: the last second (still since the last step, ≥ 1 s before) repeated
            let still = max(0, r.t.count - Int(g.rateHz))
            for i in 0..<Int(pauseSeconds * g.rateHz) {
                let k = still + i % max(1, r.t.count - still)
                r.t.append(r.t[r.t.count - 1] + 1 / g.rateHz); r.a.append(r.a[k]); r.g.append(r.g[k])
            }
            imu.t += r.t.map { $0 + offset }; imu.a += r.a; imu.g += r.g
            imu.steps += r.steps.map { $0 + offset }
            segments.append((r.steps.map { $0 + offset }, risesPerWalk))
            offset = imu.t.last! + 1 / g.rateHz
        }
        let altitude: (Double) -> Double = { t in
            var h = 0.0
            for (strikes, rises) in segments {
                for k in 0..<min(rises.count, strikes.count - 1) {
                    let a = strikes[k], b = strikes[k + 1]
                    if t >= b { h += rises[k] } else { if t > a { h += rises[k] * (t - a) / (b - a) }; break }
                }
            }
            return h
        }
        var rec = Recording(imu: imu, altitude: altitude)
        var rng = SplitMix64(seed: seed &+ 1000)
        var t = 0.0
        let end = imu.t.last ?? 0
        while t <= end {
            let p = p0 * pow(1 - altitude(t) / 44330, 5.255) + driftPaPerHour * t / 3600 + noisePa * rng.gaussian()
            rec.baroT.append(t); rec.baroP.append((p / 0.16).rounded() * 0.16)
            t += baroSeconds
        }
        return rec
    }
}

/// Runs the whole pipeline over a stair recording (IMU with gyroscope, the
/// barometer's readings in between); the final output.
func pipelineFloors(_ r: StairModel.Recording) -> FitnessOutput {
    var p = FitnessPipeline(FitnessSettings(sampleRateHz: 100))
    var j = 0
    for i in r.imu.t.indices {
        while j < r.baroT.count && r.baroT[j] <= r.imu.t[i] { p.pressure(t: r.baroT[j], pressurePa: r.baroP[j]); j += 1 }
        let a = r.imu.a[i], g = r.imu.g[i]
        p.update(t: r.imu.t[i], ax: a.x, ay: a.y, az: a.z, gx: g.x, gy: g.y, gz: g.z)
    }
    return p.output
}
