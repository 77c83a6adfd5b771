/// BMP280 settings in user units. `Codable`, snake_case keys, each optional
/// (missing → default) and validated on decode:
///
/// | key | unit | allowed | default |
/// |---|---|---|---|
/// | `mode` | | sleep, forced, normal | normal |
/// | `pressure_oversampling` | × | 0 (skipped), 1, 2, 4, 8, 16 | 16 |
/// | `temperature_oversampling` | × | 1, 2, 4, 8, 16 | 2 |
/// | `iir_filter` | coefficient | 0 (off), 2, 4, 8, 16 | 16 |
/// | `standby_ms` | ms | 0.5, 62.5, 125, 250, 500, 1000, 2000, 4000 | 0.5 |
///
/// The defaults are the data sheet's "indoor navigation" preset (DS Table 7:
/// ×16/×2, IIR 16, 0.5 ms, 26.3 Hz). Temperature cannot be skipped: pressure
/// compensation needs it.
public struct BMP280Configuration: Sendable, Equatable, Codable {
    public var mode: BMP280Mode
    public var pressureOversampling: BMP280Oversampling
    public var temperatureOversampling: BMP280Oversampling
    public var filter: BMP280Filter
    public var standby: BMP280Standby

    public init(mode: BMP280Mode = .normal, pressureOversampling: BMP280Oversampling = .x16,
                temperatureOversampling: BMP280Oversampling = .x2, filter: BMP280Filter = .c16,
                standby: BMP280Standby = .ms0_5) {
        precondition(temperatureOversampling != .skipped, "temperature is needed for pressure compensation")
        self.mode = mode; self.pressureOversampling = pressureOversampling
        self.temperatureOversampling = temperatureOversampling; self.filter = filter; self.standby = standby
    }

    public static let `default` = BMP280Configuration()

    /// ctrl_meas with the given mode bits.
    public func controlMeasurementValue(mode: BMP280Mode) -> UInt8 {
        temperatureOversampling.rawValue << 5 | pressureOversampling.rawValue << 2 | mode.rawValue
    }
    /// config: t_sb, filter, spi3w_en = 0.
    public var configValue: UInt8 { standby.rawValue << 5 | filter.rawValue << 2 }

    /// Typical and maximum measurement time, ms (BMP280 DS measurement-time table / BME280 DS appendix B).
    public var measurementTime: (typical: Double, maximum: Double) {
        BMP280Timing.measurementMilliseconds(temperature: temperatureOversampling, pressure: pressureOversampling)
    }

    /// Normal-mode output rate, Hz: 1000 / (t_meas_typ + t_standby).
    public var normalModeRateHz: Double { 1000 / (measurementTime.typical + standby.milliseconds) }

    /// ctrl_meas (in sleep), config, then ctrl_meas with the mode: the data
    /// sheet's order (config is ignored in normal mode; mode last).
    public var registerTable: RegisterTable {
        var rows: [RegisterSetting] = [
            .value(BMP280Register.controlMeasurement.rawValue, controlMeasurementValue(mode: .sleep)),
            .value(BMP280Register.config.rawValue, configValue),
        ]
        if mode == .normal {
            rows.append(.value(BMP280Register.controlMeasurement.rawValue, controlMeasurementValue(mode: .normal)))
        }
        return RegisterTable(rows)
    }

    enum CodingKeys: String, CodingKey {
        case mode, pressureOversampling = "pressure_oversampling"
        case temperatureOversampling = "temperature_oversampling", iirFilter = "iir_filter", standbyMs = "standby_ms"
    }

    public init(from decoder: any Decoder) throws {
        try self.init(from: decoder, standbyMilliseconds: BMP280Standby.allCases.map(\.milliseconds))
    }

    /// Decodes with `standbyMilliseconds[code]` as the meaning of each t_sb
    /// code (a BME280's codes 110/111 are 10/20 ms).
    init(from decoder: any Decoder, standbyMilliseconds table: [Double]) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = BMP280Configuration.default
        mode = BMP280Mode(key: try c.decodeAllowed(.mode, allowed: BMP280Mode.allCases.map(\.key), default: d.mode.key, unit: ""))!
        pressureOversampling = BMP280Oversampling(factor: try c.decodeAllowed(
            .pressureOversampling, allowed: BMP280Oversampling.allCases.map(\.factor),
            default: d.pressureOversampling.factor, unit: "oversampling factor, 0 = skipped"))!
        temperatureOversampling = BMP280Oversampling(factor: try c.decodeAllowed(
            .temperatureOversampling, allowed: [1, 2, 4, 8, 16], default: d.temperatureOversampling.factor,
            unit: "oversampling factor; 0 is not allowed because pressure compensation needs the temperature"))!
        filter = BMP280Filter(coefficient: try c.decodeAllowed(
            .iirFilter, allowed: BMP280Filter.allCases.map(\.coefficient), default: d.filter.coefficient,
            unit: "IIR coefficient, 0 = off"))!
        let ms = try c.decodeAllowed(.standbyMs, allowed: table, default: table[Int(d.standby.rawValue)], unit: "ms")
        standby = BMP280Standby(rawValue: UInt8(table.firstIndex(of: ms)!))!
    }

    public func encode(to encoder: any Encoder) throws {
        try encode(to: encoder, standbyMilliseconds: BMP280Standby.allCases.map(\.milliseconds))
    }

    func encode(to encoder: any Encoder, standbyMilliseconds table: [Double]) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(mode.key, forKey: .mode)
        try c.encode(pressureOversampling.factor, forKey: .pressureOversampling)
        try c.encode(temperatureOversampling.factor, forKey: .temperatureOversampling)
        try c.encode(filter.coefficient, forKey: .iirFilter)
        try c.encode(table[Int(standby.rawValue)], forKey: .standbyMs)
    }
}

/// Measurement time (Bosch BST-BMP280-DS001-26 rev 1.26 §3.8.1, typical and
/// maximum per preset; the formula is the one of the BME280 data sheet
/// BST-BME280-DS002, appendix B, and gives the same times).
public enum BMP280Timing {
    /// `t_typ = 1 + 2·osrs_t + (2·osrs_p + 0.5) [+ (2·osrs_h + 0.5)]`,
    /// `t_max = 1.25 + 2.3·osrs_t + (2.3·osrs_p + 0.575) [+ (2.3·osrs_h + 0.575)]`
    /// ms; a skipped channel's term is omitted; humidity only on a BME280.
    public static func measurementMilliseconds(temperature: BMP280Oversampling, pressure: BMP280Oversampling,
                                               humidity: BMP280Oversampling = .skipped) -> (typical: Double, maximum: Double) {
        let t = Double(temperature.factor), p = Double(pressure.factor), h = Double(humidity.factor)
        var typ = 1.0, max = 1.25
        if t > 0 { typ += 2 * t; max += 2.3 * t }
        if p > 0 { typ += 2 * p + 0.5; max += 2.3 * p + 0.575 }
        if h > 0 { typ += 2 * h + 0.5; max += 2.3 * h + 0.575 }
        return (typ, max)
    }
}
