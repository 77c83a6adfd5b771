// Step length from the wearer's height and the cadence, calibratable per
// user: the pedometer's distance and pace.
//
// Model: step length = scale · height · (k0 + k1 · cadence), clamped to
// [minRatio, maxRatio] · height. The default k0, k1 come from the linear
// relation between step length and step frequency in gait studies
// (step length grows about linearly with cadence at self-selected speeds;
// at 1.8 steps/s a 1.70 m adult steps ≈ 0.70 m, i.e. 0.41 × height, the
// textbook walking ratio): k0 = 0.13, k1 = 0.157 /(steps/s). They were not
// fitted to any recording here (no shared recording has distance truth).
// `scale` is the per-user calibration: walk a known distance and call
// `calibrated(knownDistance:steps:meanCadence:)`.

/// A step-length model: distance per step as a function of cadence.
public struct StrideModel: Sendable, Equatable, Codable {
    /// Wearer's height, m.
    public var heightMeters: Double
    /// Step length over height at zero cadence (intercept).
    public var k0: Double
    /// Step length over height per step/s of cadence.
    public var k1: Double
    /// Per-user calibration factor (1 = the population model).
    public var scale: Double
    /// Step length bounds, as fractions of the height.
    public var minRatio: Double, maxRatio: Double

    public init(heightMeters: Double = 1.70, k0: Double = 0.13, k1: Double = 0.157, scale: Double = 1,
                minRatio: Double = 0.25, maxRatio: Double = 1.2) {
        precondition(heightMeters > 0 && scale > 0 && minRatio > 0 && maxRatio >= minRatio,
                     "StrideModel: height, scale and ratios must be positive")
        self.heightMeters = heightMeters; self.k0 = k0; self.k1 = k1; self.scale = scale
        self.minRatio = minRatio; self.maxRatio = maxRatio
    }

    /// Length of one step, m, at `cadence` steps/s.
    @inlinable public func stepLength(cadence: Double) -> Double {
        let ratio = min(max(k0 + k1 * max(cadence, 0), minRatio), maxRatio)
        return scale * heightMeters * ratio
    }

    /// Pace, s/m, at `cadence` steps/s (0 when not stepping).
    @inlinable public func pace(cadence: Double) -> Double {
        guard cadence > 0 else { return 0 }
        return 1 / (stepLength(cadence: cadence) * cadence)
    }

    /// This model rescaled so that `steps` steps at `meanCadence` steps/s
    /// cover `knownDistance` metres (a walk of known length).
    public func calibrated(knownDistance: Double, steps: Int, meanCadence: Double) -> StrideModel {
        precondition(knownDistance > 0 && steps > 0, "StrideModel: calibration needs a distance and steps")
        var unscaled = self
        unscaled.scale = 1
        var m = self
        m.scale = knownDistance / (Double(steps) * unscaled.stepLength(cadence: meanCadence))
        return m
    }
}
