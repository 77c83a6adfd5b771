import EdgeEngine

extension CalibrationLoader {
    /// Placeholder until the calibration file format lands: no calibration.
    static func loadFile(_ path: String) throws -> EngineCalibration { EngineCalibration() }
}
