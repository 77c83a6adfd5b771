import EdgeBus

/// BMP280 driver (also runs a BME280's pressure and temperature), generic
/// over the bus; waits go through the given ``TimeSource``.
///
/// Bring-up: ``identify()`` → ``softReset()`` → ``readCalibration()`` →
/// ``configure(_:)``, or ``start(_:)``. Then ``read()`` in normal mode or
/// ``measure()`` for one forced conversion.
public struct BMP280<Bus: I2CBus> {
    public let bus: Bus
    /// 7-bit address: 0x76 (SDO to GND, most GY-BMP280 boards) or 0x77.
    public let address: UInt8
    public let clock: any TimeSource
    public private(set) var variant: BMP280Variant = .bmp280
    /// Factory calibration (nil until ``readCalibration()``).
    public private(set) var calibration: BMP280Calibration?
    public private(set) var configuration: BMP280Configuration = .default {
        didSet { verificationTable = Self.verificationTable(configuration) }
    }
    /// What ``verifyConfiguration()`` re-reads, kept so the periodic
    /// re-check allocates nothing.
    private var verificationTable = Self.verificationTable(.default)

    /// Start-up time after a (soft) power-on reset, which includes copying
    /// the NVM into the calibration image: 2 ms (DS Table 2, t_startup).
    public static var startupMilliseconds: Double { 2 }
    /// Poll interval while waiting for status.im_update to clear.
    public static var pollMilliseconds: Double { 0.5 }

    public init(bus: Bus, address: UInt8 = 0x76, clock: any TimeSource) {
        self.bus = bus; self.address = address; self.clock = clock
    }

    /// Reads `id` (0xD0). BMP280 (0x58), its samples (0x56/0x57) and the
    /// BME280 (0x60) are accepted (log ``BMP280Variant/note``); anything else,
    /// including a BMP180 (0x55), is ``DriverError/wrongChip``.
    @discardableResult
    public mutating func identify() throws(DriverError) -> BMP280Variant {
        let id = try onBus { () throws(I2CError) in try bus.readRegister(address, BMP280Register.id.rawValue) }
        let v = BMP280Variant.lookup(chipID: id)
        guard let v, v.isSupported else {
            throw .wrongChip(expected: .bmp280, address: address, register: BMP280Register.id.rawValue,
                             found: id, identifiedAs: v?.part)
        }
        variant = v
        return v
    }

    /// Soft reset (DS §4.3.2): write 0xB6 to `reset` (0xE0), then poll
    /// status.im_update every 0.5 ms until it clears. Gives up with
    /// ``DriverError/timeout`` once the 2 ms start-up time has passed with the
    /// bit still set. The chip comes back asleep with ctrl_meas = config = 0.
    public mutating func softReset() throws(DriverError) {
        let a = address, b = bus
        try onBus { () throws(I2CError) in
            try b.writeRegister(a, BMP280Register.reset.rawValue, BMP280Bits.softResetCommand)
        }
        let start = clock.nowNanoseconds
        let bound = UInt64(Self.startupMilliseconds * 1e6)
        while true {
            clock.sleep(milliseconds: Self.pollMilliseconds)
            let status = try onBus { () throws(I2CError) in try b.readRegister(a, BMP280Register.status.rawValue) }
            if status & BMP280Bits.imageUpdate == 0 { break }
            if clock.nowNanoseconds &- start >= bound {
                throw .timeout(chip: .bmp280, address: a, waitingFor: "copying its calibration NVM after a soft reset (status.im_update)",
                               milliseconds: Self.startupMilliseconds)
            }
        }
        configuration = BMP280Configuration(mode: .sleep, pressureOversampling: .skipped,
                                            temperatureOversampling: .x1, filter: .off, standby: .ms0_5)
    }

    /// Reads and validates the 24 calibration bytes from 0x88 (one burst).
    @discardableResult
    public mutating func readCalibration() throws(DriverError) -> BMP280Calibration {
        let a = address, b = bus
        let bytes = try onBus { () throws(I2CError) in try b.readRegisters(a, BMP280Register.calibration.rawValue, count: 24) }
        let c = try decoding { () throws(DecodeError) in try BMP280Calibration(bytes: bytes) }
        calibration = c
        return c
    }

    /// Uses calibration words obtained earlier (a cache, a recording) instead
    /// of reading them.
    public mutating func setCalibration(_ c: BMP280Calibration) { calibration = c }

    /// Writes ctrl_meas with the oversampling and mode = sleep, then config
    /// (t_sb, filter), then - in normal mode - ctrl_meas with the mode: the
    /// chip ignores config writes in normal mode (DS §4.3.5). Forced mode is
    /// left asleep until ``measure()``.
    public mutating func configure(_ c: BMP280Configuration) throws(DriverError) {
        if variant.isBME280 && (c.standby == .ms2000 || c.standby == .ms4000) {
            throw .unsupportedConfiguration(chip: .bmp280, reason: "standby_ms \(plainNumber(c.standby.milliseconds)) is not available on a BME280 (its t_sb codes 110/111 mean 10/20 ms); choose 1000 or less")
        }
        try apply(c)
    }

    /// Writes `c`'s register table (no variant checks: the BME280 driver
    /// gives t_sb codes 110/111 their BME280 meaning).
    mutating func apply(_ c: BMP280Configuration) throws(DriverError) {
        let table = c.registerTable, a = address, b = bus
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
        configuration = c
    }

    /// identify + softReset + readCalibration + configure.
    @discardableResult
    public mutating func start(_ c: BMP280Configuration = .default) throws(DriverError) -> BMP280Variant {
        let v = try identify()
        try softReset()
        try readCalibration()
        try configure(c)
        return v
    }

    /// Re-reads config and ctrl_meas; throws on a mismatch (e.g. after a brown-out).
    public func verifyConfiguration() throws(DriverError) {
        try verificationTable.verify(on: bus, address: address, chip: .bmp280)
    }

    /// config and ctrl_meas as `c` leaves them.
    static func verificationTable(_ c: BMP280Configuration) -> RegisterTable {
        var rows = [RegisterSetting.value(BMP280Register.config.rawValue, c.configValue)]
        if c.mode == .normal {
            rows.append(.value(BMP280Register.controlMeasurement.rawValue, c.controlMeasurementValue(mode: .normal)))
        } else {
            // Forced: the mode bits fall back to sleep by themselves; check oversampling only.
            let v = c.controlMeasurementValue(mode: .sleep)
            rows.append(RegisterSetting(register: BMP280Register.controlMeasurement.rawValue, set: v, clear: ~v & 0xFC))
        }
        return RegisterTable(rows)
    }

    /// The 6-byte burst press_msb..temp_xlsb (0xF7..0xFC): one burst, so
    /// pressure and temperature come from the same conversion (DS §3.9).
    @inlinable
    public func readRaw() throws(DriverError) -> BMP280RawSample {
        let b = bus, a = address, clock = self.clock
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, BMP280Register.pressureMSB.rawValue, count: 6) { bytes in
                BMP280RawSample(burst: bytes, captureNanoseconds: clock.nowNanoseconds)
            }
        }
    }

    /// Reads and compensates the latest conversion (normal mode).
    @inlinable
    public func read() throws(DriverError) -> BMP280Sample {
        guard let c = calibration else {
            throw .decode(.invalidCalibration(chip: .bmp280, reason: "calibration has not been read; call readCalibration() or start() first"))
        }
        let raw = try readRaw(), pressureOn = configuration.pressureOversampling != .skipped
        return try decoding { () throws(DecodeError) in try BMP280Compensation.compensate(raw, c, pressureEnabled: pressureOn) }
    }

    /// One forced-mode conversion: writes ctrl_meas with mode = forced, waits
    /// the maximum measurement time for the settings on the clock, then checks
    /// status.measuring (it may still read 0 right after the write, so it is
    /// only read after the wait); still measuring is ``DriverError/timeout``.
    /// Then reads and compensates. In normal mode it just ``read()``s.
    public func measure() throws(DriverError) -> BMP280Sample {
        if configuration.mode == .normal { return try read() }
        try convertForced(maximumMilliseconds: configuration.measurementTime.maximum, chip: .bmp280)
        return try read()
    }

    /// Starts one forced conversion, waits `tMax` ms on the clock, and checks
    /// status.measuring (the BME280 driver waits longer: humidity).
    func convertForced(maximumMilliseconds tMax: Double, chip: ChipKind) throws(DriverError) {
        let a = address, b = bus, value = configuration.controlMeasurementValue(mode: .forced)
        try onBus { () throws(I2CError) in try b.writeRegister(a, BMP280Register.controlMeasurement.rawValue, value) }
        clock.sleep(milliseconds: tMax)
        let status = try onBus { () throws(I2CError) in try b.readRegister(a, BMP280Register.status.rawValue) }
        if status & BMP280Bits.measuring != 0 {
            throw .timeout(chip: chip, address: a, waitingFor: "a forced-mode conversion (status.measuring)", milliseconds: tMax)
        }
    }
}
