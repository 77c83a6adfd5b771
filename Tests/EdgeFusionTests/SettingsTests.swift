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
}
