// Barometer + vertical acceleration altitude filter: a 3-state Kalman filter
// (height, vertical velocity, accelerometer bias) in the earth frame, Z up.
//
// * `updateAccel` (IMU rate, e.g. 100–200 Hz) is the prediction: the vertical
//   acceleration, minus the estimated bias, is the control input of a
//   constant-acceleration model over the actual `dt`.
// * `updateBarometer` (barometer rate, e.g. 26 Hz) is the correction: the
//   pressure altitude of the sample, with noise σ_h = σ_p · |∂h/∂p|.
// The two run at independent rates; samples arrive in time order.
//
// No I/O, no allocation, no clock: `State` is a value, copy it to hand the
// filter over. Tuning and figures: docs/altitude.md.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

public struct AltitudeFilter: Sendable {
    /// User settings, in the units of the datasheets.
    public struct Settings: Sendable, Equatable {
        /// Reference pressure for absolute altitude (QNH), Pa. Default: ISA 101325 Pa.
        public var seaLevelPressure: Double
        /// 1σ uncertainty of `seaLevelPressure`, Pa. Default 1000 Pa (10 hPa:
        /// the spread of weather around the ISA value when no QNH is configured;
        /// set ~100 Pa when a current local QNH is configured).
        public var seaLevelPressureUncertainty: Double
        /// RMS pressure noise of one barometer sample, Pa. Default 1.3 Pa:
        /// BMP280 DS Table 8, ultra high resolution (×16), IIR off.
        public var pressureNoise: Double
        /// 1σ absolute accuracy of the barometer, Pa. Default 100 Pa
        /// (BMP280 DS: ±1.0 hPa absolute, 0..65 °C).
        public var pressureAccuracy: Double
        /// White-noise density of the vertical acceleration input, µg/√Hz.
        /// The MPU-6050's own noise is 400 µg/√Hz; the default is larger to
        /// cover attitude error, vibration and scale error (docs/altitude.md).
        public var accelerationNoiseDensity: Double
        /// Random walk of the accelerometer bias, µg/√s.
        public var accelerationBiasRandomWalk: Double
        /// 1σ of the vertical accelerometer bias at start, mg (MPU-6050 DS:
        /// zero-g offset ±80 mg on Z before calibration).
        public var initialBiasUncertainty: Double
        /// 1σ of the vertical velocity at start, m/s.
        public var initialVelocityUncertainty: Double

        public init(seaLevelPressure: Double = PressureAltitude.standardSeaLevelPressure,
                    seaLevelPressureUncertainty: Double = 1000,
                    pressureNoise: Double = 1.3,
                    pressureAccuracy: Double = 100,
                    accelerationNoiseDensity: Double = 700,
                    accelerationBiasRandomWalk: Double = 50,
                    initialBiasUncertainty: Double = 80,
                    initialVelocityUncertainty: Double = 0.5) {
            self.seaLevelPressure = seaLevelPressure
            self.seaLevelPressureUncertainty = seaLevelPressureUncertainty
            self.pressureNoise = pressureNoise
            self.pressureAccuracy = pressureAccuracy
            self.accelerationNoiseDensity = accelerationNoiseDensity
            self.accelerationBiasRandomWalk = accelerationBiasRandomWalk
            self.initialBiasUncertainty = initialBiasUncertainty
            self.initialVelocityUncertainty = initialVelocityUncertainty
        }
    }

    /// SI values derived once from the settings.
    public struct Coefficients: Sendable, Equatable {
        /// Pa.
        public var seaLevelPressure: Double
        /// Pa².
        public var seaLevelPressureVariance: Double
        /// Pa².
        public var pressureVariance: Double
        /// Pa².
        public var pressureAccuracyVariance: Double
        /// Acceleration white-noise PSD, (m/s²)²/Hz.
        public var accelerationPSD: Double
        /// Bias random-walk PSD, (m/s²)²/s.
        public var biasPSD: Double
        /// Initial variances: velocity (m/s)², bias (m/s²)².
        public var initialVelocityVariance: Double
        public var initialBiasVariance: Double

        public init(_ s: Settings) {
            precondition(s.seaLevelPressure > 0 && s.pressureNoise > 0, "AltitudeFilter: bad settings")
            let g = standardGravity
            seaLevelPressure = s.seaLevelPressure
            seaLevelPressureVariance = s.seaLevelPressureUncertainty * s.seaLevelPressureUncertainty
            pressureVariance = s.pressureNoise * s.pressureNoise
            pressureAccuracyVariance = s.pressureAccuracy * s.pressureAccuracy
            let nd = s.accelerationNoiseDensity * 1e-6 * g
            accelerationPSD = nd * nd
            let rw = s.accelerationBiasRandomWalk * 1e-6 * g
            biasPSD = rw * rw
            initialVelocityVariance = s.initialVelocityUncertainty * s.initialVelocityUncertainty
            let b0 = s.initialBiasUncertainty * 1e-3 * g
            initialBiasVariance = b0 * b0
        }
    }

    /// Everything that changes. A value: copy it to hand the filter over.
    public struct State: Sendable, Equatable {
        /// False until the first barometer sample.
        public var initialized = false
        /// Pressure altitude above the sea-level reference, m.
        public var height: Double = 0
        /// Vertical velocity, m/s, up positive.
        public var velocity: Double = 0
        /// Vertical accelerometer bias, m/s².
        public var bias: Double = 0
        /// Covariance of (height, velocity, bias), upper triangle.
        public var p00: Double = 0, p01: Double = 0, p02: Double = 0
        public var p11: Double = 0, p12: Double = 0, p22: Double = 0
        /// Pressure altitude of the first barometer sample: relative altitude is
        /// measured from it, m.
        public var referenceHeight: Double = 0
        /// Variance of `referenceHeight` (the first sample's noise), m².
        public var referenceVariance: Double = 0
        /// Last measured pressure, Pa.
        public var pressure: Double = 0
        public init() {}
    }

    /// What the filter reports (Core Motion's CMAltitudeData and
    /// CMAbsoluteAltitudeData, plus velocity).
    public struct Output: Sendable, Equatable {
        /// Last measured pressure, Pa.
        public var pressure: Double
        /// Metres since the first barometer sample, up positive.
        public var relativeAltitude: Double
        /// 1σ of `relativeAltitude` against the true height change, m.
        public var relativeAltitudeAccuracy: Double
        /// Vertical velocity, m/s, up positive.
        public var verticalVelocity: Double
        /// Altitude above the level of `seaLevelPressure`, m.
        public var absoluteAltitude: Double
        /// 1σ of `absoluteAltitude`, m: filter covariance, sensor absolute
        /// accuracy and sea-level pressure uncertainty.
        public var absoluteAltitudeAccuracy: Double
        /// Estimated vertical accelerometer bias, m/s².
        public var accelerationBias: Double

        @inlinable
        public init(pressure: Double, relativeAltitude: Double, relativeAltitudeAccuracy: Double,
                    verticalVelocity: Double, absoluteAltitude: Double, absoluteAltitudeAccuracy: Double,
                    accelerationBias: Double) {
            self.pressure = pressure
            self.relativeAltitude = relativeAltitude
            self.relativeAltitudeAccuracy = relativeAltitudeAccuracy
            self.verticalVelocity = verticalVelocity
            self.absoluteAltitude = absoluteAltitude
            self.absoluteAltitudeAccuracy = absoluteAltitudeAccuracy
            self.accelerationBias = accelerationBias
        }
    }

    public let coefficients: Coefficients
    public var state: State

    public init(settings: Settings = Settings()) {
        coefficients = Coefficients(settings)
        state = State()
    }

    /// Resumes from a handed-over state.
    public init(coefficients: Coefficients, state: State) {
        self.coefficients = coefficients
        self.state = state
    }

    /// Earth-frame vertical acceleration (m/s², up positive, gravity removed)
    /// from the sensor-to-earth attitude `q` (Z up) and the accelerometer's
    /// specific force `f` (m/s², sensor frame; +1 g up at rest).
    @inlinable
    public static func verticalAcceleration(attitude q: Quaternion, specificForce f: Vector3) -> Double {
        q.rotate(f).z - standardGravity
    }

    /// Prediction over `dt` seconds with the measured vertical acceleration
    /// (m/s², gravity removed). Ignored before the first barometer sample and
    /// for non-finite input or dt ≤ 0.
    @inlinable
    public mutating func updateAccel(verticalAcceleration a: Double, dt: Double) {
        guard state.initialized, dt > 0, dt.isFinite, a.isFinite else { return }
        var s = state
        let u = a - s.bias
        s.height += s.velocity * dt + 0.5 * u * dt * dt
        s.velocity += u * dt
        // P ← F P Fᵀ + Q, F = [[1, dt, −dt²/2], [0, 1, −dt], [0, 0, 1]].
        let c = -0.5 * dt * dt, d = -dt
        // A = F P (rows).
        let a00 = s.p00 + dt * s.p01 + c * s.p02
        let a01 = s.p01 + dt * s.p11 + c * s.p12
        let a02 = s.p02 + dt * s.p12 + c * s.p22
        let a11 = s.p11 + d * s.p12
        let a12 = s.p12 + d * s.p22
        // M = A Fᵀ (upper triangle).
        let qa = coefficients.accelerationPSD
        s.p00 = a00 + dt * a01 + c * a02 + qa * dt * dt * dt / 3
        s.p01 = a01 + d * a02 + qa * dt * dt / 2
        s.p02 = a02
        s.p11 = a11 + d * a12 + qa * dt
        s.p12 = a12
        s.p22 += coefficients.biasPSD * dt
        state = s
    }

    /// Correction with one barometer sample, Pa. The first sample initialises
    /// the filter and fixes the relative-altitude reference. Non-finite or
    /// non-positive pressures are ignored.
    @inlinable
    public mutating func updateBarometer(pressure p: Double) {
        guard p > 0, p.isFinite else { return }
        let p0 = coefficients.seaLevelPressure
        let z = PressureAltitude.altitude(pressure: p, seaLevelPressure: p0)
        let dhdp = PressureAltitude.altitudePerPascal(pressure: p, seaLevelPressure: p0)
        let r = coefficients.pressureVariance * dhdp * dhdp
        var s = state
        s.pressure = p
        if !s.initialized {
            s.initialized = true
            s.height = z; s.velocity = 0; s.bias = 0
            s.p00 = r; s.p01 = 0; s.p02 = 0
            s.p11 = coefficients.initialVelocityVariance; s.p12 = 0
            s.p22 = coefficients.initialBiasVariance
            s.referenceHeight = z
            s.referenceVariance = r
            state = s
            return
        }
        let innovation = z - s.height
        let sInv = 1 / (s.p00 + r)
        let k0 = s.p00 * sInv, k1 = s.p01 * sInv, k2 = s.p02 * sInv
        s.height += k0 * innovation
        s.velocity += k1 * innovation
        s.bias += k2 * innovation
        // P ← (I − K H) P, H = [1, 0, 0]: P_ij −= K_i · P_0j.
        let r0 = (s.p00, s.p01, s.p02)
        s.p00 -= k0 * r0.0; s.p01 -= k0 * r0.1; s.p02 -= k0 * r0.2
        s.p11 -= k1 * r0.1; s.p12 -= k1 * r0.2
        s.p22 -= k2 * r0.2
        state = s
    }

    /// Current estimate. Zeros (accuracy ∞) before the first barometer sample.
    @inlinable
    public var output: Output {
        let s = state
        guard s.initialized else {
            return Output(pressure: 0, relativeAltitude: 0, relativeAltitudeAccuracy: .infinity,
                          verticalVelocity: 0, absoluteAltitude: 0, absoluteAltitudeAccuracy: .infinity,
                          accelerationBias: 0)
        }
        let p0 = coefficients.seaLevelPressure
        let p = PressureAltitude.pressure(altitude: s.height, seaLevelPressure: p0)
        let dhdp = PressureAltitude.altitudePerPascal(pressure: p, seaLevelPressure: p0)
        let dhdp0 = PressureAltitude.altitudePerSeaLevelPascal(pressure: p, seaLevelPressure: p0)
        let absVar = max(0, s.p00) + dhdp * dhdp * coefficients.pressureAccuracyVariance
            + dhdp0 * dhdp0 * coefficients.seaLevelPressureVariance
        return Output(pressure: s.pressure,
                      relativeAltitude: s.height - s.referenceHeight,
                      relativeAltitudeAccuracy: (max(0, s.p00) + s.referenceVariance).squareRoot(),
                      verticalVelocity: s.velocity,
                      absoluteAltitude: s.height,
                      absoluteAltitudeAccuracy: absVar.squareRoot(),
                      accelerationBias: s.bias)
    }
}
