// Deterministic random numbers for the chip models: xoshiro256** seeded by
// SplitMix64 (Blackman & Vigna), Gaussian deviates by Box-Muller. The same
// seed gives the same stream on every platform and every run, so a simulated
// session replays byte for byte.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeValues   // splitMix64

/// Mixes a seed with a salt (e.g. a chip's address and kind) into an
/// independent seed, so adding a chip never changes another chip's noise.
public func deriveSeed(_ seed: UInt64, salt: UInt64) -> UInt64 {
    var s = seed ^ (salt &* 0xD1B5_4A32_D192_ED03)
    _ = splitMix64(&s)
    return splitMix64(&s)
}

/// xoshiro256** with a cached second Box-Muller deviate. A value type: copy it
/// to fork a stream, hand it over to continue one.
public struct SimRandom: RandomNumberGenerator, Sendable, Equatable {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64
    private var spare: Double?

    public init(seed: UInt64) {
        var sm = seed
        s0 = splitMix64(&sm); s1 = splitMix64(&sm); s2 = splitMix64(&sm); s3 = splitMix64(&sm)
        spare = nil
    }

    @inline(__always) private static func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 {
        (x << k) | (x >> (64 &- k))
    }

    public mutating func next() -> UInt64 {
        let result = Self.rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
        s2 ^= t
        s3 = Self.rotl(s3, 45)
        return result
    }

    /// Uniform in [0, 1), 53 bits.
    public mutating func uniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Standard normal deviate (mean 0, σ 1), Box-Muller.
    public mutating func gaussian() -> Double {
        if let s = spare { spare = nil; return s }
        var u1 = uniform()
        while u1 <= 0 { u1 = uniform() }
        let u2 = uniform()
        let r = (-2 * log(u1)).squareRoot()
        let theta = 2 * Double.pi * u2
        spare = r * sin(theta)
        return r * cos(theta)
    }

    /// Normal deviate with standard deviation `sigma`; `sigma == 0` returns 0
    /// without drawing (noise switched off consumes no randomness).
    public mutating func gaussian(sigma: Double) -> Double {
        sigma == 0 ? 0 : sigma * gaussian()
    }
}
