import EdgeBus
import Testing
@testable import EdgeChips

@Suite struct QMC5883LTests {
    let a = QMC.address

    @Test func startIsTransactionExact() throws {
        let clock = VirtualClock()
        let bus = TimedBus([
            .read(a, register: QMC.CHIP_ID, reply: [0xFF]),
            .write(a, [QMC.CTRL2, 0x80]),                 // soft reset
            .write(a, [QMC.SET_RESET, 0x01]),             // SET/RESET period
            .write(a, [QMC.CTRL1, 0b00_01_10_01]),        // OSR 512, ±8 G, 100 Hz, continuous
        ], clock: clock)
        var qmc = QMC5883L(bus: bus, clock: clock)
        try qmc.start()
        #expect(bus.times[2] - bus.times[1] == 350_000)   // POR time after the soft reset
        #expect(bus.verify() == [])
    }

    @Test func zeroFieldCodesAreWrittenAsClearedBits() throws {
        // OSR 512 (00), ±2 G (00), 10 Hz (00), standby (00): every bit must end up 0,
        // even over a register that read all ones (the PX4 #14384 bug).
        let c = QMC5883LConfiguration(mode: .standby, outputRate: .hz10, range: .gauss2, oversampling: .x512)
        #expect(c.control1Value == 0x00)
        let row = try #require(c.registerTable.settings.first { $0.register == QMC.CTRL1 })
        #expect(row.applied(to: 0xFF) == 0x00)
        #expect(!row.isSatisfied(by: 0xC0))
        let bus = ScriptedI2CBus([.write(a, [QMC.SET_RESET, 0x01]), .write(a, [QMC.CTRL1, 0x00])])
        var qmc = QMC5883L(bus: bus, clock: VirtualClock())
        try qmc.configure(c)
        #expect(bus.verify() == [])
        // and a mixed one: OSR 64 (11), ±2 G (00), 200 Hz (11), continuous (01)
        #expect(QMC5883LConfiguration(mode: .continuous, outputRate: .hz200, range: .gauss2, oversampling: .x64)
            .control1Value == 0b11_00_11_01)
    }

    @Test func readsStatusThenTheFullDataBurstAndDecodes() throws {
        let clock = VirtualClock(startNanoseconds: 42)
        let bus = ScriptedI2CBus([
            .read(a, register: QMC.STATUS, reply: [0x01]),
            .read(a, register: QMC.DATA, reply: le(3000) + le(-1500) + le(-6000)),
        ])
        var qmc = QMC5883L(bus: bus, clock: clock)   // default range ±8 G: 3000 LSB/G
        let r = try qmc.read()
        let s = try #require(r.sample)
        expectClose(s.magneticField.x, 100, 1e-9, "3000 counts at ±8 G = 1 G = 100 µT")
        expectClose(s.magneticField.y, -50, 1e-9)
        expectClose(s.magneticField.z, -200, 1e-9)
        #expect(s.captureNanoseconds == 42)
        #expect(!s.dataSkipped)
        #expect(bus.verify() == [])
    }

    @Test func overflowIsNotANumber() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: QMC.STATUS, reply: [0x03]),       // DRDY + OVL
            .read(a, register: QMC.DATA, reply: le(32767) + le(0) + le(0)),
        ])
        var qmc = QMC5883L(bus: bus, clock: VirtualClock())
        let r = try qmc.read()
        #expect(r == .overflow(captureNanoseconds: 0))
        #expect(r.sample == nil)
        #expect(qmc.overflowCount == 1)
        #expect(bus.verify() == [])
    }

    @Test func dataOverrunIsCountedAndTheSampleKept() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: QMC.STATUS, reply: [0x05]),       // DRDY + DOR
            .read(a, register: QMC.DATA, reply: le(12000) + le(0) + le(0)),
            .read(a, register: QMC.STATUS, reply: [0x01]),
            .read(a, register: QMC.DATA, reply: le(0) + le(0) + le(0)),
        ])
        var qmc = QMC5883L(bus: bus, clock: VirtualClock())
        let first = try #require(try qmc.read().sample)
        #expect(first.dataSkipped)
        _ = try qmc.read()
        #expect(qmc.dataOverrunCount == 1)
        #expect(bus.verify() == [])
    }

    @Test func notReadyTouchesNoDataRegister() throws {
        // Reading any data register would lock the outputs until 0x05 is read:
        // without DRDY the driver must not start a data read at all.
        let bus = ScriptedI2CBus([.read(a, register: QMC.STATUS, reply: [0x00])])
        var qmc = QMC5883L(bus: bus, clock: VirtualClock())
        #expect(try qmc.read() == .notReady)
        #expect(bus.verify() == [])
    }

    @Test func rangeSensitivity() {
        expectClose(QMC5883LRange.gauss2.microteslaPerLSB * 12000, 100, 1e-9)
        expectClose(QMC5883LRange.gauss8.microteslaPerLSB * 3000, 100, 1e-9)
    }

    @Test func wrongChipAndRelativeTemperature() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: QMC.CHIP_ID, reply: [0x00]),
            .read(a, register: QMC.TOUT, reply: le(250)),
        ])
        let qmc = QMC5883L(bus: bus, clock: VirtualClock())
        #expect(throws: DriverError.self) { try qmc.identify() }
        let t = try qmc.readRelativeTemperature()
        expectClose(t.celsiusChange(since: QMC5883LRelativeTemperature(counts: 50)), 2.0, 1e-12)
        #expect(bus.verify() == [])
    }
}

@Suite struct IdentifyChipTests {
    func identify(_ address: UInt8, _ script: [ScriptedI2CBus.Transaction]) throws -> ChipIdentification {
        let bus = ScriptedI2CBus(script)
        let id = try identifyChip(on: bus, at: address)
        #expect(bus.verify() == [])
        return id
    }

    @Test func supportedChips() throws {
        #expect(try identify(0x68, [.read(0x68, register: MPU.WHO_AM_I, reply: [0x68])]).chip == .mpu6050)
        #expect(try identify(0x77, [.read(0x77, register: BMP.id, reply: [0x58])]).chip == .bmp280)
        #expect(try identify(0x0D, [.read(0x0D, register: QMC.CHIP_ID, reply: [0xFF])]).chip == .qmc5883l)
    }

    @Test func clonesCarryAWarning() throws {
        let id = try identify(0x69, [.read(0x69, register: MPU.WHO_AM_I, reply: [0x98])])
        guard case .supported(.mpu6050, let variant, let warning, _) = id else { Issue.record("\(id)"); return }
        #expect(variant.contains("ICM-20689"))
        #expect(warning != nil)
        let bme = try identify(0x76, [.read(0x76, register: BMP.id, reply: [0x60])])
        guard case .supported(.bme280, "BME280", _, _) = bme else { Issue.record("\(bme)"); return }
    }

    @Test func lookAlikesAreNamed() throws {
        // The HMC5883L is supported now (issue 17); a wrong third byte is no HMC5883L.
        let hmc = try identify(0x1E, [.read(0x1E, register: 0x0A, reply: [0x48, 0x34, 0x33])])
        guard case .supported(.hmc5883l, "HMC5883L", nil, _) = hmc else { Issue.record("\(hmc)"); return }
        let notHMC = try identify(0x1E, [.read(0x1E, register: 0x0A, reply: [0x48, 0x34, 0x00])])
        guard case .unknown = notHMC else { Issue.record("\(notHMC)"); return }
        let p = try identify(0x2C, [.read(0x2C, register: 0x00, reply: [0x80])])
        guard case .unsupported("QMC5883P", _, _) = p else { Issue.record("\(p)"); return }
        let bmp180 = try identify(0x77, [.read(0x77, register: BMP.id, reply: [0x55])])
        guard case .unsupported("BMP180/BMP085", _, _) = bmp180 else { Issue.record("\(bmp180)"); return }
        let bmp388 = try identify(0x77, [.read(0x77, register: BMP.id, reply: [0x00]),
                                         .read(0x77, register: 0x00, reply: [0x50])])
        guard case .unsupported("BMP388", _, _) = bmp388 else { Issue.record("\(bmp388)"); return }
    }

    @Test func unknownReportsTheBytesSeen() throws {
        let id = try identify(0x68, [.read(0x68, register: MPU.WHO_AM_I, reply: [0xFF])])
        #expect(id == .unknown(registers: [RegisterValue(register: 0x75, value: 0xFF)]))
        #expect(id.description.contains("0x75 = 0xff"))
    }

    @Test func noAcknowledgeIsThrown() {
        let bus = ScriptedI2CBus([.fail(0x68, [MPU.WHO_AM_I], readCount: 1, errno: 121)])
        #expect(throws: I2CError.self) { try identifyChip(on: bus, at: 0x68) }
    }
}
