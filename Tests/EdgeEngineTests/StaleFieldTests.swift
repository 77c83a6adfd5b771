import Testing
import Foundation
import EdgeBus
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// Issue 16, item 16: after the MPU-6050 was off the bus for 1.2 s, the
/// first device-motion samples after it came back carried the magnetic
/// field captured before the outage (1.27 s old) in a north frame, although
/// the magnetometer stream had a new field by then. A device-motion sample
/// now carries either a field the magnetometer captured within the field's
/// lifetime before it, or none (xArbitraryZVertical, zero, uncalibrated).
@Suite struct StaleFieldTests {
    @Test(arguments: [1, 4]) func afterAnIMUOutageNoSampleCarriesTheFieldFromBeforeIt(batch: Int) throws {
        var settings = EngineSettings()
        settings.imuBatch = batch
        let rig = try Rig(settings: settings, faults: [.nack(address: 0x68, register: nil, from: 1.5, to: 2.7)],
                          scenarioText: FaultMatrixTests.scenario)
        rig.hub.start()
        rig.run(seconds: 3.6)
        let fields = rig.samples(.magnetometer).compactMap { s -> (UInt64, Vector3)? in
            if case .magnetometer(let m) = s { return (m.timestampNs, m.magneticField) }
            return nil
        }
        let motion = rig.samples(.deviceMotion).compactMap { s -> DeviceMotionSample? in
            if case .deviceMotion(let m) = s { return m }
            return nil
        }
        let afterOutage = motion.filter { $0.timestampNs > rig.board.bus.startNanoseconds + 2_700_000_000 }
        try #require(afterOutage.count > 50, "device motion resumes after the outage")
        var north = 0
        for m in afterOutage where m.referenceFrame.hasNorth {
            north += 1
            // The field it carries is one the magnetometer captured at most
            // 100 ms (a few of its periods) before the sample.
            let recent = fields.contains { f in
                f.0 <= m.timestampNs && m.timestampNs - f.0 <= 100_000_000 && abs(f.1.x - m.magneticField.x) < 1e-9
                    && abs(f.1.y - m.magneticField.y) < 1e-9 && abs(f.1.z - m.magneticField.z) < 1e-9
            }
            #expect(recent, "batch \(batch): device motion at \(Double(m.timestampNs - rig.board.bus.startNanoseconds) / 1e9) s carries field \(m.magneticField), captured over 100 ms before it")
        }
        #expect(north > 50, "north frames come back after the outage (\(north))")
    }
}
