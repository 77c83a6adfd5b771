// Shared helpers for the driver round-trip and driver fault tests: the real
// drivers (EdgeChips) run against the independently written chip models
// (EdgeSim) on a VirtualClock. No tests in this file.
import Testing
import EdgeBus
import EdgeChips
import EdgeSim

/// Counts how often decoded values leave a model's `roundTripTolerance`
/// (1 LSB + 3σ of the configured noise).
///
/// With Gaussian noise a value lands beyond 3σ in 0.27 % of draws, so a
/// check over dozens of noisy values cannot demand "every value within
/// 3σ" without being a coin toss on the seed. The rule used here:
/// * no value beyond 5/3 of the tolerance (≥ 1.67 LSB + 5σ: 6e-7 a draw),
///   which is where every real bug lands (swapped axes, signs, scales are
///   tens of tolerances off with the asymmetric truths used);
/// * at most `2 + n/100` values beyond the tolerance itself (the chance of
///   3 or more out of ~40 by noise alone is ~1e-4 per test case).
struct ToleranceTally {
    var label: String
    private(set) var values = 0
    private(set) var beyond = 0
    private(set) var worstRatio = 0.0
    private(set) var worst = ""
    private(set) var beyondList: [String] = []

    init(_ label: String) { self.label = label }

    mutating func check(_ what: String, got: Double, want: Double, tolerance: Double) {
        values += 1
        let ratio = abs(got - want) / tolerance
        let text = "\(what): got \(got), want \(want) ± \(tolerance)"
        if !(ratio <= 1) { beyond += 1; beyondList.append(text) }
        if !(ratio <= worstRatio) { worstRatio = ratio; worst = text }
    }

    mutating func check(_ what: String, got: SIMD3<Double>, want: SIMD3<Double>, tolerance: SIMD3<Double>) {
        for (i, axis) in ["x", "y", "z"].enumerated() {
            check("\(what).\(axis)", got: got[i], want: want[i], tolerance: tolerance[i])
        }
    }

    func verify(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(values > 0, "\(label): nothing was checked", sourceLocation: sourceLocation)
        #expect(worstRatio <= 5.0 / 3.0, "\(label): worst value \(worst)", sourceLocation: sourceLocation)
        #expect(beyond <= 2 + values / 100,
                "\(label): \(beyond) of \(values) values beyond 1 LSB + 3σ: \(beyondList)",
                sourceLocation: sourceLocation)
    }
}

/// `boardFromChipᵀ · v`: what a chip mounted with `boardFromChip` (rows)
/// measures of a board-frame vector. Written here, not taken from EdgeSim.
func chipFrame(_ boardFromChip: [[Double]], _ v: SIMD3<Double>) -> SIMD3<Double> {
    var out = SIMD3<Double>.zero
    for i in 0..<3 { for j in 0..<3 { out[i] += boardFromChip[j][i] * v[j] } }
    return out
}

/// A board-frame tolerance carried into the chip frame (|M|ᵀ · tol).
func chipFrameTolerance(_ boardFromChip: [[Double]], _ tol: SIMD3<Double>) -> SIMD3<Double> {
    chipFrame(boardFromChip.map { $0.map { Swift.abs($0) } }, tol)
}

let nsPerSecond: UInt64 = 1_000_000_000

/// Mountings used by the round trips: identity, 90° about Z, and a cyclic
/// permutation of all three axes (X→Y→Z), both proper rotations.
enum TestMounting {
    static let identity: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    static let yaw90: [[Double]] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    static let cyclic: [[Double]] = [[0, 0, 1], [1, 0, 0], [0, 1, 0]]
    /// 180° about X (Y and Z flip sign: a chip mounted upside down).
    static let upsideDown: [[Double]] = [[1, 0, 0], [0, -1, 0], [0, 0, -1]]
}
