// Barometer-only altimeter: the baseline the fused AltitudeFilter is measured
// against. Exactly: pressure altitude (PressureAltitude.altitude) of each
// barometer sample, passed through a first-order low-pass
//     y[k] = y[k−1] + α · (h[k] − y[k−1]),   α = 1 − exp(−T/τ),
// with T the barometer sample interval and τ the time constant. τ = 0 gives
// the raw barometric height. Relative altitude is y minus the height of the
// first sample (the filter starts at that sample, y[0] = h[0]).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

public struct BarometricAltimeter: Sendable {
    /// User settings.
    public struct Settings: Sendable, Equatable {
        /// Reference (sea-level) pressure for absolute altitude, Pa.
        public var seaLevelPressure: Double
        /// Low-pass time constant τ, seconds; 0 = raw barometric height.
        public var timeConstant: Double
        /// Barometer sample rate, Hz (BMP280 UHR normal mode, t_sb 0.5 ms: ≈ 26 Hz).
        public var sampleRate: Double

        public init(seaLevelPressure: Double = PressureAltitude.standardSeaLevelPressure,
                    timeConstant: Double = 0.5, sampleRate: Double = 26) {
            self.seaLevelPressure = seaLevelPressure
            self.timeConstant = timeConstant
            self.sampleRate = sampleRate
        }
    }

    /// Values derived once from the settings.
    public struct Coefficients: Sendable, Equatable {
        public var seaLevelPressure: Double
        /// Low-pass gain per sample, 0 < α ≤ 1.
        public var alpha: Double

        public init(_ s: Settings) {
            precondition(s.sampleRate > 0 && s.timeConstant >= 0, "BarometricAltimeter: bad settings")
            seaLevelPressure = s.seaLevelPressure
            alpha = s.timeConstant == 0 ? 1 : 1 - exp(-1 / (s.sampleRate * s.timeConstant))
        }
    }

    /// Everything that changes; copy it to hand the altimeter over.
    public struct State: Sendable, Equatable {
        public var initialized = false
        /// Filtered pressure altitude, m.
        public var altitude: Double = 0
        /// Pressure altitude of the first sample, m.
        public var referenceAltitude: Double = 0
        /// Last measured pressure, Pa.
        public var pressure: Double = 0
        public init() {}
    }

    public let coefficients: Coefficients
    public var state: State

    public init(settings: Settings = Settings()) {
        coefficients = Coefficients(settings)
        state = State()
    }

    public init(coefficients: Coefficients, state: State) {
        self.coefficients = coefficients
        self.state = state
    }

    /// One barometer sample, Pa.
    @inlinable
    public mutating func updateBarometer(pressure: Double) {
        let h = PressureAltitude.altitude(pressure: pressure, seaLevelPressure: coefficients.seaLevelPressure)
        state.pressure = pressure
        if !state.initialized {
            state.initialized = true
            state.altitude = h
            state.referenceAltitude = h
        } else {
            state.altitude += coefficients.alpha * (h - state.altitude)
        }
    }

    /// Metres since the first sample (Core Motion's relativeAltitude).
    @inlinable public var relativeAltitude: Double { state.altitude - state.referenceAltitude }
    /// Filtered pressure altitude above `seaLevelPressure`, m.
    @inlinable public var absoluteAltitude: Double { state.altitude }
}
