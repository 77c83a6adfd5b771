/// One raw MPU-6050 sample as the chip delivers it: the 14 bytes 0x3B..0x48
/// (or one FIFO record with accel + temp + gyro), big-endian int16 counts,
/// chip frame, plus the capture time.
public struct MPU6050RawSample: Sendable, Equatable {
    /// ACCEL_X/Y/ZOUT, counts.
    public var accel: SIMD3<Int16>
    /// TEMP_OUT, counts.
    public var temperature: Int16
    /// GYRO_X/Y/ZOUT, counts.
    public var gyro: SIMD3<Int16>
    /// Capture time, monotonic ns from the driver's ``TimeSource``.
    public var captureNanoseconds: UInt64

    @inlinable
    public init(accel: SIMD3<Int16>, temperature: Int16, gyro: SIMD3<Int16>, captureNanoseconds: UInt64) {
        self.accel = accel; self.temperature = temperature; self.gyro = gyro
        self.captureNanoseconds = captureNanoseconds
    }

    /// Parses the 14-byte burst layout (accel X,Y,Z, temp, gyro X,Y,Z; each
    /// big-endian). `bytes` must hold at least 14 bytes.
    @inlinable
    public init(burst bytes: UnsafeRawBufferPointer, captureNanoseconds: UInt64) {
        precondition(bytes.count >= 14)
        @inline(__always) func word(_ i: Int) -> Int16 { int16BigEndian(bytes[i], bytes[i + 1]) }
        self.init(accel: SIMD3(word(0), word(2), word(4)), temperature: word(6),
                  gyro: SIMD3(word(8), word(10), word(12)), captureNanoseconds: captureNanoseconds)
    }

    /// Parses 14 bytes from an array (tools and tests).
    public init(burst bytes: [UInt8], captureNanoseconds: UInt64 = 0) {
        self = bytes.withUnsafeBytes { MPU6050RawSample(burst: $0, captureNanoseconds: captureNanoseconds) }
    }
}

/// A decoded MPU-6050 sample in SI units, **chip frame** (DS §11.1: +X right,
/// +Y up in the top view, +Z out of the package); the board mounting is
/// applied elsewhere.
public struct MPU6050Sample: Sendable, Equatable {
    /// Specific force, m/s² (flat and still, component side up: about +9.81 on Z).
    public var acceleration: SIMD3<Double>
    /// Angular rate, rad/s (positive counter-clockwise looking down the axis).
    public var rotationRate: SIMD3<Double>
    /// Die temperature, °C (runs a few °C above ambient).
    public var temperatureCelsius: Double
    /// Capture time, monotonic ns.
    public var captureNanoseconds: UInt64

    public init(acceleration: SIMD3<Double>, rotationRate: SIMD3<Double>, temperatureCelsius: Double,
                captureNanoseconds: UInt64) {
        self.acceleration = acceleration; self.rotationRate = rotationRate
        self.temperatureCelsius = temperatureCelsius; self.captureNanoseconds = captureNanoseconds
    }
}

/// Scale factors derived once from the ranges and the variant.
public struct MPU6050Scales: Sendable, Equatable {
    /// m/s² per count.
    public var accel: Double
    /// rad/s per count.
    public var gyro: Double
    /// Temperature counts per °C, and °C at count 0.
    public var temperatureLSBPerDegree: Double
    public var temperatureOffsetCelsius: Double

    public init(gyroRange: MPU6050GyroRange, accelRange: MPU6050AccelRange, variant: MPU6050Variant = .genuine) {
        accel = accelRange.metersPerSecondSquaredPerLSB
        gyro = gyroRange.radiansPerSecondPerLSB
        temperatureLSBPerDegree = variant.temperatureLSBPerDegree
        temperatureOffsetCelsius = variant.temperatureOffsetCelsius
    }
}

/// Pure decoding: raw counts → SI units (DS §6.1, §6.2; temperature RM §4.18).
public enum MPU6050Decoder {
    /// `T = raw / 340 + 36.53` on a genuine part; per-variant otherwise.
    @inlinable
    public static func temperatureCelsius(raw: Int16, variant: MPU6050Variant = .genuine) -> Double {
        Double(raw) / variant.temperatureLSBPerDegree + variant.temperatureOffsetCelsius
    }

    @inlinable
    public static func decode(_ raw: MPU6050RawSample, scales: MPU6050Scales) -> MPU6050Sample {
        let a = SIMD3<Double>(Double(raw.accel.x), Double(raw.accel.y), Double(raw.accel.z)) * scales.accel
        let g = SIMD3<Double>(Double(raw.gyro.x), Double(raw.gyro.y), Double(raw.gyro.z)) * scales.gyro
        let t = Double(raw.temperature) / scales.temperatureLSBPerDegree + scales.temperatureOffsetCelsius
        return MPU6050Sample(acceleration: a, rotationRate: g, temperatureCelsius: t,
                             captureNanoseconds: raw.captureNanoseconds)
    }

    /// What a register dump says: the settings it was captured with and the sample.
    public struct DumpReading: Sendable, Equatable {
        /// nil when WHO_AM_I is missing or not a known value (the genuine
        /// temperature formula is then used).
        public var variant: MPU6050Variant?
        public var whoAmI: UInt8?
        public var gyroRange: MPU6050GyroRange
        public var accelRange: MPU6050AccelRange
        /// Output data rate from CONFIG and SMPLRT_DIV, Hz (nil if unreadable).
        public var sampleRateHz: Double?
        /// PWR_MGMT_1.SLEEP was set: the data registers are stale (often all zero).
        public var asleep: Bool?
        public var raw: MPU6050RawSample
        public var sample: MPU6050Sample
    }

    /// Decodes a register image (e.g. from `i2cdump`): GYRO_CONFIG and
    /// ACCEL_CONFIG select the ranges; 0x3B..0x48 hold the sample.
    public static func decode(image: RegisterImage) throws(DecodeError) -> DumpReading {
        func need(_ r: MPU6050Register) throws(DecodeError) -> UInt8 {
            guard let v = image[r.rawValue] else {
                throw .unreadableRegister(chip: .mpu6050, register: r.rawValue, name: r.name)
            }
            return v
        }
        let gyroRange = MPU6050GyroRange(rawValue: (try need(.gyroConfig) >> 3) & 0x3)!
        let accelRange = MPU6050AccelRange(rawValue: (try need(.accelConfig) >> 3) & 0x3)!
        var bytes = [UInt8]()
        for r in UInt8(0x3B)...UInt8(0x48) {
            guard let v = image[r] else {
                let name = MPU6050Register(rawValue: r)?.name ?? Self.dataRegisterName(r)
                throw .unreadableRegister(chip: .mpu6050, register: r, name: name)
            }
            bytes.append(v)
        }
        let who = image[MPU6050Register.whoAmI.rawValue]
        let variant = who.flatMap { MPU6050Variant.lookup(whoAmI: $0) }
        var rate: Double?
        if let cfg = image[MPU6050Register.config.rawValue], let div = image[MPU6050Register.sampleRateDivider.rawValue] {
            let dlpf = cfg & 0x7
            let base: Double = (dlpf == 0 || dlpf == 7) ? 8000 : 1000
            rate = base / (1 + Double(div))
        }
        let asleep = image[MPU6050Register.powerManagement1.rawValue].map { $0 & MPU6050Bits.sleep != 0 }
        let raw = MPU6050RawSample(burst: bytes)
        let scales = MPU6050Scales(gyroRange: gyroRange, accelRange: accelRange, variant: variant ?? .genuine)
        return DumpReading(variant: variant, whoAmI: who, gyroRange: gyroRange, accelRange: accelRange,
                           sampleRateHz: rate, asleep: asleep, raw: raw, sample: decode(raw, scales: scales))
    }

    static func dataRegisterName(_ r: UInt8) -> String {
        let names = ["ACCEL_XOUT_H", "ACCEL_XOUT_L", "ACCEL_YOUT_H", "ACCEL_YOUT_L", "ACCEL_ZOUT_H", "ACCEL_ZOUT_L",
                     "TEMP_OUT_H", "TEMP_OUT_L", "GYRO_XOUT_H", "GYRO_XOUT_L", "GYRO_YOUT_H", "GYRO_YOUT_L",
                     "GYRO_ZOUT_H", "GYRO_ZOUT_L"]
        return (0x3B...0x48).contains(r) ? names[Int(r) - 0x3B] : "register \(r)"
    }
}
