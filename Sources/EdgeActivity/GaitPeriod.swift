// The step period of a gait from its stride: the signal of a board carried
// anywhere on the body repeats once per stride (two steps), whether or not
// the two steps look alike. A phone in a back pocket sees one leg: its
// strongest period is the stride, its two steps differ, and the thigh's
// rotation can be larger than the impacts. So the period is found as a
// stride first and halved, never guessed from the strongest peak alone.
//
// Signals: the band-passed magnitude of the specific force and, when the
// gyroscope shows the board turning (band-passed RMS ≥ `gyroMinRadS`), the
// band-passed magnitude of the angular rate; both on the 50 Hz grid over the
// trailing `windowSeconds`. A magnitude rectifies a limb's swing (a thigh or
// an arm turning forward, then back, every stride) into two humps a stride,
// so the gyroscope adds step-periodic evidence exactly where the impacts are
// weak. R(L) is the mean of the signals' normalised, unbiased
// autocorrelations (Moe-Nilssen & Helbostad, J. Biomech. 37 (2004) 121-126:
// "step regularity" R(T) and "stride regularity" R(2T) of trunk
// accelerations).
//
// The stride S is the shortest-lag local maximum of R in the stride range
// [2·minStepSeconds, 2·maxStepSeconds] (steps at 3.2 down to 0.9 a second)
// that reaches `strideShare` of the best in the range and at whose half R
// is above `halfFloor`: a lag that is really one step (one oscillation) is
// anti-correlated at its half, a stride (two oscillations, alike or not) is
// not. T = S/2. The gait is trusted when the stride regularity R(S) ≥
// `strideTrust`: a walk repeats stride after stride (healthy adults' stride
// regularity of trunk acceleration is about 0.6-0.9), a car's suspension
// (a damped 1-1.5 Hz resonance driven by the road) or a shaking hand does not.

public struct GaitPeriod: Sendable, Equatable {
    /// Step period T, s (0 when none is found).
    public var stepSeconds = 0.0
    /// Stride regularity R(2T).
    public var strideRegularity = 0.0
    /// Step regularity R(T) (low for one-sided signals such as a back pocket's).
    public var stepRegularity = 0.0
    /// Whether the gyroscope's autocorrelation took part.
    public var usedGyro = false
    /// Impact regularity: the autocorrelation of the high-frequency envelope
    /// of |a| (the heel strikes' jolts) at the step or the stride lag,
    /// whichever is higher (NaN when no envelope was given or no period found).
    /// Feet that strike the ground make it repeat with the gait (a back
    /// pocket's near leg once a stride); a thigh turning the pedals, a car's
    /// road noise, do not.
    public var impactRegularity = Double.nan
    public init() {}
}

public enum GaitPeriodEstimator {
    public struct Settings: Sendable, Equatable {
        /// Trailing window, s (two strides of the slowest walk, and a margin).
        public var windowSeconds = 8.0
        /// Fastest step, s (3.2 steps/s).
        public var minStepSeconds = 0.3125
        /// Slowest step, s (0.9 steps/s: 60 steps/min with a margin).
        public var maxStepSeconds = 1.1
        /// A stride candidate must reach this share of the best stride-range peak.
        public var strideShare = 0.85
        /// A stride candidate's R at half its lag must exceed this.
        public var halfFloor = -0.5
        /// Stride regularity from which the gait is trusted.
        public var strideTrust = 0.5
        /// Band-passed |ω| RMS from which the gyroscope takes part, rad/s.
        public var gyroMinRadS = 0.1
        public static let gridHz = PeriodEstimator.Settings.gridHz
        public init() {}

        var maxLag: Int { Int((2 * maxStepSeconds * Self.gridHz).rounded(.up)) + 2 }
        var gridCount: Int { Int(windowSeconds * Self.gridHz) }
    }

    /// `acc`, `gyro`: the band-passed magnitudes on the grid (same length);
    /// `gyroRms`: the band-passed |ω| RMS, rad/s (NaN without a gyroscope).
    /// `scratch` holds at least `settings.maxLag + 2` values (no allocation).
    /// `impacts`: the high-frequency envelope of |a| on the same grid, if kept.
    public static func estimate(acc: Ring, gyro: Ring, gyroRms: Double, impacts: Ring? = nil,
                                _ s: Settings, scratch: inout [Double]) -> GaitPeriod {
        var out = GaitPeriod()
        let n = acc.count
        let hi = min(s.maxLag, n - 16)
        let lo = max(2, Int((s.minStepSeconds * Settings.gridHz).rounded(.down)) / 2)
        guard hi > Int(2 * s.minStepSeconds * Settings.gridHz) + 2 else { return out }
        for lag in 0...hi { scratch[lag] = 0 }
        var parts = 0.0
        if addAutocorrelation(acc, lo: lo, hi: hi, into: &scratch) { parts += 1 }
        if gyroRms >= s.gyroMinRadS && gyro.count == n && addAutocorrelation(gyro, lo: lo, hi: hi, into: &scratch) {
            parts += 1; out.usedGyro = true
        }
        guard parts > 0 else { return out }
        for lag in lo...hi { scratch[lag] /= parts }
        func r(_ lag: Double) -> Double {
            let i = Int(lag.rounded(.down)), f = lag - Double(i)
            guard i >= lo && i + 1 <= hi else { return 0 }
            return scratch[i] * (1 - f) + scratch[i + 1] * f
        }
        let sLo = max(lo + 1, Int((2 * s.minStepSeconds * Settings.gridHz).rounded(.down)))
        let sHi = hi - 1
        guard sHi > sLo else { return out }
        var best = -1.0
        for lag in sLo...sHi { best = max(best, scratch[lag]) }
        guard best >= s.strideTrust else { return out }
        for lag in sLo...sHi {
            let v = scratch[lag]
            guard v >= scratch[lag - 1] && v >= scratch[lag + 1] && v >= s.strideShare * best else { continue }
            let stride = PeriodEstimator.refined(lag, first: 0, scratch)
            let half = r(stride / 2)
            guard half > s.halfFloor else { continue }
            out.stepSeconds = stride / 2 / Settings.gridHz
            out.strideRegularity = v
            out.stepRegularity = half
            if let impacts, impacts.count == n {
                out.impactRegularity = max(autocorrelation(impacts, lag: Int((stride / 2).rounded())),
                                           autocorrelation(impacts, lag: Int(stride.rounded())))
            }
            return out
        }
        return out
    }

    /// The normalised unbiased autocorrelation of `x` at one lag (0 when `x`
    /// carries no energy or the lag does not fit).
    static func autocorrelation(_ x: Ring, lag: Int) -> Double {
        let n = x.count
        guard lag > 0 && lag < n - 8 else { return 0 }
        var mean = 0.0
        for i in 0..<n { mean += x[i] }
        mean /= Double(n)
        var energy = 0.0, sum = 0.0
        for i in 0..<n { let d = x[i] - mean; energy += d * d }
        guard energy > 1e-12 else { return 0 }
        for i in 0..<(n - lag) { sum += (x[i] - mean) * (x[i + lag] - mean) }
        return sum / energy * Double(n) / Double(n - lag)
    }

    /// Adds the normalised unbiased autocorrelation of `x` at lags lo...hi
    /// to `acc`; false (nothing added) when `x` carries no energy.
    static func addAutocorrelation(_ x: Ring, lo: Int, hi: Int, into acc: inout [Double]) -> Bool {
        let n = x.count
        var mean = 0.0
        for i in 0..<n { mean += x[i] }
        mean /= Double(n)
        var energy = 0.0
        for i in 0..<n { let d = x[i] - mean; energy += d * d }
        guard energy > 1e-12 else { return false }
        for lag in lo...hi {
            var sum = 0.0
            for i in 0..<(n - lag) { sum += (x[i] - mean) * (x[i + lag] - mean) }
            acc[lag] += sum / energy * Double(n) / Double(n - lag)
        }
        return true
    }

}
