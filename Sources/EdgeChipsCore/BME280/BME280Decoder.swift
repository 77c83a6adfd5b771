import EdgeValues

/// One raw BME280 reading: the 8-byte burst 0xF7..0xFE (BST-BME280-DS002
/// §4: "a burst read from 0xF7 to 0xFE"), pressure and temperature as on a
/// BMP280, then the 16-bit humidity.
public struct BME280RawSample: Sendable, Equatable {
    public var barometer: BMP280RawSample
    /// hum_msb << 8 | hum_lsb; 0x8000 when skipped.
    public var adcH: Int32

    public init(barometer: BMP280RawSample, adcH: Int32) { self.barometer = barometer; self.adcH = adcH }

    @inlinable
    public init(burst b: UnsafeRawBufferPointer, captureNanoseconds: UInt64) {
        precondition(b.count >= 8)
        barometer = BMP280RawSample(burst: b, captureNanoseconds: captureNanoseconds)
        adcH = Int32(b[6]) << 8 | Int32(b[7])
    }

    public init(burst bytes: [UInt8], captureNanoseconds: UInt64 = 0) {
        self = bytes.withUnsafeBytes { BME280RawSample(burst: $0, captureNanoseconds: captureNanoseconds) }
    }
}

/// A compensated BME280 reading, SI units (and %RH).
public struct BME280Sample: Sendable, Equatable {
    /// Pressure and temperature as the BMP280 compensates them.
    public var barometer: BMP280Sample
    /// Relative humidity, % (Q22.10 / 1024); nil when humidity is configured off.
    public var relativeHumidityPercent: Double?

    public init(barometer: BMP280Sample, relativeHumidityPercent: Double?) {
        self.barometer = barometer; self.relativeHumidityPercent = relativeHumidityPercent
    }
}

/// P and T through ``BMP280Compensation``, humidity through
/// ``BME280HumidityCompensation`` with the same t_fine.
public enum BME280Compensation {
    /// Compensates a raw sample with the integer formulas. A humidity of
    /// 0x8000 is ``DecodeError/skippedMeasurement`` unless `humidityEnabled`
    /// is false (then humidity is nil); P and T as ``BMP280Compensation/compensate(_:_:pressureEnabled:)``.
    @inlinable
    public static func compensate(_ raw: BME280RawSample, _ c: BMP280Calibration, _ h: BME280HumidityCalibration,
                                  pressureEnabled: Bool = true, humidityEnabled: Bool = true) throws(DecodeError) -> BME280Sample {
        let pt = try BMP280Compensation.compensate(raw.barometer, c, pressureEnabled: pressureEnabled)
        var humidity: Double?
        if humidityEnabled {
            guard raw.adcH != BME280Bits.humiditySkippedRaw else { throw .skippedMeasurement(chip: .bme280, channel: "humidity") }
            let tFine = BMP280Compensation.temperature(adcT: raw.barometer.adcT, c).tFine
            humidity = BME280HumidityCompensation.humidityPercent(adcH: raw.adcH, tFine: tFine, h)
        }
        return BME280Sample(barometer: pt, relativeHumidityPercent: humidity)
    }

    /// What a register dump says.
    public struct DumpReading: Sendable, Equatable {
        /// Pressure and temperature, decoded as a BMP280's.
        public var barometer: BMP280Compensation.DumpReading
        public var humidityCalibration: BME280HumidityCalibration
        public var adcH: Int32
        /// ctrl_hum (0xF2), if readable.
        public var controlHumidity: UInt8?
        /// Q22.10 %RH; nil when ctrl_hum says humidity is skipped.
        public var humidityQ22_10: UInt32?
        public var relativeHumidityPercent: Double? { humidityQ22_10.map { Double($0) / 1024 } }
    }

    /// Decodes a register image: the BMP280's registers, plus dig_H1 (0xA1),
    /// 0xE1..0xE7 and hum 0xFD/0xFE; ctrl_hum (0xF2), if readable, says
    /// whether humidity was skipped on purpose.
    public static func decode(image: RegisterImage) throws(DecodeError) -> DumpReading {
        func need(_ r: UInt8) throws(DecodeError) -> UInt8 {
            guard let v = image[r] else {
                throw .unreadableRegister(chip: .bme280, register: r, name: BME280Register.name(of: r))
            }
            return v
        }
        let pt = try BMP280Compensation.decode(image: image)
        var e: [UInt8] = []
        for r in UInt8(0xE1)...0xE7 { e.append(try need(r)) }
        let cal = try BME280HumidityCalibration(h1: try need(0xA1), e1toE7: e)
        let adcH = Int32(try need(0xFD)) << 8 | Int32(try need(0xFE))
        let ctrl = image[BME280Register.controlHumidity.rawValue]
        var q: UInt32?
        if ctrl.map({ $0 & BME280Bits.humidityOversamplingMask != 0 }) ?? true {
            guard adcH != BME280Bits.humiditySkippedRaw else { throw .skippedMeasurement(chip: .bme280, channel: "humidity") }
            q = BME280HumidityCompensation.humidityQ22_10(adcH: adcH, tFine: pt.tFine, cal)
        }
        return DumpReading(barometer: pt, humidityCalibration: cal, adcH: adcH, controlHumidity: ctrl, humidityQ22_10: q)
    }
}
