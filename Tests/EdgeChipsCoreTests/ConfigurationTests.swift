#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@testable import EdgeChipsCore

@Suite struct ConfigurationTests {
    func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    func message(_ body: () throws -> Void) -> String {
        do { try body(); return "" } catch let DecodingError.dataCorrupted(ctx) { return ctx.debugDescription }
        catch { return "\(error)" }
    }

    @Test func missingKeysTakeDefaults() throws {
        #expect(try decode(MPU6050Configuration.self, "{}") == .default)
        #expect(try decode(BMP280Configuration.self, "{}") == .default)
        #expect(try decode(QMC5883LConfiguration.self, "{}") == .default)
    }

    @Test func mpu6050Keys() throws {
        let c = try decode(MPU6050Configuration.self, """
            {"gyro_range_dps": 2000, "accel_range_g": 8, "dlpf_bandwidth_hz": 94, "sample_rate_hz": 200,
             "clock_source": "pll_z", "fifo": true, "data_ready_interrupt": true, "i2c_bypass": true}
            """)
        #expect(c.gyroRange == .dps2000)
        #expect(c.accelRange == .g8)
        #expect(c.dlpf == .hz94)
        #expect(c.sampleRateDivider == 4)
        #expect(c.achievedSampleRateHz == 200)
        #expect(c.clockSource == .pllZ)
        #expect(c.fifo && c.dataReadyInterrupt && c.i2cBypass)
        // round trip through the encoder
        let again = try JSONDecoder().decode(MPU6050Configuration.self, from: JSONEncoder().encode(c))
        #expect(again == c)
    }

    @Test func invalidValuesListTheAllowedOnes() {
        let m = message { _ = try decode(MPU6050Configuration.self, #"{"gyro_range_dps": 300}"#) }
        #expect(m.contains("250, 500, 1000, 2000"))
        let r = message { _ = try decode(MPU6050Configuration.self, #"{"sample_rate_hz": 5000}"#) }
        #expect(r.contains("sample_rate_hz"))
        let s = message { _ = try decode(BMP280Configuration.self, #"{"standby_ms": 3}"#) }
        #expect(s.contains("0.5, 62.5, 125"))
        let t = message { _ = try decode(BMP280Configuration.self, #"{"temperature_oversampling": 0}"#) }
        #expect(t.contains("pressure compensation needs"))
        let q = message { _ = try decode(QMC5883LConfiguration.self, #"{"range_gauss": 4}"#) }
        #expect(q.contains("2, 8"))
        let mode = message { _ = try decode(QMC5883LConfiguration.self, #"{"mode": "single"}"#) }
        #expect(mode.contains("standby, continuous"))
    }

    @Test func bmp280Keys() throws {
        let c = try decode(BMP280Configuration.self, """
            {"mode": "forced", "pressure_oversampling": 0, "temperature_oversampling": 1, "iir_filter": 0, "standby_ms": 62.5}
            """)
        #expect(c.mode == .forced)
        #expect(c.pressureOversampling == .skipped)
        #expect(c.standby == .ms62_5)
        #expect(c.controlMeasurementValue(mode: .forced) == 0b001_000_01)
        #expect(c.configValue == 0b001_000_00)
    }

    @Test func qmcKeys() throws {
        let c = try decode(QMC5883LConfiguration.self,
                           #"{"mode": "continuous", "output_rate_hz": 200, "range_gauss": 2, "oversampling": 64}"#)
        #expect(c.control1Value == 0b11_00_11_01)
    }
}
