import EdgeBus

/// TE MS5837-30BA driver, generic over the bus; waits go through the given
/// ``TimeSource``. The chip is command-based (no registers): see
/// ``MS5837Command``.
///
/// Bring-up: ``reset()`` → ``readCalibration()`` (checks the CRC-4 and the
/// product version), or ``start()``. Then ``measure()`` runs a D1 and a D2
/// conversion and compensates them (second order by default).
public struct MS5837<Bus: I2CBus> {
    public let bus: Bus
    /// 7-bit address: always 0x76 (DS "I2C interface": 1110110x).
    public let address: UInt8
    public let clock: any TimeSource
    public private(set) var calibration: MS5837Calibration?
    public private(set) var variant: MS5837Variant = .ms5837_30ba
    /// Oversampling for D1 (pressure) and D2 (temperature).
    public var pressureOversampling: MS5837Oversampling
    public var temperatureOversampling: MS5837Oversampling
    /// Apply the datasheet's second-order compensation (recommended).
    public var secondOrder = true

    /// The wait after a reset before the PROM is read. The datasheet states
    /// no figure for the MS5837-30BA (the MS5611 family's reload time is
    /// 2.8 ms); 10 ms leaves a margin and costs nothing at start-up.
    public static var resetMilliseconds: Double { 10 }

    public init(bus: Bus, address: UInt8 = 0x76, clock: any TimeSource,
                pressureOversampling: MS5837Oversampling = .osr4096,
                temperatureOversampling: MS5837Oversampling = .osr1024) {
        self.bus = bus; self.address = address; self.clock = clock
        self.pressureOversampling = pressureOversampling
        self.temperatureOversampling = temperatureOversampling
    }

    func send(_ command: MS5837Command) throws(DriverError) {
        var b = command.byte
        let a = address, bus = self.bus
        try onBus { () throws(I2CError) in
            try withUnsafeBytes(of: &b) { (w) throws(I2CError) in
                try bus.transfer(address: a, write: w, read: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            }
        }
    }

    /// Sends `command`, then (a separate transaction, as DS Figures 6-7 and
    /// the PROM read sequence show) reads `count` bytes MSB first.
    func query(_ command: MS5837Command, count: Int) throws(DriverError) -> UInt32 {
        try send(command)
        var storage: UInt32 = 0
        let a = address, bus = self.bus
        return try onBus { () throws(I2CError) -> UInt32 in
            try withUnsafeMutableBytes(of: &storage) { (raw) throws(I2CError) -> UInt32 in
                let r = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                try bus.transfer(address: a, write: UnsafeRawBufferPointer(start: nil, count: 0), read: r)
                var v: UInt32 = 0
                for i in 0..<count { v = v << 8 | UInt32(r[i]) }
                return v
            }
        }
    }

    /// Reset (0x1E) and the PROM reload wait.
    public func reset() throws(DriverError) {
        try send(.reset)
        clock.sleep(milliseconds: Self.resetMilliseconds)
    }

    /// Reads PROM words 0..6, checks the CRC-4 (``DriverError/decode``) and
    /// the version bits (``DriverError/wrongChip`` for another part).
    @discardableResult
    public mutating func readCalibration() throws(DriverError) -> MS5837Calibration {
        var words: [UInt16] = []
        for i in 0..<7 { words.append(UInt16(truncatingIfNeeded: try query(.promRead(word: UInt8(i)), count: 2))) }
        let c = try decoding { () throws(DecodeError) in try MS5837Calibration(words: words) }
        guard let v = c.variant, v.isSupported else {
            let code = UInt8((words[0] >> 5) & 0x7F)
            throw .wrongChip(expected: .ms5837, address: address, register: 0xA0, found: code,
                             identifiedAs: c.variant?.part)
        }
        variant = v
        calibration = c
        return c
    }

    /// reset + readCalibration.
    @discardableResult
    public mutating func start() throws(DriverError) -> MS5837Variant {
        try reset()
        try readCalibration()
        return variant
    }

    /// One conversion: command, the maximum conversion time, ADC read. A 0
    /// result (the chip's answer when no conversion finished) is a
    /// ``DriverError/timeout``.
    public func convert(_ channel: MS5837Channel, _ osr: MS5837Oversampling) throws(DriverError) -> UInt32 {
        try send(.convert(channel, osr))
        clock.sleep(milliseconds: osr.maximumConversionMilliseconds)
        let v = try query(.adcRead, count: 3)
        if v == 0 {
            throw .timeout(chip: .ms5837, address: address,
                           waitingFor: channel == .pressure ? "a D1 (pressure) conversion" : "a D2 (temperature) conversion",
                           milliseconds: osr.maximumConversionMilliseconds)
        }
        return v
    }

    /// D2 then D1 (the temperature is the older one by one conversion time),
    /// captured at the end of the pressure conversion.
    public func readRaw() throws(DriverError) -> MS5837RawSample {
        let d2 = try convert(.temperature, temperatureOversampling)
        let d1 = try convert(.pressure, pressureOversampling)
        return MS5837RawSample(d1: d1, d2: d2, captureNanoseconds: clock.nowNanoseconds)
    }

    /// Converts and compensates one reading.
    public func measure() throws(DriverError) -> MS5837Sample {
        guard let c = calibration else {
            throw .decode(.invalidCalibration(chip: .ms5837, reason: "the PROM has not been read; call readCalibration() or start() first"))
        }
        let raw = try readRaw(), second = secondOrder
        return try decoding { () throws(DecodeError) in try MS5837Compensation.compensate(raw, c, secondOrder: second) }
    }

    // MARK: non-blocking use (the engine's loop: one step per tick)

    /// Reads PROM word 0 and checks it names a supported MS5837 (the chip's
    /// only identity): ``DriverError/wrongChip`` otherwise.
    public func identify() throws(DriverError) {
        let w0 = UInt16(truncatingIfNeeded: try query(.promRead(word: 0), count: 2))
        let code = UInt8((w0 >> 5) & 0x7F)
        guard let v = MS5837Variant.lookup(word0: w0), v.isSupported, w0 != 0xFFFF else {
            throw .wrongChip(expected: .ms5837, address: address, register: 0xA0, found: code,
                             identifiedAs: MS5837Variant.lookup(word0: w0)?.part)
        }
    }

    /// Starts a conversion and returns at once; read it with
    /// ``readConversion()`` after the OSR's maximum conversion time.
    public func beginConversion(_ channel: MS5837Channel, _ osr: MS5837Oversampling) throws(DriverError) {
        try send(.convert(channel, osr))
    }

    /// The finished conversion's 24-bit result; 0 (the chip's "no result") is
    /// ``DriverError/timeout``.
    public func readConversion(_ channel: MS5837Channel, _ osr: MS5837Oversampling) throws(DriverError) -> UInt32 {
        let v = try query(.adcRead, count: 3)
        if v == 0 {
            throw .timeout(chip: .ms5837, address: address,
                           waitingFor: channel == .pressure ? "a D1 (pressure) conversion" : "a D2 (temperature) conversion",
                           milliseconds: osr.maximumConversionMilliseconds)
        }
        return v
    }

    /// Time one ``measure()`` takes on the bus, ms (both conversions' maxima).
    public var measurementMilliseconds: Double {
        pressureOversampling.maximumConversionMilliseconds + temperatureOversampling.maximumConversionMilliseconds
    }
}
