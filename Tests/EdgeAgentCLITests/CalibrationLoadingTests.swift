import Testing
import Foundation
import EdgeConfig
import EdgeEngine
import EdgeFusion
@testable import EdgeAgentCLI
import EdgeRuntime

@Suite struct CalibrationLoadingTests {
    @Test func fileMapsOntoTheEngine() throws {
        var file = CalibrationFile()
        file.set(gyro: GyroCalibration(bias: SIMD3(0.01, -0.02, 0.03), temperatureCelsius: 25, noise: SIMD3(0.001, 0.001, 0.001), sampleCount: 100),
                 for: "mpu6050@0x68", created: "2026-11-29T12:00:00Z")
        file.set(mag: MagnetometerCalibration(hardIron: SIMD3(12, -8, 5)), for: "qmc5883l@0x0d", created: "2026-11-29T12:00:00Z")
        let e = CalibrationLoader.engineCalibration(file)
        #expect(e.imu["mpu6050@0x68"]?.gyroBias == SIMD3(0.01, -0.02, 0.03))
        #expect(e.imu["mpu6050@0x68"]?.accelScale == SIMD3(1, 1, 1))
        #expect(e.magnetometer?.hardIron == SIMD3(12, -8, 5))
    }

    @Test func missingFileIsNoCalibrationAndABadFileIsAnError() throws {
        #expect(try CalibrationLoader.load("/nonexistent/calibration.json") == EngineCalibration())
        #expect(try CalibrationLoader.load(nil) == EngineCalibration())
        let path = NSTemporaryDirectory() + "edge-cal-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try "{ not json".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ConfigError.self) { try CalibrationLoader.load(path) }
    }
}
