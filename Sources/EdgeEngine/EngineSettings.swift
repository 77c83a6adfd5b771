import EdgeActivity
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// Where one chip sits and how it is turned: the engine's view of a board
/// profile entry (the service layer maps profiles onto this).
public struct EngineDevice: Sendable, Equatable {
    public enum Role: String, Sendable { case primary, accessory }
    /// Stable identifier, e.g. `mpu6050@0x68`.
    public var id: String
    public var kind: ChipKind
    public var address: UInt8
    public var role: Role
    /// `v_board = boardFromChip · v_chip`.
    public var boardFromChip: Matrix3
    /// Address of the MPU-6050 whose bypass makes this chip visible (GY-87).
    public var behind: UInt8?

    public init(id: String, kind: ChipKind, address: UInt8, role: Role = .primary,
                boardFromChip: Matrix3 = .identity, behind: UInt8? = nil) {
        self.id = id; self.kind = kind; self.address = address; self.role = role
        self.boardFromChip = boardFromChip; self.behind = behind
    }
}

/// Per-chip calibration in the CHIP frame (applied before the mounting, as
/// `edge-agent calibrate` measures it): `accel = scale ⊙ (raw − bias)`,
/// `gyro = raw − bias`, `field = softIron · (raw − hardIron)`.
public struct EngineCalibration: Sendable, Equatable {
    public struct IMU: Sendable, Equatable {
        /// rad/s.
        public var gyroBias: SIMD3<Double> = .zero
        /// m/s².
        public var accelBias: SIMD3<Double> = .zero
        /// Unitless, per axis.
        public var accelScale: SIMD3<Double> = SIMD3<Double>(1, 1, 1)
        public init(gyroBias: SIMD3<Double> = .zero, accelBias: SIMD3<Double> = .zero, accelScale: SIMD3<Double> = SIMD3<Double>(1, 1, 1)) {
            self.gyroBias = gyroBias; self.accelBias = accelBias; self.accelScale = accelScale
        }
    }
    /// Keyed by device id (`mpu6050@0x68`).
    public var imu: [String: IMU] = [:]
    /// The magnetometer's hard/soft iron, chip frame.
    public var magnetometer: MagnetometerCalibration?
    /// Device id → why it runs uncalibrated (e.g. the calibration file was
    /// measured on other chips), for the `devices` snapshot.
    public var uncalibrated: [String: String] = [:]
    public init(imu: [String: IMU] = [:], magnetometer: MagnetometerCalibration? = nil, uncalibrated: [String: String] = [:]) {
        self.imu = imu; self.magnetometer = magnetometer; self.uncalibrated = uncalibrated
    }
}

/// What the engine runs: chip settings, loop, fusion and altitude settings,
/// fault policy. Everything in SI units unless the name says otherwise.
public struct EngineSettings: Sendable, Equatable {
    public var mpu6050: MPU6050Configuration
    public var bmp280: BMP280Configuration
    public var qmc5883l: QMC5883LConfiguration
    /// Settings of the chips the fields above do not name (a chip added by
    /// a ``ChipTable`` row), by chip kind, each of its driver's `Settings`
    /// type; a chip with none runs its driver's defaults.
    public var chipSettings: ChipSettingsTable
    /// IMU samples read per loop tick. 1: one register burst per tick at the
    /// IMU rate (the loop runs at the IMU rate). More: the loop runs at
    /// rate/batch and drains the MPU-6050 FIFO, as needed up to 1 kHz.
    /// 0: automatic - the loop ticks once per ``deliveryInterval`` (samples
    /// are delivered no sooner anyway), or faster when a client wants the
    /// magnetometer faster; see ``EngineDemand/imuBatch(fixed:rateHz:deliveryInterval:demand:magnetometerPeriod:dataReady:)``.
    public var imuBatch: Int
    /// Frame of published device motion (falls back to a 6D frame and says
    /// so in the samples' frame when the magnetometer is missing).
    public var referenceFrame: ReferenceFrame
    public var fusion: AttitudeFilter.Settings
    /// The continuous magnetometer calibration's settings (it runs when
    /// `fusion.magnetometerSelfCalibration` is on; config `fusion.self_calibration_soft_iron`).
    public var magnetometerLearning = MagnetometerSelfCalibration.Settings()
    public var altitude: AltitudeFilter.Settings
    /// Consecutive failed operations (each after its transfers' retries)
    /// before a device is re-initialised.
    public var failuresBeforeReset: Int
    /// Seconds between probes of a device that does not answer (or answers
    /// but cannot be brought up). Short by default (0.05 s), so data resume
    /// within a few hundred milliseconds of the chip answering again: a
    /// probe is one transfer.
    public var reprobeInterval: Double
    /// A device whose new samples stop for this many expected sample periods
    /// (or loop periods, if longer) is stalled: reported degraded and
    /// re-initialised. Unitless, ≥ 2.
    public var stallPeriods: Double = 4
    /// Seconds between re-checks of a running device's configuration
    /// registers (a brown-out resets a chip without a bus error).
    public var verifyInterval: Double = 1
    /// Extra attempts for a transfer that failed transiently (no
    /// acknowledge, timeout, EIO), counted per device.
    public var busRetries: Int = 2
    /// Streams kept running even with no subscriber.
    public var alwaysOn: Set<StreamName>
    /// How often, at most, the service thread is woken to deliver, seconds
    /// (0: every tick that published). Waking it every other tick at 100 Hz
    /// halves its wake-ups - the larger part of the agent's CPU - for at most
    /// this much extra latency; capture timestamps are unaffected.
    public var deliveryInterval: Double = 0.02
    /// The pedometer's stride model and the floor height (config `fitness`).
    public var fitness = FitnessEngineSettings()
    /// The submersion stream's depth model (water type, gravity, latitude).
    public var water = DepthSettings()
    /// Thresholds of the submersion state machine (``SubmersionSettings``);
    /// the sensor's full scale is filled in from the chip.
    public var submersion = SubmersionSettings(sensorMaximumPascals: BMP280Range.maximumPascals)

    public init(mpu6050: MPU6050Configuration = .default, bmp280: BMP280Configuration = .default,
                qmc5883l: QMC5883LConfiguration = .default, imuBatch: Int = 1,
                referenceFrame: ReferenceFrame = .xMagneticNorthZVertical,
                fusion: AttitudeFilter.Settings = AttitudeFilter.Settings(),
                altitude: AltitudeFilter.Settings = AltitudeFilter.Settings(),
                failuresBeforeReset: Int = 3, reprobeInterval: Double = 0.05,
                alwaysOn: Set<StreamName> = []) {
        self.mpu6050 = mpu6050; self.bmp280 = bmp280; self.qmc5883l = qmc5883l
        self.imuBatch = max(0, imuBatch); self.referenceFrame = referenceFrame
        self.fusion = fusion; self.altitude = altitude
        self.failuresBeforeReset = max(1, failuresBeforeReset); self.reprobeInterval = reprobeInterval
        self.alwaysOn = alwaysOn
        self.chipSettings = ChipSettingsTable()
    }

    /// The same settings with another ``deliveryInterval`` (seconds).
    public func withDeliveryInterval(_ seconds: Double) -> EngineSettings {
        var s = self
        s.deliveryInterval = max(0, seconds)
        return s
    }

    /// ``reprobeInterval`` in ns (saturating; NaN and negative values give 0).
    public var reprobeIntervalNanoseconds: UInt64 { nanoseconds(seconds: reprobeInterval) }
    /// ``verifyInterval`` in ns (saturating).
    public var verifyIntervalNanoseconds: UInt64 { nanoseconds(seconds: verifyInterval) }

    /// IMU sample rate the divider achieves, Hz.
    public var imuRateHz: Double { mpu6050.achievedSampleRateHz }
    /// Loop period, ns: one IMU sample, or one FIFO batch.
    /// Total: a rate that is not finite and positive (impossible from a
    /// checked configuration) gives 10 ms; the period is at most 1 s.
    public var loopPeriodNanoseconds: UInt64 {
        let p = nanoseconds(seconds: Double(max(1, imuBatch)) / imuRateHz)
        return p == 0 || p > 1_000_000_000 ? (p == 0 ? 10_000_000 : 1_000_000_000) : p
    }
}

/// Seconds to nanoseconds, saturating: NaN and values ≤ 0 give 0, values
/// beyond ~584 years give `UInt64.max / 2` (so adding it to a monotonic
/// time cannot overflow). Settings are range-checked where they are read;
/// this keeps the engine total whatever it is handed.
@inlinable public func nanoseconds(seconds: Double) -> UInt64 {
    guard seconds > 0 else { return 0 }           // also NaN
    let ns = seconds * 1e9
    return ns >= 9.2e18 ? UInt64.max / 2 : UInt64(ns.rounded())
}

/// The fitness stage's settings: the wearer's stride model and the height of a floor.
public struct FitnessEngineSettings: Sendable, Equatable {
    public var stride: StrideModel
    /// m per floor.
    public var floorHeightMeters: Double
    public init(stride: StrideModel = StrideModel(), floorHeightMeters: Double = 3) {
        self.stride = stride; self.floorHeightMeters = floorHeightMeters
    }
}

/// Chip settings by chip kind, each of its own type (``EngineSettings/chipSettings``).
public struct ChipSettingsTable: Sendable, Equatable {
    private struct Entry: Sendable {
        var value: any Sendable
        var isEqual: @Sendable (any Sendable) -> Bool
    }
    private var entries: [ChipKind: Entry] = [:]

    public init() {}

    /// The settings of `kind` as `T` (nil: none, or of another type).
    public subscript<T: Sendable & Equatable>(kind: ChipKind, as type: T.Type) -> T? {
        get { entries[kind]?.value as? T }
        set { entries[kind] = newValue.map { v in Entry(value: v, isEqual: { ($0 as? T) == v }) } }
    }

    public static func == (a: ChipSettingsTable, b: ChipSettingsTable) -> Bool {
        Set(a.entries.keys) == Set(b.entries.keys)
            && a.entries.allSatisfy { kind, e in b.entries[kind].map { e.isEqual($0.value) } ?? false }
    }
}
