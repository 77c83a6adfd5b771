import EdgeBus
import Testing
@testable import EdgeChips

/// The data sheet's worked example (printed in earlier revisions of Bosch BST-BMP280-DS001, §3.12).
enum WorkedExample {
    static let calibration = BMP280Calibration(t1: 27504, t2: 26435, t3: -1000, p1: 36477, p2: -10685, p3: 3024,
                                               p4: 2855, p5: 140, p6: -7, p7: 15500, p8: -14600, p9: 6000)
    static let adcT: Int32 = 519888
    static let adcP: Int32 = 415148
    /// The calibration block as the chip stores it (little-endian words), written out by hand.
    static let calibrationBytes: [UInt8] = [
        0x70, 0x6B, // T1 27504 = 0x6B70
        0x43, 0x67, // T2 26435 = 0x6743
        0x18, 0xFC, // T3 -1000 = 0xFC18
        0x7D, 0x8E, // P1 36477 = 0x8E7D
        0x43, 0xD6, // P2 -10685 = 0xD643
        0xD0, 0x0B, // P3 3024 = 0x0BD0
        0x27, 0x0B, // P4 2855 = 0x0B27
        0x8C, 0x00, // P5 140
        0xF9, 0xFF, // P6 -7
        0x8C, 0x3C, // P7 15500 = 0x3C8C
        0xF8, 0xC6, // P8 -14600 = 0xC6F8
        0x70, 0x17, // P9 6000 = 0x1770
    ]
    /// press_msb..temp_xlsb: adc_P 415148 = 0x655AC, adc_T 519888 = 0x7EED0.
    static let dataBytes: [UInt8] = [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00]
}


@Suite struct BMP280DriverTests {
    let a = BMP.address

    @Test func startIsTransactionExact() throws {
        let clock = VirtualClock()
        let bus = ScriptedI2CBus([
            .read(a, register: BMP.id, reply: [0x58]),
            .write(a, [BMP.reset, 0xB6]),
            .read(a, register: BMP.status, reply: [0x01]),   // im_update still set
            .read(a, register: BMP.status, reply: [0x00]),
            .read(a, register: BMP.calib00, reply: WorkedExample.calibrationBytes),
            .write(a, [BMP.ctrl_meas, 0b010_101_00]),        // osrs_t ×2, osrs_p ×16, sleep
            .write(a, [BMP.config, 0b000_100_00]),           // t_sb 0.5 ms, filter 16
            .write(a, [BMP.ctrl_meas, 0b010_101_11]),        // mode last: normal
            .read(a, register: BMP.press_msb, reply: WorkedExample.dataBytes),
        ])
        var bmp = BMP280(bus: bus, address: a, clock: clock)
        let v = try bmp.start()
        #expect(v.part == "BMP280")
        #expect(bmp.calibration == WorkedExample.calibration)
        #expect(clock.nowNanoseconds == 1_000_000)   // two 0.5 ms polls
        let s = try bmp.read()
        #expect(s.temperatureCelsius == 25.08)
        #expect(s.pressurePascals == 100653.25390625)
        #expect(bus.verify() == [])
    }

    @Test func imUpdateThatNeverClearsTimesOutAtTheDataSheetBound() {
        let clock = VirtualClock(startNanoseconds: 7)
        let bus = ScriptedI2CBus([.write(a, [BMP.reset, 0xB6])]
            + Array(repeating: .read(a, register: BMP.status, reply: [0x01]), count: 4))
        var bmp = BMP280(bus: bus, address: a, clock: clock)
        do {
            try bmp.softReset()
            Issue.record("expected a timeout")
        } catch {
            guard case .timeout(.bmp280, a, _, let ms) = error else { Issue.record("\(error)"); return }
            #expect(ms == 2)
            #expect(error.description.contains("im_update"))
        }
        #expect(clock.nowNanoseconds - 7 == 2_000_000)   // t_startup = 2 ms, not a hang
        #expect(bus.verify() == [])
    }

    @Test func forcedModeWaitsTMaxThenChecks() throws {
        let clock = VirtualClock()
        let cfg = BMP280Configuration(mode: .forced, pressureOversampling: .x1, temperatureOversampling: .x1,
                                      filter: .off, standby: .ms0_5)
        let bus = TimedBus([
            .write(a, [BMP.ctrl_meas, 0b001_001_00]),
            .write(a, [BMP.config, 0x00]),
            .write(a, [BMP.ctrl_meas, 0b001_001_01]),   // forced
            .read(a, register: BMP.status, reply: [0x00]),
            .read(a, register: BMP.press_msb, reply: WorkedExample.dataBytes),
            .write(a, [BMP.ctrl_meas, 0b001_001_01]),
            .read(a, register: BMP.status, reply: [0x08]),   // still measuring after t_max
        ], clock: clock)
        var bmp = BMP280(bus: bus, address: a, clock: clock)
        try bmp.configure(cfg)
        // calibration as if read earlier
        let c = try BMP280Calibration(bytes: WorkedExample.calibrationBytes)
        bmp.setCalibration(c)
        let s = try bmp.measure()
        #expect(s.pressurePascals == 100653.25390625)
        // t_max(×1, ×1) = 1.25 + 2.3 + 2.3 + 0.575 = 6.425 ms between the forced write and the status read
        #expect(bus.times[3] - bus.times[2] == 6_425_000)
        #expect(throws: DriverError.self) { try bmp.measure() }
        #expect(bus.verify() == [])
    }

    @Test func bme280IsAcceptedButRejectsLongStandby() throws {
        let bus = ScriptedI2CBus([.read(a, register: BMP.id, reply: [0x60])])
        var bmp = BMP280(bus: bus, address: a, clock: VirtualClock())
        let v = try bmp.identify()
        #expect(v.isBME280)
        #expect(v.note?.contains("humidity") == true)
        #expect(throws: DriverError.self) { try bmp.configure(BMP280Configuration(standby: .ms4000)) }
        #expect(bus.verify() == [])
    }

    @Test func bmp180IsReportedAsADifferentChip() {
        let bus = ScriptedI2CBus([.read(0x77, register: BMP.id, reply: [0x55])])
        var bmp = BMP280(bus: bus, address: 0x77, clock: VirtualClock())
        #expect(throws: DriverError.wrongChip(expected: .bmp280, address: 0x77, register: BMP.id, found: 0x55,
                                              identifiedAs: "BMP180/BMP085")) { try bmp.identify() }
    }
}
