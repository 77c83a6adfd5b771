/// Gyroscope bias calibration: `calibrated = raw − bias`, rad/s, in the
/// chip's own frame (before the board profile's mounting is applied, so a
/// corrected mounting does not invalidate a calibration).
///
/// `temperatureCelsius` is the die temperature the bias was measured at
/// (MPU-6050 TEMP_OUT): the MPU-6050's bias drifts by up to ±20 °/s over its
/// range, so several calibrations at different temperatures can later be
/// fitted to a slope. Until then the bias is applied as is.
public struct GyroCalibration: Equatable, Sendable {
    /// Zero-rate output, rad/s (chip frame).
    public var bias: Vector3
    /// Mean die temperature during the measurement, °C (NaN if unknown).
    public var temperatureCelsius: Double
    /// Standard deviation of each axis during the measurement, rad/s (the
    /// noise a still board shows; 0 if unknown).
    public var noise: Vector3
    /// Samples averaged.
    public var sampleCount: Int

    public init(bias: Vector3 = .zero, temperatureCelsius: Double = .nan, noise: Vector3 = .zero, sampleCount: Int = 0) {
        self.bias = bias; self.temperatureCelsius = temperatureCelsius
        self.noise = noise; self.sampleCount = sampleCount
    }

    public static let identity = GyroCalibration()

    /// Removes the bias from a raw sample (rad/s, chip frame).
    @inlinable public func apply(_ raw: Vector3) -> Vector3 { raw - bias }

    /// A linear temperature model of the bias from calibrations at several
    /// temperatures (°C, rad/s): least squares of `bias = b₀ + slope·(T − T₀)`
    /// per axis, `T₀` the mean temperature. Nil with fewer than two finite
    /// temperatures or when they span less than `minimumSpan` °C (the slope
    /// would be noise). Apply as `bias(T) = biasAtReference + slope·(T − referenceTemperature)`.
    public static func temperatureModel(_ points: [(temperatureCelsius: Double, bias: Vector3)], minimumSpan: Double = 5)
        -> (referenceTemperature: Double, biasAtReference: Vector3, slope: Vector3)? {
        let p = points.filter { $0.temperatureCelsius.isFinite }
        guard p.count >= 2 else { return nil }
        let ts = p.map(\.temperatureCelsius)
        guard let lo = ts.min(), let hi = ts.max(), hi - lo >= minimumSpan else { return nil }
        let t0 = ts.reduce(0, +) / Double(p.count)
        var mean = Vector3.zero
        for q in p { mean += q.bias }
        mean /= Double(p.count)
        var sxy = Vector3.zero, sxx = 0.0
        for q in p { let dt = q.temperatureCelsius - t0; sxy += (q.bias - mean) * dt; sxx += dt * dt }
        return (t0, mean, sxy / sxx)
    }

    /// How trustworthy the result is. Good: noise at the MPU-6050's data-sheet
    /// level (0.005 °/s/√Hz ≈ 0.001 rad/s at 44 Hz) and a bias inside the
    /// data sheet's ±20 °/s; a bias beyond that suggests a damaged part or a
    /// board that was turning steadily.
    public var verdict: CalibrationVerdict {
        var v = CalibrationVerdict()
        let maxBias = max(abs(bias.x), abs(bias.y), abs(bias.z))
        let maxNoise = max(noise.x, noise.y, noise.z)
        if maxBias > 0.35 {   // 20 °/s
            v.note(.poor, "bias \(decimals(maxBias * 57.29577951308232, 2)) °/s exceeds the data sheet's ±20 °/s: was the board turning?")
        }
        if maxNoise > 0.005 {
            v.note(.acceptable, "noise \(decimals(maxNoise, 4)) rad/s is higher than a still board shows (≈0.001): vibration nearby?")
        }
        if sampleCount < 200 {
            v.note(.acceptable, "only \(sampleCount) samples averaged")
        }
        return v
    }
}

/// How good a calibration is, with the reasons in plain words. Shared by the
/// gyroscope, accelerometer and magnetometer calibrators.
public struct CalibrationVerdict: Equatable, Sendable, CustomStringConvertible {
    public enum Level: Int, Comparable, Sendable, CustomStringConvertible {
        case good, acceptable, poor
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["good", "acceptable", "poor"][rawValue] }
    }
    public private(set) var level: Level = .good
    public private(set) var notes: [String] = []

    public init() {}

    /// Lowers the level to at most `level` and records why.
    public mutating func note(_ level: Level, _ why: String) {
        self.level = max(self.level, level)
        notes.append(why)
    }

    public var description: String {
        notes.isEmpty ? level.description : level.description + ": " + notes.joined(separator: "; ")
    }
}

/// Why a gyroscope calibration was refused.
public enum GyroCalibrationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer samples than `Settings.minimumSamples`.
    case tooFewSamples(got: Int, needed: Int)
    /// The board moved: the largest per-axis standard deviation of the
    /// gyroscope (rad/s) or of the accelerometer (m/s²) exceeded its limit.
    case moved(gyroDeviation: Double, gyroLimit: Double, accelDeviation: Double, accelLimit: Double)

    public var description: String {
        switch self {
        case let .tooFewSamples(got, needed):
            "gyro calibration: \(got) samples, need at least \(needed) (hold the board still for longer)"
        case let .moved(g, gl, a, al):
            "gyro calibration: the board moved (gyro σ \(decimals(g, 4)) rad/s, limit \(decimals(gl, 4)); "
                + "accel σ \(decimals(a, 3)) m/s², limit \(decimals(al, 3))): put it on a steady surface, "
                + "do not touch it, and run the calibration again"
        }
    }
}

/// Averages gyroscope samples of a still board into a ``GyroCalibration``,
/// checking that it really was still (Welford running mean and variance of
/// the gyroscope, the accelerometer and the temperature).
///
/// Pure: no I/O, no clock, no allocation. `state` can be copied out and
/// back in to hand a running calibration over.
public struct GyroCalibrator: Sendable {
    public struct Settings: Equatable, Sendable {
        /// Fewest samples `result()` accepts (1 s at 200 Hz).
        public var minimumSamples: Int
        /// Largest per-axis gyroscope standard deviation of a still board,
        /// rad/s (0.01 ≈ 0.6 °/s; the MPU-6050's noise at 44 Hz is ≈0.001).
        public var maximumGyroDeviation: Double
        /// Largest per-axis accelerometer standard deviation of a still
        /// board, m/s² (its noise at 44 Hz is ≈0.03; a tap or typing on the
        /// desk shows 0.1–0.3).
        public var maximumAccelDeviation: Double

        public init(minimumSamples: Int = 200, maximumGyroDeviation: Double = 0.01, maximumAccelDeviation: Double = 0.15) {
            self.minimumSamples = minimumSamples
            self.maximumGyroDeviation = maximumGyroDeviation
            self.maximumAccelDeviation = maximumAccelDeviation
        }
    }

    public struct State: Equatable, Sendable {
        public var count = 0
        public var gyroMean = Vector3.zero, gyroM2 = Vector3.zero
        public var accelMean = Vector3.zero, accelM2 = Vector3.zero
        public var temperatureMean = 0.0
        public var temperatureCount = 0
        public init() {}
    }

    public let settings: Settings
    public var state: State

    public init(settings: Settings = Settings(), state: State = State()) {
        self.settings = settings; self.state = state
    }

    /// One sample: `gyro` rad/s and `accel` m/s² (chip frame), die
    /// `temperature` °C or nil.
    public mutating func update(gyro: Vector3, accel: Vector3, temperature: Double?) {
        state.count += 1
        let n = Double(state.count)
        let dg = gyro - state.gyroMean
        state.gyroMean += dg / n
        state.gyroM2 += dg * (gyro - state.gyroMean)
        let da = accel - state.accelMean
        state.accelMean += da / n
        state.accelM2 += da * (accel - state.accelMean)
        if let t = temperature, t.isFinite {
            state.temperatureCount += 1
            state.temperatureMean += (t - state.temperatureMean) / Double(state.temperatureCount)
        }
    }

    /// Per-axis standard deviation of the gyroscope so far, rad/s.
    public var gyroDeviation: Vector3 {
        state.count > 1 ? (state.gyroM2 / Double(state.count - 1)).squareRootEach : .zero
    }
    /// Per-axis standard deviation of the accelerometer so far, m/s².
    public var accelDeviation: Vector3 {
        state.count > 1 ? (state.accelM2 / Double(state.count - 1)).squareRootEach : .zero
    }

    /// False once the board has visibly moved (the result will be refused).
    public var isStill: Bool {
        gyroDeviation.maxComponent <= settings.maximumGyroDeviation
            && accelDeviation.maxComponent <= settings.maximumAccelDeviation
    }

    /// 0…1: samples collected over the minimum.
    public var progress: Double { min(1, Double(state.count) / Double(max(1, settings.minimumSamples))) }

    /// The bias, or why it cannot be trusted.
    public func result() throws(GyroCalibrationError) -> GyroCalibration {
        // Movement first: a collection stopped early because the board moved
        // should say so, not that it was too short.
        let g = gyroDeviation, a = accelDeviation
        guard isStill else {
            throw .moved(gyroDeviation: g.maxComponent, gyroLimit: settings.maximumGyroDeviation,
                         accelDeviation: a.maxComponent, accelLimit: settings.maximumAccelDeviation)
        }
        guard state.count >= settings.minimumSamples else {
            throw .tooFewSamples(got: state.count, needed: settings.minimumSamples)
        }
        return GyroCalibration(bias: state.gyroMean,
                               temperatureCelsius: state.temperatureCount > 0 ? state.temperatureMean : .nan,
                               noise: g, sampleCount: state.count)
    }
}

extension SIMD3 where Scalar == Double {
    /// Component-wise square root (negative components → 0).
    @inlinable var squareRootEach: Self {
        Self(Swift.max(0, x).squareRoot(), Swift.max(0, y).squareRoot(), Swift.max(0, z).squareRoot())
    }
    @inlinable var maxComponent: Double { Swift.max(x, Swift.max(y, z)) }
}

/// `v` rounded to `digits` decimals, for messages (no Foundation formatting).
func decimals(_ v: Double, _ digits: Int) -> Double {
    var s = 1.0
    for _ in 0..<digits { s *= 10 }
    return (v * s).rounded() / s
}
