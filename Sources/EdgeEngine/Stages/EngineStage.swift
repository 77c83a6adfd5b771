import EdgeChips
import EdgeFusion
import EdgeProtocol

/// What a stage consumes, each input from one device of the board.
public struct StageInputs: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The primary IMU's samples (``MotionInput``).
    public static let motion = StageInputs(rawValue: 1 << 0)
    /// The accessory IMU's samples.
    public static let accessoryMotion = StageInputs(rawValue: 1 << 1)
    /// The magnetometer's calibrated field, board frame, µT.
    public static let field = StageInputs(rawValue: 1 << 2)
    /// The barometer's readings (pressure, temperature, humidity).
    public static let pressure = StageInputs(rawValue: 1 << 3)
    /// The depth sensor's readings.
    public static let depthPressure = StageInputs(rawValue: 1 << 4)

    /// The device that delivers each input (nil: the depth sensor, which
    /// runs while the submersion stream is wanted).
    var need: EngineDevice.Need? {
        switch self {
        case .motion: return .imu
        case .accessoryMotion: return .accessory
        case .field: return .magnetometer
        case .pressure: return .barometer
        default: return nil
        }
    }

    /// Each single input in this set.
    var members: [StageInputs] {
        (0..<5).map { StageInputs(rawValue: 1 << $0) }.filter { contains($0) }
    }
}

/// A stream a stage produces, and the inputs it needs to (what wakes which
/// device: ``StreamName/devices``).
public struct StageProduct: Sendable, Hashable {
    public var stream: StreamName
    public var needs: StageInputs
    public init(_ stream: StreamName, needs: StageInputs) { self.stream = stream; self.needs = needs }
}

/// One IMU sample as the stages see it: board frame, specific force in
/// m/s², rotation rate in rad/s. Stages run in ``StageTable`` order and may
/// add to it for the ones after them (the fusion stage writes the 6D
/// attitude the altitude stage projects with).
struct MotionInput {
    /// Specific force, m/s² (+9.81 up at rest), calibrated.
    var accel: Vector3
    /// Rotation rate, rad/s, calibrated.
    var gyro: Vector3
    /// Interval before this sample, s.
    var dt: Double
    /// Capture time, CLOCK_MONOTONIC ns.
    var t: UInt64
    /// The last sample of this tick's batch.
    var last: Bool
    /// The 6D (gravity-only) attitude after this sample: set by the fusion stage.
    var attitude6D = Quaternion.identity
}

/// The loop's timing, as the stages need it; given at start and whenever
/// demand changes the IMU's rate or the batch.
struct StageTiming: Equatable {
    /// The primary IMU's achieved rate, Hz.
    var imuRateHz: Double
    /// How long a magnetometer field stays current, ns (its stall limit).
    var fieldLifetimeNanoseconds: UInt64
}

/// The health of the devices behind a stage's inputs, for its status.
struct StageSources {
    var motion: DeviceHealth?
    var pressure: DeviceHealth?
    var depthPressure: DeviceHealth?
}

/// One stage of the engine: it consumes inputs from the board's devices,
/// keeps its own state (a filter, a counter, a state machine) and publishes
/// the streams it produces. The hub holds the stages ``StageTable`` gives it
/// for the board's devices and the configuration, and feeds each the inputs
/// it consumes, in table order; it names no stage. A new derived stream is a
/// stage (or a product of one) and a row in the table.
///
/// Every method but the declarations has a default that does nothing, so a
/// stage implements only what it consumes.
protocol EngineStage {
    /// Its name in status reports.
    static var name: String { get }
    /// The streams it produces, each with the inputs it needs.
    static var produces: [StageProduct] { get }
    /// The inputs this instance is fed (what the board has of what it can use).
    var consumes: StageInputs { get }
    /// Its demand: whether it runs under the publisher's current demand
    /// (asked when demand changes, not per sample). Default: one of its
    /// streams is wanted.
    func runs(_ p: Publisher) -> Bool

    mutating func motion(_ m: inout MotionInput, publisher p: inout Publisher)
    mutating func accessoryMotion(_ m: inout MotionInput, publisher p: inout Publisher)
    mutating func field(_ f: Vector3, at t: UInt64, publisher p: inout Publisher)
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher)
    mutating func depthPressure(_ r: MS5837Sample, publisher p: inout Publisher)
    /// The device behind `input` is down or idle (called on every tick while
    /// it is): nothing it measured before may be presented as current.
    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher)
    mutating func timingChanged(_ t: StageTiming)
    /// A new calibration (SIGHUP); the stage keeps its state.
    mutating func calibrationChanged(_ c: EngineCalibration)
    /// Whether it can do its whole job now, and why not (nil: nothing to report).
    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus?
}

extension EngineStage {
    @inline(__always) func runs(_ p: Publisher) -> Bool { Self.produces.contains { p.wants($0.stream) } }
    mutating func motion(_ m: inout MotionInput, publisher p: inout Publisher) {}
    mutating func accessoryMotion(_ m: inout MotionInput, publisher p: inout Publisher) {}
    mutating func field(_ f: Vector3, at t: UInt64, publisher p: inout Publisher) {}
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {}
    mutating func depthPressure(_ r: MS5837Sample, publisher p: inout Publisher) {}
    mutating func inputLost(_ input: StageInputs, at t: UInt64, publisher p: inout Publisher) {}
    mutating func timingChanged(_ t: StageTiming) {}
    mutating func calibrationChanged(_ c: EngineCalibration) {}
    func status(at t: UInt64, sources: StageSources, publisher p: Publisher) -> StageStatus? { nil }
}

/// What the board has, for choosing stages.
struct BoardInputs {
    var imu = false, accessory = false, magnetometer = false, barometer = false, depthSensor = false
    var barometerMeasuresHumidity = false
}

/// The engine's stages, in the order a tick feeds them, and which of them a
/// board runs. Order matters where a stage uses another's result: the
/// fusion stage first (its 6D attitude feeds altitude); submersion before
/// fitness and humidity keeps the order samples of one reading are published
/// in (a replay golden holds it).
enum StageTable {
    /// Every stage kind, in order (made on each use, read only when an
    /// engine is built: a stored global of metatypes is not `Sendable`).
    static var kinds: [any EngineStage.Type] {
        [FusionStage.self, AccessoryStage.self, AltitudeStage.self, SubmersionStage.self, FitnessStage.self,
         HumidityStage.self, MagnetometerStreamStage.self]
    }

    /// The stages for a board with `b`, configured from `s`.
    static func stages(for b: BoardInputs, settings s: EngineSettings, calibration: EngineCalibration,
                       timing: StageTiming) -> [any EngineStage] {
        var out: [any EngineStage] = []
        if b.imu {
            var f = FusionStage(settings: s.fusion, learning: s.magnetometerLearning, sampleInterval: 1 / s.imuRateHz, frame: s.referenceFrame,
                                fieldLifetime: timing.fieldLifetimeNanoseconds, hasMagnetometer: b.magnetometer)
            // The magnetometer device applies the calibration; the filter
            // learns its quality for the field's accuracy.
            f.calibrationChanged(calibration)
            out.append(f)
        }
        if b.accessory { out.append(AccessoryStage(settings: s.fusion, sampleInterval: 1 / s.imuRateHz)) }
        if b.barometer { out.append(AltitudeStage(settings: s.altitude, hasIMU: b.imu)) }
        if b.depthSensor || b.barometer {
            var sub = s.submersion
            sub.depth = s.water
            if b.depthSensor { sub.sensorMaximumPascals = MS5837Variant.ms5837_30ba.maximumPressurePascals }
            // Without a depth sensor the barometer is the submersion stream's (to its 110 kPa).
            out.append(SubmersionStage(settings: sub, source: b.depthSensor ? .depthPressure : .pressure))
        }
        if b.imu {
            out.append(FitnessStage(settings: .init(stride: s.fitness.stride, floorHeightMeters: s.fitness.floorHeightMeters),
                                    rateHz: timing.imuRateHz, hasBarometer: b.barometer))
        }
        if b.barometerMeasuresHumidity { out.append(HumidityStage()) }
        if b.magnetometer { out.append(MagnetometerStreamStage()) }
        return out
    }

    /// The inputs each stream needs: from the stage kinds' products.
    static let needs: [StageInputs] = {
        var n = [StageInputs](repeating: [], count: StreamName.allCases.count)
        for k in kinds { for p in k.produces { n[p.stream.index].formUnion(p.needs) } }
        return n
    }()
}

/// The BME280's relative humidity as its own stream.
struct HumidityStage: EngineStage {
    static let name = "humidity"
    static let produces = [StageProduct(.humidity, needs: .pressure)]
    var consumes: StageInputs { .pressure }

    @inline(__always)
    mutating func pressure(_ r: BarometerReading, publisher p: inout Publisher) {
        if let h = r.relativeHumidityPercent, h.isFinite, p.wants(.humidity) {
            p.publish(.humidity(HumiditySample(timestampNs: r.captureNanoseconds, relativeHumidity: h)))
        }
    }
}

/// The calibrated field as the `magnetometer` stream.
struct MagnetometerStreamStage: EngineStage {
    static let name = "magnetometer"
    static let produces = [StageProduct(.magnetometer, needs: .field)]
    var consumes: StageInputs { .field }

    @inline(__always)
    mutating func field(_ f: Vector3, at t: UInt64, publisher p: inout Publisher) {
        if p.wants(.magnetometer) { p.publish(.magnetometer(MagnetometerSample(timestampNs: t, magneticField: f))) }
    }
}
