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
    public static func decode(image: RegisterImage) throws(DecodeError) -> DumpReading {
        func need(_ r: UInt8) throws(DecodeError) -> UInt8 {
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
