import Testing
import Foundation
import EdgeBus
import EdgeProtocol
import EdgeActivity
import EdgeValues
import EdgeSim
@testable import EdgeEngine

/// A wearer walking at 1.8 steps/s with the board in a pocket: each step a
/// raised-cosine bump of specific force along the board's z axis; from
/// `climbFrom` s on, the walk goes up stairs (0.17 m per step, 12.0 Pa per m
/// near sea level: the barometric formula's slope at 101 kPa).
final class WalkingTruth: TruthSource, @unchecked Sendable {
    let start: UInt64
    let cadence = 1.8
    let walkFrom: Double, walkTo: Double, climbFrom: Double, climbSteps: Int
    init(start: UInt64, walkFrom: Double = 2, walkTo: Double = 42, climbFrom: Double = .infinity, climbSteps: Int = 0) {
        self.start = start; self.walkFrom = walkFrom; self.walkTo = walkTo
        self.climbFrom = climbFrom; self.climbSteps = climbSteps
    }
    /// Steps taken by `t` s (the ones that started).
    func steps(by t: Double) -> Int {
        guard t > walkFrom else { return 0 }
        return Int(((min(t, walkTo) - walkFrom) * cadence).rounded(.down))
    }
    func truth(atNanoseconds ns: UInt64, body: SimBody) -> PhysicalTruth {
        var v = PhysicalTruth.restingLevel
        let t = Double(ns &- start) / 1e9
        if t > walkFrom && t < walkTo {
            let period = 1 / cadence, width = 0.6 * period
            let s = (t - walkFrom).truncatingRemainder(dividingBy: period)
            let bump = s < width ? 2.5 * 0.5 * (1 - cos(2 * .pi * s / width)) : 0
            v.specificForce = Vector3(0, 0, 9.80665 + bump - 2.5 * 0.5 * 0.6)
            v.angularRate = Vector3(0.3 * sin(2 * .pi * 0.9 * t), 0, 0)
        }
        let climbed = min(Double(climbSteps), max(0, (min(t, walkTo) - climbFrom) * cadence)) * 0.17
        v.pressure = 101_325 - 12.0 * climbed
        return v
    }
}

@Suite struct FitnessStageTests {
    func rig(_ truth: (UInt64) -> WalkingTruth, demand: [StreamName: Double]) throws -> (Rig, WalkingTruth) {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let w = truth(clock.nowNanoseconds)
        let r = try Rig(truth: w)
        r.sink.setDemand(demand)
        return (r, w)
    }

    @Test func countsTheStepsAndFloorsOfAWalkThroughTheSimulatedChips() throws {
        let (rig, walk) = try rig({ WalkingTruth(start: $0, walkFrom: 2, walkTo: 47, climbFrom: 10, climbSteps: 36) },
                                  demand: [.pedometer: 0, .pedometerEvent: 0, .activity: 0])
        _ = rig.hub.start()
        rig.run(seconds: 50)
        let totals = rig.samples(.pedometer).compactMap { s -> PedometerSample? in
            if case .pedometer(let p) = s { return p }; return nil
        }
        let last = try #require(totals.last)
        let truth = walk.steps(by: 50)
        #expect(abs(Int(last.steps) - truth) <= 2, "\(last.steps) of \(truth) steps")
        // 36 steps × 0.17 m = 6.1 m: two 3 m floors, climbed on foot
        #expect(last.floorsAscended == 2 && last.floorsDescended == 0, "floors \(last.floorsAscended)/\(last.floorsDescended)")
        #expect(last.distance > 0.6 * Double(last.steps) && last.distance < 0.8 * Double(last.steps))
        #expect(zip(totals, totals.dropFirst()).allSatisfy { $0.steps <= $1.steps })
        let events = rig.samples(.pedometerEvent).compactMap { s -> PedometerEventType? in
            if case .pedometerEvent(let e) = s { return e.type }; return nil
        }
        #expect(events == [.resume, .pause])
        let activities = rig.samples(.activity).compactMap { s -> ActivitySample? in
            if case .activity(let a) = s { return a }; return nil
        }
        #expect(activities.contains { $0.flags.contains(.walking) && $0.confidence == .high })
        #expect(activities.last?.flags.contains(.stationary) == true, "still again after the walk")
        #expect(rig.hub.stageStatuses().first { $0.name == "fitness" }?.degraded == false)
    }

    /// An app starts 100 Hz motion in the middle of a climb and stops it
    /// again: the IMU is re-rated twice under the pedometer. Nothing counted
    /// or being recognised is lost, and the walk stays one activity.
    @Test func reRatingTheIMUMidWalkLosesNothing() throws {
        let fitness: [StreamName: Double] = [.pedometer: 0, .pedometerEvent: 0, .activity: 0]
        let (rig, walk) = try rig({ WalkingTruth(start: $0, walkFrom: 2, walkTo: 47, climbFrom: 10, climbSteps: 36) },
                                  demand: fitness)
        _ = rig.hub.start()
        rig.run(seconds: 15)
        let slow = try #require(rig.sink.devices.first { $0.id == "mpu6050@0x68" }?.rateHz)
        rig.sink.setDemand(fitness.merging([.accelerometer: 0.01]) { a, _ in a })
        rig.run(seconds: 10)
        let fast = try #require(rig.sink.devices.first { $0.id == "mpu6050@0x68" }?.rateHz)
        #expect(fast > slow, "the IMU was re-rated: \(slow) Hz, then \(fast) Hz")
        rig.sink.setDemand(fitness)
        rig.run(seconds: 25)
        #expect(rig.sink.devices.first { $0.id == "mpu6050@0x68" }?.rateHz == slow)
        let totals = rig.samples(.pedometer).compactMap { s -> PedometerSample? in
            if case .pedometer(let p) = s { return p }; return nil
        }
        let last = try #require(totals.last)
        let truth = walk.steps(by: 50)
        #expect(abs(Int(last.steps) - truth) <= 2, "\(last.steps) of \(truth) steps")
        #expect(last.floorsAscended == 2 && last.floorsDescended == 0, "floors \(last.floorsAscended)/\(last.floorsDescended)")
        #expect(zip(totals, totals.dropFirst()).allSatisfy { $0.steps <= $1.steps })
        let walking = rig.samples(.activity).compactMap { s -> ActivitySample? in
            if case .activity(let a) = s, a.flags.contains(.walking) { return a }; return nil
        }
        #expect(!walking.isEmpty)
        // one walk: every walking sample says it began when the walk did (its startNs), within 3 s
        let starts = Set(walking.map(\.startNs))
        #expect(starts.count == 1, "the walk began again: \(starts.sorted())")
        let began = Double(try #require(starts.first) - walk.start) / 1e9
        #expect(abs(began - walk.walkFrom) < 3, "began at \(began) s, truth \(walk.walkFrom) s")
        let events = rig.samples(.pedometerEvent).compactMap { s -> PedometerEventType? in
            if case .pedometerEvent(let e) = s { return e.type }; return nil
        }
        #expect(events == [.resume, .pause])
    }

    /// The agent's fitness stage and the offline tools (`edge-agent steps`,
    /// `activity`: a FitnessPipeline over a file's rows, at the rate given)
    /// are one algorithm: the IMU samples the stage was fed (the
    /// accelerometer and gyroscope streams carry exactly them) run through a
    /// pipeline of their own give the same steps at the same times and the
    /// same activity changes.
    @Test func theStageIsThePipelineTheOfflineToolsRun() throws {
        let (rig, _) = try rig({ WalkingTruth(start: $0, walkFrom: 2, walkTo: 30) },
                               demand: [.pedometer: 0, .pedometerEvent: 0, .activity: 0, .accelerometer: 0, .gyroscope: 0])
        _ = rig.hub.start()
        rig.run(seconds: 40)
        let rate = try #require(rig.sink.devices.first { $0.id == "mpu6050@0x68" }?.rateHz)
        let acc = rig.samples(.accelerometer).compactMap { s -> AccelerometerSample? in
            if case .accelerometer(let a) = s { return a }; return nil
        }
        var gyro: [UInt64: Vector3] = [:]
        for case .gyroscope(let g) in rig.samples(.gyroscope) { gyro[g.timestampNs] = g.rotationRate }
        try #require(acc.count > 1000 && gyro.count == acc.count)
        let t0 = acc[0].timestampNs
        var pipeline = FitnessPipeline(FitnessSettings(sampleRateHz: rate))
        var steps: [(UInt64, Int)] = [], activity: [(UInt64, ActivityFlags)] = []
        for a in acc {
            let g = gyro[a.timestampNs]!
            let before = pipeline.output.steps.steps
            let o = pipeline.update(t: Double(a.timestampNs &- t0) * 1e-9, ax: a.acceleration.x, ay: a.acceleration.y, az: a.acceleration.z,
                                    gx: g.x, gy: g.y, gz: g.z)
            if o.steps.steps != before || o.steps.event != nil { steps.append((a.timestampNs, o.steps.steps)) }
            if o.activity.changed { activity.append((a.timestampNs, o.activity.flags)) }
        }
        let published = rig.samples(.pedometer).compactMap { s -> (UInt64, Int)? in
            if case .pedometer(let p) = s { return (p.timestampNs, Int(p.steps)) }; return nil
        }
        let publishedActivity = rig.samples(.activity).compactMap { s -> (UInt64, ActivityFlags)? in
            if case .activity(let a) = s { return (a.timestampNs, a.flags) }; return nil
        }
        #expect((published.last?.1 ?? 0) > 40)
        #expect(published.map(\.0) == steps.map(\.0) && published.map(\.1) == steps.map(\.1),
                "stage \(published.suffix(3)) vs pipeline \(steps.suffix(3))")
        #expect(publishedActivity.map(\.0) == activity.map(\.0) && publishedActivity.map(\.1) == activity.map(\.1))
        #expect(publishedActivity.count >= 2)
    }

    @Test func anElevatorRideCountsNoFloors() throws {
        // standing still while the pressure falls by 4 floors' worth (12 m)
        let clock0: UInt64 = 1_000_000_000
        final class Elevator: TruthSource, @unchecked Sendable {
            func truth(atNanoseconds ns: UInt64, body: SimBody) -> PhysicalTruth {
                var v = PhysicalTruth.restingLevel
                let t = Double(ns - 1_000_000_000) / 1e9
                v.pressure = 101_325 - 12.0 * min(12, max(0, t - 5) * 1.5)
                return v
            }
        }
        _ = clock0
        let r = try Rig(truth: Elevator())
        r.sink.setDemand([.pedometer: 0])
        _ = r.hub.start()
        r.run(seconds: 25)
        #expect(r.hub.fitnessTotals.up == 0 && r.hub.fitnessTotals.steps == 0)
    }

    @Test func nothingRunsWithoutAFitnessSubscriber() throws {
        let (rig, _) = try rig({ WalkingTruth(start: $0) }, demand: [.accelerometer: 0])
        _ = rig.hub.start()
        rig.run(seconds: 15)
        #expect(rig.samples(.pedometer).isEmpty && rig.samples(.activity).isEmpty)
        #expect(rig.hub.fitnessTotals.steps == 0)
        #expect(!rig.hub.stageStatuses().contains { $0.name == "fitness" })
    }
}
