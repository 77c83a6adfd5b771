// One second-order filter section (a biquad) with Butterworth low-pass and
// high-pass designs: the band-pass in front of the step detector and the
// activity classifier's vibration band. Coefficients come from the bilinear
// transform with frequency pre-warping (RBJ "Audio EQ Cookbook", Q = 1/√2);
// they are derived once from the settings, the state is two numbers.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Coefficients of one biquad section, normalised so a0 = 1
/// (y = b0·x + b1·x₁ + b2·x₂ − a1·y₁ − a2·y₂).
public struct BiquadCoefficients: Sendable, Equatable {
    public var b0: Double, b1: Double, b2: Double, a1: Double, a2: Double

    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    /// The identity filter (output = input).
    public static let passThrough = BiquadCoefficients(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    /// Second-order Butterworth low-pass, cut-off `hz` (−3 dB) at `sampleRateHz`.
    /// A cut-off at or above 95 % of Nyquist passes everything through.
    public static func lowPass(hz: Double, sampleRateHz fs: Double) -> BiquadCoefficients {
        precondition(fs > 0 && hz > 0, "Biquad: rates must be positive")
        guard hz < 0.475 * fs else { return .passThrough }
        let w = 2 * Double.pi * hz / fs, alpha = sin(w) / 2.0.squareRoot(), c = cos(w)
        let a0 = 1 + alpha
        return BiquadCoefficients(b0: (1 - c) / 2 / a0, b1: (1 - c) / a0, b2: (1 - c) / 2 / a0,
                                  a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    /// Second-order Butterworth high-pass, cut-off `hz` (−3 dB) at `sampleRateHz`.
    public static func highPass(hz: Double, sampleRateHz fs: Double) -> BiquadCoefficients {
        precondition(fs > 0 && hz > 0 && hz < 0.475 * fs, "Biquad: high-pass cut-off must be below Nyquist")
        let w = 2 * Double.pi * hz / fs, alpha = sin(w) / 2.0.squareRoot(), c = cos(w)
        let a0 = 1 + alpha
        return BiquadCoefficients(b0: (1 + c) / 2 / a0, b1: -(1 + c) / a0, b2: (1 + c) / 2 / a0,
                                  a1: -2 * c / a0, a2: (1 - alpha) / a0)
    }

    /// Gain at zero frequency.
    public var dcGain: Double { (b0 + b1 + b2) / (1 + a1 + a2) }
}

/// The state of one biquad (direct form II transposed).
public struct BiquadState: Sendable, Equatable {
    public var s1 = 0.0, s2 = 0.0
    public init() {}

    /// Steady state for a constant input `x0`, so a filter does not ring at
    /// start-up (scipy `lfilter_zi`).
    public mutating func settle(at x0: Double, _ c: BiquadCoefficients) {
        let y0 = c.dcGain * x0
        s2 = c.b2 * x0 - c.a2 * y0
        s1 = c.b1 * x0 - c.a1 * y0 + s2
    }

    @inlinable @inline(__always)
    public mutating func step(_ x: Double, _ c: BiquadCoefficients) -> Double {
        let y = c.b0 * x + s1
        s1 = c.b1 * x - c.a1 * y + s2
        s2 = c.b2 * x - c.a2 * y
        return y
    }
}
