// Round trips truth → BMP280Model (BME280 variant) registers → real BME280
// driver → Pa, °C, %RH: humidity oversampling settings, a humidity profile
// from a scenario, ctrl_hum taking effect only with a ctrl_meas write, and a
// BMP280 refused by the BME280 driver.
import Testing
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeSim

@Suite struct DriverRoundTripBME280Tests {
    static let noisy = BMP280Imperfections(noiseScale: 1, pressureOffset: 0, pressureTempco: 0, temperatureOffset: 0,
                                           conversionTimeScale: 1, standbyError: 0, measuringFlagDelay: 0,
                                           quantization: true, humidityOffset: 0)

    static func start(_ config: BME280Configuration, humidity: Double, kind: String = "bme280",
                      seed: UInt64 = 4) throws -> (VirtualClock, BME280<SimulatedBus>, BMP280Model) {
        let clock = VirtualClock(startNanoseconds: 3_000_000_000)
        var t = PhysicalTruth.restingLevel
        t.relativeHumidity = humidity
        t.temperature = 23.5
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: kind, address: 0x77, imperfections: .bmp280(noisy))],
                                       truth: ConstantTruth(t), clock: clock, seed: seed)
        var d = BME280(bus: board.bus, address: 0x77, clock: clock)
        try d.start(config)
        return (clock, d, try #require(board.bmp280(at: 0x77)))
    }

    @Test(arguments: [BMP280Oversampling.x1, .x2, .x4, .x8, .x16], [12.0, 45.0, 87.5])
    func aKnownHumidityReadsBack(osrs: BMP280Oversampling, humidity: Double) throws {
        // IIR off: the tolerance is per conversion (the filter's is for its steady state).
        var c = BME280Configuration(humidityOversampling: osrs)
        c.barometer.filter = .off
        let (clock, bme, model) = try Self.start(c, humidity: humidity)
        for _ in 0..<4 {
            clock.advance(nanoseconds: UInt64(bme.configuration.maximumCycleMilliseconds * 1e6) + 1)
            let s = try bme.read()
            let tol = model.roundTripTolerance
            let h = try #require(s.relativeHumidityPercent)
            #expect(abs(h - humidity) <= tol.humidity, "\(h) vs \(humidity) ± \(tol.humidity) %RH")
            #expect(abs(s.barometer.temperatureCelsius - 23.5) <= tol.temperature)
            let p = try #require(s.barometer.pressurePascals)
            #expect(abs(p - 101_325) <= tol.pressure, "\(p) Pa ± \(tol.pressure)")
        }
    }

    @Test func forcedModeWaitsForHumidityToo() throws {
        var c = BME280Configuration(humidityOversampling: .x16)
        c.barometer.mode = .forced
        let (_, bme, model) = try Self.start(c, humidity: 60)
        let h = try #require(try bme.measure().relativeHumidityPercent)
        #expect(abs(h - 60) <= model.roundTripTolerance.humidity)
    }

    @Test func humidityOffReadsNil() throws {
        let (clock, bme, _) = try Self.start(BME280Configuration(humidityOversampling: .skipped), humidity: 50)
        clock.advance(nanoseconds: 50_000_000)
        #expect(try bme.read().relativeHumidityPercent == nil)
    }

    @Test func ctrlHumAloneChangesNothingUntilCtrlMeasIsWritten() throws {
        // The model applies ctrl_hum only on a ctrl_meas write (DS §5.4.3):
        // a driver that wrote ctrl_hum last would keep reading 0x8000.
        let (clock, bme, _) = try Self.start(BME280Configuration(humidityOversampling: .skipped), humidity: 50)
        try bme.bus.writeRegister(0x77, 0xF2, 0x01)
        clock.advance(nanoseconds: 50_000_000)
        #expect(try bme.readRaw().adcH == 0x8000)
        var d = bme
        try d.configure(BME280Configuration(humidityOversampling: .x1))
        clock.advance(nanoseconds: 50_000_000)
        #expect(try d.readRaw().adcH != 0x8000)
    }

    @Test func aScenarioHumidityProfileIsMeasured() throws {
        let json = """
        {"name": "humid", "duration_s": 120, "environment": {"humidity": {"start_pct": 30, "profile": [{"to_pct": 70, "duration_s": 60}]}}}
        """
        let scenario = try decodeScenario(json)
        let world = try ScenarioWorld(scenario, startNanoseconds: 0)
        #expect(world.truth(atSeconds: 0, body: .board).relativeHumidity == 30)
        #expect(abs(world.truth(atSeconds: 90, body: .board).relativeHumidity - 70) < 1e-9)
        #expect(try ScenarioWorld(try decodeScenario(#"{"name": "dry", "duration_s": 1}"#)).truth(atSeconds: 0, body: .board).relativeHumidity == 45)
        #expect(throws: (any Error).self) {
            try decodeScenario(#"{"name": "wet", "duration_s": 1, "environment": {"humidity": {"start_pct": 130}}}"#)
        }
    }

    @Test func aBMP280IsNotABME280() throws {
        let clock = VirtualClock()
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76)],
                                       truth: ConstantTruth(), clock: clock)
        var d = BME280(bus: board.bus, address: 0x76, clock: clock)
        #expect(throws: DriverError.wrongChip(expected: .bme280, address: 0x76, register: 0xD0, found: 0x58,
                                              identifiedAs: "BMP280 (no humidity sensor: use chip bmp280)")) {
            try d.start()
        }
    }

    @Test func probeCallsItSupported() throws {
        let (_, bme, _) = try Self.start(.default, humidity: 45)
        #expect(try identifyChip(on: bme.bus, at: 0x77).chip == .bme280)
    }
}
