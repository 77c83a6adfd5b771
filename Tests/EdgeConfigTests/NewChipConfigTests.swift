import Testing
@testable import EdgeConfig
import EdgeChipsCore

/// `sensors.hmc5883l`, `sensors.bme280` and the two chip kinds in board profiles (issue 17).
@Suite struct NewChipConfigTests {
    @Test func sectionsDecodeIntoTheDriversSettings() throws {
        let text = """
        { sensors: {
            hmc5883l: { output_rate_hz: 15, range_gauss: 4.7, averaging: 2, mode: "idle" },
            bme280: { humidity_oversampling: 4, standby_ms: 10, iir_filter: 0, mode: "forced" },
        } }
        """
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "c.json5")
        #expect(c.sensors.hmc5883l == HMC5883LConfiguration(mode: .idle, outputRate: .hz15, gain: .gauss4_7, averaging: .x2))
        #expect(c.sensors.bme280.humidityOversampling == .x4)
        #expect(c.sensors.bme280.standbyMilliseconds == 10, "code 110 is 10 ms on a BME280")
        #expect(c.sensors.bme280.barometer.mode == .forced && c.sensors.bme280.barometer.filter == .off)
        #expect(c.sensors.bmp280 == .default, "the bmp280 section is separate")
        let d = try ConfigLoader.decode(AgentConfig.self, from: "{}", file: "c.json5")
        #expect(d.sensors.hmc5883l == .default && d.sensors.bme280 == .default)
    }

    @Test func badValuesNameTheKeyTheAllowedValuesAndTheLine() throws {
        for (text, key, fragment) in [
            ("{ sensors: { hmc5883l: {\n output_rate_hz: 100,\n} } }", "sensors.hmc5883l.output_rate_hz", "0.75, 1.5, 3, 7.5, 15, 30, 75"),
            ("{ sensors: { hmc5883l: {\n range_gauss: 2,\n} } }", "sensors.hmc5883l.range_gauss", "0.88, 1.3, 1.9"),
            ("{ sensors: { hmc5883l: {\n mode: \"single\",\n} } }", "sensors.hmc5883l.mode", "continuous, idle"),
            ("{ sensors: { bme280: {\n standby_ms: 2000,\n} } }", "sensors.bme280.standby_ms", "10"),
            ("{ sensors: { bme280: {\n humidity_oversampling: 3,\n} } }", "sensors.bme280.humidity_oversampling", "0, 1, 2, 4, 8, 16"),
        ] {
            let e = try #require(configError(AgentConfig.self, text), "\(text)")
            #expect(e.keyPath == key, "\(e)")
            #expect(e.line == 2, "\(e)")
            #expect(e.message.contains(fragment), "\(e.message)")
            expectNoSwiftText(e.description, key)
        }
        let unknown = try #require(configError(AgentConfig.self, "{ sensors: { hmc5883l: { oversampling: 8 } } }"))
        #expect(unknown.description.contains("oversampling"), "\(unknown)")
    }

    @Test func boardProfilesNameTheChipsAtTheirAddresses() throws {
        let p = try ConfigLoader.decode(BoardProfile.self, from: """
            { name: "x", bus: 1, chips: [ { kind: "hmc5883l", address: 0x1e }, { kind: "bme280", address: 0x77 } ] }
            """, file: "b.json5")
        #expect(p.chip(.hmc5883l)?.address == 0x1E && p.chip(.bme280)?.address == 0x77)
        let e = try #require(configError(BoardProfile.self, "{ name: \"x\", bus: 1, chips: [ { kind: \"hmc5883l\", address: 0x0d } ] }"))
        #expect(e.message.contains("a hmc5883l answers only at 0x1e"), "\(e)")
    }
}
