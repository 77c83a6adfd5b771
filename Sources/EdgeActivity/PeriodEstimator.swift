// The gait period from the autocorrelation of a band-passed signal over a
// trailing window: what the step detector uses to tell a step from a
// stride and from the ripples inside one step, and what the activity
// classifier calls periodicity.
//
// The signal is kept on a fixed 50 Hz grid (the band-pass ends near 4 Hz, so
// 50 Hz keeps everything; the input may come at any rate ≥ 10 Hz). Every
// `hopSeconds` the normalised autocorrelation r(L) = Σ x(k)·x(k+L) / Σ x² ·
// n/(n−L) is evaluated at lags `minLagSeconds`…`maxLagSeconds`. The step
// period is the shortest-lag local maximum reaching `peakFraction` of the best
// one (the best one is often the stride, two steps), halved when a local
// maximum sits near half of it (a stride always holds two steps) or when it is
// longer than `maxStepSeconds` (no one steps slower than once a second while
// walking regularly).

/// Fixed-capacity ring of the most recent values (no allocation after init).
public struct Ring: Sendable {
    public private(set) var values: [Double]
    public private(set) var count = 0
    private var head = 0     // index of the next write

    public init(capacity: Int) {
        precondition(capacity > 0, "Ring: capacity must be positive")
        values = [Double](repeating: 0, count: capacity)
    }

    public var capacity: Int { values.count }

    @inline(__always) public mutating func append(_ x: Double) {
        values[head] = x
        head += 1
        if head == values.count { head = 0 }
        if count < values.count { count += 1 }
    }

    /// The i-th oldest value held (0 = oldest).
    @inline(__always) public subscript(i: Int) -> Double {
        var k = head - count + i
        if k < 0 { k += values.count }
        return values[k]
    }

    public mutating func removeAll() { count = 0; head = 0 }
}

public struct PeriodEstimate: Sendable, Equatable {
    /// Step period, s (0 when none is found).
    public var stepSeconds: Double = 0
    /// Highest normalised autocorrelation over the lags (0…1; periodicity).
    public var periodicity: Double = 0
    /// Autocorrelation at the step period.
    public var stepCorrelation: Double = 0
    /// Autocorrelation at half the step period (negative for one oscillation per step).
    public var halfCorrelation: Double = 0
    public init() {}
}

public enum PeriodEstimator {
    public struct Settings: Sendable, Equatable {
        /// Trailing window, s.
        public var windowSeconds = 4.0
        public var minLagSeconds = 0.25
        public var maxLagSeconds = 2.0
        /// A local maximum counts as a period candidate from this share of the best.
        public var peakFraction = 0.6
        /// Periods longer than this are strides: halved.
        public var maxStepSeconds = 1.0
        /// Grid rate of the kept signal, Hz.
        public static let gridHz = 50.0
        public init() {}
        public init(windowSeconds: Double, maxLagSeconds: Double) {
            self.windowSeconds = windowSeconds; self.maxLagSeconds = maxLagSeconds
        }
    }

    /// Autocorrelation estimate over the ring's contents (oldest to newest).
    /// `scratch` has at least maxLag+2 entries (no allocation here).
    public static func estimate(_ ring: Ring, _ s: Settings, scratch: inout [Double]) -> PeriodEstimate {
        var out = PeriodEstimate()
        let n = ring.count
        let lo = max(1, Int((s.minLagSeconds * Settings.gridHz).rounded()))
        let hi = min(Int((s.maxLagSeconds * Settings.gridHz).rounded()), n - 8)
        guard hi > lo + 2 else { return out }
        var mean = 0.0
        for i in 0..<n { mean += ring[i] }
        mean /= Double(n)
        var energy = 0.0
        for i in 0..<n { let d = ring[i] - mean; energy += d * d }
        guard energy > 1e-9 else { return out }
        // r at lags lo-1 ... hi+1 into scratch[0...]
        let first = lo - 1, last = min(hi + 1, n - 2)
        for lag in first...last {
            var acc = 0.0
            for i in 0..<(n - lag) { acc += (ring[i] - mean) * (ring[i + lag] - mean) }
            scratch[lag - first] = acc / energy * Double(n) / Double(n - lag)
        }
        var best = 0.0
        for lag in lo...(last - 1) { best = max(best, scratch[lag - first]) }
        out.periodicity = max(0, min(best, 1))
        guard best > 0 else { return out }
        func isPeak(_ lag: Int) -> Bool {
            let r = scratch[lag - first]
            return r >= scratch[lag - 1 - first] && r >= scratch[lag + 1 - first] && r > 0
        }
        var period = 0
        for lag in lo...(last - 1) where isPeak(lag) && scratch[lag - first] >= s.peakFraction * best {
            period = lag; break
        }
        guard period > 0 else { return out }
        // a stride holds two steps: look for a local maximum near half the lag
        let half = Double(period) / 2
        let hLo = max(lo, Int((half * 0.8).rounded(.down))), hHi = min(last - 1, Int((half * 1.2).rounded(.up)))
        var halfPeak = 0
        if hHi >= hLo {
            for lag in hLo...hHi where isPeak(lag) && (halfPeak == 0 || scratch[lag - first] > scratch[halfPeak - first]) {
                halfPeak = lag
            }
        }
        var seconds = refined(period, first: first, scratch) / Settings.gridHz
        var r = scratch[period - first]
        if halfPeak > 0 {
            seconds = refined(halfPeak, first: first, scratch) / Settings.gridHz; r = scratch[halfPeak - first]
        } else if seconds > s.maxStepSeconds {
            seconds /= 2
        }
        out.stepSeconds = seconds
        out.stepCorrelation = r
        let halfLag = max(1, Int((seconds * Settings.gridHz / 2).rounded()))
        var acc = 0.0
        for i in 0..<(n - halfLag) { acc += (ring[i] - mean) * (ring[i + halfLag] - mean) }
        out.halfCorrelation = acc / energy * Double(n) / Double(n - halfLag)
        return out
    }

    /// Parabolic interpolation of the peak at `lag`, in grid samples.
    static func refined(_ lag: Int, first: Int, _ r: [Double]) -> Double {
        let a = r[lag - 1 - first], b = r[lag - first], c = r[lag + 1 - first]
        let d = a - 2 * b + c
        guard d < 0 else { return Double(lag) }
        return Double(lag) + max(-0.5, min(0.5, 0.5 * (a - c) / d))
    }
}
