import Testing
import EdgeValues
@testable import EdgeActivity
#if canImport(Glibc)
import Glibc
#endif

/// Floors from pressure, with altitudes turned into pressure by the
/// barometric formula's inverse (p = p0 · (1 − h/44330 m)^5.255, BMP280
/// datasheet §3.6): stairs both ways, the configured floor height, BMP280
/// noise and weather drift on flat ground, and an elevator ridden standing
/// then walked out of at once (through the whole pipeline, so "on foot"
/// comes from the pedometer as in the agent).
@Suite struct FloorCounterTests {
    static func pressure(altitude h: Double, p0: Double = 101_325) -> Double { p0 * pow(1 - h / 44330, 5.255) }

    /// Feeds a 10 Hz barometer following `altitude(t)` for `seconds`.
    static func run(_ counter: inout FloorCounter, seconds: Double, onFoot: Bool = true,
                    noisePa: Double = 0, driftPaPerHour: Double = 0, seed: UInt64 = 1,
                    altitude: (Double) -> Double) -> FloorOutput {
        var rng = SplitMix64(seed: seed)
        var out = FloorOutput()
        for i in 0...Int(seconds * 10) {
            let t = Double(i) / 10
            let p = pressure(altitude: altitude(t)) + driftPaPerHour * t / 3600 + noisePa * rng.gaussian()
            out = counter.update(t: t, pressurePa: p, onFoot: onFoot)
        }
        return out
    }

    @Test func twoFlightsDownAreTwoFloorsDescended() {
        var c = FloorCounter()
        // 6.1 m down at 0.15 m/s (36 steps of 0.17 m), then 20 s on the landing
        let o = Self.run(&c, seconds: 70) { t in -min(6.1, max(0, t - 5) * 0.15) }
        #expect(o.floorsDescended == 2 && o.floorsAscended == 0, "\(o)")
        #expect(o.relativeFloor == -2)
    }

    @Test(arguments: [(3.0, 3), (3.5, 2), (2.5, 3)])   // 9 m: 3, 2.57 and 3.6 floors
    func aClimbCountsByTheFloorHeight(height: Double, floors: Int) {
        var c = FloorCounter(.init(floorHeightMeters: height))
        // 9 m up at 0.15 m/s, then 20 s still
        let o = Self.run(&c, seconds: 85) { t in min(9, max(0, t - 5) * 0.15) }
        #expect(o.floorsAscended == floors && o.floorsDescended == 0, "\(height) m floors: \(o)")
    }

    /// Ten minutes of walking on flat ground: BMP280 noise (1.3 Pa RMS per
    /// reading) and a falling barometer (−60 Pa/h, weather) add no floor.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func flatGroundUnderNoiseAndDriftCountsNothing(seed: UInt64) {
        var c = FloorCounter()
        let o = Self.run(&c, seconds: 600, noisePa: 1.3, driftPaPerHour: -60, seed: seed) { _ in 0 }
        #expect(o.floorsAscended == 0 && o.floorsDescended == 0, "\(o)")
    }

    /// Standing in an elevator for four floors (12 m at 1.5 m/s), then walking
    /// out at once while the smoothed altitude still catches up with the ride.
    @Test func anElevatorRideThenWalkingOutCountsNothing() {
        var p = FitnessPipeline(FitnessSettings(sampleRateHz: 100))
        let gait = SyntheticGait(rateHz: 100, cadence: 1.8, noise: 0.05, seed: 4)
        let rideFrom = 5.0, rideTo = 13.0
        let imu = gait.samples(seconds: 45) { t in t > rideTo }
        for (i, t) in imu.t.enumerated() {
            let a = imu.a[i]
            p.update(t: t, ax: a.x, ay: a.y, az: a.z)
            if i % 4 == 0 {   // a 25 Hz barometer
                let h = min(12, max(0, t - rideFrom) * 1.5)
                p.pressure(t: t, pressurePa: Self.pressure(altitude: h))
            }
        }
        #expect(p.output.steps.steps > 40, "walked out: \(p.output.steps.steps) steps")
        #expect(p.output.floors.floorsAscended == 0 && p.output.floors.floorsDescended == 0, "\(p.output.floors)")
        #expect(p.output.floors.relativeFloor == 4, "the ride is seen as floors, not counted as climbed")
    }
}
