import Testing
import Foundation
import EdgeBus
import EdgeConfig
import EdgeFusion
import EdgeSim
@testable import EdgeAgentCLI
import EdgeRuntime

/// What the continuous magnetometer calibration learned is saved with the
/// chip it was learned on (`<calibration file>.learned.json`), loaded by the
/// next start when it is newer than the guided calibration, and refused on
/// other chips.
@Suite struct LearnedCalibrationTests {
    let learned = MagnetometerCalibration(hardIron: Vector3(21.5, -33.25, 12), fieldStrength: 47.5, residual: 0.004)

    /// The default simulated board calibrated by `calibrate` into a fresh
    /// calibration file, and ``learned`` saved as learned on its
    /// magnetometer at `created`.
    func calibratedBoardThatLearned(created: String) throws -> (path: String, files: CalibrationLoader.Files, session: BoardSession) {
        let path = temporaryCalibrationPath()
        try calibrateDefaultBoard(into: path)
        let files = CalibrationLoader.Files(configuration: path)
        let session = try BoardSession.open(try defaultSelection(), clock: VirtualClock())
        try CalibrationLoader.saveLearned(learned, chip: "qmc5883l@0x0d", chips: chips(session), to: files.learned!, created: created)
        return (path, files, session)
    }

    func chips(_ session: BoardSession) throws -> BoardChips {
        try BoardChips.of(profile: session.profile, profilePath: session.simulated != nil ? session.profileSource : nil,
                          reading: session.bus)
    }

    @Test func theLearnedFileSitsNextToTheCalibrationFile() {
        #expect(CalibrationLoader.Files(configuration: "/etc/edge-agent/calibration.json").learned
                == "/etc/edge-agent/calibration.learned.json")
        #expect(CalibrationLoader.Files(board: "cal").learned == "cal.learned")
        #expect(CalibrationLoader.Files(configuration: "a.b/cal").learned == "a.b/cal.learned")
        #expect(CalibrationLoader.Files().learned == nil)
    }

    @Test func aRestartLoadsWhatWasLearnedOnTheseChips() throws {
        let (path, files, session) = try calibratedBoardThatLearned(created: "2999-01-01T00:00:00Z")
        // the file says which chip it was learned on (read back by a second reader: JSONSerialization)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: files.learned!))) as? [String: Any]
        let entry = (json?["chips"] as? [String: Any])?["qmc5883l@0x0d"] as? [String: Any]
        #expect((entry?["measured_on"] as? [String: Any])?["chip"] as? String == "qmc5883l")
        #expect((entry?["mag"] as? [String: Any])?["hard_iron_ut"] as? [Double] == [21.5, -33.25, 12])
        var warnings: [String] = []
        let restarted = try CalibrationLoader.resolve(files, for: session, warn: { warnings.append($0) })
        #expect(restarted.engine.magnetometer == learned)
        #expect(restarted.sources["qmc5883l@0x0d"] == files.learned)
        #expect(restarted.sources["mpu6050@0x68"] == path, "the IMU's calibration still comes from the calibration file")
        #expect(warnings.isEmpty, "\(warnings)")
    }

    @Test func aGuidedCalibrationNewerThanWhatWasLearnedWins() throws {
        let (path, files, session) = try calibratedBoardThatLearned(created: "2000-01-01T00:00:00Z")
        let guided = try CalibrationFile.load(from: path)[chip: "qmc5883l@0x0d"]?.mag?.calibration
        let resolved = try CalibrationLoader.resolve(files, for: session)
        #expect(resolved.engine.magnetometer == guided)
        #expect(resolved.sources["qmc5883l@0x0d"] == path)
    }

    @Test func whatWasLearnedOnOtherChipsIsNotUsedAndSaysWhy() throws {
        let (_, files, _) = try calibratedBoardThatLearned(created: "2999-01-01T00:00:00Z")
        // the same board with another seed: other chips
        var reseeded = try defaultSelection()
        reseeded.profile.simulation?.seed = 99
        let other = try BoardSession.open(reseeded, clock: VirtualClock())
        var warnings: [String] = []
        let resolved = try CalibrationLoader.resolve(files, for: other, warn: { warnings.append($0) })
        #expect(resolved.engine.magnetometer != learned)
        #expect(resolved.sources["qmc5883l@0x0d"] != files.learned)
        #expect(warnings.contains { $0.contains(files.learned!) && $0.contains("learned on other chips")
            && $0.contains("simulation seed 16 when calibrated, 99 now") }, "\(warnings)")
    }
}
