// InvenSense MPU-6050 register-file model, transcribed from the product
// specification PS-MPU-6000A-00 rev 3.4 and register map RM-MPU-6000A-00
// rev 4.2 themselves (not from any driver); sections named where used.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeBus
import EdgeValues

/// A chip variant answering the MPU-6050 register map: rows, not `if` chains.
public struct MPU6050Variant: Codable, Sendable, Equatable {
    /// WHO_AM_I (0x75) value.
    public var whoAmI: UInt8
    /// FIFO capacity, bytes (1024 on the 6050 family, 512 on 6500-core parts).
    public var fifoSize: Int
    /// Temperature sensitivity, LSB/°C.
    public var temperatureSensitivity: Double
    /// Temperature that reads TEMP_OUT = 0, °C.
    public var temperatureAtZero: Double

    public init(whoAmI: UInt8, fifoSize: Int, temperatureSensitivity: Double, temperatureAtZero: Double) {
        self.whoAmI = whoAmI; self.fifoSize = fifoSize
        self.temperatureSensitivity = temperatureSensitivity; self.temperatureAtZero = temperatureAtZero
    }

    /// Genuine MPU-6050: WHO_AM_I 0x68, 1024-byte FIFO, T = TEMP_OUT/340 + 36.53 (DS 1.5).
    public static let mpu6050 = MPU6050Variant(whoAmI: 0x68, fifoSize: 1024, temperatureSensitivity: 340, temperatureAtZero: 36.53)
    /// MPU-6500 core (0x70): 512-byte FIFO, T = TEMP_OUT/333.87 + 21 (kernel offset 7011, 2.995178 m°C/LSB).
    public static let mpu6500 = MPU6050Variant(whoAmI: 0x70, fifoSize: 512, temperatureSensitivity: 333.87, temperatureAtZero: 21)

    /// ICM-20xxx core (ICM-20602/20608/20689 data sheets; kernel offset 8170,
    /// 3.059976 m°C/LSB): T = TEMP_OUT/326.8 + 25.
    public static let icm = MPU6050Variant(whoAmI: 0x98, fifoSize: 1024, temperatureSensitivity: 326.8, temperatureAtZero: 25)

    /// The row for a WHO_AM_I value (the Linux `inv_mpu_core.c` WHO_AM_I table):
    /// 0x70/0x71/0x73/0x74/0x78 the 6500 core; 0x98 and the ICM-20xxx IDs the
    /// ICM core (FIFO 1008 bytes on ICM-20600/20602, 512 on ICM-20608/20609
    /// and IAM-20680); anything else (0x68, the unidentified clone 0x72) the
    /// 6050 behaviour with that identity.
    public static func forWhoAmI(_ id: UInt8) -> MPU6050Variant {
        var v: MPU6050Variant
        switch id {
        case 0x70, 0x71, 0x73, 0x74, 0x78: v = mpu6500
        case 0x98, 0x20: v = icm
        case 0x11, 0x12: v = icm; v.fifoSize = 1008
        case 0xAF, 0xA6, 0xA9: v = icm; v.fifoSize = 512
        default: v = mpu6050
        }
        v.whoAmI = id
        return v
    }
}

/// Imperfections of one MPU-6050 (InvenSense PS-MPU-6000A-00 rev 3.4 §6.1
/// gyroscope and §6.2 accelerometer specifications).
/// Accelerometer in m/s², gyroscope in rad/s, both in the chip frame.
public struct MPU6050Imperfections: Codable, Sendable, Equatable {
    /// Accelerometer (noise density 400 µg/√Hz; σ set by the DLPF bandwidth).
    public var accel: AxisImperfections
    /// Gyroscope (noise density 0.005 °/s/√Hz; σ set by the DLPF bandwidth).
    public var gyro: AxisImperfections
    /// Die temperature above ambient, °C (the temperature register reads the die).
    public var dieTemperatureOffset: Double
    /// Sample-clock error with the internal 8 MHz oscillator (CLKSEL 0), fraction (DS ±5 %).
    public var internalClockError: Double
    /// Sample-clock error with a gyro PLL (CLKSEL 1..3), fraction (DS ±1 %).
    public var pllClockError: Double
    /// Factory self-test codes XA, YA, ZA (5 bits each, 0x0D..0x10).
    public var selfTestAccelCodes: [Int]
    /// Factory self-test codes XG, YG, ZG (5 bits each, 0x0D..0x0F).
    public var selfTestGyroCodes: [Int]
    /// How far the actual self-test response is from the factory trim, fraction
    /// (±0.14 is the pass limit; set 0.3 to play a damaged part).
    public var selfTestResponseError: Double

    public init(accel: AxisImperfections, gyro: AxisImperfections, dieTemperatureOffset: Double,
                internalClockError: Double, pllClockError: Double, selfTestAccelCodes: [Int] = [14, 15, 17],
                selfTestGyroCodes: [Int] = [12, 13, 11], selfTestResponseError: Double) {
        self.accel = accel; self.gyro = gyro; self.dieTemperatureOffset = dieTemperatureOffset
        self.internalClockError = internalClockError; self.pllClockError = pllClockError
        self.selfTestAccelCodes = selfTestAccelCodes; self.selfTestGyroCodes = selfTestGyroCodes
        self.selfTestResponseError = selfTestResponseError
    }

    /// Modest but realistic: a fraction of the DS worst cases.
    public static let realistic = MPU6050Imperfections(
        accel: AxisImperfections(noiseScale: 1, bias: [0.18, -0.25, 0.35], biasTempco: [0.002, -0.002, 0.003],
                                 scaleError: [0.008, -0.005, 0.011], scaleTempco: 0.0002,
                                 crossAxis: [[0, 0.004, -0.003], [0.002, 0, 0.005], [-0.004, 0.003, 0]]),
        gyro: AxisImperfections(noiseScale: 1, bias: [0.02, -0.015, 0.01], biasTempco: [1e-4, -8e-5, 5e-5],
                                scaleError: [0.01, -0.008, 0.006], scaleTempco: 0,
                                crossAxis: [[0, 0.005, 0.002], [-0.003, 0, 0.004], [0.002, -0.005, 0]]),
        dieTemperatureOffset: 2.0, internalClockError: 0.02, pllClockError: 0.002, selfTestResponseError: 0.03)

    /// Everything off: exact LSBs, exact timing, self-test response = factory trim.
    public static let ideal = MPU6050Imperfections(
        accel: .ideal, gyro: .ideal, dieTemperatureOffset: 0, internalClockError: 0, pllClockError: 0,
        selfTestResponseError: 0)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = MPU6050Imperfections.realistic
        accel = try c.decodeIfPresent(AxisImperfections.self, forKey: .accel) ?? d.accel
        gyro = try c.decodeIfPresent(AxisImperfections.self, forKey: .gyro) ?? d.gyro
        dieTemperatureOffset = try c.decodeIfPresent(Double.self, forKey: .dieTemperatureOffset) ?? d.dieTemperatureOffset
        internalClockError = try c.decodeIfPresent(Double.self, forKey: .internalClockError) ?? d.internalClockError
        pllClockError = try c.decodeIfPresent(Double.self, forKey: .pllClockError) ?? d.pllClockError
        selfTestAccelCodes = try c.decodeIfPresent([Int].self, forKey: .selfTestAccelCodes) ?? d.selfTestAccelCodes
        selfTestGyroCodes = try c.decodeIfPresent([Int].self, forKey: .selfTestGyroCodes) ?? d.selfTestGyroCodes
        selfTestResponseError = try c.decodeIfPresent(Double.self, forKey: .selfTestResponseError) ?? d.selfTestResponseError
    }
}

/// How closely a reading decoded from the registers should match the truth
/// for the current settings: 1 LSB + 3σ of the configured noise, per axis,
/// in the board frame. Excludes the configured bias/scale/cross-axis errors
/// (deterministic, and what calibration removes): compare against the truth
/// with `.ideal` imperfections, or add them yourself.
public struct MPU6050Tolerance: Sendable, Equatable {
    /// m/s² per axis.
    public var accel: Vector3
    /// rad/s per axis.
    public var gyro: Vector3
    /// °C.
    public var temperature: Double
}

/// The MPU-6050 as a register file with behaviour. See docs/simulators.md.
public final class MPU6050Model: RegisterFileDevice, AuxiliaryBusGate, DataReadySource, @unchecked Sendable {
    public let kind = "mpu6050"
    public let variant: MPU6050Variant
    public let body: SimBody
    public let mounting: Mounting
    public let imperfections: MPU6050Imperfections
    let truth: any TruthSource
    let accelErr: AxisImperfections.Compiled
    let gyroErr: AxisImperfections.Compiled
    var rng: SimRandom

    // Register addresses (RM 4.2), re-declared here on purpose.
    enum Reg {
        static let selfTestX: UInt8 = 0x0D, selfTestA: UInt8 = 0x10
        static let smplrtDiv: UInt8 = 0x19, config: UInt8 = 0x1A, gyroConfig: UInt8 = 0x1B, accelConfig: UInt8 = 0x1C
        static let fifoEn: UInt8 = 0x23, intPinCfg: UInt8 = 0x37, intEnable: UInt8 = 0x38, intStatus: UInt8 = 0x3A
        static let accelXoutH: UInt8 = 0x3B, gyroZoutL: UInt8 = 0x48
        static let signalPathReset: UInt8 = 0x68, userCtrl: UInt8 = 0x6A
        static let pwrMgmt1: UInt8 = 0x6B, pwrMgmt2: UInt8 = 0x6C
        static let fifoCountH: UInt8 = 0x72, fifoCountL: UInt8 = 0x73, fifoRW: UInt8 = 0x74, whoAmI: UInt8 = 0x75
    }

    /// DEVICE_RESET duration (RM 4.28 / recommended wait): 100 ms.
    public static let deviceResetNanoseconds: UInt64 = 100_000_000
    /// Most samples generated when catching up after a long gap (older ones are
    /// skipped; the FIFO has overflowed long before).
    static let maxCatchUp: UInt64 = 4096
    static let accelBandwidth: [Double] = [260, 184, 94, 44, 21, 10, 5, 260]
    static let gyroBandwidth: [Double] = [256, 188, 98, 42, 20, 10, 5, 256]
    static let gyroLSBPerDps: [Double] = [131, 65.5, 32.8, 16.4]

    var regs = [UInt8](repeating: 0, count: 128)
    var pointer: UInt8 = 0
    var lastTime: UInt64
    var resetUntil: UInt64?
    // Sample clock: samples fall at anchor + k·period, k = 1, 2, ...
    var anchor: UInt64 = 0
    var lastK: UInt64 = 0
    var period: UInt64 = 1_000_000
    var accelSlot: UInt64 = .max
    /// Current output: accel x y z, temp, gyro x y z (register order).
    var output = [Int16](repeating: 0, count: 7)
    var fifo: [UInt8]
    var fifoHead = 0, fifoCount = 0
    var lastFifoByte: UInt8 = 0
    var fifoCountLatch: UInt16?
    var intStatus: UInt8 = 0
    var pinHigh = false

    public init(truth: any TruthSource, body: SimBody = .board, mounting: Mounting = .identity,
                variant: MPU6050Variant = .mpu6050, imperfections: MPU6050Imperfections = .realistic,
                seed: UInt64 = 0, powerOnAtNanoseconds t: UInt64 = 0) {
        self.truth = truth; self.body = body; self.mounting = mounting; self.variant = variant
        self.imperfections = imperfections
        accelErr = .init(imperfections.accel); gyroErr = .init(imperfections.gyro)
        rng = SimRandom(seed: seed)
        fifo = [UInt8](repeating: 0, count: max(1, variant.fifoSize))
        lastTime = t
        loadPowerOnValues()
    }

    func loadPowerOnValues() {
        regs = [UInt8](repeating: 0, count: 128)
        regs[Int(Reg.pwrMgmt1)] = 0x40
        regs[Int(Reg.whoAmI)] = variant.whoAmI
        let a = imperfections.selfTestAccelCodes.map { UInt8(clamping: $0) & 0x1F } + [0, 0, 0]
        let g = imperfections.selfTestGyroCodes.map { UInt8(clamping: $0) & 0x1F } + [0, 0, 0]
        for i in 0..<3 { regs[0x0D + i] = (a[i] >> 2) << 5 | g[i] }
        regs[0x10] = (a[0] & 3) << 4 | (a[1] & 3) << 2 | (a[2] & 3)
        output = [Int16](repeating: 0, count: 7)
        fifoHead = 0; fifoCount = 0; lastFifoByte = 0; fifoCountLatch = nil
        intStatus = 0; pinHigh = false; resetUntil = nil
        lastK = 0; accelSlot = .max
        period = computePeriod()
    }

    // MARK: state helpers

    var asleep: Bool { resetUntil != nil || regs[Int(Reg.pwrMgmt1)] & 0x40 != 0 }
    var dlpf: Int { Int(regs[Int(Reg.config)] & 7) }
    /// Gyro output rate 8 kHz with DLPF 0 or 7, else 1 kHz (DS / RM 4.2 §4.2).
    var eightKilohertz: Bool { dlpf == 0 || dlpf == 7 }
    var clockError: Double {
        let clksel = regs[Int(Reg.pwrMgmt1)] & 7
        return (1...3).contains(clksel) ? imperfections.pllClockError : imperfections.internalClockError
    }

    /// Sample period, ns: (1 + SMPLRT_DIV) / (8 or 1 kHz), stretched by the clock error.
    func computePeriod() -> UInt64 {
        let nominal = UInt64(1 + Int(regs[Int(Reg.smplrtDiv)])) * (eightKilohertz ? 125_000 : 1_000_000)
        let e = clockError
        return e == 0 ? nominal : UInt64((Double(nominal) / (1 + e)).rounded())
    }

    /// Keeps the sample phase, switches to the current period from the last sample on.
    func reanchor() {
        anchor &+= lastK &* period
        lastK = 0
        period = computePeriod()
        accelSlot = .max
    }

    /// Sample rate now, Hz.
    public var sampleRateHz: Double { 1e9 / Double(computePeriod()) }

    public func advance(toNanoseconds t: UInt64) {
        guard t > lastTime else { return }
        if let r = resetUntil {
            if t < r { lastTime = t; return }
            resetUntil = nil
            regs[Int(Reg.pwrMgmt1)] = 0x40
        }
        lastTime = t
        guard !asleep, t > anchor else { return }
        let kNow = (t - anchor) / period
        if kNow > lastK {
            if kNow - lastK > Self.maxCatchUp { lastK = kNow - Self.maxCatchUp }
            var k = lastK + 1
            while k <= kNow { produceSample(at: anchor &+ k &* period); k += 1 }
            lastK = kNow
        }
    }

    func noiseSigmas() -> (accel: Double, gyro: Double) {
        let pi = Double.pi
        let a = 400e-6 * standardGravity * (pi / 2 * Self.accelBandwidth[dlpf]).squareRoot()
        let g = 0.005 * pi / 180 * (pi / 2 * Self.gyroBandwidth[dlpf]).squareRoot()
        return (a * imperfections.accel.noiseScale, g * imperfections.gyro.noiseScale)
    }

    /// m/s² per LSB at the current AFS_SEL (16384 / 8192 / 4096 / 2048 LSB/g).
    var accelLSB: Double { standardGravity / Double(16384 >> Int((regs[Int(Reg.accelConfig)] >> 3) & 3)) }
    /// rad/s per LSB at the current FS_SEL (131 / 65.5 / 32.8 / 16.4 LSB/(°/s)).
    var gyroLSB: Double { Double.pi / 180 / Self.gyroLSBPerDps[Int((regs[Int(Reg.gyroConfig)] >> 3) & 3)] }

    /// Self-test responses (chip frame) from the factory codes, RM-MPU-6000A-00 rev 4.2 §4.1.
    func selfTestResponse() -> (accel: Vector3, gyro: Vector3) {
        let k = 1 + imperfections.selfTestResponseError
        var a = Vector3.zero, g = Vector3.zero
        let aBits = regs[Int(Reg.accelConfig)] >> 5, gBits = regs[Int(Reg.gyroConfig)] >> 5
        let a0 = regs[Int(Reg.selfTestA)]
        for i in 0..<3 {
            let st = regs[0x0D + i]
            let gCode = Int(st & 0x1F)
            let aCode = Int(st >> 5) << 2 | Int((a0 >> UInt8(4 - 2 * i)) & 3)
            if gBits & (0x4 >> UInt8(i)) != 0, gCode != 0 {
                // FT in °/s: 25·1.046^(code-1), Y negative.
                let ft = 25 * pow(1.046, Double(gCode - 1)) * (i == 1 ? -1 : 1)
                g[i] = ft * Double.pi / 180 * k
            }
            if aBits & (0x4 >> UInt8(i)) != 0, aCode != 0 {
                // FT in g: 0.34·(0.92/0.34)^((code-1)/30).
                let ft = 0.34 * pow(0.92 / 0.34, Double(aCode - 1) / 30)
                a[i] = ft * standardGravity * k
            }
        }
        return (a, g)
    }

    func produceSample(at ts: UInt64) {
        let world = truth.inertialTruth(atNanoseconds: ts, body: body)
        let dieT = world.temperature + imperfections.dieTemperatureOffset
        let stby = regs[Int(Reg.pwrMgmt2)]
        let (sigmaA, sigmaG) = noiseSigmas()
        let st = (regs[Int(Reg.accelConfig)] | regs[Int(Reg.gyroConfig)]) & 0xE0 != 0 ? selfTestResponse() : (Vector3.zero, Vector3.zero)
        // The accelerometer runs at 1 kHz; at an 8 kHz sample rate its value repeats.
        var updateAccel = true
        if eightKilohertz {
            let slot = (ts &- anchor) / (period * 8 / UInt64(1 + Int(regs[Int(Reg.smplrtDiv)])))
            updateAccel = slot != accelSlot
            accelSlot = slot
        }
        if updateAccel {
            var a = accelErr.apply(mounting.chip(fromBoard: world.specificForce), temperature: dieT) + st.accel
            for i in 0..<3 { a[i] += rng.gaussian(sigma: sigmaA) }
            let lsb = accelLSB
            for i in 0..<3 where stby & (0x20 >> UInt8(i)) == 0 { output[i] = saturatingInt16(a[i] / lsb) }
        }
        if regs[Int(Reg.pwrMgmt1)] & 0x08 == 0 {
            output[3] = saturatingInt16((dieT - variant.temperatureAtZero) * variant.temperatureSensitivity)
        }
        var w = gyroErr.apply(mounting.chip(fromBoard: world.angularRate), temperature: dieT) + st.gyro
        for i in 0..<3 { w[i] += rng.gaussian(sigma: sigmaG) }
        let glsb = gyroLSB
        for i in 0..<3 where stby & (0x04 >> UInt8(i)) == 0 { output[4 + i] = saturatingInt16(w[i] / glsb) }

        // FIFO: enabled sources in register order, big-endian.
        if regs[Int(Reg.userCtrl)] & 0x40 != 0 {
            let en = regs[Int(Reg.fifoEn)]
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 14) { bytes in
                var n = 0
                func put(_ v: Int16) {
                    let u = UInt16(bitPattern: v)
                    bytes[n] = UInt8(u >> 8); bytes[n + 1] = UInt8(u & 0xFF); n += 2
                }
                if en & 0x08 != 0 { for i in 0..<3 { put(output[i]) } }
                if en & 0x80 != 0 { put(output[3]) }
                for i in 0..<3 where en & (0x40 >> UInt8(i)) != 0 { put(output[4 + i]) }
                pushFIFO(UnsafeBufferPointer(rebasing: bytes[0..<n]))
            }
        }
        intStatus |= 0x01
        let enable = regs[Int(Reg.intEnable)]
        if enable & 0x01 != 0 || (enable & 0x10 != 0 && intStatus & 0x10 != 0) {
            if regs[Int(Reg.intPinCfg)] & 0x20 != 0 { pinHigh = true }
        }
    }

    /// Writes one sample's bytes into the FIFO, in order (one pass over the
    /// storage per sample, not per byte: this runs at the sample rate).
    func pushFIFO(_ bytes: UnsafeBufferPointer<UInt8>) {
        var head = fifoHead, count = fifoCount, overflow = false
        fifo.withUnsafeMutableBufferPointer { f in
            let cap = f.count
            for b in bytes {
                if count == cap {
                    // Overflow: the oldest byte is dropped, writing continues.
                    head = head + 1 == cap ? 0 : head + 1
                    count -= 1
                    overflow = true
                }
                let i = head + count
                f[i >= cap ? i - cap : i] = b
                count += 1
            }
        }
        fifoHead = head; fifoCount = count
        if overflow { intStatus |= 0x10 }
    }
    func popFIFO() -> UInt8 {
        guard fifoCount > 0 else { return lastFifoByte }
        let b = fifo[fifoHead]
        fifoHead = (fifoHead + 1) % fifo.count
        fifoCount -= 1
        lastFifoByte = b
        return b
    }

    /// A burst read of FIFO_R_W: the pointer stays on the port and every
    /// byte is the next one out (`popFIFO`), in one pass.
    func readBurst(_ register: UInt8, into read: UnsafeMutableRawBufferPointer, atNanoseconds t: UInt64) -> Bool {
        guard register == Reg.fifoRW, read.count > 1 else { return false }
        var head = fifoHead, count = fifoCount, last = lastFifoByte
        fifo.withUnsafeBufferPointer { f in
            for i in 0..<read.count {
                if count > 0 {
                    last = f[head]
                    head = head + 1 == f.count ? 0 : head + 1
                    count -= 1
                }
                read[i] = last
            }
        }
        fifoHead = head; fifoCount = count; lastFifoByte = last
        return true
    }

    // MARK: register file

    func pointer(after register: UInt8) -> UInt8 { register == Reg.fifoRW ? register : register &+ 1 }

    func readRegister(_ r: UInt8, atNanoseconds t: UInt64) -> UInt8 {
        switch r {
        case Reg.accelXoutH...Reg.gyroZoutL:
            if asleep { return 0 }
            let v = UInt16(bitPattern: output[Int(r - Reg.accelXoutH) / 2])
            return (r - Reg.accelXoutH) % 2 == 0 ? UInt8(v >> 8) : UInt8(v & 0xFF)
        case Reg.intStatus:
            let s = intStatus
            intStatus = 0; pinHigh = false
            return s
        case Reg.fifoCountH:
            let c = UInt16(fifoCount)
            fifoCountLatch = c
            return UInt8(c >> 8)
        case Reg.fifoCountL:
            let c = fifoCountLatch ?? UInt16(fifoCount)
            fifoCountLatch = nil
            return UInt8(c & 0xFF)
        case Reg.fifoRW:
            return popFIFO()
        default:
            return r < 0x80 ? regs[Int(r)] : 0
        }
    }

    func didRead(atNanoseconds t: UInt64) {
        // INT_RD_CLEAR: any read operation clears the interrupt status.
        if regs[Int(Reg.intPinCfg)] & 0x10 != 0 { intStatus = 0; pinHigh = false }
    }

    func writeRegister(_ r: UInt8, _ v: UInt8, atNanoseconds t: UInt64) {
        guard r < 0x80, resetUntil == nil else { return }   // writes during DEVICE_RESET are lost
        switch r {
        case Reg.intStatus, Reg.accelXoutH...0x60, Reg.fifoCountH, Reg.fifoCountL, Reg.whoAmI:
            return   // read-only
        case Reg.fifoRW:
            return   // host writes into the FIFO are not modelled
        case Reg.pwrMgmt1:
            if v & 0x80 != 0 {
                // DEVICE_RESET: every register to its power-on value; the bit reads
                // 1 until the reset completes.
                loadPowerOnValues()
                regs[Int(Reg.pwrMgmt1)] = 0xC0
                resetUntil = t &+ Self.deviceResetNanoseconds
                return
            }
            let wasAsleep = asleep
            let oldClock = regs[Int(r)] & 7
            regs[Int(r)] = v
            if wasAsleep && !asleep {
                anchor = t; lastK = 0; period = computePeriod(); accelSlot = .max
            } else if oldClock != v & 7 {
                reanchor()
            }
        case Reg.smplrtDiv, Reg.config:
            regs[Int(r)] = v
            reanchor()
        case Reg.userCtrl:
            if v & 0x04 != 0 { fifoHead = 0; fifoCount = 0 }      // FIFO_RESET
            if v & 0x01 != 0 { output = [Int16](repeating: 0, count: 7) }   // SIG_COND_RESET
            regs[Int(r)] = v & ~0x07   // reset bits clear themselves
        case Reg.signalPathReset:
            regs[Int(r)] = 0           // write-only strobe; does not clear data registers
        default:
            regs[Int(r)] = v
        }
    }

    public func transfer(write: UnsafeRawBufferPointer, read: UnsafeMutableRawBufferPointer,
                         atNanoseconds t: UInt64) throws(SimulatedDeviceFault) {
        registerTransfer(write: write, read: read, atNanoseconds: t)
    }

    public func powerOnReset(atNanoseconds t: UInt64) {
        advance(toNanoseconds: t)
        loadPowerOnValues()
        pointer = 0
        lastTime = max(lastTime, t)
    }

    // MARK: gate, pin, tolerance

    /// I2C_BYPASS_EN (INT_PIN_CFG bit 1) set and I2C_MST_EN (USER_CTRL bit 5) clear.
    public func auxiliaryBusConnected(atNanoseconds t: UInt64) -> Bool {
        regs[Int(Reg.intPinCfg)] & 0x02 != 0 && regs[Int(Reg.userCtrl)] & 0x20 == 0
    }

    /// Next rising edge on the INT pin after `t` (catches up to `t` first):
    /// every sample with DATA_RDY_EN (INT_ENABLE bit 0); with FIFO_OFLOW_EN
    /// (bit 4) alone, the sample that does not fit in the FIFO (RM-MPU-6000A-00
    /// rev 4.2 §4.15: "enables a FIFO buffer overflow to generate an
    /// interrupt"; each further sample overflows again). With LATCH_INT_EN
    /// the pin stays high, so no edge comes until INT_STATUS is read; without
    /// latch each interrupt is a 50 µs pulse.
    public func nextDataReadyEdge(after t: UInt64) -> UInt64? {
        advance(toNanoseconds: t)
        let enable = regs[Int(Reg.intEnable)]
        guard !asleep, enable & 0x11 != 0 else { return nil }
        if regs[Int(Reg.intPinCfg)] & 0x20 != 0 && pinHigh { return nil }
        let k = t >= anchor ? (t - anchor) / period + 1 : 1
        if enable & 0x01 != 0 { return anchor &+ k &* period }
        // FIFO overflow only: the first sample whose bytes no longer fit.
        let bytes = fifoBytesPerSample
        guard bytes > 0 else { return nil }
        let samplesUntilOverflow = UInt64((fifo.count - fifoCount) / bytes + 1)
        return anchor &+ (k + samplesUntilOverflow - 1) &* period
    }

    /// Bytes each sample writes into the FIFO (FIFO_EN sources, 2 bytes
    /// each; 0 while USER_CTRL FIFO_EN is clear).
    var fifoBytesPerSample: Int {
        guard regs[Int(Reg.userCtrl)] & 0x40 != 0 else { return 0 }
        let en = regs[Int(Reg.fifoEn)]
        return 2 * ((en & 0x08 != 0 ? 3 : 0) + (en & 0x80 != 0 ? 1 : 0) + (0..<3).filter { en & (0x40 >> UInt8($0)) != 0 }.count)
    }

    /// Round-trip tolerance for the current range and DLPF settings.
    public var roundTripTolerance: MPU6050Tolerance {
        let (sa, sg) = noiseSigmas()
        let m = mounting.boardFromChip.magnitudes
        return MPU6050Tolerance(accel: m * Vector3(repeating: accelLSB + 3 * sa),
                                gyro: m * Vector3(repeating: gyroLSB + 3 * sg),
                                temperature: 1 / variant.temperatureSensitivity)
    }
}
