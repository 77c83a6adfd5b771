import EdgeBus

/// One raw QMC5883L read: STATUS (0x06) and X, Y, Z counts (little-endian
/// int16 at 0x00..0x05), chip frame.
public struct QMC5883LRawSample: Sendable, Equatable {
    public var status: UInt8
    public var field: SIMD3<Int16>
    public var captureNanoseconds: UInt64

    public init(status: UInt8, field: SIMD3<Int16>, captureNanoseconds: UInt64 = 0) {
        self.status = status; self.field = field; self.captureNanoseconds = captureNanoseconds
    }

    /// Parses the 6 data bytes X LSB, X MSB, Y LSB, Y MSB, Z LSB, Z MSB.
    @inlinable
    public init(status: UInt8, data b: UnsafeRawBufferPointer, captureNanoseconds: UInt64) {
        precondition(b.count >= 6)
        self.status = status
        field = SIMD3(int16LittleEndian(b[0], b[1]), int16LittleEndian(b[2], b[3]), int16LittleEndian(b[4], b[5]))
        self.captureNanoseconds = captureNanoseconds
    }

    public var dataReady: Bool { status & QMC5883LBits.dataReady != 0 }
    /// OVL: some axis is out of range; the field is not valid.
    public var overflow: Bool { status & QMC5883LBits.overflow != 0 }
    /// DOR: at least one sample was skipped since the previous read.
    public var dataSkipped: Bool { status & QMC5883LBits.dataSkipped != 0 }
}

/// A valid magnetic field sample.
public struct QMC5883LSample: Sendable, Equatable {
    /// Magnetic flux density, µT, **chip frame** (DS Figure 2 axes).
    public var magneticField: SIMD3<Double>
    /// A sample was skipped before this one (DOR).
    public var dataSkipped: Bool
    public var captureNanoseconds: UInt64
    public init(magneticField: SIMD3<Double>, dataSkipped: Bool, captureNanoseconds: UInt64) {
        self.magneticField = magneticField; self.dataSkipped = dataSkipped; self.captureNanoseconds = captureNanoseconds
    }
}

/// The outcome of a QMC5883L read: a field, or a typed reason there is none.
public enum QMC5883LReading: Sendable, Equatable {
    /// A valid field.
    case field(QMC5883LSample)
    /// OVL: an axis is beyond the range, so the numbers are meaningless (the
    /// outputs saturate). Move away from magnets, or use range_gauss 8.
    case overflow(captureNanoseconds: UInt64)
    /// DRDY was not set: no new sample since the last read.
    case notReady

    /// The sample, if the read produced a valid field.
    public var sample: QMC5883LSample? {
        if case .field(let s) = self { return s }
        return nil
    }
}

/// Relative die temperature from TOUT (0x07/0x08): about 100 counts per °C
/// with an **uncalibrated offset** (QST QMC5883L data sheet rev 1.0, temperature registers 07H/08H). Only differences between two
/// readings mean anything; never report it as an absolute temperature.
public struct QMC5883LRelativeTemperature: Sendable, Equatable {
    public var counts: Int16
    public init(counts: Int16) { self.counts = counts }
    /// Change in °C relative to `other` (about 100 counts per °C).
    public func celsiusChange(since other: QMC5883LRelativeTemperature) -> Double {
        Double(Int(counts) - Int(other.counts)) / 100
    }
}

/// Pure decoding: counts → µT (12000 LSB/G at ±2 G, 3000 at ±8 G; 1 G = 100 µT).
public enum QMC5883LDecoder {
    @inlinable
    public static func decode(_ raw: QMC5883LRawSample, range: QMC5883LRange) -> QMC5883LReading {
        if raw.overflow { return .overflow(captureNanoseconds: raw.captureNanoseconds) }
        let f = SIMD3<Double>(Double(raw.field.x), Double(raw.field.y), Double(raw.field.z)) * range.microteslaPerLSB
        return .field(QMC5883LSample(magneticField: f, dataSkipped: raw.dataSkipped,
                                     captureNanoseconds: raw.captureNanoseconds))
    }

    /// What a register dump says.
    public struct DumpReading: Sendable, Equatable {
        public var chipID: UInt8?
        public var range: QMC5883LRange
        public var control1: UInt8
        public var raw: QMC5883LRawSample
        public var reading: QMC5883LReading
        /// TOUT counts if readable (relative only).
        public var relativeTemperature: QMC5883LRelativeTemperature?
    }

    /// Decodes a register image: CTRL1 (0x09) gives the range; STATUS (0x06)
    /// and 0x00..0x05 the field.
    public static func decode(image: RegisterImage) throws(DriverError) -> DumpReading {
        func need(_ r: UInt8) throws(DriverError) -> UInt8 {
            guard let v = image[r] else {
                throw .unreadableRegister(chip: .qmc5883l, register: r, name: QMC5883LRegister.name(of: r))
            }
            return v
        }
        let ctrl1 = try need(QMC5883LRegister.control1.rawValue)
        let range = QMC5883LRange(rawValue: (ctrl1 >> 4) & 0x1)!
        var data: [UInt8] = []
        for r in UInt8(0)...5 { data.append(try need(r)) }
        let status = try need(QMC5883LRegister.status.rawValue)
        let raw = data.withUnsafeBytes { QMC5883LRawSample(status: status, data: $0, captureNanoseconds: 0) }
        var temp: QMC5883LRelativeTemperature?
        if let lo = image[0x07], let hi = image[0x08] { temp = QMC5883LRelativeTemperature(counts: int16LittleEndian(lo, hi)) }
        return DumpReading(chipID: image[QMC5883LRegister.chipID.rawValue], range: range, control1: ctrl1, raw: raw,
                           reading: decode(raw, range: range), relativeTemperature: temp)
    }
}

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
