import Testing
import Foundation
import EdgeBus
import EdgeFusion
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// The fusion stage learns a magnet fixed to the board (the simulator's
/// `steel` disturbance: a body-frame hard iron) while the board turns, as
/// Apple's devices do: the simulated board runs ideal chips and no guided
/// calibration, so everything the heading gets right comes from the
/// learning, checked against the scenario's truth attitude.
@Suite struct MagnetometerSelfCalibrationStageTests {
    /// 60 s of varied turning (40-70 °/s about six axes), then `still` s at rest.
    static func scenario(magnets: String, still: Double = 10, turning: Bool = true) -> String {
        let turns = turning ? """
              { duration_s: 10, rotate: { axis: "z", rate_dps: 60, ramp_s: 1 } },
              { duration_s: 10, rotate: { axis: [1, 1, 0], rate_dps: 50, ramp_s: 1 } },
              { duration_s: 10, rotate: { axis: "y", rate_dps: 70, ramp_s: 1 } },
              { duration_s: 10, rotate: { axis: [1, -1, 1], rate_dps: 40, ramp_s: 1 } },
              { duration_s: 10, rotate: { axis: "x", rate_dps: 60, ramp_s: 1 } },
              { duration_s: 10, rotate: { axis: [0, 1, 1], rate_dps: 50, ramp_s: 1 } },
            """ : "{ duration_s: 60 },"
        return """
        {
          name: "magnet-on-board", duration_s: \(60 + still + 2), seed: 5,
          board: { segments: [ { duration_s: 2 }, \(turns) { duration_s: \(still) } ] },
          environment: {
            field: { intensity_ut: 48, inclination_deg: 60, declination_deg: 0 },
            disturbances: [ \(magnets) ],
          },
        }
        """
    }

    static let magnet = #"{ kind: "steel", name: "magnet", from_s: 0, offset_ut: [25, -30, 15], body: "board" }"#

    struct Run {
        var accuracy: [(t: Double, a: MagneticFieldCalibrationAccuracy)] = []
        /// Heading (rotation about the vertical) error, degrees, per device-motion sample.
        var headingError: [(t: Double, e: Double)] = []
    }

    static func run(_ text: String, seconds: Double, calibration: EngineCalibration = EngineCalibration(),
                    settings: EngineSettings = EngineSettings()) throws -> (Rig, Run) {
        let rig = try Rig(settings: settings, scenarioText: text, calibration: calibration, imperfections: .ideal)
        let d = JSONDecoder(); d.allowsJSON5 = true
        let world = try ScenarioWorld(try d.decode(Scenario.self, from: Data(text.utf8)), startNanoseconds: rig.clock.nowNanoseconds)
        rig.hub.start()
        var out = Run()
        for _ in 0..<Int(seconds) {
            rig.sink.removeAll()
            rig.run(seconds: 1)
            guard case .deviceMotion(let m)? = rig.samples(.deviceMotion).last else { continue }
            let t = Double(m.timestampNs - 1_000_000_000) / 1e9
            out.accuracy.append((t, m.magneticFieldAccuracy))
            let q = Quaternion(w: m.attitude.w, x: m.attitude.x, y: m.attitude.y, z: m.attitude.z)
            out.headingError.append((t, headingDifference(q, world.sample(atNanoseconds: m.timestampNs).attitude)))
        }
        return (rig, out)
    }

    /// The angle, degrees, of the rotation about the earth's vertical that
    /// separates two sensor-to-earth attitudes once their tilt is matched.
    static func headingDifference(_ a: Quaternion, _ b: Quaternion) -> Double {
        let d = a * b.conjugate          // earth-frame rotation from b to a
        let yaw = 2 * mathAtan2(d.z, d.w) * 180 / .pi
        var e = yaw.truncatingRemainder(dividingBy: 360)
        if e > 180 { e -= 360 } else if e < -180 { e += 360 }
        return abs(e)
    }

    @Test func aMagnetOnTheBoardIsLearnedWhileTurningAndTheHeadingIsRight() throws {
        let (rig, run) = try Self.run(Self.scenario(magnets: Self.magnet), seconds: 72)
        let high = run.accuracy.first { $0.a == .high }
        #expect(high != nil && high!.t < 62, "high at \(String(describing: high?.t)); \(run.accuracy.map(\.a.rawValue))")
        let last = run.headingError.suffix(5).map(\.e)
        #expect(last.allSatisfy { $0 < 2 }, "heading error at the end: \(last)")
        #expect(run.accuracy.last?.a == .high)
        #expect(rig.hub.stageStatuses().first { $0.name == "fusion" }?.reason == nil, "calibrated: nothing to ask")
    }

    @Test func withoutTheLearningTheSameRunKeepsTheMagnetInTheHeading() throws {
        var s = EngineSettings()
        s.fusion.magnetometerSelfCalibration = false
        let (_, run) = try Self.run(Self.scenario(magnets: Self.magnet), seconds: 72, settings: s)
        #expect(run.accuracy.last?.a == .uncalibrated)
        #expect(run.headingError.suffix(5).map(\.e).allSatisfy { $0 > 5 }, "\(run.headingError.suffix(5))")
    }

    @Test func aMagnetMovedMidRunIsDetectedTheAccuracyDropsAndItIsRelearned() throws {
        // The magnet moves at 32 s, as the board starts turning about
        // (1, −1, 1), to another place on the board. (A move along the axis
        // the board turns about does not show until it turns about another:
        // the offset along the rotation axis is not observable.)
        let magnets = #"""
            { kind: "steel", name: "magnet", from_s: 0, to_s: 32, offset_ut: [25, -30, 15], body: "board" },
            { kind: "steel", name: "moved", from_s: 32, offset_ut: [-20, 10, 25], body: "board" }
            """#
        let text = Self.scenario(magnets: magnets, still: 40)
        let (_, run) = try Self.run(text, seconds: 100)
        let before = run.accuracy.filter { $0.t < 32 }.contains { $0.a == .high }
        let dropped = run.accuracy.first { $0.t >= 32 && $0.a.rawValue < MagneticFieldCalibrationAccuracy.medium.rawValue }
        #expect(before, "\(run.accuracy.map(\.a.rawValue))")
        #expect(dropped != nil && dropped!.t < 40, "dropped at \(String(describing: dropped?.t)): \(run.accuracy.map(\.a.rawValue))")
        let again = run.accuracy.first { $0.t > (dropped?.t ?? 100) && $0.a == .high }
        #expect(again != nil, "never high again: \(run.accuracy.map(\.a.rawValue))")
        #expect(run.headingError.suffix(5).map(\.e).allSatisfy { $0 < 2 }, "\(run.headingError.suffix(5))")
    }

    /// What was learned, saved as a chip-frame calibration and loaded by
    /// the next start, calibrates a board that has not turned since: the
    /// heading is right from the first seconds. (The saving and the check
    /// against the chips are `CalibrationLoader`'s: LearnedCalibrationTests.)
    @Test func whatWasLearnedStartsTheNextRunCalibrated() throws {
        let (first, _) = try Self.run(Self.scenario(magnets: Self.magnet), seconds: 72)
        let estimator = try #require(first.hub.stage(FusionStage.self)?.learning.estimator)
        // the simulated magnetometer is mounted as the board (identity), and ran without a guided calibration
        let learned = try #require(estimator.learnedCalibration(guided: nil, boardFromChip: .identity))
        let still = Self.scenario(magnets: Self.magnet, turning: false)
        let (_, restarted) = try Self.run(still, seconds: 20, calibration: EngineCalibration(magnetometer: learned))
        #expect(restarted.headingError.dropFirst(3).allSatisfy { $0.e < 2 }, "\(restarted.headingError.map(\.e))")
        #expect(restarted.accuracy.dropFirst(3).allSatisfy { $0.a.rawValue >= MagneticFieldCalibrationAccuracy.medium.rawValue },
                "\(restarted.accuracy.map(\.a.rawValue))")
        // without it the same still board points the wrong way
        let (_, cold) = try Self.run(still, seconds: 20)
        #expect(cold.headingError.suffix(5).allSatisfy { $0.e > 5 }, "\(cold.headingError.map(\.e))")
    }

    @Test func aBoardThatNeverTurnsStaysUncalibrated() throws {
        let (rig, run) = try Self.run(Self.scenario(magnets: Self.magnet, turning: false), seconds: 72)
        #expect(run.accuracy.allSatisfy { $0.a == .uncalibrated }, "\(run.accuracy.map(\.a.rawValue))")
        // and the fusion stage asks for movement
        let fusion = rig.hub.stageStatuses().first { $0.name == "fusion" }
        #expect(fusion?.degraded == false && fusion?.reason?.contains("turn the board") == true, "\(String(describing: fusion))")
    }
}
