/// The chips this module drives.
public enum ChipKind: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case mpu6050
    case bmp280
    case qmc5883l
    /// TE MS5837-30BA pressure (0..30 bar) and temperature sensor.
    case ms5837
    /// Honeywell HMC5883L magnetometer (0x1E), the GY-271's original chip.
    case hmc5883l
    /// Bosch BME280: the BMP280's pressure and temperature plus humidity.
    case bme280

    /// The part name as printed in data sheets.
    public var partName: String {
        switch self {
        case .mpu6050: return "MPU-6050"
        case .bmp280: return "BMP280"
        case .qmc5883l: return "QMC5883L"
        case .ms5837: return "MS5837-30BA"
        case .hmc5883l: return "HMC5883L"
        case .bme280: return "BME280"
        }
    }
}
