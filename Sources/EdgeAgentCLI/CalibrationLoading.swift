import EdgeConfig
import EdgeEngine

extension CalibrationLoader {
    /// The calibration file (`edge-agent calibrate` writes it) in the engine's
    /// form: per-chip values in the chip frame. A missing section is identity.
    static func loadFile(_ path: String) throws -> EngineCalibration {
        let file = try CalibrationFile.load(from: path)
        return engineCalibration(file)
    }

    static func engineCalibration(_ file: CalibrationFile) -> EngineCalibration {
        var out = EngineCalibration()
        for (id, chip) in file.chips {
            if chip.gyro != nil || chip.accel != nil {
                let g = chip.gyroCalibration, a = chip.accelCalibration
                out.imu[id] = EngineCalibration.IMU(gyroBias: g.bias, accelBias: a.bias, accelScale: a.scale)
            }
            if chip.mag != nil, id.hasPrefix("qmc5883l") { out.magnetometer = chip.magCalibration }
        }
        return out
    }
}
