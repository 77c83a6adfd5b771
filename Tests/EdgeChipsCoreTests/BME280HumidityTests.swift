import Testing
@testable import EdgeChipsCore

/// BME280 humidity (Bosch BST-BME280-DS002: Table 16 trimming layout, §4.2.3
/// integer formula). The reference values come from the data sheet's
/// double-precision formula (§8.1) computed by an independent Python
/// transcription, Tests/Fixtures/bme280/humidity-vectors.py (no worked
/// humidity example is published in the data sheet).
@Suite struct BME280HumidityTests {
    /// The trimming bytes the Python script prints for its two calibrations,
    /// written out: 0xA1, then 0xE1..0xE7.
    static let registerBytes: [(a1: UInt8, e: [UInt8])] = [
        (0x4B, [0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E]),
        (0x00, [0x7C, 0x01, 0x0C, 0xF9, 0xEC, 0xFE, 0xFE]),
    ]
    static let calibrations = [
        BME280HumidityCalibration(h1: 75, h2: 362, h3: 0, h4: 313, h5: 50, h6: 30),
        BME280HumidityCalibration(h1: 0, h2: 380, h3: 12, h4: -100, h5: -18, h6: -2),
    ]
    /// (calibration, adc_H, t_fine, %RH by the double formula).
    static let vectors: [(Int, Int32, Int32, Double)] = [
        (0, 20000, -51200, 1.8670816437828095),
        (0, 26000, -51200, 32.95641092629292),
        (0, 30000, -51200, 53.52745288901574),
        (0, 34000, -51200, 73.97435280457809),
        (0, 40000, -51200, 100.0),
        (0, 20000, 0, 1.0793098706812323),
        (0, 26000, 0, 32.9271488889546),
        (0, 30000, 0, 53.9962379507587),
        (0, 34000, 0, 74.93508411892694),
        (0, 40000, 0, 100.0),
        (0, 20000, 128000, 0.0),
        (0, 26000, 128000, 32.68277138602965),
        (0, 30000, 128000, 54.99781313592988),
        (0, 34000, 128000, 77.16671965589266),
        (0, 40000, 128000, 100.0),
        (0, 20000, 204800, 0.0),
        (0, 26000, 204800, 32.41871766300504),
        (0, 30000, 204800, 55.48198930008327),
        (0, 34000, 204800, 78.38915129736552),
        (0, 40000, 204800, 100.0),
        (1, 1000, -51200, 42.24921763030842),
        (1, 4000, -51200, 59.70907510990209),
        (1, 7000, -51200, 77.16893258949575),
        (1, 10000, -51200, 94.62879006908942),
        (1, 1000, 0, 42.51423481158234),
        (1, 4000, 0, 59.948521620261985),
        (1, 7000, 0, 77.38280842894163),
        (1, 10000, 0, 94.81709523762127),
        (1, 1000, 128000, 43.16729783725748),
        (1, 4000, 128000, 60.53553166951531),
        (1, 7000, 128000, 77.90376550177314),
        (1, 10000, 128000, 95.27199933403097),
        (1, 1000, 204800, 43.55249844028286),
        (1, 4000, 204800, 60.87964245299382),
        (1, 7000, 204800, 78.20678646570478),
        (1, 10000, 204800, 95.53393047841574),
    ]

    @Test func packedTrimmingWordsParse() throws {
        for (i, r) in Self.registerBytes.enumerated() {
            let c = try BME280HumidityCalibration(h1: r.a1, e1toE7: r.e)
            #expect(c == Self.calibrations[i], "calibration \(i): \(c)")
        }
    }

    @Test func badTrimmingIsATypedError() {
        #expect(throws: DecodeError.self) { try BME280HumidityCalibration(h1: 0, e1toE7: [UInt8](repeating: 0xFF, count: 7)) }
        #expect(throws: DecodeError.self) { try BME280HumidityCalibration(h1: 75, e1toE7: [0, 0, 0, 0x13, 0x29, 0x03, 0x1E]) }
        #expect(throws: DecodeError.self) { try BME280HumidityCalibration(h1: 75, e1toE7: [0x6A, 0x01]) }
    }

    /// The integer formula within 0.01 %RH of the double formula (its Q22.10
    /// output has a 1/1024 %RH step; over the whole adc_H/t_fine grid the two
    /// differ by at most 0.0085 %RH), and exactly clamped at 0 and 100 %.
    @Test func integerFormulaMatchesTheDoubleFormula() {
        for (i, adc, tFine, expected) in Self.vectors {
            let h = BME280HumidityCompensation.humidityPercent(adcH: adc, tFine: tFine, Self.calibrations[i])
            if expected == 100 || expected == 0 {
                #expect(h == expected, "cal \(i) adc_H \(adc) t_fine \(tFine)")
            } else {
                expectClose(h, expected, 0.01, "cal \(i) adc_H \(adc) t_fine \(tFine)")
            }
        }
    }

    @Test func skippedHumidityIsAnErrorUnlessConfiguredOff() throws {
        let raw = BME280RawSample(burst: WorkedExample.dataBytes + [0x80, 0x00])
        #expect(raw.adcH == 0x8000)
        #expect(throws: DecodeError.skippedMeasurement(chip: .bme280, channel: "humidity")) {
            try BME280Compensation.compensate(raw, WorkedExample.calibration, Self.calibrations[0])
        }
        let off = try BME280Compensation.compensate(raw, WorkedExample.calibration, Self.calibrations[0], humidityEnabled: false)
        #expect(off.relativeHumidityPercent == nil)
        // P and T are the BMP280's worked example (DS: 25.08 °C).
        #expect(off.barometer.temperatureCelsius == 25.08)
    }

    @Test func ctrlHumIsWrittenBeforeCtrlMeasAndOwnsOnlyItsBits() {
        let c = BME280Configuration(barometer: .default, humidityOversampling: .x4)
        let rows = c.registerTable.settings
        #expect(rows.first?.register == 0xF2)
        #expect(rows.first?.set == 0b011 && rows.first?.clear == 0b100, "osrs_h ×4 = 011; bits 7..3 untouched")
        #expect(rows.dropFirst().contains { $0.register == 0xF4 }, "a ctrl_meas write follows: it makes ctrl_hum take effect")
        // DS §9.1 (appendix B) measurement time with humidity: ×2 T, ×16 P, ×4 H
        let t = c.measurementTime
        expectClose(t.typical, 1 + 2 * 2 + (2 * 16 + 0.5) + (2 * 4 + 0.5), 1e-12)
        expectClose(t.maximum, 1.25 + 2.3 * 2 + (2.3 * 16 + 0.575) + (2.3 * 4 + 0.575), 1e-12)
        // BME280 t_sb codes 110/111: 10 and 20 ms (DS Table 27).
        var b = BMP280Configuration.default
        b.standby = BMP280Standby(rawValue: 6)!
        #expect(BME280Configuration(barometer: b).standbyMilliseconds == 10)
        b.standby = BMP280Standby(rawValue: 7)!
        #expect(BME280Configuration(barometer: b).standbyMilliseconds == 20)
    }
}
