import Testing
@testable import EdgeChipsCore

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

@Suite struct BMP280CompensationTests {
    let c = WorkedExample.calibration

    @Test func integerTemperatureMatchesTheWorkedExample() {
        let t = BMP280Compensation.temperature(adcT: WorkedExample.adcT, c)
        #expect(t.tFine == 128422)
        #expect(t.centiCelsius == 2508)
    }

    @Test func int64PressureMatchesTheWorkedExample() {
        let q = BMP280Compensation.pressureQ24_8(adcP: WorkedExample.adcP, tFine: 128422, c)
        #expect(q == 25767233)
        #expect(Double(q!) / 256 == 100653.25390625)
    }

    @Test func doubleFormulasMatchTheWorkedExample() throws {
        let t = BMP280Compensation.temperatureDouble(adcT: WorkedExample.adcT, c)
        #expect(t.tFine == 128422)
        expectClose(t.celsius, 25.082478, 5e-7)
        let p = try #require(BMP280Compensation.pressureDouble(adcP: WorkedExample.adcP, tFine: t.tFine, c))
        expectClose(p, 100653.258, 0.001)
    }

    @Test func calibrationBytesParse() throws {
        #expect(try BMP280Calibration(bytes: WorkedExample.calibrationBytes) == c)
        #expect(c.bytes == WorkedExample.calibrationBytes)
    }

    @Test(arguments: [[UInt8](repeating: 0, count: 24), [UInt8](repeating: 0xFF, count: 24)])
    func blankCalibrationIsInvalid(_ bytes: [UInt8]) {
        #expect(throws: DecodeError.self) { try BMP280Calibration(bytes: bytes) }
    }

    @Test func zeroP1IsInvalid() {
        var b = WorkedExample.calibrationBytes
        b[6] = 0; b[7] = 0
        do {
            _ = try BMP280Calibration(bytes: b)
            Issue.record("expected invalidCalibration")
        } catch {
            guard case .invalidCalibration(_, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("dig_P1"))
        }
    }

    @Test func skippedRawValueIsAnErrorNeverAReading() throws {
        let skipped: Int32 = 0x80000
        #expect(throws: DecodeError.skippedMeasurement(chip: .bmp280, channel: "temperature")) {
            try BMP280Compensation.compensate(BMP280RawSample(adcP: WorkedExample.adcP, adcT: skipped), c)
        }
        #expect(throws: DecodeError.skippedMeasurement(chip: .bmp280, channel: "pressure")) {
            try BMP280Compensation.compensate(BMP280RawSample(adcP: skipped, adcT: WorkedExample.adcT), c)
        }
        // pressure configured off: no pressure, temperature still valid
        let s = try BMP280Compensation.compensate(BMP280RawSample(adcP: skipped, adcT: WorkedExample.adcT), c,
                                                  pressureEnabled: false)
        #expect(s.pressurePascals == nil)
        #expect(s.temperatureCelsius == 25.08)
    }

    @Test func burstLayout() {
        let r = BMP280RawSample(burst: WorkedExample.dataBytes)
        #expect(r.adcP == 415148)
        #expect(r.adcT == 519888)
    }

    @Test func extremeInputsDoNotTrap() {
        // Extreme calibration/raw combinations must not trap (Int64 + wrapping products).
        let extreme = BMP280Calibration(t1: 65535, t2: 32767, t3: 32767, p1: 1, p2: 32767, p3: 32767, p4: 32767,
                                        p5: 32767, p6: 32767, p7: 32767, p8: 32767, p9: 32767)
        for adc in [Int32(0), 0xFFFFF] {
            let t = BMP280Compensation.temperature(adcT: adc, extreme)
            _ = BMP280Compensation.pressureQ24_8(adcP: adc, tFine: t.tFine, extreme)
        }
    }

    @Test func measurementTimeFromSettings() {
        func t(_ ot: BMP280Oversampling, _ op: BMP280Oversampling) -> (Double, Double) {
            let m = BMP280Timing.measurementMilliseconds(temperature: ot, pressure: op)
            return (m.typical, m.maximum)
        }
        // DS Table 13: ultra low power 5.5 / 6.4, standard 11.5 / 13.3, ultra high resolution 37.5 / 43.2 ms
        expectClose(t(.x1, .x1).0, 5.5, 1e-9); expectClose(t(.x1, .x1).1, 6.4, 0.03)
        expectClose(t(.x1, .x4).0, 11.5, 1e-9); expectClose(t(.x1, .x4).1, 13.3, 0.03)
        expectClose(t(.x2, .x16).0, 37.5, 1e-9); expectClose(t(.x2, .x16).1, 43.2, 0.03)
        // skipped pressure drops its term
        expectClose(t(.x1, .skipped).0, 3, 1e-9)
        // DS Table 14: standard + 62.5 ms standby = 13.51 Hz
        let c = BMP280Configuration(mode: .normal, pressureOversampling: .x4, temperatureOversampling: .x1,
                                    filter: .off, standby: .ms62_5)
        expectClose(c.normalModeRateHz, 13.51, 0.01)
    }
}

func expectClose(_ a: Double, _ b: Double, _ tol: Double, _ what: String = "",
                 sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(abs(a - b) <= tol, "\(what): \(a) vs \(b) (tolerance \(tol))", sourceLocation: sourceLocation)
}
