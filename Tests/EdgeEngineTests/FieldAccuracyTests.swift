import Testing
import EdgeBus
import EdgeFusion
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// Device motion's `magneticFieldAccuracy` follows the calibration the agent
/// applies and the field it sees: it stayed `uncalibrated` forever after
/// `calibrate mag` and a reload, so an app waiting for `.medium` never began.
@Suite struct FieldAccuracyTests {
    func lastAccuracy(_ rig: Rig) -> MagneticFieldCalibrationAccuracy? {
        guard case .deviceMotion(let m)? = rig.sink.samples.last(where: { $0.stream == .deviceMotion }) else { return nil }
        return m.magneticFieldAccuracy
    }

    @Test func uncalibratedUntilACalibrationIsLoadedThenFromItsQuality() throws {
        let rig = try Rig(imperfections: .ideal)
        rig.hub.start()
        rig.run(seconds: 3)
        #expect(lastAccuracy(rig) == .uncalibrated)
        // A good fit (residual 1 %) for a 48 µT field (the truth's: restingLevel), as SIGHUP loads it:
        // medium on a board that has not moved (no reference field yet) ...
        let good = MagnetometerCalibration(fieldStrength: 48, residual: 0.01)
        rig.loop.enqueue { $0.apply(calibration: EngineCalibration(magnetometer: good)) }
        rig.run(seconds: 5)
        #expect(lastAccuracy(rig) == .medium)
        #expect(rig.hub.primaryFilter?.state.magRefNorm == 0)
    }

    /// ... and high once it has turned (VQF takes the field as its reference
    /// while the gyro sees at least 20 °/s), with the same good fit; a poor
    /// fit (8 %) stays medium.
    @Test(arguments: [(0.01, MagneticFieldCalibrationAccuracy.high), (0.08, .medium)])
    func highAfterTurningWithAGoodFit(_ residual: Double, _ expected: MagneticFieldCalibrationAccuracy) throws {
        let cal = EngineCalibration(magnetometer: MagnetometerCalibration(fieldStrength: 48, residual: residual))
        let rig = try Rig(scenario: "rotate-z", calibration: cal, imperfections: .ideal)
        rig.hub.start()
        rig.run(seconds: 20)   // 5 s still, then turning at 30 °/s
        #expect((rig.hub.primaryFilter?.state.magRefNorm ?? 0) > 0)
        #expect(lastAccuracy(rig) == expected)
    }

    @Test func aFieldStrongerThanCalibratedIsLow() throws {
        // The calibration measured 30 µT, the field is 48 µT: not the field it was fitted in.
        let cal = EngineCalibration(magnetometer: MagnetometerCalibration(fieldStrength: 30, residual: 0.01))
        let rig = try Rig(calibration: cal, imperfections: .ideal)
        rig.hub.start()
        rig.run(seconds: 5)
        #expect(lastAccuracy(rig) == .low)
    }
}
