// SPDX-License-Identifier: Apache-2.0 AND MIT
// SPDX-FileCopyrightText: 2021 Daniel Laidig <laidig@control.tu-berlin.de>
//
// This file follows VQF's reference implementation (github.com/dlaidig/vqf,
// vqf/cpp/vqf.cpp, MIT licence) closely. VQF's copyright and permission
// notice is reproduced in THIRD_PARTY_NOTICES at the repository root.

/// Second-order Butterworth low-pass filter, as VQF uses it for the
/// accelerometer in the almost-inertial frame, the bias-estimation terms, rest
/// detection and the magnetic norm/dip.
///
/// Source: VQF reference implementation (D. Laidig, MIT licence),
/// `vqf/cpp/vqf.cpp`: `filterCoeffs`, `filterInitialState`,
/// `filterAdaptStateForCoeffChange`, `filterStep`, `filterVec`. The time
/// constant `tau` (s) is the one of the dampened, non-oscillating part of the
/// step response: cut-off `fc = √2 / (2π tau)`.
///
/// Start-up: for the first `tau` seconds the output is the running mean of the
/// input, then the filter state is set to the steady state of that mean, so a
/// single first sample does not dominate (VQF's `filterVec`).
public struct LowPassCoefficients: Equatable, Sendable {
    public var b0: Double, b1: Double, b2: Double, a1: Double, a2: Double

    /// Coefficients for time constant `tau` (s) at sample interval `dt` (s).
    /// Pass-through when `tau < dt/2` (cut-off above 90 % of Nyquist).
    @inlinable public init(tau: Double, dt: Double) {
        precondition(dt > 0, "LowPassCoefficients: dt must be positive")
        if !(tau >= dt / 2) {
            b0 = 1; b1 = 0; b2 = 0; a1 = 0; a2 = 0
            return
        }
        let sqrt2 = 2.0.squareRoot()
        let fc = (sqrt2 / (2 * Double.pi)) / tau
        let c = mathTan(Double.pi * fc * dt)
        let d = c * c + sqrt2 * c + 1
        b0 = c * c / d
        b1 = 2 * b0
        b2 = b0
        a1 = 2 * (c * c - 1) / d
        a2 = (1 - sqrt2 * c + c * c) / d
    }
}

/// Values a `LowPassState` can filter: vectors of any fixed size.
public protocol LowPassValue: Sendable, Equatable {
    static var zero: Self { get }
    static func + (a: Self, b: Self) -> Self
    static func - (a: Self, b: Self) -> Self
    static func * (s: Double, a: Self) -> Self
}
extension SIMD2: LowPassValue where Scalar == Double {}
extension SIMD3: LowPassValue where Scalar == Double {}
extension Matrix3: LowPassValue {}

/// The state of one (vector-valued) Butterworth low-pass filter.
public struct LowPassState<Value: LowPassValue>: Equatable, Sendable {
    /// Direct-form-II-transposed state (scipy `lfilter` layout).
    public var s0: Value = .zero, s1: Value = .zero
    /// The last output.
    public var output: Value = .zero
    /// Start-up averaging: sum of inputs, count, elapsed time (s).
    public var sum: Value = .zero
    public var count: Double = 0
    public var elapsed: Double = 0
    /// False during the start-up averaging phase.
    public var running = false

    @inlinable public init() {}

    /// Filters one sample `x` taken `dt` seconds after the previous one and
    /// returns (and stores) the output.
    @inlinable @inline(__always) @discardableResult
    public mutating func step(_ x: Value, _ c: LowPassCoefficients, tau: Double, dt: Double) -> Value {
        if running {
            let y = c.b0 * x + s0
            s0 = c.b1 * x - c.a1 * y + s1
            s1 = c.b2 * x - c.a2 * y
            output = y
            return y
        }
        count += 1
        elapsed += dt
        sum = sum + x
        let mean = (1 / count) * sum
        output = mean
        if elapsed >= tau { start(at: mean, c) }
        return mean
    }

    /// Sets the steady state for a constant input `x0` (`scipy.signal.lfilter_zi`).
    @inlinable public mutating func start(at x0: Value, _ c: LowPassCoefficients) {
        s0 = (1 - c.b0) * x0
        s1 = (c.b2 - c.a2) * x0
        output = x0
        running = true
    }

    /// Keeps the output continuous when the coefficients change from `old` to
    /// `new` (VQF `filterAdaptStateForCoeffChange`).
    @inlinable public mutating func adapt(from old: LowPassCoefficients, to new: LowPassCoefficients) {
        guard running else { return }
        s0 = s0 + (old.b0 - new.b0) * output
        s1 = s1 + (old.b1 - new.b1 - old.a1 + new.a1) * output
    }
}

extension LowPassState: Codable where Value: Codable {}
