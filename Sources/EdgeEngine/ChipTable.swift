import EdgeBus
import EdgeChips

/// The chips the engine runs: one row per chip kind, naming the device
/// that runs it (with its driver and its settings) and so the role it
/// plays. The role decides what the chip feeds: an IMU the fusion, fitness
/// and altitude stages, a magnetometer the fusion's field and the
/// `magnetometer` stream, a barometer altitude (and submersion without a
/// depth sensor), a depth sensor submersion. A new chip of a known role is
/// a driver, a device (or an existing device over its driver) and one row
/// here; the hub is not edited.
enum ChipTable {
    /// A device of the board, by role.
    enum Unit<B: I2CBus> {
        case imu(IMUDevice<B>)
        case magnetometer(any MagnetometerUnit)
        case barometer(any BarometerUnit)
        case depth(DepthSensorDevice<B>)
    }

    /// The device for the board's chip `d` on `bus`; nil for a chip the
    /// engine does not run.
    static func unit<B: I2CBus>(for d: EngineDevice, bus: B, clock: any TimeSource, settings s: EngineSettings,
                                calibration: EngineCalibration, policy: DevicePolicy) -> Unit<B>? {
        switch d.kind {
        case .mpu6050:
            return .imu(IMUDevice(device: d, driver: MPU6050(bus: bus, address: d.address, clock: clock), configuration: s.mpu6050,
                                  calibration: calibration.imu[d.id] ?? .init(), policy: policy))
        case .qmc5883l:
            return .magnetometer(MagnetometerDevice(device: d, driver: QMC5883L(bus: bus, address: d.address, clock: clock),
                                                    configuration: s.qmc5883l, policy: policy))
        case .bmp280:
            return .barometer(BarometerDevice(device: d, driver: BMP280(bus: bus, address: d.address, clock: clock),
                                              configuration: s.bmp280, policy: policy))
        case .ms5837:
            return .depth(DepthSensorDevice(device: d, driver: MS5837(bus: bus, address: d.address, clock: clock), policy: policy))
        case .hmc5883l:
            return .magnetometer(MagnetometerDevice(device: d, driver: HMC5883L(bus: bus, address: d.address, clock: clock),
                                                    configuration: s.chipSettings[.hmc5883l, as: HMC5883LConfiguration.self] ?? .default,
                                                    policy: policy))
        case .bme280:
            return .barometer(BarometerDevice(device: d, driver: BME280(bus: bus, address: d.address, clock: clock),
                                              configuration: s.chipSettings[.bme280, as: BME280Configuration.self] ?? .default,
                                              policy: policy))
        }
    }
}
