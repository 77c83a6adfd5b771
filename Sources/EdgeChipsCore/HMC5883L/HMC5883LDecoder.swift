import EdgeValues

/// One raw HMC5883L read: STATUS (0x09) and the counts of the data registers
/// 0x03..0x08, which hold X, **Z**, Y as big-endian int16 (Honeywell
/// HMC5883L data sheet Form #900405 Rev E, Tables 13-15). `field` is in the
/// chip's X, Y, Z order.
public struct HMC5883LRawSample: Sendable, Equatable {
    public var status: UInt8
    /// Counts, chip axes X, Y, Z (reordered from the register order X, Z, Y).
    public var field: SIMD3<Int16>
    public var captureNanoseconds: UInt64

    public init(status: UInt8, field: SIMD3<Int16>, captureNanoseconds: UInt64 = 0) {
        self.status = status; self.field = field; self.captureNanoseconds = captureNanoseconds
    }

    /// Parses the 6 data bytes X MSB, X LSB, Z MSB, Z LSB, Y MSB, Y LSB.
    @inlinable
    public init(status: UInt8, data b: UnsafeRawBufferPointer, captureNanoseconds: UInt64) {
        precondition(b.count >= 6)
        self.status = status
        field = SIMD3(int16BigEndian(b[0], b[1]), int16BigEndian(b[4], b[5]), int16BigEndian(b[2], b[3]))
        self.captureNanoseconds = captureNanoseconds
    }

    public var ready: Bool { status & HMC5883LBits.ready != 0 }
    public var locked: Bool { status & HMC5883LBits.lock != 0 }
    /// Some axis holds -4096: its ADC over- or underflowed.
    public var overflow: Bool {
        field.x == HMC5883LBits.overflowValue || field.y == HMC5883LBits.overflowValue
            || field.z == HMC5883LBits.overflowValue
    }
}

/// Pure decoding: counts → µT (the gain's LSB/G, 1 G = 100 µT).
public enum HMC5883LDecoder {
    /// A field in µT (chip axes), or `.overflow` if any axis reads -4096.
    @inlinable
    public static func decode(_ raw: HMC5883LRawSample, gain: HMC5883LGain) -> MagneticFieldReading {
        if raw.overflow { return .overflow }
        let f = SIMD3<Double>(Double(raw.field.x), Double(raw.field.y), Double(raw.field.z)) * gain.microteslaPerLSB
        return .field(f)
    }

    /// What a register dump says.
    public struct DumpReading: Sendable, Equatable {
        /// Identification registers A..C (0x0A..0x0C), where readable.
        public var identification: [UInt8?]
        public var configurationA: UInt8
        public var gain: HMC5883LGain
        public var mode: UInt8?
        public var raw: HMC5883LRawSample
        public var reading: MagneticFieldReading
    }

    /// Decodes a register image: CRB (0x01) gives the gain; 0x03..0x08 the
    /// field, STATUS (0x09) RDY/LOCK; CRA (0x00) the rate and averaging.
    public static func decode(image: RegisterImage) throws(DecodeError) -> DumpReading {
        func need(_ r: UInt8) throws(DecodeError) -> UInt8 {
            guard let v = image[r] else {
                throw .unreadableRegister(chip: .hmc5883l, register: r, name: HMC5883LRegister.name(of: r))
            }
            return v
        }
        let cra = try need(HMC5883LRegister.configurationA.rawValue)
        let crb = try need(HMC5883LRegister.configurationB.rawValue)
        let gain = HMC5883LGain(rawValue: crb >> 5)!
        var data: [UInt8] = []
        for r in UInt8(0x03)...0x08 { data.append(try need(r)) }
        let status = try need(HMC5883LRegister.status.rawValue)
        let raw = data.withUnsafeBytes { HMC5883LRawSample(status: status, data: $0, captureNanoseconds: 0) }
        return DumpReading(identification: [image[0x0A], image[0x0B], image[0x0C]], configurationA: cra, gain: gain,
                           mode: image[HMC5883LRegister.mode.rawValue], raw: raw, reading: decode(raw, gain: gain))
    }
}
