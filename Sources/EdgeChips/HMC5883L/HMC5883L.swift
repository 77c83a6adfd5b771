import EdgeBus

/// HMC5883L driver (Honeywell, 0x1E), generic over the bus.
///
/// Bring-up: ``identify()`` → ``configure(_:)``, or ``start(_:)``. The chip
/// has no soft reset: ``start(_:)`` writes every configuration register
/// whole, which puts it in the same state. Then ``read()``.
///
/// Read sequence (Honeywell HMC5883L data sheet Form #900405 Rev E, status
/// register Table 17 and "Data Output Register Operation"): STATUS (0x09)
/// alone, then, if RDY is set, all six data bytes 0x03..0x08 in one burst.
/// Reading all six releases the data lock; a partial read, or a read of the
/// mode register (the configuration check does one), sets LOCK and no new
/// measurement lands until the six are read. So a status with LOCK and no
/// RDY makes the driver read the six bytes once to release the lock (their
/// old values are dropped) instead of waiting for a RDY that never comes.
public struct HMC5883L<Bus: I2CBus> {
    public let bus: Bus
    /// 7-bit address, fixed at 0x1E.
    public let address: UInt8
    public let clock: any TimeSource
    public private(set) var configuration: HMC5883LConfiguration = .powerOn {
        didSet { verificationTable = configuration.registerTable }
    }
    /// ``configuration``'s register table, kept so the periodic re-check
    /// (``verifyConfiguration()``) allocates nothing.
    private var verificationTable = HMC5883LConfiguration.powerOn.registerTable
    /// How many reads found an axis at -4096 (overflow).
    public var overflowCount: Int { counters.overflow }
    /// How many reads found the data registers locked without a new sample.
    public var lockReleaseCount: Int { counters.lockReleases }
    @usableFromInline var counters = Counters()
    @usableFromInline struct Counters {
        @usableFromInline var overflow = 0
        @usableFromInline var lockReleases = 0
        /// Samples still measured with the previous gain ("the very first
        /// measurement after a gain change maintains the same gain as the
        /// previous setting", DS Configuration Register B).
        @usableFromInline var oldGainSamples = 0
        @inlinable init() {}
    }

    public init(bus: Bus, address: UInt8 = 0x1E, clock: any TimeSource) {
        self.bus = bus; self.address = address; self.clock = clock
    }

    /// Reads identification registers A..C (0x0A..0x0C, one burst); anything
    /// but "H43" is ``DriverError/wrongChip`` naming the first byte that differs.
    public func identify() throws(DriverError) {
        let b = bus, a = address
        let mismatch: (register: UInt8, found: UInt8)? = try onBus { () throws(I2CError) in
            try readBurst(b, a, HMC5883LRegister.identificationA.rawValue, count: 3) { bytes in
                for i in 0..<3 where bytes[i] != HMC5883LBits.identification[i] {
                    return (HMC5883LRegister.identificationA.rawValue + UInt8(i), bytes[i])
                }
                return nil
            }
        }
        if let m = mismatch {
            throw .wrongChip(expected: .hmc5883l, address: a, register: m.register, found: m.found,
                             identifiedAs: nil)
        }
    }

    /// CRA, CRB, then the mode register, each written whole.
    public mutating func configure(_ c: HMC5883LConfiguration) throws(DriverError) {
        let table = c.registerTable, a = address, b = bus
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
        if c.gain != configuration.gain { counters.oldGainSamples = 1 }
        configuration = c
    }

    /// identify + configure (every register written whole: the chip has no
    /// soft reset, so this is its reset).
    public mutating func start(_ c: HMC5883LConfiguration = .default) throws(DriverError) {
        try identify()
        try configure(c)
    }

    /// Re-reads CRA, CRB and the mode register. Reading the mode register
    /// sets LOCK; the next ``readRaw()`` releases it.
    public func verifyConfiguration() throws(DriverError) {
        try verificationTable.verify(on: bus, address: address, chip: .hmc5883l)
    }

    /// STATUS, then (if RDY, or LOCK to release it) the 6 data bytes in one
    /// burst. nil when there is no new sample.
    @inlinable
    public mutating func readRaw() throws(DriverError) -> HMC5883LRawSample? {
        let b = bus, a = address, clock = self.clock
        let status = try onBus { () throws(I2CError) in try b.readRegister(a, HMC5883LRegister.status.rawValue) }
        let ready = status & HMC5883LBits.ready != 0
        guard ready || status & HMC5883LBits.lock != 0 else { return nil }
        let raw = try onBus { () throws(I2CError) in
            try readBurst(b, a, HMC5883LRegister.dataXMSB.rawValue, count: 6) { bytes in
                HMC5883LRawSample(status: status, data: bytes, captureNanoseconds: clock.nowNanoseconds)
            }
        }
        guard ready else { counters.lockReleases += 1; return nil }
        if raw.overflow { counters.overflow += 1 }
        return raw
    }

    /// ``readRaw()`` decoded with the configured gain: a field in µT (chip
    /// axes), ``MagneticFieldReading/overflow`` or ``MagneticFieldReading/notReady``.
    /// The first sample after a gain change is dropped (it was measured with
    /// the old gain) and reads as `.notReady`.
    @inlinable
    public mutating func read() throws(DriverError) -> MagneticFieldReading {
        guard let raw = try readRaw() else { return .notReady }
        if counters.oldGainSamples > 0 { counters.oldGainSamples -= 1; return .notReady }
        return HMC5883LDecoder.decode(raw, gain: configuration.gain)
    }
}
