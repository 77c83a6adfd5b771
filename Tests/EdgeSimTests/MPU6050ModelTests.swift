import Testing
import EdgeBus
import EdgeFusion
@testable import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

/// MPU-6050 behaviour against the register map (RM-MPU-6000A-00 rev 4.2) and
/// product spec (PS-MPU-6000A-00 rev 3.4). Register numbers re-declared here.
@Suite struct MPU6050ModelTests {
    static let addr: UInt8 = 0x68
    static let g = 9.80665
    // Registers
    static let SMPLRT_DIV: UInt8 = 0x19, CONFIG: UInt8 = 0x1A, GYRO_CONFIG: UInt8 = 0x1B, ACCEL_CONFIG: UInt8 = 0x1C
    static let FIFO_EN: UInt8 = 0x23, INT_PIN_CFG: UInt8 = 0x37, INT_ENABLE: UInt8 = 0x38, INT_STATUS: UInt8 = 0x3A
    static let ACCEL_XOUT_H: UInt8 = 0x3B, USER_CTRL: UInt8 = 0x6A, PWR_MGMT_1: UInt8 = 0x6B
    static let FIFO_COUNTH: UInt8 = 0x72, FIFO_R_W: UInt8 = 0x74, WHO_AM_I: UInt8 = 0x75

    static let asymmetric = PhysicalTruth(specificForce: Vector3(1.2, -3.4, 9.0),
                                          angularRate: Vector3(0.5, -1.2, 2.0),
                                          magneticField: Vector3(20, -5, -40), pressure: 101_325, temperature: 20)

    struct Rig {
        let bus: SimulatedBus
        let clock: VirtualClock
        let mpu: MPU6050Model
        let truth: ConstantTruth
    }

    static func rig(_ truth: PhysicalTruth = asymmetric, variant: MPU6050Variant = .mpu6050,
                    imperfections: MPU6050Imperfections = .ideal, mounting: Mounting = .identity) -> Rig {
        let clock = VirtualClock(startNanoseconds: 5_000 * ms)
        let t = ConstantTruth(truth)
        let mpu = MPU6050Model(truth: t, mounting: mounting, variant: variant, imperfections: imperfections,
                               seed: 1, powerOnAtNanoseconds: clock.nowNanoseconds)
        let bus = SimulatedBus(clock: clock)
        bus.attach(mpu, at: addr)
        return Rig(bus: bus, clock: clock, mpu: mpu, truth: t)
    }

    func sample(_ r: Rig) throws -> [Int] {
        let b = try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14)
        return stride(from: 0, to: 14, by: 2).map { be16(b, $0) }
    }

    @Test func powerOnValuesAndSleepZeros() throws {
        let r = Self.rig()
        #expect(try r.bus.read(Self.addr, Self.PWR_MGMT_1, 1) == [0x40])
        #expect(try r.bus.read(Self.addr, Self.WHO_AM_I, 1) == [0x68])
        #expect(try r.bus.read(Self.addr, Self.SMPLRT_DIV, 4) == [0, 0, 0, 0])
        #expect(try r.bus.read(Self.addr, Self.USER_CTRL, 1) == [0])
        r.clock.advance(nanoseconds: 500 * ms)
        #expect(try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14) == [UInt8](repeating: 0, count: 14))
        // Awake: data appear after the first sample period (1 kHz at DLPF 0/div 7 → 8 kHz/8).
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        r.clock.advance(nanoseconds: 2 * ms)
        #expect(try sample(r)[2] != 0)
        // Back to sleep: data registers read 0 again.
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x41])
        #expect(try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14) == [UInt8](repeating: 0, count: 14))
    }

    @Test(arguments: 0..<4)
    func rangeScalingExactLSBs(range: Int) throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.GYRO_CONFIG, UInt8(range << 3), UInt8(range << 3)])  // burst: 0x1B, 0x1C
        r.clock.advance(nanoseconds: 3 * ms)
        let s = try sample(r)
        let accelPerG = [16384.0, 8192, 4096, 2048][range]
        let gyroPerDps = [131.0, 65.5, 32.8, 16.4][range]
        let f = Self.asymmetric.specificForce, w = Self.asymmetric.angularRate
        for i in 0..<3 {
            #expect(s[i] == Int((f[i] / Self.g * accelPerG).rounded()))
            #expect(s[4 + i] == Int((w[i] * 180 / Double.pi * gyroPerDps).rounded()))
        }
        #expect(s[3] == Int(((20 - 36.53) * 340).rounded()))   // -5620
        #expect(s[0] == [2005, 1002, 501, 251][range])
        #expect(s[1] == [-5680, -2840, -1420, -710][range])
    }

    @Test func saturatesAtFullScale() throws {
        var t = Self.asymmetric
        t.specificForce = Vector3(40, -40, 9.8)   // ±4 g
        let r = Self.rig(t)
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        r.clock.advance(nanoseconds: 2 * ms)
        let s = try sample(r)
        #expect(s[0] == 32767 && s[1] == -32768)
    }

    @Test func mountingRotatesIntoChipFrame() throws {
        // Chip X lies along board Y, chip Y along board -X (chip turned 90° about Z).
        let m = SimMatrix3([[0, -1, 0], [1, 0, 0], [0, 0, 1]])!
        let r = Self.rig(mounting: Mounting(boardFromChip: m))
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        r.clock.advance(nanoseconds: 2 * ms)
        let s = try sample(r)
        #expect(s[0] == Int((-3.4 / Self.g * 16384).rounded()))
        #expect(s[1] == Int((-1.2 / Self.g * 16384).rounded()))
        #expect(s[2] == Int((9.0 / Self.g * 16384).rounded()))
        #expect(s[4] == Int((-1.2 * 180 / Double.pi * 131).rounded()))
        #expect(s[5] == Int((-0.5 * 180 / Double.pi * 131).rounded()))
    }

    @Test func clonesAnswerTheirWhoAmIAndTheirCoresTemperatureFormula() throws {
        for id: UInt8 in [0x70, 0x72, 0x98] {
            let r = Self.rig(variant: .forWhoAmI(id))
            #expect(try r.bus.read(Self.addr, Self.WHO_AM_I, 1) == [id])
            try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
            r.clock.advance(nanoseconds: 2 * ms)
            let temp = try sample(r)[3]
            switch id {
            case 0x70: #expect(temp == Int(((20 - 21) * 333.87).rounded()))   // -334: the 6500 core
            case 0x98: #expect(temp == Int(((20 - 25) * 326.8).rounded()))    // -1634: the ICM core
            default: #expect(temp == -5620)                                    // 0x72: MPU-6050 formula
            }
        }
    }

    @Test func deviceResetClearsItselfAfter100ms() throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.SMPLRT_DIV, 9, 3])
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x80])
        #expect(try r.bus.read(Self.addr, Self.PWR_MGMT_1, 1) == [0xC0])
        #expect(try r.bus.read(Self.addr, Self.SMPLRT_DIV, 2) == [0, 0])
        r.clock.advance(nanoseconds: 50 * ms)
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])   // too early: lost
        r.clock.advance(nanoseconds: 49 * ms)
        #expect(try r.bus.read(Self.addr, Self.PWR_MGMT_1, 1) == [0xC0])
        r.clock.advance(nanoseconds: 1 * ms)
        #expect(try r.bus.read(Self.addr, Self.PWR_MGMT_1, 1) == [0x40])
        #expect(try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 6) == [0, 0, 0, 0, 0, 0])
    }

    func fifoCount(_ r: Rig) throws -> Int {
        let b = try r.bus.read(Self.addr, Self.FIFO_COUNTH, 2)
        return Int(b[0]) << 8 | Int(b[1])
    }

    @Test func sampleRateFromDLPFAndDivider() throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.SMPLRT_DIV, 9, 1])        // 1 kHz / 10 = 100 Hz
        try r.bus.write(Self.addr, [Self.FIFO_EN, 0x08])           // accel only: 6 bytes a sample
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x44])         // FIFO_EN + FIFO_RESET
        r.clock.advance(nanoseconds: 100 * ms)
        #expect(try fifoCount(r) == 60)
        r.clock.advance(nanoseconds: 9 * ms)
        #expect(try fifoCount(r) == 60)
        r.clock.advance(nanoseconds: 1 * ms)
        #expect(try fifoCount(r) == 66)
        // DLPF 0: 8 kHz base, div 9 → 800 Hz.
        try r.bus.write(Self.addr, [Self.CONFIG, 0])
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x44])
        r.clock.advance(nanoseconds: 10 * ms)
        #expect(try fifoCount(r) == 48)
        #expect(r.mpu.sampleRateHz == 800)
    }

    @Test func fifoRecordsInRegisterOrderAndOverflow() throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.SMPLRT_DIV, 0, 1])         // 1 kHz
        try r.bus.write(Self.addr, [Self.FIFO_EN, 0x78])            // accel + gyro: 12-byte records
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x44])
        r.clock.advance(nanoseconds: 50 * ms)
        #expect(try fifoCount(r) == 600)
        let regs = try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14)
        let record = Array(regs[0..<6]) + Array(regs[8..<14])
        #expect(try r.bus.read(Self.addr, Self.FIFO_R_W, 12) == record)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1)[0] & 0x10 == 0)
        // 588 bytes left; 60 more samples (720 bytes) overflow the 1024-byte FIFO.
        r.clock.advance(nanoseconds: 60 * ms)
        #expect(try fifoCount(r) == 1024)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1)[0] & 0x10 != 0)
        // 588 + 720 - 1024 = 284 oldest bytes dropped: the stream is misaligned by 284 % 12 = 8.
        let head = try r.bus.read(Self.addr, Self.FIFO_R_W, 12)
        #expect(head == Array(record[8...] + record[..<8]))
        // Empty FIFO repeats the last byte read.
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x04])          // FIFO off + reset
        #expect(try fifoCount(r) == 0)
        #expect(try r.bus.read(Self.addr, Self.FIFO_R_W, 3) == [head[11], head[11], head[11]])
    }

    /// A burst read of FIFO_R_W pops one byte per byte read (RM §4.33), so it
    /// gives exactly what reading the port one byte at a time gives: the same
    /// bytes across the ring's wrap, the last byte repeated once it is empty,
    /// the same count left. Two twin chips (same seed and noise), one read in
    /// bursts and one byte by byte.
    @Test func fifoBurstReadEqualsByteAtATimeReads() throws {
        let a = Self.rig(imperfections: .realistic), b = Self.rig(imperfections: .realistic)
        for r in [a, b] {
            try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
            try r.bus.write(Self.addr, [Self.SMPLRT_DIV, 0, 1])         // 1 kHz
            try r.bus.write(Self.addr, [Self.FIFO_EN, 0xF8])            // temp + accel + gyro: 14-byte records
            try r.bus.write(Self.addr, [Self.USER_CTRL, 0x44])
        }
        // 100 ms at 1 kHz: 1400 bytes into a 1024-byte FIFO, so the ring has
        // wrapped; then bursts of odd sizes that cross the wrap and run dry.
        for step in [100, 3, 7, 40] {
            for r in [a, b] { r.clock.advance(nanoseconds: UInt64(step) * ms) }
            let n = try fifoCount(a)
            #expect(try fifoCount(b) == n)
            for size in [1, 13, 250, n + 5] {
                let burst = try a.bus.read(Self.addr, Self.FIFO_R_W, size)
                var single: [UInt8] = []
                for _ in 0..<size { single += try b.bus.read(Self.addr, Self.FIFO_R_W, 1) }
                #expect(burst == single)
                #expect(try fifoCount(a) == fifoCount(b))
            }
        }
    }

    @Test func intStatusClearsOnRead() throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.INT_ENABLE, 0x01])
        r.clock.advance(nanoseconds: 2 * ms)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1) == [0x01])
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1) == [0x00])
        r.clock.advance(nanoseconds: 1 * ms)
        // Without INT_RD_CLEAR reading data does not clear the status.
        _ = try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1) == [0x01])
        // With INT_RD_CLEAR any read clears it.
        try r.bus.write(Self.addr, [Self.INT_PIN_CFG, 0x10])
        r.clock.advance(nanoseconds: 1 * ms)
        _ = try r.bus.read(Self.addr, Self.ACCEL_XOUT_H, 14)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1) == [0x00])
    }

    @Test func dataReadyLineTiming() throws {
        let r = Self.rig()
        let line = try #require(r.bus.dataReadyLine(forAddress: Self.addr))
        let t0 = r.clock.nowNanoseconds
        // Asleep: no edge, the wait times out and the clock moves to the deadline.
        #expect(try line.waitForEdge(timeoutNanoseconds: 20 * ms) == nil)
        #expect(r.clock.nowNanoseconds == t0 + 20 * ms)
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.SMPLRT_DIV, 4, 1])          // 200 Hz
        try r.bus.write(Self.addr, [Self.INT_ENABLE, 0x01])
        let wake = r.clock.nowNanoseconds
        // Pulse mode: one edge per sample.
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == wake + 5 * ms)
        #expect(r.clock.nowNanoseconds == wake + 5 * ms)
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == wake + 10 * ms)
        // Latched mode: the pin stays high until INT_STATUS is read.
        try r.bus.write(Self.addr, [Self.INT_PIN_CFG, 0x20])
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == wake + 15 * ms)
        #expect(try line.waitForEdge(timeoutNanoseconds: 12 * ms) == nil)
        #expect(try r.bus.read(Self.addr, Self.INT_STATUS, 1) == [0x01])
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == wake + 30 * ms)
    }

    /// The RM 4.1 self-test procedure, written out here.
    static func selfTestDeviations(_ imperfections: MPU6050Imperfections) throws -> [Double] {
        let r = rig(.restingLevel, imperfections: imperfections)
        try r.bus.write(addr, [PWR_MGMT_1, 0x01])
        try r.bus.write(addr, [CONFIG, 3])
        try r.bus.write(addr, [GYRO_CONFIG, 0x00, 0x10])            // ±250 °/s, ±8 g
        func average() throws -> [Double] {
            var sum = [Double](repeating: 0, count: 7)
            for _ in 0..<50 {
                r.clock.advance(nanoseconds: 1 * ms)
                let b = try r.bus.read(addr, ACCEL_XOUT_H, 14)
                for i in 0..<7 { sum[i] += Double(be16(b, 2 * i)) }
            }
            return sum.map { $0 / 50 }
        }
        let off = try average()
        try r.bus.write(addr, [GYRO_CONFIG, 0xE0, 0xF0])
        r.clock.advance(nanoseconds: 20 * ms)
        let on = try average()
        let st = try r.bus.read(addr, 0x0D, 4)
        var deviations: [Double] = []
        for i in 0..<3 {
            let gCode = Double(st[i] & 0x1F)
            let aCode = Double(Int(st[i] >> 5) << 2 | Int(st[3] >> UInt8(4 - 2 * i)) & 3)
            var ftG = gCode == 0 ? 0 : 25 * 131 * pow(1.046, gCode - 1)
            if i == 1 { ftG = -ftG }
            let ftA = aCode == 0 ? 0 : 4096 * 0.34 * pow(0.92 / 0.34, (aCode - 1) / 30)
            deviations.append(((on[4 + i] - off[4 + i]) - ftG) / ftG)
            deviations.append(((on[i] - off[i]) - ftA) / ftA)
        }
        return deviations
    }

    @Test func selfTestPassesWithin14Percent() throws {
        for d in try Self.selfTestDeviations(.ideal) { #expect(abs(d) < 0.005) }
        for d in try Self.selfTestDeviations(.realistic) { #expect(abs(d) < 0.14) }
        var damaged = MPU6050Imperfections.ideal
        damaged.selfTestResponseError = 0.3
        for d in try Self.selfTestDeviations(damaged) { #expect(abs(d) > 0.14) }
    }

    @Test func bypassShowsDevicesBehindTheMPU() throws {
        let r = Self.rig()
        r.bus.attach(IdentityOnlyDevice.hmc5883l(), at: 0x1E, behind: Self.addr)
        #expect(try r.bus.probe(address: 0x1E) == false)
        let e = #expect(throws: I2CError.self) { _ = try r.bus.read(0x1E, 0x0A, 3) }
        #expect(e?.kind == .noDevice)
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x00])
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x00])
        try r.bus.write(Self.addr, [Self.INT_PIN_CFG, 0x02])
        #expect(try r.bus.probe(address: 0x1E) == true)
        #expect(try r.bus.read(0x1E, 0x0A, 3) == [0x48, 0x34, 0x33])
        #expect(try r.bus.probe(address: Self.addr) == true)
        // I2C master enabled: the aux bus belongs to the MPU again.
        try r.bus.write(Self.addr, [Self.USER_CTRL, 0x20])
        #expect(try r.bus.probe(address: 0x1E) == false)
    }

    @Test func toleranceCoversNoise() throws {
        let r = Self.rig(imperfections: {
            var i = MPU6050Imperfections.ideal; i.accel.noiseScale = 1; i.gyro.noiseScale = 1; return i
        }())
        try r.bus.write(Self.addr, [Self.PWR_MGMT_1, 0x01])
        try r.bus.write(Self.addr, [Self.CONFIG, 2])
        let tol = r.mpu.roundTripTolerance
        // DLPF 2: accel σ ≈ 4.9 mg, gyro σ ≈ 0.062 °/s: the noise densities of
        // PS-MPU-6000A-00 rev 3.4 §6.1/§6.2 × √(π/2 · bandwidth), bandwidths 94/98 Hz
        // from RM-MPU-6000A-00 rev 4.2 §4.3.
        #expect(abs((tol.accel.x - 9.80665 / 16384) / 3 - 4.9e-3 * 9.80665) < 0.1e-3 * 9.80665)
        #expect(abs((tol.gyro.x - Double.pi / 180 / 131) / 3 - 0.062 * Double.pi / 180) < 0.002 * Double.pi / 180)
        var outside = 0
        for _ in 0..<400 {
            r.clock.advance(nanoseconds: 1 * ms)
            let s = try sample(r)
            for i in 0..<3 {
                if abs(Double(s[i]) * 9.80665 / 16384 - Self.asymmetric.specificForce[i]) > tol.accel[i] { outside += 1 }
                if abs(Double(s[4 + i]) * Double.pi / 180 / 131 - Self.asymmetric.angularRate[i]) > tol.gyro[i] { outside += 1 }
            }
        }
        #expect(outside < 12)   // 3σ: ~0.3 % of 2400
    }
}
