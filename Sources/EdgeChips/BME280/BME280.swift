import EdgeBus

/// BME280 driver: pressure, temperature and relative humidity, generic over
/// the bus. Pressure and temperature are the BMP280's (same registers and
/// trimming, BST-BME280-DS002 §4.2.3 and §5): the driver runs a ``BMP280``
/// for them and adds humidity (ctrl_hum, the H trimming words, 0xFD/0xFE).
///
/// Bring-up: ``start(_:)`` = ``identify()`` → ``softReset()`` →
/// ``readCalibration()`` → ``configure(_:)``. Then ``read()`` in normal
/// mode or ``measure()`` for one forced conversion.
public struct BME280<Bus: I2CBus> {
    /// The BMP280 part of the chip (identity, reset, P/T trimming, ctrl_meas, config).
    public private(set) var barometer: BMP280<Bus>
    public var bus: Bus { barometer.bus }
    /// 7-bit address: 0x76 (SDO to GND) or 0x77.
    public var address: UInt8 { barometer.address }
    public var clock: any TimeSource { barometer.clock }
    /// Humidity trimming (nil until ``readCalibration()``).
    public private(set) var humidityCalibration: BME280HumidityCalibration?
    public private(set) var configuration: BME280Configuration = .default {
        didSet { verificationTable = Self.verificationTable(configuration) }
    }
    /// What ``verifyConfiguration()`` re-reads, kept so the check allocates nothing.
    private var verificationTable = Self.verificationTable(.default)

    public init(bus: Bus, address: UInt8 = 0x76, clock: any TimeSource) {
        barometer = BMP280(bus: bus, address: address, clock: clock)
    }

    /// Reads `id` (0xD0): 0x60 is a BME280; anything else (a BMP280 0x58
    /// included: it has no humidity) is ``DriverError/wrongChip``.
    @discardableResult
    public mutating func identify() throws(DriverError) -> BMP280Variant {
        let v: BMP280Variant
        do { v = try barometer.identify() } catch {
            if case let .wrongChip(_, a, r, found, name) = error {
                throw .wrongChip(expected: .bme280, address: a, register: r, found: found, identifiedAs: name)
            }
            throw error
        }
        guard v.chipID == BME280Bits.chipID else {
            throw .wrongChip(expected: .bme280, address: address, register: BMP280Register.id.rawValue,
                             found: v.chipID, identifiedAs: v.part + " (no humidity sensor: use chip bmp280)")
        }
        return v
    }

    /// The BMP280's soft reset (DS §5.4.2: the same 0xB6 to 0xE0 and
    /// im_update wait); ctrl_hum returns to 0 (humidity skipped).
    public mutating func softReset() throws(DriverError) {
        try barometer.softReset()
        configuration = BME280Configuration(barometer: barometer.configuration, humidityOversampling: .skipped)
    }

    /// Reads the P/T trimming (the BMP280's 24 bytes at 0x88), then dig_H1
    /// (0xA1) and 0xE1..0xE7 (one burst).
    public mutating func readCalibration() throws(DriverError) {
        try barometer.readCalibration()
        let a = address, b = bus
        let h1 = try onBus { () throws(I2CError) in try b.readRegister(a, BME280Register.humidityCalibrationH1.rawValue) }
        let e = try onBus { () throws(I2CError) in try b.readRegisters(a, BME280Register.humidityCalibrationH2.rawValue, count: 7) }
        humidityCalibration = try decoding { () throws(DecodeError) in try BME280HumidityCalibration(h1: h1, e1toE7: e) }
    }

    /// ctrl_hum (read-modify-write: bits 7..3 are not ours), then the
    /// BMP280's ctrl_meas (sleep), config, ctrl_meas (mode): ctrl_hum takes
    /// effect with that ctrl_meas write (DS §5.4.3).
    public mutating func configure(_ c: BME280Configuration) throws(DriverError) {
        let row = RegisterTable([c.controlHumidityRow]), a = address, b = bus
        try onBus { () throws(I2CError) in try row.apply(on: b, address: a) }
        try barometer.apply(c.barometer)
        configuration = c
    }

    /// identify + softReset + readCalibration + configure.
    @discardableResult
    public mutating func start(_ c: BME280Configuration = .default) throws(DriverError) -> BMP280Variant {
        let v = try identify()
        try softReset()
        try readCalibration()
        try configure(c)
        return v
    }

    /// Re-reads ctrl_hum, config and ctrl_meas.
    public func verifyConfiguration() throws(DriverError) {
        try verificationTable.verify(on: bus, address: address, chip: .bme280)
    }

    static func verificationTable(_ c: BME280Configuration) -> RegisterTable {
        RegisterTable([c.controlHumidityRow] + BMP280<Bus>.verificationTable(c.barometer).settings)
    }

    /// The 8-byte burst press_msb..hum_lsb (0xF7..0xFE): one burst, so the
    /// three values come from the same conversion (DS §4).
    @inlinable
    public func readRaw() throws(DriverError) -> BME280RawSample {
        let b = bus, a = address, clock = self.clock
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, BMP280Register.pressureMSB.rawValue, count: 8) { bytes in
                BME280RawSample(burst: bytes, captureNanoseconds: clock.nowNanoseconds)
            }
        }
    }

    /// Compensates a raw sample with this chip's trimming and settings.
    @inlinable
    public func compensate(_ raw: BME280RawSample) throws(DriverError) -> BME280Sample {
        guard let c = barometer.calibration, let h = humidityCalibration else {
            throw .decode(.invalidCalibration(chip: .bme280, reason: "calibration has not been read; call readCalibration() or start() first"))
        }
        let p = configuration.barometer.pressureOversampling != .skipped
        let hOn = configuration.humidityOversampling != .skipped
        return try decoding { () throws(DecodeError) in
            try BME280Compensation.compensate(raw, c, h, pressureEnabled: p, humidityEnabled: hOn)
        }
    }

    /// Reads and compensates the latest conversion (normal mode).
    @inlinable
    public func read() throws(DriverError) -> BME280Sample {
        try compensate(try readRaw())
    }

    /// One forced-mode conversion (waiting the maximum measurement time
    /// with humidity, DS §9.1), then ``read()``. In normal mode it just reads.
    public func measure() throws(DriverError) -> BME280Sample {
        if configuration.barometer.mode == .normal { return try read() }
        try barometer.convertForced(maximumMilliseconds: configuration.measurementTime.maximum, chip: .bme280)
        return try read()
    }
}
