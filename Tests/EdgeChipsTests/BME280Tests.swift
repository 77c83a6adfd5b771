import EdgeBus
import Testing
@testable import EdgeChips

/// BME280 registers re-declared from Bosch BST-BME280-DS002 §5.3, independently of the driver.
enum BME {
    static let calibH1: UInt8 = 0xA1
    static let calibE1: UInt8 = 0xE1
    static let ctrl_hum: UInt8 = 0xF2
}

@Suite struct BME280Tests {
    let a: UInt8 = 0x77
    /// dig_H1..H6 = 75, 362, 0, 313, 50, 30 as stored (see Tests/Fixtures/bme280/humidity-vectors.py).
    static let h1: UInt8 = 0x4B
    static let e1toE7: [UInt8] = [0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E]

    @Test func startIsTransactionExactAndCtrlHumComesBeforeCtrlMeas() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: BMP.id, reply: [0x60]),
            .write(a, [BMP.reset, 0xB6]),
            .read(a, register: BMP.status, reply: [0x00]),
            .read(a, register: BMP.calib00, reply: WorkedExample.calibrationBytes),
            .read(a, register: BME.calibH1, reply: [Self.h1]),
            .read(a, register: BME.calibE1, reply: Self.e1toE7),
            .read(a, register: BME.ctrl_hum, reply: [0xF8]),       // reserved bits set: kept
            .write(a, [BME.ctrl_hum, 0xF8 | 0b001]),               // osrs_h ×1
            .write(a, [BMP.ctrl_meas, 0b010_101_00]),              // the write that makes ctrl_hum take effect
            .write(a, [BMP.config, 0b000_100_00]),
            .write(a, [BMP.ctrl_meas, 0b010_101_11]),
            // one 8-byte burst: P, T (the BMP280 worked example), humidity adc_H 30000 = 0x7530
            .read(a, register: BMP.press_msb, reply: WorkedExample.dataBytes + [0x75, 0x30]),
        ])
        var bme = BME280(bus: bus, address: a, clock: VirtualClock())
        let v = try bme.start()
        #expect(v.chipID == 0x60)
        let s = try bme.read()
        #expect(s.barometer.temperatureCelsius == 25.08)
        #expect(s.barometer.pressurePascals == 100653.25390625)
        // The data sheet's double formula gives 55.00071 %RH for adc_H 30000 at t_fine 128422 (the Python script).
        let h = try #require(s.relativeHumidityPercent)
        #expect(abs(h - 55.000712804837015) < 0.01, "\(h)")
        #expect(bus.verify() == [])
    }

    @Test func aBMP280IsWrongChipForTheBME280Driver() {
        let bus = ScriptedI2CBus([.read(a, register: BMP.id, reply: [0x58])])
        var bme = BME280(bus: bus, address: a, clock: VirtualClock())
        #expect(throws: DriverError.wrongChip(expected: .bme280, address: a, register: BMP.id, found: 0x58,
                                              identifiedAs: "BMP280 (no humidity sensor: use chip bmp280)")) {
            try bme.identify()
        }
        let none = ScriptedI2CBus([.read(a, register: BMP.id, reply: [0x00])])
        var other = BME280(bus: none, address: a, clock: VirtualClock())
        #expect(throws: DriverError.wrongChip(expected: .bme280, address: a, register: BMP.id, found: 0x00, identifiedAs: nil)) {
            try other.identify()
        }
    }

    @Test func aNackKeepsErrno() {
        let bus = ScriptedI2CBus([.fail(a, [BMP.id], readCount: 1, errno: 121)])
        var bme = BME280(bus: bus, address: a, clock: VirtualClock())
        do { try bme.identify(); Issue.record("expected a bus error") } catch {
            #expect(error.i2cError?.errno == 121)
        }
    }

    @Test func lostCtrlHumIsAMismatch() throws {
        let bus = ScriptedI2CBus([
            .read(a, register: BME.ctrl_hum, reply: [0x00]),
            .write(a, [BME.ctrl_hum, 0x03]),                       // ×4
            .write(a, [BMP.ctrl_meas, 0b010_101_00]), .write(a, [BMP.config, 0b000_100_00]),
            .write(a, [BMP.ctrl_meas, 0b010_101_11]),
            .read(a, register: BME.ctrl_hum, reply: [0x00]),       // reset: humidity skipped again
        ])
        var bme = BME280(bus: bus, address: a, clock: VirtualClock())
        try bme.configure(BME280Configuration(humidityOversampling: .x4))
        #expect(throws: DriverError.configurationMismatch(chip: .bme280, address: a, register: 0xF2, expected: 0x03,
                                                          mask: 0x07, found: 0x00)) {
            try bme.verifyConfiguration()
        }
        #expect(bus.verify() == [])
    }
}
