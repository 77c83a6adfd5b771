import Testing
import Foundation
@testable import EdgeFusion

@Suite struct SettingsTests {
    @Test func emptyConfigurationGivesVQFDefaults() throws {
        let s = try JSONDecoder().decode(AttitudeFilter.Settings.self, from: Data("{}".utf8))
        #expect(s == AttitudeFilter.Settings())
        #expect(s.tauAcc == 3 && s.tauMag == 9 && s.magMaxRejectionTime == 60 && s.declination == nil)
    }

    @Test func partialConfigurationOverridesOnlyWhatItNames() throws {
        let json = #"{"tauMag": 12, "restBiasEstimation": false, "declination": 4.5,"#
            + #" "magnetometerCalibration": {"hardIron": [1, 2, 3]}}"#
        let s = try JSONDecoder().decode(AttitudeFilter.Settings.self, from: Data(json.utf8))
        #expect(s.tauMag == 12 && !s.restBiasEstimation && s.declination == 4.5)
        #expect(s.magnetometerCalibration?.hardIron == Vector3(1, 2, 3))
        #expect(s.tauAcc == 3)
    }

    @Test func roundTripsAndRejectsNonsense() throws {
        var s = AttitudeFilter.Settings()
        s.tauAcc = 2.5
        s.declination = -3
        let back = try JSONDecoder().decode(AttitudeFilter.Settings.self, from: JSONEncoder().encode(s))
        #expect(back == s)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(AttitudeFilter.Settings.self, from: Data(#"{"tauAcc": 0}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(AttitudeFilter.Settings.self, from: Data(#"{"tauMag": "fast"}"#.utf8))
        }
    }

    @Test func stateSurvivesJSONMidRun() throws {
        let data = Synthetic().generate(duration: 8, orientation: { t in
            Quaternion(axis: Vector3(1, 0.2, 0), angle: 0.4 * mathSin(t)) * Quaternion(yaw: 0.5 * t)
        })
        var whole = AttitudeFilter(sampleInterval: 0.005)
        for s in data { whole.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        var first = AttitudeFilter(sampleInterval: 0.005)
        for s in data[..<700] { first.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        let saved = try JSONEncoder().encode(first.state)
        var second = AttitudeFilter(settings: .init(), state: try JSONDecoder().decode(AttitudeFilter.State.self, from: saved))
        for s in data[700...] { second.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005) }
        #expect(second.state == whole.state)
        #expect(second.quaternion9D == whole.quaternion9D)
    }
}
