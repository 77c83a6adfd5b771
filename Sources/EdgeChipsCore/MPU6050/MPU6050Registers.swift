import EdgeValues

/// MPU-6050 register addresses. Source: InvenSense RM-MPU-6000A-00 rev 4.2
/// (register map §3; register descriptions §4, section numbers in each comment).
public enum MPU6050Register: UInt8, Sendable, CaseIterable {
    /// SELF_TEST_X..Z (0x0D-0x0F), RM §4.1: [7:5] XA_TEST[4:2], [4:0] XG_TEST.
    case selfTestX = 0x0D, selfTestY = 0x0E, selfTestZ = 0x0F
    /// SELF_TEST_A (0x10), RM §4.1: [5:4] XA_TEST[1:0], [3:2] YA, [1:0] ZA.
    case selfTestA = 0x10
    /// SMPLRT_DIV (0x19), RM §4.2: SampleRate = GyroOutputRate / (1 + div).
    case sampleRateDivider = 0x19
    /// CONFIG (0x1A), RM §4.3: [5:3] EXT_SYNC_SET, [2:0] DLPF_CFG.
    case config = 0x1A
    /// GYRO_CONFIG (0x1B), RM §4.4: [7:5] self-test, [4:3] FS_SEL.
    case gyroConfig = 0x1B
    /// ACCEL_CONFIG (0x1C), RM §4.5: [7:5] self-test, [4:3] AFS_SEL.
    case accelConfig = 0x1C
    /// FIFO_EN (0x23), RM §4.6: 7 TEMP, 6 XG, 5 YG, 4 ZG, 3 ACCEL.
    case fifoEnable = 0x23
    /// INT_PIN_CFG (0x37), RM §4.14: 5 LATCH_INT_EN, 4 INT_RD_CLEAR, 1 I2C_BYPASS_EN.
    case intPinConfig = 0x37
    /// INT_ENABLE (0x38), RM §4.15: 4 FIFO_OFLOW_EN, 0 DATA_RDY_EN.
    case intEnable = 0x38
    /// INT_STATUS (0x3A), RM §4.16: 4 FIFO_OFLOW_INT, 0 DATA_RDY_INT; clear on read.
    case intStatus = 0x3A
    /// ACCEL_XOUT_H (0x3B), RM §4.17: first of the 14-byte sample burst.
    case accelXOutH = 0x3B
    /// TEMP_OUT_H (0x41), RM §4.18.
    case tempOutH = 0x41
    /// GYRO_XOUT_H (0x43), RM §4.19.
    case gyroXOutH = 0x43
    /// SIGNAL_PATH_RESET (0x68), RM §4.26.
    case signalPathReset = 0x68
    /// USER_CTRL (0x6A), RM §4.27: 6 FIFO_EN, 5 I2C_MST_EN, 2 FIFO_RESET.
    case userControl = 0x6A
    /// PWR_MGMT_1 (0x6B), RM §4.28: 7 DEVICE_RESET, 6 SLEEP, [2:0] CLKSEL.
    /// Resets to 0x40 (asleep).
    case powerManagement1 = 0x6B
    /// PWR_MGMT_2 (0x6C), RM §4.29: standby bits; 0 = all axes on.
    case powerManagement2 = 0x6C
    /// FIFO_COUNTH (0x72), RM §4.30: read H first (it latches L).
    case fifoCountH = 0x72
    /// FIFO_COUNTL (0x73).
    case fifoCountL = 0x73
    /// FIFO_R_W (0x74), RM §4.31: FIFO data port, does not auto-increment.
    case fifoReadWrite = 0x74
    /// WHO_AM_I (0x75), RM §4.32: 0x68 on a genuine part.
    case whoAmI = 0x75

    /// The register's data-sheet name.
    public var name: String {
        switch self {
        case .selfTestX: return "SELF_TEST_X"
        case .selfTestY: return "SELF_TEST_Y"
        case .selfTestZ: return "SELF_TEST_Z"
        case .selfTestA: return "SELF_TEST_A"
        case .sampleRateDivider: return "SMPLRT_DIV"
        case .config: return "CONFIG"
        case .gyroConfig: return "GYRO_CONFIG"
        case .accelConfig: return "ACCEL_CONFIG"
        case .fifoEnable: return "FIFO_EN"
        case .intPinConfig: return "INT_PIN_CFG"
        case .intEnable: return "INT_ENABLE"
        case .intStatus: return "INT_STATUS"
        case .accelXOutH: return "ACCEL_XOUT_H"
        case .tempOutH: return "TEMP_OUT_H"
        case .gyroXOutH: return "GYRO_XOUT_H"
        case .signalPathReset: return "SIGNAL_PATH_RESET"
        case .userControl: return "USER_CTRL"
        case .powerManagement1: return "PWR_MGMT_1"
        case .powerManagement2: return "PWR_MGMT_2"
        case .fifoCountH: return "FIFO_COUNTH"
        case .fifoCountL: return "FIFO_COUNTL"
        case .fifoReadWrite: return "FIFO_R_W"
        case .whoAmI: return "WHO_AM_I"
        }
    }
}

/// Bit values of the MPU-6050 registers the driver writes (RM rev 4.2).
public enum MPU6050Bits {
    /// PWR_MGMT_1.DEVICE_RESET (bit 7), self-clearing.
    public static let deviceReset: UInt8 = 0x80
    /// PWR_MGMT_1.SLEEP (bit 6), set after power-on and after a reset.
    public static let sleep: UInt8 = 0x40
    /// USER_CTRL.FIFO_EN (bit 6).
    public static let userFIFOEnable: UInt8 = 0x40
    /// USER_CTRL.I2C_MST_EN (bit 5): must be 0 for bypass.
    public static let i2cMasterEnable: UInt8 = 0x20
    /// USER_CTRL.FIFO_RESET (bit 2): only acts while FIFO_EN = 0.
    public static let fifoReset: UInt8 = 0x04
    /// INT_PIN_CFG.LATCH_INT_EN (bit 5): hold INT until INT_STATUS is read.
    public static let latchInterrupt: UInt8 = 0x20
    /// INT_PIN_CFG.I2C_BYPASS_EN (bit 1): aux bus joined to the host bus.
    public static let i2cBypass: UInt8 = 0x02
    /// INT_ENABLE / INT_STATUS FIFO overflow (bit 4).
    public static let fifoOverflow: UInt8 = 0x10
    /// INT_ENABLE / INT_STATUS data ready (bit 0).
    public static let dataReady: UInt8 = 0x01
    /// FIFO_EN: TEMP (7), XG (6), YG (5), ZG (4), ACCEL (3) → 14-byte records
    /// in register order accel, temp, gyro.
    public static let fifoAccelTempGyro: UInt8 = 0xF8
    /// GYRO_CONFIG / ACCEL_CONFIG self-test bits for all three axes.
    public static let selfTestAllAxes: UInt8 = 0xE0
}

/// Gyroscope full-scale range, GYRO_CONFIG.FS_SEL (DS §6.1).
public enum MPU6050GyroRange: UInt8, Sendable, CaseIterable, Equatable {
    case dps250 = 0, dps500 = 1, dps1000 = 2, dps2000 = 3

    /// Full scale in °/s.
    public var degreesPerSecond: Int { [250, 500, 1000, 2000][Int(rawValue)] }
    /// Sensitivity, LSB per °/s (DS values: 32.8 and 65.5, not 32.768/65.536).
    public var lsbPerDegreePerSecond: Double { [131.0, 65.5, 32.8, 16.4][Int(rawValue)] }
    /// rad/s per LSB.
    @inlinable public var radiansPerSecondPerLSB: Double { (Double.pi / 180) / lsbPerDegreePerSecond }
    /// GYRO_CONFIG value (self-test off).
    public var registerValue: UInt8 { rawValue << 3 }

    public init?(degreesPerSecond: Int) {
        guard let r = Self.allCases.first(where: { $0.degreesPerSecond == degreesPerSecond }) else { return nil }
        self = r
    }
}

/// Accelerometer full-scale range, ACCEL_CONFIG.AFS_SEL (DS §6.2).
public enum MPU6050AccelRange: UInt8, Sendable, CaseIterable, Equatable {
    case g2 = 0, g4 = 1, g8 = 2, g16 = 3

    /// Full scale in g.
    public var g: Int { [2, 4, 8, 16][Int(rawValue)] }
    /// Sensitivity, LSB per g.
    public var lsbPerG: Double { [16384.0, 8192.0, 4096.0, 2048.0][Int(rawValue)] }
    /// m/s² per LSB (g = 9.80665 m/s²).
    @inlinable public var metersPerSecondSquaredPerLSB: Double { standardGravity / lsbPerG }
    /// ACCEL_CONFIG value (self-test off).
    public var registerValue: UInt8 { rawValue << 3 }

    public init?(g: Int) {
        guard let r = Self.allCases.first(where: { $0.g == g }) else { return nil }
        self = r
    }
}

/// Digital low-pass filter, CONFIG.DLPF_CFG (RM §4.3), named by accel bandwidth.
public enum MPU6050DLPF: UInt8, Sendable, CaseIterable, Equatable {
    case hz260 = 0, hz184 = 1, hz94 = 2, hz44 = 3, hz21 = 4, hz10 = 5, hz5 = 6

    /// Accelerometer bandwidth in Hz (the config key's value).
    public var bandwidthHz: Int { [260, 184, 94, 44, 21, 10, 5][Int(rawValue)] }
    /// Gyroscope output rate: 8 kHz with DLPF_CFG 0 (or 7), otherwise 1 kHz.
    public var gyroOutputRateHz: Double { self == .hz260 ? 8000 : 1000 }

    public init?(bandwidthHz: Int) {
        guard let r = Self.allCases.first(where: { $0.bandwidthHz == bandwidthHz }) else { return nil }
        self = r
    }
}

/// Clock source, PWR_MGMT_1.CLKSEL (RM §4.28). A gyro PLL (±1 %) is strongly
/// recommended over the internal 8 MHz oscillator (±5 %).
public enum MPU6050ClockSource: UInt8, Sendable, CaseIterable, Equatable {
    case `internal` = 0, pllX = 1, pllY = 2, pllZ = 3

    /// The config key's value.
    public var key: String { ["internal", "pll_x", "pll_y", "pll_z"][Int(rawValue)] }
    public init?(key: String) {
        guard let r = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = r
    }
}
