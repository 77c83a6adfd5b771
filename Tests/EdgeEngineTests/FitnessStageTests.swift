import Testing
import Foundation
import EdgeBus
import EdgeProtocol
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
