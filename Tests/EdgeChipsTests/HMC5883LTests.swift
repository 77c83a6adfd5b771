import EdgeBus
import Testing
@testable import EdgeChips

/// HMC5883L registers re-declared from Honeywell's data sheet (Form #900405
/// Rev E, register list), independently of the driver.
enum HMC {
    static let address: UInt8 = 0x1E
    static let CRA: UInt8 = 0x00
    static let CRB: UInt8 = 0x01
    static let MODE: UInt8 = 0x02
    static let DATA_X_MSB: UInt8 = 0x03
    static let STATUS: UInt8 = 0x09
    static let ID_A: UInt8 = 0x0A
}

@Suite struct HMC5883LTests {
    let a = HMC.address

    @Test func startIsTransactionExact() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: HMC.ID_A, reply: [0x48, 0x34, 0x33]),   // "H43", one burst
            .write(a, [HMC.CRA, 0b0_11_110_00]),                      // 8 averaged, 75 Hz, normal
            .write(a, [HMC.CRB, 0b001_00000]),                        // ±1.3 G, 1090 LSB/G
            .write(a, [HMC.MODE, 0x00]),                              // continuous
        ])
        var hmc = HMC5883L(bus: bus, clock: VirtualClock())
        try hmc.start()
        #expect(bus.verify() == [])
    }

    @Test func readsStatusThenAllSixBytesAndReordersXZY() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: HMC.STATUS, reply: [0x01]),
            .read(a, register: HMC.DATA_X_MSB, reply: [0x04, 0x42, 0xFB, 0xBE, 0x02, 0x21]),   // X 1090, Z -1090, Y 545
            .read(a, register: HMC.STATUS, reply: [0x00]),
        ])
        var hmc = HMC5883L(bus: bus, clock: VirtualClock(startNanoseconds: 9))
        #expect(try hmc.readField() == .field(SIMD3(100, 50, -100)), "1090 counts = 1 G = 100 µT at the power-on gain")
        #expect(try hmc.readField() == .notReady, "no data registers touched without RDY")
        #expect(bus.verify() == [])
    }

    @Test func aLockWithoutRDYIsReleasedByReadingTheSixBytes() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: HMC.STATUS, reply: [0x02]),                         // LOCK, no RDY
            .read(a, register: HMC.DATA_X_MSB, reply: [0, 0, 0, 0, 0, 0]),          // released, values dropped
        ])
        var hmc = HMC5883L(bus: bus, clock: VirtualClock())
        #expect(try hmc.readField() == .notReady)
        #expect(hmc.lockReleaseCount == 1)
        #expect(bus.verify() == [])
    }

    @Test func wrongIdentityIsWrongChip() {
        let bus = ScriptedI2CBus([.read(a, register: HMC.ID_A, reply: [0x48, 0x34, 0x00])])
        let hmc = HMC5883L(bus: bus, clock: VirtualClock())
        #expect(throws: DriverError.wrongChip(expected: .hmc5883l, address: 0x1E, register: 0x0C, found: 0x00, identifiedAs: nil)) {
            try hmc.identify()
        }
    }

    @Test func aNackIsABusErrorWithErrno() {
        let bus = ScriptedI2CBus([.fail(a, [HMC.ID_A], readCount: 3, errno: 121)])
        let hmc = HMC5883L(bus: bus, clock: VirtualClock())
        do {
            try hmc.identify()
            Issue.record("expected a bus error")
        } catch {
            #expect(error.i2cError?.errno == 121)
            #expect(error.i2cError?.address == 0x1E)
        }
    }

    @Test func lostConfigurationIsAMismatch() throws {
        let bus = ScriptedI2CBus([
            .write(a, [HMC.CRA, 0x78]), .write(a, [HMC.CRB, 0x20]), .write(a, [HMC.MODE, 0x00]),
            .read(a, register: HMC.CRA, reply: [0x10]),          // a brown-out: CRA back at its power-on value
        ])
        var hmc = HMC5883L(bus: bus, clock: VirtualClock())
        try hmc.configure(.default)
        #expect(throws: DriverError.configurationMismatch(chip: .hmc5883l, address: 0x1E, register: 0x00,
                                                          expected: 0x78, mask: 0xFF, found: 0x10)) {
            try hmc.verifyConfiguration()
        }
        #expect(bus.verify() == [])
    }
}
