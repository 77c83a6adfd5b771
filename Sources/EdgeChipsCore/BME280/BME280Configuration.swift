/// BME280 settings: the BMP280's (pressure and temperature share its
/// registers and formulas) plus humidity oversampling. `Codable` with the
/// BMP280's snake_case keys plus one:
///
/// | key | unit | allowed | default |
/// |---|---|---|---|
/// | `mode` | | sleep, forced, normal | normal |
/// | `pressure_oversampling` | × | 0 (skipped), 1, 2, 4, 8, 16 | 16 |
/// | `temperature_oversampling` | × | 1, 2, 4, 8, 16 | 2 |
/// | `humidity_oversampling` | × | 0 (skipped), 1, 2, 4, 8, 16 | 1 |
/// | `iir_filter` | coefficient | 0 (off), 2, 4, 8, 16 | 16 |
/// | `standby_ms` | ms | 0.5, 10, 20, 62.5, 125, 250, 500, 1000 | 0.5 |
///
/// On a BME280 the t_sb codes 110/111 mean 10/20 ms (BST-BME280-DS002
/// §5.4.6 Table 27), not the BMP280's 2000/4000 ms. The IIR filter applies to
/// pressure and temperature only (§3.4.4).
public struct BME280Configuration: Sendable, Equatable, Codable {
    /// Pressure, temperature, filter, standby code and mode (the standby
    /// code's meaning is the BME280's: ``standbyMilliseconds``).
    public var barometer: BMP280Configuration
    /// ctrl_hum.osrs_h (§5.4.3): the same codes as osrs_p.
    public var humidityOversampling: BMP280Oversampling

    public init(barometer: BMP280Configuration = .default, humidityOversampling: BMP280Oversampling = .x1) {
        self.barometer = barometer; self.humidityOversampling = humidityOversampling
    }

    public static let `default` = BME280Configuration()

    /// t_sb of a BME280 by code, ms (DS Table 27).
    public static let standbyTable: [Double] = [0.5, 62.5, 125, 250, 500, 1000, 10, 20]

    /// Standby time between normal-mode conversions, ms.
    public var standbyMilliseconds: Double { Self.standbyTable[Int(barometer.standby.rawValue)] }

    /// Typical and maximum measurement time with humidity, ms (DS §9.1).
    public var measurementTime: (typical: Double, maximum: Double) {
        BMP280Timing.measurementMilliseconds(temperature: barometer.temperatureOversampling,
                                             pressure: barometer.pressureOversampling, humidity: humidityOversampling)
    }

    /// Normal-mode output rate, Hz: 1000 / (t_meas_typ + t_standby).
    public var normalModeRateHz: Double { 1000 / (measurementTime.typical + standbyMilliseconds) }

    /// ctrl_hum's row: osrs_h in bits [2:0], the other bits left as found.
    public var controlHumidityRow: RegisterSetting {
        let v = humidityOversampling.rawValue
        return RegisterSetting(register: BME280Register.controlHumidity.rawValue, set: v,
                               clear: ~v & BME280Bits.humidityOversamplingMask)
    }

    /// ctrl_hum first, then the BMP280's rows (ctrl_meas in sleep, config,
    /// ctrl_meas with the mode): the ctrl_meas write after it is what makes
    /// ctrl_hum take effect (DS §5.4.3).
    public var registerTable: RegisterTable {
        RegisterTable([controlHumidityRow] + barometer.registerTable.settings)
    }

    enum CodingKeys: String, CodingKey { case humidityOversampling = "humidity_oversampling" }

    public init(from decoder: any Decoder) throws {
        barometer = try BMP280Configuration(from: decoder, standbyMilliseconds: Self.standbyTable)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        humidityOversampling = BMP280Oversampling(factor: try c.decodeAllowed(
            .humidityOversampling, allowed: BMP280Oversampling.allCases.map(\.factor),
            default: Self.default.humidityOversampling.factor, unit: "oversampling factor, 0 = skipped"))!
    }

    public func encode(to encoder: any Encoder) throws {
        try barometer.encode(to: encoder, standbyMilliseconds: Self.standbyTable)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(humidityOversampling.factor, forKey: .humidityOversampling)
    }
}
