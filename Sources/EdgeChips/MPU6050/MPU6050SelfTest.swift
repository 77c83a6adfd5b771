#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeBus

/// The result of the MPU-6050 self-test (RM §4.1, DS §6.1/6.2).
public struct MPU6050SelfTestReport: Sendable, Equatable {
    public struct Axis: Sendable, Equatable {
        /// "accel x", "gyro y", ...
        public var name: String
        /// Factory trim, counts (0 when the trim code is 0).
        public var factoryTrim: Double
        /// Self-test response: output with self-test on minus off, counts.
        public var response: Double
        /// (response - trim) / trim; nan when trim is 0.
        public var deviation: Double
        public var passed: Bool
    }
    public var axes: [Axis]
    public var passed: Bool { axes.allSatisfy(\.passed) }
}

/// Pure self-test arithmetic (InvenSense RM-MPU-6000A-00 rev 4.2 §4.1; self-test
/// response limits: PS-MPU-6000A-00 rev 3.4 §6.1, §6.2).
public enum MPU6050SelfTest {
    /// Pass band: |(STR - FT) / FT| ≤ 14 %.
    public static let passBand = 0.14
    /// Gyro full scale for the test (±250 °/s), GYRO_CONFIG value without ST bits.
    public static let gyroRange = MPU6050GyroRange.dps250
    /// Accel full scale for the test (±8 g).
    public static let accelRange = MPU6050AccelRange.g8

    /// Factory trim in counts from SELF_TEST_X, _Y, _Z, _A (0x0D..0x10).
    /// Gyro: `FT = ±25·131·1.046^(code-1)` (Y negative); accel:
    /// `FT = 4096·0.34·(0.92/0.34)^((code-1)/30)`, code = 3 high bits from
    /// 0x0D..0x0F, 2 low bits from 0x10. A code of 0 gives FT = 0.
    public static func factoryTrim(_ r: [UInt8]) -> (accel: SIMD3<Double>, gyro: SIMD3<Double>) {
        precondition(r.count == 4)
        let g = SIMD3<Double>(Double(r[0] & 0x1F), Double(r[1] & 0x1F), Double(r[2] & 0x1F))
        let a = SIMD3<Double>(Double(Int(r[0] >> 5) << 2 | Int((r[3] >> 4) & 0x3)),
                              Double(Int(r[1] >> 5) << 2 | Int((r[3] >> 2) & 0x3)),
                              Double(Int(r[2] >> 5) << 2 | Int(r[3] & 0x3)))
        func gyroFT(_ c: Double, _ sign: Double) -> Double { c == 0 ? 0 : sign * 25 * 131 * pow(1.046, c - 1) }
        func accelFT(_ c: Double) -> Double { c == 0 ? 0 : 4096 * 0.34 * pow(0.92 / 0.34, (c - 1) / 30) }
        return (SIMD3(accelFT(a.x), accelFT(a.y), accelFT(a.z)),
                SIMD3(gyroFT(g.x, 1), gyroFT(g.y, -1), gyroFT(g.z, 1)))
    }

    /// Compares the self-test responses (counts at ±8 g / ±250 °/s) with the trim.
    public static func evaluate(trimRegisters: [UInt8], accelOff: SIMD3<Double>, accelOn: SIMD3<Double>,
                                gyroOff: SIMD3<Double>, gyroOn: SIMD3<Double>) -> MPU6050SelfTestReport {
        let ft = factoryTrim(trimRegisters)
        let aR = accelOn - accelOff, gR = gyroOn - gyroOff
        var axes: [MPU6050SelfTestReport.Axis] = []
        func add(_ name: String, _ trim: Double, _ response: Double) {
            let dev = trim == 0 ? Double.nan : (response - trim) / trim
            axes.append(.init(name: name, factoryTrim: trim, response: response, deviation: dev,
                              passed: trim != 0 && abs(dev) <= passBand))
        }
        for (i, n) in ["x", "y", "z"].enumerated() { add("accel " + n, ft.accel[i], aR[i]) }
        for (i, n) in ["x", "y", "z"].enumerated() { add("gyro " + n, ft.gyro[i], gR[i]) }
        return MPU6050SelfTestReport(axes: axes)
    }
}

extension MPU6050 {
    /// Runs the factory self-test: at ±250 °/s and ±8 g, averages `samples`
    /// bursts with self-test off, then on (GYRO_CONFIG = 0xE0, ACCEL_CONFIG =
    /// 0xF0), waiting `settleMilliseconds` after each switch and one sample
    /// period between bursts (all on the clock), reads the trim registers and
    /// restores the configured ranges. Keep the board still. Only genuine
    /// parts: clones use another scheme.
    public mutating func runSelfTest(samples: Int = 10, settleMilliseconds: Double = 50) throws(DriverError) -> MPU6050SelfTestReport {
        guard variant.isGenuine else {
            throw .unsupportedConfiguration(chip: .mpu6050, reason: "self-test is only defined for a genuine MPU-6050; this is \(variant.part), whose self-test registers and formula differ")
        }
        precondition(samples > 0)
        let period = 1e3 / configuration.achievedSampleRateHz
        func average(gyro: UInt8, accel: UInt8) throws(DriverError) -> (SIMD3<Double>, SIMD3<Double>) {
            let a = address, b = bus
            try onBus { () throws(I2CError) in
                try b.writeRegister(a, MPU6050Register.gyroConfig.rawValue, gyro)
                try b.writeRegister(a, MPU6050Register.accelConfig.rawValue, accel)
            }
            clock.sleep(milliseconds: settleMilliseconds)
            var sa = SIMD3<Double>(), sg = SIMD3<Double>()
            for i in 0..<samples {
                if i > 0 { clock.sleep(milliseconds: period) }
                let r = try readRaw()
                sa += SIMD3(Double(r.accel.x), Double(r.accel.y), Double(r.accel.z))
                sg += SIMD3(Double(r.gyro.x), Double(r.gyro.y), Double(r.gyro.z))
            }
            return (sa / Double(samples), sg / Double(samples))
        }
        let (aOff, gOff) = try average(gyro: MPU6050SelfTest.gyroRange.registerValue,
                                       accel: MPU6050SelfTest.accelRange.registerValue)
        let (aOn, gOn) = try average(gyro: MPU6050SelfTest.gyroRange.registerValue | MPU6050Bits.selfTestAllAxes,
                                     accel: MPU6050SelfTest.accelRange.registerValue | MPU6050Bits.selfTestAllAxes)
        let c = configuration, a = address, b = bus
        let trim = try onBus { () throws(I2CError) in
            let t = try b.readRegisters(a, MPU6050Register.selfTestX.rawValue, count: 4)
            try b.writeRegister(a, MPU6050Register.gyroConfig.rawValue, c.gyroRange.registerValue)
            try b.writeRegister(a, MPU6050Register.accelConfig.rawValue, c.accelRange.registerValue)
            return t
        }
        return MPU6050SelfTest.evaluate(trimRegisters: trim, accelOff: aOff, accelOn: aOn, gyroOff: gOff, gyroOn: gOn)
    }
}
