// Smooth 1-D profiles and small geometry helpers for scenarios.
// Pure functions, no allocation: ScenarioWorld evaluates them on every
// truth query.
import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Minimum-jerk smooth step on τ ∈ [0, 1]: h = 10τ³ − 15τ⁴ + 6τ⁵.
/// h, h′ and h″ are 0 at τ = 0, and h = 1, h′ = h″ = 0 at τ = 1, so a
/// position that follows it has continuous velocity and acceleration.
enum ScenarioSmoothStep {
    @inline(__always) static func value(_ t: Double) -> Double {
        let u = min(max(t, 0), 1); return u * u * u * (10 + u * (-15 + 6 * u))
    }
    @inline(__always) static func d1(_ t: Double) -> Double {
        let u = min(max(t, 0), 1); let v = u * (1 - u); return 30 * v * v
    }
    @inline(__always) static func d2(_ t: Double) -> Double {
        let u = min(max(t, 0), 1); return 60 * u * (1 - u) * (1 - 2 * u)
    }
    /// ∫₀^τ h = 2.5τ⁴ − 3τ⁵ + τ⁶ (equals 1/2 at τ = 1).
    @inline(__always) static func integral(_ t: Double) -> Double {
        let u = min(max(t, 0), 1); let u4 = u * u * u * u
        return u4 * (2.5 + u * (-3 + u))
    }
}

/// Value, first and second time derivative of a scalar motion.
struct ScenarioMotion1D: Equatable {
    var value: Double, rate: Double, acceleration: Double
    static let zero = ScenarioMotion1D(value: 0, rate: 0, acceleration: 0)
}

/// A scalar that moves from 0 over `duration` seconds, either
/// * `.minimumJerk(total)`: reaches `total` along the minimum-jerk curve,
///   at rest at both ends; or
/// * `.trapezoid(peakRate, ramp)`: the rate rises from 0 to `peakRate` along
///   a smooth step of `ramp` seconds, holds, and falls back to 0 over the
///   last `ramp` seconds (ramp = 0: a constant rate from start to end).
///   The total is peakRate · (duration − ramp).
struct ScenarioProfile: Equatable {
    enum Kind: Equatable { case minimumJerk(total: Double), trapezoid(peakRate: Double, ramp: Double) }
    var kind: Kind
    var duration: Double

    static func trapezoid(distance: Double, duration: Double, ramp: Double) -> ScenarioProfile {
        let r = min(ramp, duration / 2)
        return ScenarioProfile(kind: .trapezoid(peakRate: distance / (duration - r), ramp: r), duration: duration)
    }

    var total: Double {
        switch kind {
        case .minimumJerk(let total): return total
        case .trapezoid(let peak, let ramp): return peak * (duration - ramp)
        }
    }

    /// Evaluates at `u` seconds after the start (clamped to [0, duration]).
    func evaluate(_ u: Double) -> ScenarioMotion1D {
        let T = duration
        switch kind {
        case .minimumJerk(let total):
            guard T > 0 else { return ScenarioMotion1D(value: total, rate: 0, acceleration: 0) }
            if u >= T { return ScenarioMotion1D(value: total, rate: 0, acceleration: 0) }
            let tau = max(u, 0) / T
            return ScenarioMotion1D(value: total * ScenarioSmoothStep.value(tau),
                                    rate: total * ScenarioSmoothStep.d1(tau) / T,
                                    acceleration: total * ScenarioSmoothStep.d2(tau) / (T * T))
        case .trapezoid(let peak, let r):
            let t = min(max(u, 0), T)
            if r <= 0 { return ScenarioMotion1D(value: peak * t, rate: peak, acceleration: 0) }
            if t < r {
                let tau = t / r
                return ScenarioMotion1D(value: peak * r * ScenarioSmoothStep.integral(tau),
                                        rate: peak * ScenarioSmoothStep.value(tau),
                                        acceleration: peak * ScenarioSmoothStep.d1(tau) / r)
            }
            if t > T - r {
                let tau = (T - t) / r
                return ScenarioMotion1D(value: peak * (T - r) - peak * r * ScenarioSmoothStep.integral(tau),
                                        rate: peak * ScenarioSmoothStep.value(tau),
                                        acceleration: -peak * ScenarioSmoothStep.d1(tau) / r)
            }
            return ScenarioMotion1D(value: peak * (r / 2 + (t - r)), rate: peak, acceleration: 0)
        }
    }
}

/// An envelope that rises from 0 to 1 over `ramp` seconds at the start and
/// falls back to 0 over the last `ramp` seconds, along smooth steps, so an
/// oscillation multiplied by it starts and ends with zero value, rate and
/// acceleration.
@inline(__always)
func scenarioEnvelope(_ u: Double, duration T: Double, ramp r: Double) -> ScenarioMotion1D {
    if u <= 0 || u >= T { return .zero }
    if r <= 0 { return ScenarioMotion1D(value: 1, rate: 0, acceleration: 0) }
    if u < r {
        let tau = u / r
        return ScenarioMotion1D(value: ScenarioSmoothStep.value(tau), rate: ScenarioSmoothStep.d1(tau) / r,
                                acceleration: ScenarioSmoothStep.d2(tau) / (r * r))
    }
    if u > T - r {
        let tau = (T - u) / r
        return ScenarioMotion1D(value: ScenarioSmoothStep.value(tau), rate: -ScenarioSmoothStep.d1(tau) / r,
                                acceleration: ScenarioSmoothStep.d2(tau) / (r * r))
    }
    return ScenarioMotion1D(value: 1, rate: 0, acceleration: 0)
}

/// `amplitude · envelope(u) · sin(2π f u)` with its derivatives.
@inline(__always)
func scenarioEnvelopedSine(_ u: Double, duration: Double, ramp: Double,
                           amplitude: Double, frequencyHz: Double) -> ScenarioMotion1D {
    let e = scenarioEnvelope(u, duration: duration, ramp: ramp)
    if e.value == 0 && e.rate == 0 && e.acceleration == 0 { return .zero }
    let w = 2 * Double.pi * frequencyHz
    let s = sin(w * u), c = cos(w * u)
    return ScenarioMotion1D(
        value: amplitude * e.value * s,
        rate: amplitude * (e.rate * s + e.value * w * c),
        acceleration: amplitude * (e.acceleration * s + 2 * e.rate * w * c - e.value * w * w * s))
}

/// Standard-atmosphere pressure (ICAO, troposphere) at `altitude` metres
/// above the level where the pressure is `seaLevel` Pa:
/// p = p₀ · (1 − 2.25577·10⁻⁵ · h)^5.25588.
public func scenarioStandardAtmospherePressure(altitude: Double, seaLevel: Double = 101_325) -> Double {
    let base = max(1 - 2.25577e-5 * altitude, 0)
    return seaLevel * pow(base, 5.25588)
}

/// Hydrostatic pressure `depth` metres below a surface at `surface` Pa in
/// water of `density` kg/m³: p = surface + ρ · g · depth (depth ≤ 0: surface).
public func scenarioWaterPressure(depth: Double, surface: Double = 101_325, density: Double = 1025) -> Double {
    surface + density * standardGravity * max(depth, 0)
}

/// Earth's magnetic field in the scenario earth frame (X north, Y west,
/// Z up), µT, from total intensity, inclination (positive: the field
/// points down, as in the northern hemisphere) and declination (positive:
/// magnetic north lies east of true north).
public func scenarioEarthField(intensity: Double, inclinationDegrees: Double,
                               declinationDegrees: Double) -> Vector3 {
    let inc = inclinationDegrees * .pi / 180, dec = declinationDegrees * .pi / 180
    let h = intensity * cos(inc)
    // East is −Y in a north-west-up frame.
    return Vector3(h * cos(dec), -h * sin(dec), -intensity * sin(inc))
}

extension Quaternion {
    /// Orientation from Core Motion-style Euler angles, degrees: yaw about
    /// the earth's vertical (Z), then pitch about the board's X (right)
    /// axis, then roll about the board's Y (forward) axis:
    /// q = Rz(yaw) · Rx(pitch) · Ry(roll). Positive pitch raises the
    /// board's forward edge, positive roll lowers its right edge, positive
    /// yaw turns it counter-clockwise seen from above (from north toward
    /// west). At yaw 0 the board's X axis points north and its forward (Y)
    /// edge west, as in Core Motion's north-referenced frames.
    public static func scenario(rollDegrees: Double, pitchDegrees: Double, yawDegrees: Double) -> Quaternion {
        let d = Double.pi / 180
        let qz = Quaternion(axis: Vector3(0, 0, 1), angle: yawDegrees * d)
        let qx = Quaternion(axis: Vector3(1, 0, 0), angle: pitchDegrees * d)
        let qy = Quaternion(axis: Vector3(0, 1, 0), angle: rollDegrees * d)
        return (qz * qx * qy).normalized
    }

    /// Rotation axis (unit) and angle in [0, π] of this unit quaternion.
    var scenarioAxisAngle: (axis: Vector3, angle: Double) {
        var q = self.normalized
        if q.w < 0 { q = Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z) }
        let s = q.vector.norm
        if s < 1e-15 { return (Vector3(1, 0, 0), 0) }
        return (q.vector / s, 2 * atan2(s, q.w))
    }
}

/// 16-point Gauss–Legendre nodes and weights on [−1, 1] (positive half).
let scenarioGaussLegendre16: [(node: Double, weight: Double)] = [
    (0.0950125098376374, 0.1894506104550685), (0.2816035507792589, 0.1826034150449236),
    (0.4580167776572274, 0.1691565193950025), (0.6178762444026438, 0.1495959888165767),
    (0.7554044083550030, 0.1246289712555339), (0.8656312023878318, 0.0951585116824928),
    (0.9445750230732326, 0.0622535239386479), (0.9894009349916499, 0.0271524594117541),
]
