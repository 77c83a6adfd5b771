import EdgeBus
import Testing
@testable import EdgeChips

@Suite struct MPU6050DriverTests {
    typealias T = ScriptedI2CBus.Transaction
    let a = MPU.address

    @Test func identifyResetAndConfigureAreTransactionExact() throws {
        let clock = VirtualClock()
        let bus = TimedBus([
            .read(a, register: MPU.WHO_AM_I, reply: [0x68]),
            .write(a, [MPU.PWR_MGMT_1, 0x80]),          // DEVICE_RESET
            .write(a, [MPU.PWR_MGMT_1, 0x01]),          // wake, PLL X
            .write(a, [MPU.PWR_MGMT_2, 0x00]),
            // configuration table
            .write(a, [MPU.PWR_MGMT_1, 0x01]),
            .write(a, [MPU.PWR_MGMT_2, 0x00]),
            .write(a, [MPU.SMPLRT_DIV, 9]),             // 1 kHz / (1 + 9) = 100 Hz
            .write(a, [MPU.CONFIG, 0x03]),              // DLPF 44 Hz
            .write(a, [MPU.GYRO_CONFIG, 0x18]),         // ±2000 °/s
            .write(a, [MPU.ACCEL_CONFIG, 0x00]),        // ±2 g
            .write(a, [MPU.INT_PIN_CFG, 0x22]),         // latched + bypass
            .write(a, [MPU.INT_ENABLE, 0x01]),          // data ready
            .write(a, [MPU.FIFO_EN, 0x00]),
            .write(a, [MPU.USER_CTRL, 0x00]),
        ], clock: clock)
        var mpu = MPU6050(bus: bus, address: a, clock: clock)
        let config = MPU6050Configuration(gyroRange: .dps2000, accelRange: .g2, dlpf: .hz44, sampleRateHz: 100,
                                          clockSource: .pllX, fifo: false, dataReadyInterrupt: true, i2cBypass: true)
        let v = try mpu.start(config)
        #expect(v.isGenuine)
        #expect(v.warning == nil)
        #expect(bus.verify() == [])
        // The wake write comes exactly 100 ms after the reset write: a fixed sleep, no polling.
        #expect(bus.times[2] - bus.times[1] == 100_000_000)
        #expect(clock.nowNanoseconds == 100_000_000)
        #expect(mpu.configuration.achievedSampleRateHz == 100)
    }

    @Test func cloneIsAcceptedWithAWarningNamingItsTemperatureFormula() throws {
        let bus = ScriptedI2CBus([.read(a, register: MPU.WHO_AM_I, reply: [0x70])])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        let v = try mpu.identify()
        #expect(!v.isGenuine)
        #expect(v.warning?.contains("MPU-6500") == true)
        #expect(v.warning?.contains("333.87") == true)
        #expect(bus.verify() == [])
        // Its temperature formula is the MPU-6500 one: raw 0 → 21 °C.
        expectClose(MPU6050Decoder.temperatureCelsius(raw: 0, variant: v), 21.0, 1e-12)
    }

    @Test(arguments: [UInt8(0x00), 0xFF, 0x42])
    func notADeviceIsWrongChip(_ who: UInt8) {
        let bus = ScriptedI2CBus([.read(a, register: MPU.WHO_AM_I, reply: [who])])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        #expect(throws: DriverError.wrongChip(expected: .mpu6050, address: a, register: MPU.WHO_AM_I,
                                              found: who, identifiedAs: nil)) { try mpu.identify() }
        #expect(bus.verify() == [])
    }

    @Test func busErrorKeepsErrnoAndAdvice() {
        let bus = ScriptedI2CBus([.fail(a, [MPU.WHO_AM_I], readCount: 1, errno: 121)])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        do {
            try mpu.identify()
            Issue.record("expected an error")
        } catch {
            #expect(error.i2cError?.errno == 121)
            #expect(error.i2cError?.kind == .noDevice)
            #expect(error.description.contains("nothing answered"))
        }
    }

    @Test func burstReadDecodesToSIUnits() throws {
        let clock = VirtualClock(startNanoseconds: 5_000)
        let bytes = be(100) + be(-200) + be(16384) + be(-521) + be(131) + be(-131) + be(0)
        let bus = ScriptedI2CBus([.read(a, register: MPU.ACCEL_XOUT_H, reply: bytes)])
        let mpu = MPU6050(bus: bus, clock: clock)   // defaults until configure: ±500 °/s, ±4 g
        let raw = try mpu.readRaw()
        #expect(raw.accel == SIMD3(100, -200, 16384))
        #expect(raw.temperature == -521)
        #expect(raw.gyro == SIMD3(131, -131, 0))
        #expect(raw.captureNanoseconds == 5_000)
        #expect(bus.verify() == [])
        let s = MPU6050Decoder.decode(raw, scales: MPU6050Scales(gyroRange: .dps250, accelRange: .g2))
        expectClose(s.acceleration.z, 9.80665, 1e-12, "16384 at ±2 g is 1 g")
        expectClose(s.acceleration.x, 100.0 / 16384 * 9.80665, 1e-12)
        expectClose(s.rotationRate.x, 1.0 * Double.pi / 180, 1e-12, "131 LSB at ±250 °/s is 1 °/s")
        expectClose(s.rotationRate.y, -Double.pi / 180, 1e-12)
        expectClose(s.temperatureCelsius, -521.0 / 340 + 36.53, 1e-12)
        expectClose(s.temperatureCelsius, 35.0, 0.01, "DS: -521 LSB at 35 °C")
    }

    @Test func fifoOverflowResetsAndThenReadsWholeRecords() throws {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let rec1 = be(1) + be(2) + be(3) + be(4) + be(5) + be(6) + be(7)
        let rec2 = be(11) + be(12) + be(13) + be(14) + be(15) + be(16) + be(17)
        let rec3 = be(21) + be(22) + be(23) + be(24) + be(25) + be(26) + be(27)
        let bus = ScriptedI2CBus([
            // configure with FIFO: table, then a FIFO reset
            .write(a, [MPU.PWR_MGMT_1, 0x01]), .write(a, [MPU.PWR_MGMT_2, 0x00]),
            .write(a, [MPU.SMPLRT_DIV, 9]), .write(a, [MPU.CONFIG, 0x03]),
            .write(a, [MPU.GYRO_CONFIG, 0x08]), .write(a, [MPU.ACCEL_CONFIG, 0x08]),
            .write(a, [MPU.INT_PIN_CFG, 0x00]), .write(a, [MPU.INT_ENABLE, 0x10]),
            .write(a, [MPU.FIFO_EN, 0xF8]), .write(a, [MPU.USER_CTRL, 0x40]),
            .write(a, [MPU.USER_CTRL, 0x04]), .write(a, [MPU.USER_CTRL, 0x40]),
            // drain 1: overflow bit set → reset, error
            .read(a, register: MPU.INT_STATUS, reply: [0x10]),
            .read(a, register: MPU.FIFO_COUNTH, reply: [0x04, 0x00]),
            .write(a, [MPU.USER_CTRL, 0x04]), .write(a, [MPU.USER_CTRL, 0x40]),
            // drain 2: three records, read as 28 + 14 bytes from FIFO_R_W
            .read(a, register: MPU.INT_STATUS, reply: [0x01]),
            .read(a, register: MPU.FIFO_COUNTH, reply: [0x00, 42]),
            .read(a, register: MPU.FIFO_R_W, reply: rec1 + rec2),
            .read(a, register: MPU.FIFO_R_W, reply: rec3),
        ])
        var mpu = MPU6050(bus: bus, clock: clock)
        try mpu.configure(MPU6050Configuration(fifo: true))
        #expect(throws: DriverError.self) { try mpu.drainFIFO { _ in Issue.record("no records after overflow") } }
        #expect(mpu.fifoOverflowCount == 1)
        var got: [MPU6050RawSample] = []
        let n = try mpu.drainFIFO { got.append($0) }
        #expect(n == 3)
        #expect(got.map(\.accel.x) == [1, 11, 21])
        #expect(got.map(\.gyro.z) == [7, 17, 27])
        // every record carries the drain's time: the caller stamps each once
        // (readFIFO by the nominal period, the engine's SampleClock by the measured one)
        #expect(got.map(\.captureNanoseconds) == [1_000_000_000, 1_000_000_000, 1_000_000_000])
        #expect(bus.verify() == [])
    }

    @Test func misalignedFIFOCountIsTreatedAsOverflow() {
        let bus = ScriptedI2CBus([
            .read(a, register: MPU.INT_STATUS, reply: [0x00]),
            .read(a, register: MPU.FIFO_COUNTH, reply: [0x00, 15]),
            .write(a, [MPU.USER_CTRL, 0x04]), .write(a, [MPU.USER_CTRL, 0x00]),
        ])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        do {
            try mpu.drainFIFO { _ in }
            Issue.record("expected fifoOverflow")
        } catch {
            guard case .fifoOverflow(_, let count, let reason) = error else { Issue.record("\(error)"); return }
            #expect(count == 15)
            #expect(reason.contains("alignment"))
        }
        #expect(bus.verify() == [])
    }

    @Test func interruptAckAndBypass() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: MPU.INT_STATUS, reply: [0x01]),
            .read(a, register: MPU.USER_CTRL, reply: [0x60]),
            .write(a, [MPU.USER_CTRL, 0x40]),           // I2C_MST_EN cleared, FIFO kept
            .read(a, register: MPU.INT_PIN_CFG, reply: [0x20]),
            .write(a, [MPU.INT_PIN_CFG, 0x22]),         // bypass set, latch kept
        ])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        #expect(try mpu.readInterruptStatus().dataReady)
        try mpu.setI2CBypass(true)
        #expect(bus.verify() == [])
    }

    @Test func verifyConfigurationReportsABrownOut() throws {
        let c = MPU6050Configuration()
        var script: [ScriptedI2CBus.Transaction] = c.registerTable.settings.map { .write(a, [$0.register, $0.set]) }
        // Rows are read back in order until one does not hold: PWR_MGMT_1
        // (the first) is back at its reset value 0x40 (asleep); the rest are
        // not read.
        let rows = c.registerTable.settings
        let bad = try #require(rows.firstIndex { $0.register == MPU.PWR_MGMT_1 })
        script += rows[...bad].map {
            .read(a, register: $0.register, reply: [$0.register == MPU.PWR_MGMT_1 ? 0x40 : $0.set])
        }
        let bus = ScriptedI2CBus(script)
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        try mpu.configure(c)
        #expect(throws: DriverError.configurationMismatch(chip: .mpu6050, address: a, register: MPU.PWR_MGMT_1,
                                                         expected: 0x01, mask: 0xFF, found: 0x40)) {
            try mpu.verifyConfiguration()
        }
        #expect(bus.verify() == [])
    }
}

@Suite struct MPU6050DecodeTests {
    @Test func sensitivitiesFollowTheRangesTable() {
        #expect(MPU6050GyroRange.allCases.map(\.lsbPerDegreePerSecond) == [131, 65.5, 32.8, 16.4])
        #expect(MPU6050AccelRange.allCases.map(\.lsbPerG) == [16384, 8192, 4096, 2048])
        // full scale in counts ≈ 32768
        for r in MPU6050AccelRange.allCases { #expect(Double(r.g) * r.lsbPerG == 32768) }
        expectClose(MPU6050AccelRange.g2.metersPerSecondSquaredPerLSB, 0.000598, 1e-6, "kernel in_accel_scale (rounded)")
    }

    @Test(arguments: [(Int16(0), 36.53), (340, 37.53), (-340, 35.53), (-12420, 0.0)])
    func temperatureFormula(raw: Int16, celsius: Double) {
        expectClose(MPU6050Decoder.temperatureCelsius(raw: raw), celsius, 0.001)
    }

    @Test func sampleRateDivider() {
        #expect(MPU6050Configuration(dlpf: .hz44, sampleRateHz: 100).sampleRateDivider == 9)
        #expect(MPU6050Configuration(dlpf: .hz260, sampleRateHz: 1000).sampleRateDivider == 7)
        let c = MPU6050Configuration(dlpf: .hz44, sampleRateHz: 300)
        #expect(c.sampleRateDivider == 2)
        expectClose(c.achievedSampleRateHz, 1000.0 / 3, 1e-9)
    }
}

@Suite struct MPU6050SelfTestTests {
    @Test func factoryTrimFormulas() {
        // codes: XG 1, YG 1, ZG 2; XA = 0b000<<2 | 0b01 = 1, YA = 0b001<<2|0 = 4, ZA = 0
        let regs: [UInt8] = [0x01, 0x21, 0x02, 0x10]
        let ft = MPU6050SelfTest.factoryTrim(regs)
        expectClose(ft.gyro.x, 3275, 1e-9)
        expectClose(ft.gyro.y, -3275, 1e-9, "Y gyro trim is negative")
        expectClose(ft.gyro.z, 3275 * 1.046, 1e-9)
        expectClose(ft.accel.x, 4096 * 0.34, 1e-9)
        expectClose(ft.accel.y, 1538.40, 0.01)   // 1392.64 · (0.92/0.34)^(3/30)
        #expect(ft.accel.z == 0)
    }

    @Test func passBandIsFourteenPercent() {
        let regs: [UInt8] = [0x01, 0x01, 0x01, 0x15]   // every code 1
        let ftA = 4096 * 0.34, ftG = 3275.0
        let off = SIMD3<Double>(0, 0, 0)
        let good = MPU6050SelfTest.evaluate(trimRegisters: regs, accelOff: off,
                                            accelOn: SIMD3(ftA * 1.13, ftA * 0.87, ftA),
                                            gyroOff: off, gyroOn: SIMD3(ftG, -ftG * 1.1, ftG * 0.9))
        #expect(good.passed)
        let bad = MPU6050SelfTest.evaluate(trimRegisters: regs, accelOff: off,
                                           accelOn: SIMD3(ftA * 1.15, ftA, ftA),
                                           gyroOff: off, gyroOn: SIMD3(ftG, -ftG, ftG))
        #expect(!bad.passed)
        #expect(bad.axes.filter { !$0.passed }.map(\.name) == ["accel x"])
    }
}

@Suite struct MPU6050SelfTestDriverTests {
    let a = MPU.address

    @Test func selfTestSequenceIsTransactionExact() throws {
        let clock = VirtualClock()
        let off = be(0) + be(0) + be(4096) + be(0) + be(0) + be(0) + be(0)
        let on = be(1392) + be(1400) + be(4096 + 1390) + be(0) + be(3275) + be(-3300) + be(3200)
        let bus = ScriptedI2CBus([
            .write(a, [MPU.GYRO_CONFIG, 0x00]), .write(a, [MPU.ACCEL_CONFIG, 0x10]),   // ±250 °/s, ±8 g
            .read(a, register: MPU.ACCEL_XOUT_H, reply: off),
            .write(a, [MPU.GYRO_CONFIG, 0xE0]), .write(a, [MPU.ACCEL_CONFIG, 0xF0]),   // self-test on
            .read(a, register: MPU.ACCEL_XOUT_H, reply: on),
            .read(a, register: MPU.SELF_TEST_X, reply: [0x01, 0x01, 0x01, 0x15]),     // every trim code 1
            .write(a, [MPU.GYRO_CONFIG, 0x08]), .write(a, [MPU.ACCEL_CONFIG, 0x08]),   // back to ±500 °/s, ±4 g
        ])
        var mpu = MPU6050(bus: bus, clock: clock)
        let report = try mpu.runSelfTest(samples: 1, settleMilliseconds: 50)
        #expect(report.passed, "\(report.axes)")
        #expect(report.axes.count == 6)
        #expect(clock.nowNanoseconds == 100_000_000)   // two 50 ms settles on the virtual clock
        #expect(bus.verify() == [])
    }

    @Test func selfTestRefusesClones() throws {
        let bus = ScriptedI2CBus([.read(a, register: MPU.WHO_AM_I, reply: [0x70])])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        try mpu.identify()
        #expect(throws: DriverError.self) { try mpu.runSelfTest() }
        #expect(bus.verify() == [])
    }
}

@Suite struct MPU6050StateTests {
    @Test func resetLeavesTheChipsResetValuesAsTheConfiguration() throws {
        let a = MPU.address
        let bus = ScriptedI2CBus([
            .write(a, [MPU.PWR_MGMT_1, 0x80]), .write(a, [MPU.PWR_MGMT_1, 0x01]), .write(a, [MPU.PWR_MGMT_2, 0x00]),
            // verifyConfiguration after a reset expects the reset values (GYRO_CONFIG etc. 0)
            .read(a, register: MPU.PWR_MGMT_1, reply: [0x01]), .read(a, register: MPU.PWR_MGMT_2, reply: [0x00]),
            .read(a, register: MPU.SMPLRT_DIV, reply: [0x00]), .read(a, register: MPU.CONFIG, reply: [0x00]),
            .read(a, register: MPU.GYRO_CONFIG, reply: [0x00]), .read(a, register: MPU.ACCEL_CONFIG, reply: [0x00]),
            .read(a, register: MPU.INT_PIN_CFG, reply: [0x00]), .read(a, register: MPU.INT_ENABLE, reply: [0x00]),
            .read(a, register: MPU.FIFO_EN, reply: [0x00]), .read(a, register: MPU.USER_CTRL, reply: [0x00]),
        ])
        var mpu = MPU6050(bus: bus, clock: VirtualClock())
        try mpu.reset()
        #expect(mpu.configuration == .afterReset)
        #expect(mpu.scales == MPU6050Scales(gyroRange: .dps250, accelRange: .g2))
        try mpu.verifyConfiguration()
        #expect(bus.verify() == [])
    }
}

@Suite struct MPU6050ReadIfReadyTests {
    @Test func readsStatusAndSampleInOneBurstAndSkipsStaleSamples() throws {
        // INT_STATUS (0x3A) re-declared here: DATA_RDY_INT is bit 0.
        let fresh: [UInt8] = [0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x30, 0, 1, 0, 2, 0, 3]
        let stale: [UInt8] = [0x00] + Array(fresh.dropFirst())
        let bus = ScriptedI2CBus([
            .writeRead(0x68, [0x3A], reply: fresh),
            .writeRead(0x68, [0x3A], reply: stale),
        ])
        let mpu = MPU6050(bus: bus, address: 0x68, clock: VirtualClock())
        let raw = try #require(try mpu.readRawIfReady())
        #expect(raw.accel == SIMD3(16384, 0, 0))
        #expect(raw.temperature == -2000)
        #expect(raw.gyro == SIMD3(1, 2, 3))
        #expect(try mpu.readRawIfReady() == nil)
        #expect(bus.verify().isEmpty)
    }
}
