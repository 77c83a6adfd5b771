extension BMP280Compensation {
    /// What a register dump says.
    public struct DumpReading: Sendable, Equatable {
        /// `id` (0xD0) if readable, and its variant if known.
        public var chipID: UInt8?
        public var variant: BMP280Variant?
        public var calibration: BMP280Calibration
        public var raw: BMP280RawSample
        public var tFine: Int32
        /// Temperature in 0.01 °C (integer formula).
        public var centiCelsius: Int32
        /// Pressure Q24.8 (integer formula), nil when ctrl_meas says pressure is skipped.
        public var pressureQ24_8: Int64?
        /// ctrl_meas if readable.
        public var controlMeasurement: UInt8?
        public var temperatureCelsius: Double { Double(centiCelsius) / 100 }
        public var pressurePascals: Double? { pressureQ24_8.map { Double($0) / 256 } }
    }

    /// Decodes a register image: calibration 0x88..0x9F and data 0xF7..0xFC
    /// are required; ctrl_meas (0xF4), if readable, says whether pressure was
    /// skipped on purpose.
    public static func decode(image: RegisterImage) throws(DecodeError) -> DumpReading {
        func need(_ range: ClosedRange<UInt8>) throws(DecodeError) -> [UInt8] {
            var out: [UInt8] = []
            for r in range {
                guard let v = image[r] else {
                    throw .unreadableRegister(chip: .bmp280, register: r, name: BMP280Register.name(of: r))
                }
                out.append(v)
            }
            return out
        }
        let cal = try BMP280Calibration(bytes: try need(0x88...0x9F))
        let raw = BMP280RawSample(burst: try need(0xF7...0xFC))
        let ctrl = image[BMP280Register.controlMeasurement.rawValue]
        let pressureEnabled = ctrl.map { ($0 >> 2) & 0x7 != 0 } ?? true
        guard raw.adcT != BMP280Bits.skippedRaw else { throw .skippedMeasurement(chip: .bmp280, channel: "temperature") }
        let t = temperature(adcT: raw.adcT, cal)
        var q: Int64?
        if pressureEnabled {
            guard raw.adcP != BMP280Bits.skippedRaw else { throw .skippedMeasurement(chip: .bmp280, channel: "pressure") }
            guard let p = pressureQ24_8(adcP: raw.adcP, tFine: t.tFine, cal) else {
                throw .invalidCalibration(chip: .bmp280, reason: "the pressure formula's divisor is 0 for these calibration words")
            }
            q = p
        }
        let id = image[BMP280Register.id.rawValue]
        return DumpReading(chipID: id, variant: id.flatMap { BMP280Variant.lookup(chipID: $0) }, calibration: cal,
                           raw: raw, tFine: t.tFine, centiCelsius: t.centiCelsius, pressureQ24_8: q,
                           controlMeasurement: ctrl)
    }
}
