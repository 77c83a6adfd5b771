import EdgeBus

/// INT_STATUS (0x3A) bits; reading the register clears them (RM §4.16).
public struct MPU6050InterruptStatus: Sendable, Equatable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public var dataReady: Bool { rawValue & MPU6050Bits.dataReady != 0 }
    public var fifoOverflow: Bool { rawValue & MPU6050Bits.fifoOverflow != 0 }
}

/// MPU-6050 driver, generic over the bus; owns no thread and never sleeps on
/// its own: waits go through the ``TimeSource`` it is given.
///
/// Bring-up: ``identify()`` → ``reset()`` → ``configure(_:)``, or all three
/// with ``start(_:)``. Then ``read()`` (one 14-byte burst) or, with
/// `fifo: true`, ``drainFIFO(maxRecords:_:)``.
public struct MPU6050<Bus: I2CBus> {
    public let bus: Bus
    /// 7-bit address: 0x68 (AD0 low, GY-521 default) or 0x69.
    public let address: UInt8
    /// Clock for capture times and the sleeps of the reset sequence.
    public let clock: any TimeSource
    /// The part found by ``identify()`` (genuine until then).
    public private(set) var variant: MPU6050Variant = .genuine
    /// The configuration last applied (``MPU6050Configuration/default`` until
    /// ``configure(_:)``, ``MPU6050Configuration/afterReset`` after ``reset()``).
    public private(set) var configuration: MPU6050Configuration = .default {
        didSet { verificationTable = configuration.registerTable }
    }
    /// ``configuration``'s register table, kept so the periodic re-check
    /// (``verifyConfiguration()``) allocates nothing.
    private var verificationTable = MPU6050Configuration.default.registerTable
    /// Scale factors for ``configuration`` and ``variant``.
    public private(set) var scales: MPU6050Scales
    /// How many times the FIFO overflowed (and was reset).
    public private(set) var fifoOverflowCount = 0

    /// Bytes per FIFO record: accel (6) + temp (2) + gyro (6).
    public static var fifoRecordBytes: Int { 14 }
    /// Time to wait after DEVICE_RESET, ns (RM §4.28 / kernel: 100 ms).
    public static var resetDelayNanoseconds: UInt64 { 100_000_000 }

    public init(bus: Bus, address: UInt8 = 0x68, clock: any TimeSource) {
        self.bus = bus; self.address = address; self.clock = clock
        scales = MPU6050Scales(gyroRange: MPU6050Configuration.default.gyroRange,
                               accelRange: MPU6050Configuration.default.accelRange)
    }

    // MARK: identity

    /// Reads WHO_AM_I (0x75). Known clones are accepted: check
    /// ``MPU6050Variant/warning`` and log it. 0x00/0xFF and unknown values
    /// throw ``DriverError/wrongChip``.
    @discardableResult
    public mutating func identify() throws(DriverError) -> MPU6050Variant {
        let who = try onBus { () throws(I2CError) in try bus.readRegister(address, MPU6050Register.whoAmI.rawValue) }
        guard let v = MPU6050Variant.lookup(whoAmI: who) else {
            throw .wrongChip(expected: .mpu6050, address: address, register: MPU6050Register.whoAmI.rawValue,
                             found: who, identifiedAs: nil)
        }
        variant = v
        scales = MPU6050Scales(gyroRange: configuration.gyroRange, accelRange: configuration.accelRange, variant: v)
        return v
    }

    // MARK: reset and configuration

    /// Reset and wake (RM-MPU-6000A-00 rev 4.2 §4.28; reset values §3; 100 ms
    /// as the Linux inv_mpu6050 driver's INV_MPU6050_POWER_UP_TIME): PWR_MGMT_1 = 0x80
    /// (DEVICE_RESET), sleep a fixed 100 ms on the clock (no polling: the
    /// reset bit is not reliably readable while the part restarts), then
    /// PWR_MGMT_1 = 0x01 (SLEEP cleared, clock = PLL X gyro) and
    /// PWR_MGMT_2 = 0x00 (all axes on). Registers are back at their defaults.
    public mutating func reset() throws(DriverError) {
        try beginReset()
        clock.sleep(nanoseconds: Self.resetDelayNanoseconds)
        try finishReset()
    }

    /// First half of ``reset()``: writes DEVICE_RESET. A real-time loop that
    /// cannot stall for 100 ms calls this, keeps running, and calls
    /// ``finishReset()`` once ``resetDelayNanoseconds`` have passed.
    public mutating func beginReset() throws(DriverError) {
        let a = address, b = bus
        try onBus { () throws(I2CError) in
            try b.writeRegister(a, MPU6050Register.powerManagement1.rawValue, MPU6050Bits.deviceReset)
        }
    }

    /// Second half of ``reset()``: wakes the chip (PLL X clock, all axes on).
    public mutating func finishReset() throws(DriverError) {
        let a = address, b = bus
        try onBus { () throws(I2CError) in
            try b.writeRegister(a, MPU6050Register.powerManagement1.rawValue, MPU6050ClockSource.pllX.rawValue)
            try b.writeRegister(a, MPU6050Register.powerManagement2.rawValue, 0x00)
        }
        configuration = .afterReset
        scales = MPU6050Scales(gyroRange: .dps250, accelRange: .g2, variant: variant)
    }

    /// Sleep (PWR_MGMT_1.SLEEP, read-modify-write): an idle IMU draws ~5 µA
    /// instead of ~3.9 mA. Registers keep their values; waking needs no
    /// reconfiguration, but discard ~60 ms of gyro samples after it.
    public func setSleep(_ asleep: Bool) throws(DriverError) {
        let a = address, b = bus
        let table = RegisterTable([asleep
            ? RegisterSetting(register: MPU6050Register.powerManagement1.rawValue, set: MPU6050Bits.sleep, clear: 0)
            : RegisterSetting(register: MPU6050Register.powerManagement1.rawValue, set: 0, clear: MPU6050Bits.sleep)])
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
    }

    /// Writes the configuration table (``MPU6050Configuration/registerTable``)
    /// in order; with `fifo` it then resets the FIFO so it starts empty and
    /// aligned. Discard about 60 ms of samples after waking the gyro (kernel).
    public mutating func configure(_ c: MPU6050Configuration) throws(DriverError) {
        let table = c.registerTable, a = address, b = bus
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
        configuration = c
        scales = MPU6050Scales(gyroRange: c.gyroRange, accelRange: c.accelRange, variant: variant)
        if c.fifo { try resetFIFO() }
    }

    /// identify + reset + configure. Returns the variant (log its warning).
    @discardableResult
    public mutating func start(_ c: MPU6050Configuration = .default) throws(DriverError) -> MPU6050Variant {
        let v = try identify()
        try reset()
        try configure(c)
        return v
    }

    /// Re-reads the configuration table; throws
    /// ``DriverError/configurationMismatch`` if a register changed (e.g. a
    /// brown-out reset the chip: then ``reset()`` and ``configure(_:)`` again).
    public func verifyConfiguration() throws(DriverError) {
        try verificationTable.verify(on: bus, address: address, chip: .mpu6050)
    }

    /// Sets or clears I2C bypass (INT_PIN_CFG bit 1, with USER_CTRL.I2C_MST_EN
    /// cleared) so a magnetometer on the aux bus (GY-87) answers on the host
    /// bus. Read-modify-write: other bits are kept.
    public mutating func setI2CBypass(_ enabled: Bool) throws(DriverError) {
        let table = RegisterTable([
            RegisterSetting(register: MPU6050Register.userControl.rawValue, set: 0, clear: MPU6050Bits.i2cMasterEnable),
            enabled ? RegisterSetting(register: MPU6050Register.intPinConfig.rawValue, set: MPU6050Bits.i2cBypass, clear: 0)
                    : RegisterSetting(register: MPU6050Register.intPinConfig.rawValue, set: 0, clear: MPU6050Bits.i2cBypass),
        ])
        let a = address, b = bus
        try onBus { () throws(I2CError) in try table.apply(on: b, address: a) }
        configuration.i2cBypass = enabled
    }

    // MARK: reading

    /// One coherent sample: a 14-byte burst from ACCEL_XOUT_H (0x3B), timed
    /// when the burst completed.
    @inlinable
    public func readRaw() throws(DriverError) -> MPU6050RawSample {
        let b = bus, a = address, clock = self.clock
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, MPU6050Register.accelXOutH.rawValue, count: 14) { bytes in
                MPU6050RawSample(burst: bytes, captureNanoseconds: clock.nowNanoseconds)
            }
        }
    }

    /// INT_STATUS and the sample in one 15-byte burst from 0x3A (INT_STATUS
    /// sits just below ACCEL_XOUT_H): nil when DATA_RDY_INT is clear, i.e. no
    /// sample arrived since the last read - so a loop that polls slightly
    /// faster than the sample rate never publishes a stale sample as fresh.
    /// Reading INT_STATUS clears it (RM §4.16). Not for FIFO mode: it would
    /// also clear FIFO_OFLOW_INT, which ``drainFIFO(maxRecords:_:)`` checks.
    @inlinable
    public func readRawIfReady() throws(DriverError) -> MPU6050RawSample? {
        let b = bus, a = address, clock = self.clock
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, MPU6050Register.intStatus.rawValue, count: 15) { bytes -> MPU6050RawSample? in
                guard bytes[0] & MPU6050Bits.dataReady != 0 else { return nil }
                return MPU6050RawSample(burst: UnsafeRawBufferPointer(rebasing: bytes[1..<15]),
                                        captureNanoseconds: clock.nowNanoseconds)
            }
        }
    }

    /// ``readRaw()`` decoded with the current ranges and variant.
    @inlinable
    public func read() throws(DriverError) -> MPU6050Sample {
        MPU6050Decoder.decode(try readRaw(), scales: scales)
    }

    /// Reads (and so clears) INT_STATUS: acknowledges a latched data-ready
    /// interrupt.
    public func readInterruptStatus() throws(DriverError) -> MPU6050InterruptStatus {
        let v = try onBus { () throws(I2CError) in try bus.readRegister(address, MPU6050Register.intStatus.rawValue) }
        return MPU6050InterruptStatus(rawValue: v)
    }

    // MARK: FIFO

    /// Bytes in the FIFO: FIFO_COUNTH then FIFO_COUNTL in one burst (reading
    /// H first latches both).
    public func fifoCount() throws(DriverError) -> Int {
        let b = bus, a = address
        return try onBus { () throws(I2CError) in
            try readBurst(b, a, MPU6050Register.fifoCountH.rawValue, count: 2) { Int($0[0]) << 8 | Int($0[1]) }
        }
    }

    /// Empties the FIFO: USER_CTRL with FIFO_EN cleared and FIFO_RESET set
    /// (the reset only acts while FIFO_EN = 0), then USER_CTRL as configured.
    public func resetFIFO() throws(DriverError) {
        let user = configuration.userControlValue, a = address, b = bus
        try onBus { () throws(I2CError) in
            try b.writeRegister(a, MPU6050Register.userControl.rawValue,
                                (user & ~MPU6050Bits.userFIFOEnable) | MPU6050Bits.fifoReset)
            try b.writeRegister(a, MPU6050Register.userControl.rawValue, user)
        }
    }

    /// Reads whole 14-byte records from the FIFO and hands each to `body`,
    /// oldest first. Returns how many were read.
    ///
    /// Sequence: INT_STATUS (overflow bit), FIFO_COUNT (H then L), then the
    /// records in chunks of at most 32 bytes (28 = two records), each chunk
    /// re-addressing FIFO_R_W (0x74), which does not auto-increment.
    ///
    /// Overflow: if INT_STATUS.FIFO_OFLOW is set, the count is within three
    /// records of the FIFO size, or the count is not a whole number of
    /// records (the stream lost alignment), the FIFO is reset and
    /// ``DriverError/fifoOverflow`` thrown; the next call reads fresh data.
    ///
    /// Capture times: every record carries the time of the count read (the
    /// drain's time). A record's own capture time follows from its place in
    /// the batch, and is assigned once, by the caller: ``readFIFO(maxRecords:)``
    /// steps back one nominal sample period per record, the engine's
    /// `SampleClock` by the period it measures.
    @discardableResult
    public mutating func drainFIFO(maxRecords: Int = .max,
                                   _ body: (MPU6050RawSample) -> Void) throws(DriverError) -> Int {
        let record = Self.fifoRecordBytes
        let status = try readInterruptStatus()
        let count = try fifoCount()
        let now = clock.nowNanoseconds
        let reason: String?
        if status.fifoOverflow {
            reason = "overflowed (INT_STATUS.FIFO_OFLOW set)"
        } else if count >= variant.fifoBytes - 3 * record {
            reason = "is about to overflow (\(variant.fifoBytes)-byte FIFO)"
        } else if count % record != 0 {
            reason = "lost record alignment (\(count) is not a multiple of \(record))"
        } else {
            reason = nil
        }
        if let reason {
            fifoOverflowCount += 1
            try resetFIFO()
            throw .fifoOverflow(address: address, bytesInFIFO: count, reason: reason)
        }
        let available = count / record
        lastDrainAvailable = available
        let n = min(available, maxRecords)
        guard n > 0 else { return 0 }
        let perChunk = 32 / record
        var done = 0
        let b = bus, a = address
        while done < n {
            let k = min(perChunk, n - done)
            try onBus { () throws(I2CError) in
                try readBurst(b, a, MPU6050Register.fifoReadWrite.rawValue, count: k * record) { bytes in
                    for i in 0..<k {
                        body(MPU6050RawSample(burst: UnsafeRawBufferPointer(rebasing: bytes[(i * record)..<((i + 1) * record)]),
                                              captureNanoseconds: now))
                    }
                }
            }
            done += k
        }
        return n
    }

    /// Records the FIFO held at the last ``drainFIFO(maxRecords:_:)`` (some
    /// may have been left for the next drain).
    public private(set) var lastDrainAvailable = 0

    /// ``drainFIFO(maxRecords:_:)`` collected into decoded samples (allocates;
    /// for tools and batch clients), stamped: the newest record at the
    /// drain's time, older ones one nominal sample period apart (the FIFO
    /// holds records in arrival order; any not drained are newer still).
    public mutating func readFIFO(maxRecords: Int = .max) throws(DriverError) -> [MPU6050Sample] {
        var raw: [MPU6050RawSample] = []
        try drainFIFO(maxRecords: maxRecords) { raw.append($0) }
        let period = UInt64(1e9 / configuration.achievedSampleRateHz)
        let s = scales, available = max(lastDrainAvailable, raw.count)
        return raw.enumerated().map { i, r in
            var r = r
            let age = UInt64(available - 1 - i)
            r.captureNanoseconds = r.captureNanoseconds >= age &* period ? r.captureNanoseconds - age &* period : 0
            return MPU6050Decoder.decode(r, scales: s)
        }
    }
}
