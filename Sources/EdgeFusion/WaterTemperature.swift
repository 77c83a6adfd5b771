// Water temperature from the pressure sensor's own thermometer, with an
// uncertainty (Core Motion's CMWaterTemperature: temperature and
// temperatureUncertainty). Pure: Settings, State, update.

/// How far to trust the sensor's temperature as the water's.
public struct WaterTemperatureSettings: Sendable, Equatable {
    /// The sensor's stated absolute temperature accuracy, °C (one value for
    /// the whole range; take it from the sensor's datasheet). Default 1 °C,
    /// the BMP280's figure (BST-BMP280-DS001 Table 2).
    public var sensorAccuracyCelsius: Double
    /// Thermal time constant of the sensor in its housing, s: while the water
    /// temperature changes, the reading lags it by about τ·dT/dt. Default
    /// 10 s (a gel-filled sensor in a small housing; an assumption).
    public var timeConstantSeconds: Double
    /// Smoothing time of the rate estimate, s.
    public var rateSmoothingSeconds: Double

    public init(sensorAccuracyCelsius: Double = 1, timeConstantSeconds: Double = 10, rateSmoothingSeconds: Double = 5) {
        self.sensorAccuracyCelsius = sensorAccuracyCelsius; self.timeConstantSeconds = timeConstantSeconds
        self.rateSmoothingSeconds = rateSmoothingSeconds
    }
}

/// The estimator's state; copy it to hand over.
public struct WaterTemperatureState: Sendable, Equatable {
    public var lastCelsius: Double?
    public var lastSeconds: Double?
    /// Smoothed dT/dt, °C/s.
    public var rateCelsiusPerSecond: Double = 0
    public init() {}
}

/// One estimate.
public struct WaterTemperatureEstimate: Sendable, Equatable {
    public var celsius: Double
    /// ± °C: the sensor's accuracy plus the lag while the temperature changes.
    public var uncertaintyCelsius: Double
}

public enum WaterTemperature {
    /// Folds in one reading taken at `seconds` (any monotonic origin).
    public static func update(_ state: inout WaterTemperatureState, celsius: Double, seconds: Double,
                              _ s: WaterTemperatureSettings) -> WaterTemperatureEstimate {
        if let t0 = state.lastSeconds, let c0 = state.lastCelsius, seconds > t0 {
            let dt = seconds - t0
            let rate = (celsius - c0) / dt
            let alpha = dt / (s.rateSmoothingSeconds + dt)
            state.rateCelsiusPerSecond += alpha * (rate - state.rateCelsiusPerSecond)
        }
        state.lastSeconds = seconds
        state.lastCelsius = celsius
        let lag = s.timeConstantSeconds * abs(state.rateCelsiusPerSecond)
        return WaterTemperatureEstimate(celsius: celsius, uncertaintyCelsius: s.sensorAccuracyCelsius + lag)
    }
}
