import EdgeBus

/// QMC5883L driver, generic over the bus.
///
/// Bring-up: ``identify()`` → ``softReset()`` → ``configure(_:)``, or
/// ``start(_:)``. Then ``read()``.
///
/// Read sequence (status register DRDY/DOR: QST QMC5883L data sheet rev 1.0; the data
/// lock as reported in betaflight PR #13467 and esphome/issues #5731): read STATUS (0x06) alone, then, if
/// DRDY is set, burst exactly 0x00..0x05. Reading through Z MSB (0x05)
/// releases the lock, and reading STATUS before the data lets DOR clear. The
/// alternative (one 7-byte burst 0x00..0x06 with CTRL2.ROL_PNT) is not used:
/// it needs the pointer roll-over set and returns data even when DRDY is 0.
public struct QMC5883L<Bus: I2CBus> {
    public let bus: Bus
    /// 7-bit address, fixed at 0x0D.
    public let address: UInt8
    public let clock: any TimeSource
    public private(set) var configuration: QMC5883LConfiguration = .default {
        didSet { verificationTable = configuration.registerTable }
    }
    /// ``configuration``'s register table, kept so the periodic re-check
    /// (``verifyConfiguration()``) allocates nothing.
    private var verificationTable = QMC5883LConfiguration.default.registerTable
    /// How many reads reported DOR (a sample skipped: read more often).
    public var dataOverrunCount: Int { counters.dataOverrun }
    /// How many reads reported OVL.
    public var overflowCount: Int { counters.overflow }
    @usableFromInline var counters = Counters()
    @usableFromInline struct Counters {
        @usableFromInline var dataOverrun = 0
        @usableFromInline var overflow = 0
        @inlinable init() {}
    }

    /// Power-on-reset time (QST QMC5883L data sheet rev 1.0, power on time): 350 µs, also waited after a soft reset.
    public static var resetDelayNanoseconds: UInt64 { 350_000 }

    public init(bus: Bus, address: UInt8 = 0x0D, clock: any TimeSource) {
        self.bus = bus; self.address = address; self.clock = clock
    }

    /// Reads CHIP_ID (0x0D); anything but 0xFF is ``DriverError/wrongChip``.
    /// A weak identity (a stuck bus also reads 0xFF, but a missing device
    /// fails to acknowledge): see ``identifyChip(on:at:)`` for look-alikes.
    public func identify() throws(DriverError) {
        let id = try onBus { () throws(I2CError) in try bus.readRegister(address, QMC5883LRegister.chipID.rawValue) }
        guard id == QMC5883LBits.chipID else {
            throw .wrongChip(expected: .qmc5883l, address: address, register: QMC5883LRegister.chipID.rawValue,
                             found: id, identifiedAs: nil)
        }
    }

    /// CTRL2 = 0x80 (SOFT_RST), then wait the 350 µs power-on-reset time.
    /// The chip returns to defaults: standby, DRDY pin enabled, no roll-over.
    public mutating func softReset() throws(DriverError) {
        let a = address, b = bus
        try onBus { () throws(I2CError) in
            try b.writeRegister(a, QMC5883LRegister.control2.rawValue, QMC5883LBits.softReset)
        }
        clock.sleep(nanoseconds: Self.resetDelayNanoseconds)
        configuration = QMC5883LConfiguration(mode: .standby, outputRate: .hz10, range: .gauss2, oversampling: .x512)
    }

    /// SET/RESET period = 0x01 (skipping it is a common cause of zero or
    /// garbage output), then CTRL1.
    public mutating func configure(_ c: QMC5883LConfiguration) throws(DriverError) {
        let table = c.registerTable, a = address, b = bus
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
        configuration = c
    }

    /// identify + softReset + configure.
    public mutating func start(_ c: QMC5883LConfiguration = .default) throws(DriverError) {
        try identify()
        try softReset()
        try configure(c)
    }

    /// Re-reads SET/RESET period and CTRL1.
    public func verifyConfiguration() throws(DriverError) {
        try verificationTable.verify(on: bus, address: address, chip: .qmc5883l)
    }

    /// STATUS, then (if DRDY) the 6 data bytes in one burst. nil when DRDY is 0
    /// (no data registers touched, so nothing is left locked).
    @inlinable
    public mutating func readRaw() throws(DriverError) -> QMC5883LRawSample? {
        let b = bus, a = address, clock = self.clock
        let status = try onBus { () throws(I2CError) in try b.readRegister(a, QMC5883LRegister.status.rawValue) }
        guard status & QMC5883LBits.dataReady != 0 else { return nil }
        let raw = try onBus { () throws(I2CError) in
            try readBurst(b, a, QMC5883LRegister.dataXLSB.rawValue, count: 6) { bytes in
                QMC5883LRawSample(status: status, data: bytes, captureNanoseconds: clock.nowNanoseconds)
            }
        }
        if raw.dataSkipped { counters.dataOverrun += 1 }
        if raw.overflow { counters.overflow += 1 }
        return raw
    }

    /// ``readRaw()`` decoded: a field in µT, ``QMC5883LReading/overflow(captureNanoseconds:)``
    /// (OVL: no valid field) or ``QMC5883LReading/notReady``.
    @inlinable
    public mutating func read() throws(DriverError) -> QMC5883LReading {
        guard let raw = try readRaw() else { return .notReady }
        return QMC5883LDecoder.decode(raw, range: configuration.range)
    }

    /// TOUT (0x07/0x08): relative temperature only (uncalibrated offset).
    public func readRelativeTemperature() throws(DriverError) -> QMC5883LRelativeTemperature {
        let b = bus, a = address
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, QMC5883LRegister.temperatureLSB.rawValue, count: 2) {
                QMC5883LRelativeTemperature(counts: int16LittleEndian($0[0], $0[1]))
            }
        }
    }
}
