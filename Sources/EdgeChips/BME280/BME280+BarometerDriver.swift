import EdgeBus

extension BME280Configuration: BarometerSettings {
    public var maximumMeasurementMilliseconds: Double { measurementTime.maximum }
    public var maximumCycleMilliseconds: Double { measurementTime.maximum + standbyMilliseconds }
    public var pressureEnabled: Bool { barometer.pressureOversampling != .skipped }
    public var humidityEnabled: Bool { humidityOversampling != .skipped }
    public func idle() -> BME280Configuration { var c = self; c.barometer.mode = .sleep; return c }
    public var summary: String {
        let b = barometer
        return "at \(twoDecimals(normalModeRateHz)) Hz (×\(b.pressureOversampling.factor) pressure, ×\(b.temperatureOversampling.factor) temperature, ×\(humidityOversampling.factor) humidity, IIR \(b.filter.coefficient))"
    }
}

extension BME280: BarometerDriver {
    public static var chipKind: ChipKind { .bme280 }
    public var isCalibrated: Bool { barometer.calibration != nil && humidityCalibration != nil }
    @inlinable
    public func readConversion() throws(DriverError) -> (raw: BarometerRaw, reading: BarometerReading) {
        let raw = try readRaw()
        let s = try compensate(raw)
        return (BarometerRaw(adcP: raw.barometer.adcP, adcT: raw.barometer.adcT, adcH: raw.adcH),
                BarometerReading(pressurePascals: s.barometer.pressurePascals,
                                 temperatureCelsius: s.barometer.temperatureCelsius,
                                 relativeHumidityPercent: s.relativeHumidityPercent,
                                 captureNanoseconds: s.barometer.captureNanoseconds))
    }
}
