import EdgeBus

// The driver seams the engine consumes: one protocol per kind of sensor, so
// a device type is written once per kind and a new chip is one conforming
// driver plus one row of the engine's device table. Every requirement used in
// the loop (`readField`, `readConversion`, `verifyConfiguration`) must not
// allocate: conformers read into stack buffers and return value types.

/// What the engine needs to know about a magnetometer's settings.
public protocol MagnetometerSettings: Equatable, Sendable {
    /// Continuous-mode output rate, Hz (the engine polls twice per period).
    var outputRateHz: Double { get }
    /// The same settings with the chip in standby/idle (no measurements):
    /// what the engine configures while no client wants the field.
    func idle() -> Self
    /// For the start line: "at 100 Hz, ±8 G".
    var summary: String { get }
}

/// A magnetometer driver (QMC5883L, HMC5883L).
public protocol MagnetometerDriver {
    associatedtype Bus: I2CBus
    associatedtype Settings: MagnetometerSettings
    /// The chip this driver runs (board profiles and errors name it).
    static var chipKind: ChipKind { get }
    init(bus: Bus, address: UInt8, clock: any TimeSource)
    var clock: any TimeSource { get }
    /// What the chip was last configured with (its power-on state after a reset).
    var configuration: Settings { get }
    /// Reads the identity registers; ``DriverError/wrongChip`` if they are not this chip's.
    func identify() throws(DriverError)
    /// identify + reset (or the chip's equivalent) + configure.
    mutating func start(_ c: Settings) throws(DriverError)
    mutating func configure(_ c: Settings) throws(DriverError)
    /// Re-reads the configuration registers; ``DriverError/configurationMismatch`` if one changed.
    func verifyConfiguration() throws(DriverError)
    /// One poll: a new field in µT (chip axes), `.overflow`, or `.notReady`.
    mutating func readField() throws(DriverError) -> MagneticFieldReading
}

/// What the engine needs to know about a barometer's settings.
public protocol BarometerSettings: Equatable, Sendable {
    /// Worst-case measurement time of one conversion, ms (t_meas,max).
    var maximumMeasurementMilliseconds: Double { get }
    /// Worst-case normal-mode cycle, ms: t_meas,max + t_standby (the read spacing
    /// at which no conversion is read twice on average).
    var maximumCycleMilliseconds: Double { get }
    /// Typical normal-mode output rate, Hz.
    var normalModeRateHz: Double { get }
    /// Whether pressure is measured (oversampling not 0).
    var pressureEnabled: Bool { get }
    /// Whether humidity is measured (false on chips without it).
    var humidityEnabled: Bool { get }
    /// The same settings with the chip asleep.
    func idle() -> Self
    /// For the start line: "at 26.32 Hz (×16 pressure, ×2 temperature, IIR 16)".
    var summary: String { get }
}

/// The raw ADC values of one barometer conversion: equal raw values read
/// close together may be the same conversion read twice.
public struct BarometerRaw: Sendable, Equatable {
    /// 20-bit pressure and temperature ADC values.
    public var adcP: Int32, adcT: Int32
    /// 16-bit humidity ADC value (0 on chips without humidity).
    public var adcH: Int32
    public init(adcP: Int32, adcT: Int32, adcH: Int32 = 0) { self.adcP = adcP; self.adcT = adcT; self.adcH = adcH }
}

/// One compensated barometer conversion.
public struct BarometerReading: Sendable, Equatable {
    /// Pa; nil when pressure is configured off.
    public var pressurePascals: Double?
    /// °C.
    public var temperatureCelsius: Double
    /// Relative humidity, %; nil on chips without humidity or when it is configured off.
    public var relativeHumidityPercent: Double?
    /// Capture time, monotonic ns.
    public var captureNanoseconds: UInt64
    public init(pressurePascals: Double?, temperatureCelsius: Double, relativeHumidityPercent: Double?,
                captureNanoseconds: UInt64) {
        self.pressurePascals = pressurePascals; self.temperatureCelsius = temperatureCelsius
        self.relativeHumidityPercent = relativeHumidityPercent; self.captureNanoseconds = captureNanoseconds
    }
}

/// A barometer driver (BMP280, BME280): normal-mode conversions read in one burst.
public protocol BarometerDriver {
    associatedtype Bus: I2CBus
    associatedtype Settings: BarometerSettings
    static var chipKind: ChipKind { get }
    init(bus: Bus, address: UInt8, clock: any TimeSource)
    var clock: any TimeSource { get }
    var configuration: Settings { get }
    /// Whether the factory trimming has been read (compensation needs it).
    var isCalibrated: Bool { get }
    /// Reads `id`; the part found (a BMP280 driver also runs a BME280's P/T).
    @discardableResult mutating func identify() throws(DriverError) -> BMP280Variant
    /// identify + soft reset + trimming + configure; the part found.
    @discardableResult mutating func start(_ c: Settings) throws(DriverError) -> BMP280Variant
    mutating func configure(_ c: Settings) throws(DriverError)
    func verifyConfiguration() throws(DriverError)
    /// One burst read of the latest conversion, its raw values and its
    /// compensation. The chip's "not measured" value is
    /// ``DriverError/decode(_:)`` with ``DecodeError/skippedMeasurement(chip:channel:)``
    /// (a reset chip that sleeps).
    func readConversion() throws(DriverError) -> (raw: BarometerRaw, reading: BarometerReading)
}

/// "26.32" (two decimals, no trailing ".0").
func twoDecimals(_ v: Double) -> String { plainNumber((v * 100).rounded() / 100) }

// MARK: conformances of the QMC5883L and BMP280 (the HMC5883L's and BME280's sit with them)

extension QMC5883LConfiguration: MagnetometerSettings {
    public var outputRateHz: Double { Double(outputRate.hertz) }
    public func idle() -> QMC5883LConfiguration { var c = self; c.mode = .standby; return c }
    public var summary: String { "at \(outputRate.hertz) Hz, ±\(range.gauss) G" }
}

extension QMC5883L: MagnetometerDriver {
    public static var chipKind: ChipKind { .qmc5883l }
    @inlinable
    public mutating func readField() throws(DriverError) -> MagneticFieldReading {
        switch try read() {
        case .field(let s): return .field(s.magneticField)
        case .overflow: return .overflow
        case .notReady: return .notReady
        }
    }
}

extension BMP280Configuration: BarometerSettings {
    public var maximumMeasurementMilliseconds: Double { measurementTime.maximum }
    public var maximumCycleMilliseconds: Double { measurementTime.maximum + standby.milliseconds }
    public var pressureEnabled: Bool { pressureOversampling != .skipped }
    public var humidityEnabled: Bool { false }
    public func idle() -> BMP280Configuration { var c = self; c.mode = .sleep; return c }
    public var summary: String {
        "at \(twoDecimals(normalModeRateHz)) Hz (×\(pressureOversampling.factor) pressure, ×\(temperatureOversampling.factor) temperature, IIR \(filter.coefficient))"
    }
}

extension BMP280: BarometerDriver {
    public static var chipKind: ChipKind { .bmp280 }
    public var isCalibrated: Bool { calibration != nil }
    @inlinable
    public func readConversion() throws(DriverError) -> (raw: BarometerRaw, reading: BarometerReading) {
        let raw = try readRaw()
        guard let c = calibration else {
            throw .decode(.invalidCalibration(chip: .bmp280, reason: "calibration has not been read"))
        }
        let on = configuration.pressureOversampling != .skipped
        let s = try decoding { () throws(DecodeError) in try BMP280Compensation.compensate(raw, c, pressureEnabled: on) }
        return (BarometerRaw(adcP: raw.adcP, adcT: raw.adcT),
                BarometerReading(pressurePascals: s.pressurePascals, temperatureCelsius: s.temperatureCelsius,
                                 relativeHumidityPercent: nil, captureNanoseconds: s.captureNanoseconds))
    }
}
