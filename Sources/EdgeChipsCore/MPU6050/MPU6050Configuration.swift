/// MPU-6050 settings in user units. `Codable` with snake_case keys; every key
/// is optional (missing → default) and validated on decode:
///
/// | key | unit | allowed | default |
/// |---|---|---|---|
/// | `gyro_range_dps` | °/s | 250, 500, 1000, 2000 | 500 |
/// | `accel_range_g` | g | 2, 4, 8, 16 | 4 |
/// | `dlpf_bandwidth_hz` | Hz | 260, 184, 94, 44, 21, 10, 5 | 44 |
/// | `sample_rate_hz` | Hz | 3.91...1000 (...8000 with dlpf 260) | 100 |
/// | `clock_source` | | internal, pll_x, pll_y, pll_z | pll_x |
/// | `fifo` | | true/false | false |
/// | `data_ready_interrupt` | | true/false | false |
/// | `i2c_bypass` | | true/false | false |
///
/// The sample rate becomes SMPLRT_DIV; ``achievedSampleRateHz`` is what the
/// divider really gives (RM §4.2).
public struct MPU6050Configuration: Sendable, Equatable, Codable {
    public var gyroRange: MPU6050GyroRange
    public var accelRange: MPU6050AccelRange
    public var dlpf: MPU6050DLPF
    /// Requested output data rate, Hz.
    public var sampleRateHz: Double
    public var clockSource: MPU6050ClockSource
    /// Buffer accel + temp + gyro (14-byte records) in the FIFO.
    public var fifo: Bool
    /// Drive INT on data ready (latched until INT_STATUS is read).
    public var dataReadyInterrupt: Bool
    /// Join the aux bus (XDA/XCL) to the host bus, e.g. a GY-87 magnetometer.
    public var i2cBypass: Bool

    public init(gyroRange: MPU6050GyroRange = .dps500, accelRange: MPU6050AccelRange = .g4,
                dlpf: MPU6050DLPF = .hz44, sampleRateHz: Double = 100, clockSource: MPU6050ClockSource = .pllX,
                fifo: Bool = false, dataReadyInterrupt: Bool = false, i2cBypass: Bool = false) {
        self.gyroRange = gyroRange; self.accelRange = accelRange; self.dlpf = dlpf
        self.sampleRateHz = sampleRateHz; self.clockSource = clockSource; self.fifo = fifo
        self.dataReadyInterrupt = dataReadyInterrupt; self.i2cBypass = i2cBypass
    }

    public static let `default` = MPU6050Configuration()

    /// What the chip holds right after ``MPU6050/reset()`` (register reset
    /// values, RM §3: all 0 → ±250 °/s, ±2 g, DLPF 0 / 8 kHz, divider 0) with
    /// the wake write's PLL X clock.
    public static let afterReset = MPU6050Configuration(
        gyroRange: .dps250, accelRange: .g2, dlpf: .hz260, sampleRateHz: 8000, clockSource: .pllX,
        fifo: false, dataReadyInterrupt: false, i2cBypass: false)

    /// SMPLRT_DIV for the requested rate: round(base / rate) - 1 in 0...255,
    /// base = 8 kHz with DLPF_CFG 0, else 1 kHz.
    public var sampleRateDivider: UInt8 {
        let base = dlpf.gyroOutputRateHz
        let d = (base / sampleRateHz).rounded() - 1
        return UInt8(min(255, max(0, d)))
    }

    /// The rate the divider really gives, Hz (nominal; the clock is ±1 % on a
    /// PLL, ±5 % on the internal oscillator).
    public var achievedSampleRateHz: Double {
        dlpf.gyroOutputRateHz / (1 + Double(sampleRateDivider))
    }

    /// INT_PIN_CFG value: latched, active high, push-pull, cleared by reading
    /// INT_STATUS only; plus I2C_BYPASS_EN.
    public var intPinConfigValue: UInt8 {
        (dataReadyInterrupt ? MPU6050Bits.latchInterrupt : 0) | (i2cBypass ? MPU6050Bits.i2cBypass : 0)
    }
    /// INT_ENABLE value.
    public var intEnableValue: UInt8 {
        (dataReadyInterrupt ? MPU6050Bits.dataReady : 0) | (fifo ? MPU6050Bits.fifoOverflow : 0)
    }
    /// USER_CTRL value (I2C_MST_EN always 0: the driver does not use the aux
    /// master, and bypass requires it off).
    public var userControlValue: UInt8 { fifo ? MPU6050Bits.userFIFOEnable : 0 }

    /// The configuration as an ordered `{register, set, clear}` table; every
    /// row owns its whole register. Applied after reset/wake, re-checked by
    /// ``MPU6050/verifyConfiguration()``.
    public var registerTable: RegisterTable {
        RegisterTable([
            .value(MPU6050Register.powerManagement1.rawValue, clockSource.rawValue),
            .value(MPU6050Register.powerManagement2.rawValue, 0x00),
            .value(MPU6050Register.sampleRateDivider.rawValue, sampleRateDivider),
            .value(MPU6050Register.config.rawValue, dlpf.rawValue),
            .value(MPU6050Register.gyroConfig.rawValue, gyroRange.registerValue),
            .value(MPU6050Register.accelConfig.rawValue, accelRange.registerValue),
            .value(MPU6050Register.intPinConfig.rawValue, intPinConfigValue),
            .value(MPU6050Register.intEnable.rawValue, intEnableValue),
            .value(MPU6050Register.fifoEnable.rawValue, fifo ? MPU6050Bits.fifoAccelTempGyro : 0x00),
            .value(MPU6050Register.userControl.rawValue, userControlValue),
        ])
    }

    enum CodingKeys: String, CodingKey {
        case gyroRangeDps = "gyro_range_dps", accelRangeG = "accel_range_g"
        case dlpfBandwidthHz = "dlpf_bandwidth_hz", sampleRateHz = "sample_rate_hz"
        case clockSource = "clock_source", fifo, dataReadyInterrupt = "data_ready_interrupt"
        case i2cBypass = "i2c_bypass"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = MPU6050Configuration.default
        let dps = try c.decodeAllowed(.gyroRangeDps, allowed: MPU6050GyroRange.allCases.map(\.degreesPerSecond),
                                      default: d.gyroRange.degreesPerSecond, unit: "°/s")
        gyroRange = MPU6050GyroRange(degreesPerSecond: dps)!
        let g = try c.decodeAllowed(.accelRangeG, allowed: MPU6050AccelRange.allCases.map(\.g),
                                    default: d.accelRange.g, unit: "g")
        accelRange = MPU6050AccelRange(g: g)!
        let bw = try c.decodeAllowed(.dlpfBandwidthHz, allowed: MPU6050DLPF.allCases.map(\.bandwidthHz),
                                     default: d.dlpf.bandwidthHz, unit: "Hz")
        dlpf = MPU6050DLPF(bandwidthHz: bw)!
        let key = try c.decodeAllowed(.clockSource, allowed: MPU6050ClockSource.allCases.map(\.key),
                                      default: d.clockSource.key, unit: "")
        clockSource = MPU6050ClockSource(key: key)!
        let rate = try c.decodeDefault(.sampleRateHz, default: d.sampleRateHz)
        let base = dlpf.gyroOutputRateHz
        guard rate.isFinite, rate >= base / 256, rate <= base else {
            throw DecodingError.dataCorruptedError(
                forKey: .sampleRateHz, in: c,
                debugDescription: "sample_rate_hz must be between \(base / 256) and \(plainNumber(base)) Hz with dlpf_bandwidth_hz \(bw) (8000 Hz only with 260); got \(rate)")
        }
        sampleRateHz = rate
        fifo = try c.decodeDefault(.fifo, default: d.fifo)
        dataReadyInterrupt = try c.decodeDefault(.dataReadyInterrupt, default: d.dataReadyInterrupt)
        i2cBypass = try c.decodeDefault(.i2cBypass, default: d.i2cBypass)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(gyroRange.degreesPerSecond, forKey: .gyroRangeDps)
        try c.encode(accelRange.g, forKey: .accelRangeG)
        try c.encode(dlpf.bandwidthHz, forKey: .dlpfBandwidthHz)
        try c.encode(sampleRateHz, forKey: .sampleRateHz)
        try c.encode(clockSource.key, forKey: .clockSource)
        try c.encode(fifo, forKey: .fifo)
        try c.encode(dataReadyInterrupt, forKey: .dataReadyInterrupt)
        try c.encode(i2cBypass, forKey: .i2cBypass)
    }
}
