/// The chips this module drives.
public enum ChipKind: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case mpu6050
    case bmp280
    case qmc5883l

    /// The part name as printed in data sheets.
    public var partName: String {
        switch self {
        case .mpu6050: return "MPU-6050"
        case .bmp280: return "BMP280"
        case .qmc5883l: return "QMC5883L"
        }
    }
}
