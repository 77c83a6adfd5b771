import EdgeValues


/// A part that answers at the MPU-6050's address with a WHO_AM_I value the
/// driver recognises: clones and look-alikes are rows of ``MPU6050Variant/known``,
/// not `if` chains (Linux `drivers/iio/imu/inv_mpu6050/inv_mpu_core.c`'s `hw_info` table).
public struct MPU6050Variant: Sendable, Equatable, CustomStringConvertible {
    /// WHO_AM_I (0x75) value.
    public var whoAmI: UInt8
    /// Part name(s) for messages.
    public var part: String
    /// True only for the genuine MPU-6050 family (WHO_AM_I 0x68).
    public var isGenuine: Bool
    /// Temperature: `T[°C] = TEMP_OUT / lsbPerDegree + offsetCelsius`.
    public var temperatureLSBPerDegree: Double
    public var temperatureOffsetCelsius: Double
    /// FIFO size in bytes (assumed 1024 where no source gives one).
    public var fifoBytes: Int
    /// What differs from a genuine MPU-6050 (nil for the genuine part).
    public var differences: String?

    /// The warning to log when this variant is found (nil for a genuine part).
    public var warning: String? {
        guard let d = differences else { return nil }
        return "WHO_AM_I \(hex(whoAmI)): this is not a genuine MPU-6050 but \(part). Raw accelerometer/gyro registers are used as on an MPU-6050; differences: \(d)"
    }

    public var description: String { isGenuine ? part : "\(part) (WHO_AM_I \(hex(whoAmI)))" }

    /// MPU-6050 temperature formula, RM §4.18: 340 LSB/°C, 36.53 °C at 0.
    public static let mpu6050Temperature = (lsb: 340.0, offset: 36.53)
    /// MPU-6500 core, kernel offset 7011 / scale 2.995178 m°C: /333.87 + 21.
    public static let mpu6500Temperature = (lsb: 333.87, offset: 21.0)
    /// ICM-206xx/20689, kernel offset 8170 / scale 3.059976 m°C: /326.8 + 25.
    public static let icmTemperature = (lsb: 326.8, offset: 25.0)

    static func row(_ id: UInt8, _ part: String, _ genuine: Bool, _ t: (lsb: Double, offset: Double),
                    fifo: Int, _ differences: String?) -> MPU6050Variant {
        MPU6050Variant(whoAmI: id, part: part, isGenuine: genuine, temperatureLSBPerDegree: t.lsb,
                       temperatureOffsetCelsius: t.offset, fifoBytes: fifo, differences: differences)
    }

    static let core6500 = "MPU-6500 core: temperature is TEMP_OUT/333.87 + 21 °C (not /340 + 36.53), the accelerometer low-pass filter is in ACCEL_CONFIG_2 (0x1D) so dlpf_bandwidth_hz sets the gyro only, the FIFO holds 512 bytes and self-test uses a different scheme (skip it)"
    static let icm = "ICM-20xxx core: temperature is TEMP_OUT/326.8 + 25 °C, the accelerometer low-pass filter is in ACCEL_CONFIG_2 (0x1D), self-test uses a different scheme (skip it)"

    /// Every WHO_AM_I value accepted at 0x68/0x69 (0x68: RM-MPU-6000A-00 rev 4.2
    /// §4.32; the others: the Linux `inv_mpu_core.c` table, and clone reports:
    /// 0x98 ElectronicCats/mpu6050 #21, 0x72 jrowberg/i2cdevlib #478).
    public static let known: [MPU6050Variant] = [
        row(0x68, "MPU-6050 (or MPU-6000/MPU-9150)", true, mpu6050Temperature, fifo: 1024, nil),
        row(0x70, "an MPU-6500 (or a clone with its core)", false, mpu6500Temperature, fifo: 512, core6500),
        row(0x71, "an MPU-9250", false, mpu6500Temperature, fifo: 512, core6500 + "; its AK8963 magnetometer sits behind the aux bus"),
        row(0x73, "an MPU-9255", false, mpu6500Temperature, fifo: 512, core6500 + "; its AK8963 magnetometer sits behind the aux bus"),
        row(0x74, "an MPU-6515", false, mpu6500Temperature, fifo: 512, core6500),
        row(0x78, "an MPU-6880", false, mpu6500Temperature, fifo: 512, core6500),
        row(0x98, "an ICM-20689 or a clone sold as MPU-6050 (bits 6..1 = 0x0C)", false, icmTemperature, fifo: 1024,
            icm + "; clones with this ID are reported to have a broken DMP, and their temperature formula is unverified - check it against a thermometer"),
        row(0x72, "an unidentified MPU-6050 clone (no InvenSense part has this ID)", false, mpu6050Temperature, fifo: 1024,
            "raw registers reportedly work; the MPU-6050 temperature formula, FIFO size and self-test limits are assumed and may be off"),
        row(0x12, "an ICM-20602", false, icmTemperature, fifo: 1008, icm),
        row(0x11, "an ICM-20600", false, icmTemperature, fifo: 1008, icm),
        row(0xAF, "an ICM-20608", false, icmTemperature, fifo: 512, icm),
        row(0xA6, "an ICM-20609", false, icmTemperature, fifo: 512, icm),
        row(0xA9, "an IAM-20680", false, icmTemperature, fifo: 512, icm),
        row(0x20, "an ICM-20690", false, icmTemperature, fifo: 1024, icm),
    ]

    /// The genuine part.
    public static let genuine = known[0]

    /// The row for a WHO_AM_I value, or nil (0x00/0xFF and anything unknown).
    public static func lookup(whoAmI: UInt8) -> MPU6050Variant? {
        known.first { $0.whoAmI == whoAmI }
    }
}
