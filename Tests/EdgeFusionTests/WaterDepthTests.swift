import Testing
import EdgeValues
@testable import EdgeFusion

@Suite struct WaterDepthTests {
    /// EN 13319's convention: 1 bar of sea pressure is 10 m with standard gravity.
    @Test func en13319IsTenMetresPerBar() throws {
        let d = try WaterDepth.depth(pressurePascals: 201_325, surfacePascals: 101_325, DepthSettings(water: .en13319))
        #expect(abs(d - 10) < 1e-4)   // 1e5 / (1019.716 · 9.80665) = 9.99999992...
    }

    /// Hydrostatic modes are h = Δp / (ρ g), checked against ρ·g·h computed here.
    @Test func hydrostaticModesAreRhoGH() throws {
        for (water, rho) in [(WaterType.fresh, 997.0), (.salt, 1025), (.en13319, 1019.716), (.density(1010), 1010)] {
            for g in [GravityModel.standard, .normal(latitudeDegrees: 60)] {
                let gv = g == .standard ? 9.80665 : normalGravity(latitudeDegrees: 60)
                for h in [0.0, 0.5, 6, 18, 40, 300] {
                    let p = 95_000 + rho * gv * h
                    let d = try WaterDepth.depth(pressurePascals: p, surfacePascals: 95_000, DepthSettings(water: water, gravity: g))
                    #expect(abs(d - h) <= 1e-9 * max(h, 1), "\(water) \(g) at \(h) m: \(d)")
                }
            }
        }
    }

    /// WGS 84 normal gravity: 9.7803253359 at the equator, 9.8321849379 at
    /// the poles (NIMA TR8350.2 Table 3.4).
    @Test func normalGravityAtEquatorAndPole() {
        #expect(abs(normalGravity(latitudeDegrees: 0) - 9.7803253359) < 1e-10)
        #expect(abs(normalGravity(latitudeDegrees: 90) - 9.8321849379) < 1e-9)
        #expect(abs(normalGravity(latitudeDegrees: -90) - 9.8321849379) < 1e-9)
    }

    /// TEOS-10 against the GSW toolbox's own values: gsw_z_from_p(10, 4) =
    /// −9.9445834469453 m (the TEOS-10 documentation page's example), the
    /// others from PyPI `gsw` 3.6.23's `z_from_p` (not from this code).
    @Test func teos10AgainstGSW() throws {
        let cases: [(Double, Double, Double)] = [
            (10, 4, 9.944583446945298), (100, 45, 99.16434938694897), (1000, -80, 987.042747315875),
            (500, 0, 496.65328522916104), (1000, 80, 987.042747315875), (50, -33.9, 49.637738269861735),
        ]
        for (dbar, lat, expected) in cases {
            let d = try WaterDepth.depth(pressurePascals: 101_325 + dbar * 1e4, surfacePascals: 101_325,
                                         DepthSettings(water: .teos10, latitudeDegrees: lat))
            #expect(abs(d - expected) < 1e-9, "\(dbar) dbar at \(lat)°: \(d) vs \(expected)")
        }
    }

    @Test func teos10NeedsALatitudeAndInvertsItself() throws {
        #expect(throws: DepthModelError.teos10NeedsLatitude) {
            try WaterDepth.depth(pressurePascals: 2e5, surfacePascals: 1e5, DepthSettings(water: .teos10))
        }
        #expect(throws: DepthModelError.latitudeOutOfRange(91)) {
            try WaterDepth.depth(pressurePascals: 2e5, surfacePascals: 1e5, DepthSettings(water: .teos10, latitudeDegrees: 91))
        }
        let s = DepthSettings(water: .teos10, latitudeDegrees: 30)
        let p = try WaterDepth.seaPressure(depthMetres: 40, s)
        #expect(abs(try WaterDepth.depth(pressurePascals: 1e5 + p, surfacePascals: 1e5, s) - 40) < 1e-6)
    }

    @Test func waterNames() {
        #expect(WaterType(name: "fresh") == .fresh)
        #expect(WaterType(name: "EN13319") == .en13319)
        #expect(WaterType(name: "1003.5") == .density(1003.5))
        #expect(WaterType(name: "3") == nil)
        #expect(WaterType(name: "brine") == nil)
    }

    /// Steady temperature: the sensor's accuracy; a change of 1 °C/min adds
    /// τ·rate once the rate estimate settles.
    @Test func temperatureUncertaintyGrowsWhileTheTemperatureChanges() {
        let s = WaterTemperatureSettings(sensorAccuracyCelsius: 0.5, timeConstantSeconds: 10, rateSmoothingSeconds: 2)
        var st = WaterTemperatureState()
        var e = WaterTemperature.update(&st, celsius: 20, seconds: 0, s)
        for i in 1...60 { e = WaterTemperature.update(&st, celsius: 20, seconds: Double(i), s) }
        #expect(e.uncertaintyCelsius == 0.5)
        for i in 61...200 { e = WaterTemperature.update(&st, celsius: 20 - Double(i - 60) / 60, seconds: Double(i), s) }
        #expect(abs(e.uncertaintyCelsius - (0.5 + 10.0 / 60)) < 1e-3)
        // State hand-over: a copy continues identically.
        var copy = st
        let a = WaterTemperature.update(&st, celsius: 17, seconds: 201, s)
        let b = WaterTemperature.update(&copy, celsius: 17, seconds: 201, s)
        #expect(a == b)
    }
}
