import Testing
@testable import EdgeFusion

@Suite struct AltitudeConversionTests {
    @Test func standardSeaLevelIsZero() {
        #expect(PressureAltitude.altitude(pressure: 101_325) == 0)
        #expect(PressureAltitude.pressure(altitude: 0) == 101_325)
    }

    @Test func thousandMetres() {
        // ISA: 898.746 hPa at 1000 m.
        #expect(abs(PressureAltitude.altitude(pressure: 89_874.6) - 1000) < 0.05)
        #expect(abs(PressureAltitude.pressure(altitude: 1000) - 89_874.6) < 0.5)
    }

    @Test func otherKnownValues() {
        // ISA table: 500 m → 954.61 hPa, 3000 m → 701.12 hPa, −400 m → 1062.2 hPa.
        #expect(abs(PressureAltitude.altitude(pressure: 95_461) - 500) < 0.2)
        #expect(abs(PressureAltitude.altitude(pressure: 70_112) - 3000) < 1)
        #expect(abs(PressureAltitude.altitude(pressure: 106_222) - -400) < 0.5)
    }

    @Test func seaLevelReferenceIsConfigurable() {
        #expect(PressureAltitude.altitude(pressure: 102_000, seaLevelPressure: 102_000) == 0)
        // A higher QNH puts the same pressure higher: ≈ 8.3 m per hPa.
        let h = PressureAltitude.altitude(pressure: 100_000, seaLevelPressure: 101_425)
            - PressureAltitude.altitude(pressure: 100_000, seaLevelPressure: 101_325)
        #expect(abs(h - 8.4) < 0.2)
    }

    @Test func inverseRoundTrip() {
        for p0 in [95_000.0, 101_325, 104_000] {
            var p = 30_000.0
            while p <= 110_000 {
                let h = PressureAltitude.altitude(pressure: p, seaLevelPressure: p0)
                let back = PressureAltitude.pressure(altitude: h, seaLevelPressure: p0)
                #expect(abs(back - p) < 1e-7, "p \(p) p0 \(p0)")
                p += 1_234.5
            }
        }
    }

    @Test func derivativesMatchFiniteDifferences() {
        for p in [40_000.0, 89_874.6, 101_325, 108_000] {
            let e = 0.01
            let numeric = (PressureAltitude.altitude(pressure: p + e) - PressureAltitude.altitude(pressure: p - e)) / (2 * e)
            #expect(abs(PressureAltitude.altitudePerPascal(pressure: p) - numeric) < 1e-6)
            let numeric0 = (PressureAltitude.altitude(pressure: p, seaLevelPressure: 101_325 + e)
                - PressureAltitude.altitude(pressure: p, seaLevelPressure: 101_325 - e)) / (2 * e)
            #expect(abs(PressureAltitude.altitudePerSeaLevelPascal(pressure: p) - numeric0) < 1e-6)
        }
        // Reference sheet: 1 Pa ≈ 8.3 cm near sea level.
        #expect(abs(PressureAltitude.altitudePerPascal(pressure: 101_325) + 0.0832) < 0.001)
    }

    @Test func baselineRawAndLowPass() {
        var raw = BarometricAltimeter(settings: .init(timeConstant: 0, sampleRate: 26))
        raw.updateBarometer(pressure: 101_325)
        raw.updateBarometer(pressure: 89_874.6)
        #expect(abs(raw.relativeAltitude - 1000) < 0.05)
        #expect(abs(raw.absoluteAltitude - 1000) < 0.05)

        let tau = 0.5, rate = 26.0
        var lp = BarometricAltimeter(settings: .init(timeConstant: tau, sampleRate: rate))
        let p1 = PressureAltitude.pressure(altitude: 1)
        lp.updateBarometer(pressure: 101_325)
        for _ in 0..<26 { lp.updateBarometer(pressure: p1) }
        // After one time constant's worth of samples (n = rate·τ·2 = 26): 1 − e^(−2).
        let alpha = 1 - exp(-1 / (rate * tau))
        var expected = 0.0
        for _ in 0..<26 { expected += alpha * (1 - expected) }
        #expect(abs(lp.relativeAltitude - expected) < 1e-9)
        #expect(abs(expected - (1 - exp(-2))) < 1e-9)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
