/// One step of SplitMix64 (G. L. Steele, D. Lea, C. H. Flood, "Fast
/// splittable pseudorandom number generators", OOPSLA 2014; the constants
/// of S. Vigna's splitmix64.c): advances `state` and returns the next
/// 64 bits. The simulator expands its seeds with it.
@inlinable @inline(__always)
public func splitMix64(_ state: inout UInt64) -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// A small seedable generator: the same seed gives the same numbers on
/// every platform and run. The project's one, for the bridge's back-off
/// jitter, tests and benchmarks (the simulated chips use EdgeSim's
/// xoshiro256** `SimRandom`, seeded by ``splitMix64(_:)``).
public struct SplitMix64: RandomNumberGenerator, Sendable, Equatable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }

    @inlinable
    public mutating func next() -> UInt64 { splitMix64(&state) }

    /// Uniform in [0, 1), 53 bits.
    @inlinable
    public mutating func uniform() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A standard normal deviate (Box–Muller, the first uniform kept above 1e-12).
    @inlinable
    public mutating func gaussian() -> Double {
        let u1 = max(uniform(), 1e-12), u2 = uniform()
        return (-2 * mathLog(u1)).squareRoot() * mathCos(2 * Double.pi * u2)
    }
}
