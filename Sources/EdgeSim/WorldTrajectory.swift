// A body's motion compiled from its scenario segments: one piece per
// segment, each with its start attitude, position and velocity worked out
// once, and evaluated analytically (value, rate and acceleration) at any
// time without allocating.
import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a body is and how it moves at one instant.
public struct WorldKinematics: Sendable, Equatable {
    /// Sensor-to-earth orientation (earth frame X north, Y west, Z up).
    public var attitude: Quaternion
    /// Angular rate, rad/s, body frame.
    public var angularRate: Vector3
    /// Position, m, earth frame, relative to the scenario's origin.
    public var position: Vector3
    /// Velocity, m/s, earth frame.
    public var velocity: Vector3
    /// Acceleration, m/s², earth frame (kinematic, without gravity).
    public var acceleration: Vector3

    /// What an accelerometer on the body measures, m/s², body frame:
    /// R_body←earth · (a − g) with g = (0, 0, −9.80665).
    public var specificForce: Vector3 {
        attitude.conjugate.rotate(acceleration + Vector3(0, 0, standardGravity))
    }
}

/// One compiled motion segment.
struct WorldPiece: Sendable {
    enum Translation: Sendable {
        case coast
        case displacement(Vector3)    // earth frame, minimum jerk
        case velocityChange(Vector3)  // earth frame, smooth step of velocity
        case turn                     // velocity rotates with the yaw angle
    }
    var start: Double, end: Double
    var label: String
    var q0: Quaternion, p0: Vector3, v0: Vector3
    /// Rotation about a fixed body-frame axis by `angle(u)` (nil: none).
    var axis: Vector3 = .zero
    var angle: ScenarioProfile? = nil
    /// For a turn: the earth vertical, for rotating the velocity.
    var translation: Translation = .coast
    // Overlays: walk (vertical bob at the step rate, sideways sway at half of it).
    var stepHz = 0.0, bob = 0.0, sway = 0.0, swayDirection: Vector3 = .zero, walkRamp = 0.0
    var vibrateAmplitude: Vector3 = .zero, vibrateHz = 0.0, vibrateRamp = 0.0
    var oscillateAxis: Vector3 = .zero, oscillateAmplitude = 0.0, oscillateHz = 0.0, oscillateRamp = 0.0

    var duration: Double { end - start }

    /// The state `u` seconds into the piece.
    func evaluate(_ u: Double) -> WorldKinematics {
        let T = duration
        // Base rotation: q0 ⊗ R(axis, θ(u)); body rate axis · θ′.
        var q = q0, w = Vector3.zero
        var theta = ScenarioMotion1D.zero
        if let angle {
            theta = angle.evaluate(u)
            q = q0 * Quaternion(axis: axis, angle: theta.value)
            w = axis * theta.rate
        }
        // Base translation.
        var p = p0 + v0 * u, v = v0, a = Vector3.zero
        switch translation {
        case .coast: break
        case .displacement(let d):
            let s = ScenarioProfile(kind: .minimumJerk(total: 1), duration: T).evaluate(u)
            p += d * s.value; v += d * s.rate; a = d * s.acceleration
        case .velocityChange(let dv):
            let tau = min(max(u / T, 0), 1)
            p += dv * (T * ScenarioSmoothStep.integral(tau))
            v += dv * ScenarioSmoothStep.value(tau)
            a = dv * (ScenarioSmoothStep.d1(tau) / T)
        case .turn:
            let up = Vector3(0, 0, 1)
            v = Quaternion(axis: up, angle: theta.value).rotate(v0)
            a = up.cross(v) * theta.rate
            p = p0 + turnDisplacement(u)
        }
        // Overlays, all zero (with their derivatives) at both ends.
        if stepHz > 0 {
            let z = scenarioEnvelopedSine(u, duration: T, ramp: walkRamp, amplitude: bob, frequencyHz: stepHz)
            let y = scenarioEnvelopedSine(u, duration: T, ramp: walkRamp, amplitude: sway, frequencyHz: stepHz / 2)
            let up = Vector3(0, 0, 1)
            p += up * z.value + swayDirection * y.value
            v += up * z.rate + swayDirection * y.rate
            a += up * z.acceleration + swayDirection * y.acceleration
        }
        if vibrateHz > 0 {
            let s = scenarioEnvelopedSine(u, duration: T, ramp: vibrateRamp, amplitude: 1, frequencyHz: vibrateHz)
            p += vibrateAmplitude * s.value; v += vibrateAmplitude * s.rate; a += vibrateAmplitude * s.acceleration
        }
        if oscillateHz > 0 {
            // q = q_base ⊗ R(axis_o, α): ω = R(axis_o, α)⁻¹ ω_base + axis_o · α′.
            let alpha = scenarioEnvelopedSine(u, duration: T, ramp: oscillateRamp,
                                              amplitude: oscillateAmplitude, frequencyHz: oscillateHz)
            let r = Quaternion(axis: oscillateAxis, angle: alpha.value)
            q = q * r
            w = r.conjugate.rotate(w) + oscillateAxis * alpha.rate
        }
        return WorldKinematics(attitude: q.normalized, angularRate: w, position: p, velocity: v, acceleration: a)
    }

    /// ∫₀^u Rz(θ(s)) v0 ds by 16-point Gauss–Legendre (θ is a smooth
    /// minimum-jerk curve, so this is exact to rounding for any turn).
    func turnDisplacement(_ u: Double) -> Vector3 {
        guard let angle, u > 0 else { return .zero }
        let half = min(u, duration) / 2, up = Vector3(0, 0, 1)
        var sum = Vector3.zero
        for (x, weight) in scenarioGaussLegendre16 {
            let a = angle.evaluate(half * (1 - x)).value, b = angle.evaluate(half * (1 + x)).value
            sum += (Quaternion(axis: up, angle: a).rotate(v0) + Quaternion(axis: up, angle: b).rotate(v0)) * weight
        }
        return sum * half
    }
}

/// A body's whole trajectory: pieces back to back from t = 0, then still.
struct WorldTrajectory: Sendable {
    var pieces: [WorldPiece]
    var start: ScenarioPose
    var final: WorldKinematics

    /// Compiles `motion`, padding with a coast (or rest) up to `duration`.
    /// `relative`: the segments describe a rotation relative to another
    /// body, so they may not translate. `path` prefixes error key paths.
    init(_ motion: ScenarioBodyMotion, duration: Double, relative: Bool, path: [String]) throws(ScenarioError) {
        start = motion.start
        var q = motion.start.attitude.normalized, p = motion.start.position, v = motion.start.velocity
        var t = 0.0
        var pieces: [WorldPiece] = []
        for (i, seg) in motion.segments.enumerated() {
            let here = path + ["segments", "Index \(i)"]
            guard seg.durationSeconds >= scenarioSmallestPositive, seg.durationSeconds <= scenarioLargestMagnitude else {
                throw ScenarioError(path: here + ["duration_s"], message: "duration_s must be within 1e-6…1e9 s, got \(seg.durationSeconds)")
            }
            if relative && (seg.translation != nil || seg.walk != nil || seg.vibrate != nil) {
                throw ScenarioError(path: here, message: "an accessory relative_to \"board\" may only rotate (rotate, rotate_to, oscillate): it rides on the board's translation")
            }
            if relative, case .turn? = seg.rotation {
                throw ScenarioError(path: here + ["turn"], message: "an accessory relative_to \"board\" cannot turn; use rotate about \"z\" with frame \"earth\"")
            }
            let T = seg.durationSeconds
            try Self.checkRamps(seg, path: here)
            var piece = WorldPiece(start: t, end: t + T, label: seg.label, q0: q, p0: p, v0: v)
            switch seg.rotation {
            case nil: break
            case .rate(let axis, let earth, let rate, let ramp)?:
                piece.axis = earth ? q.conjugate.rotate(axis).normalized : axis.normalized
                piece.angle = ScenarioProfile(kind: .trapezoid(peakRate: rate * .pi / 180, ramp: ramp), duration: T)
            case .angle(let axis, let earth, let degrees)?:
                piece.axis = earth ? q.conjugate.rotate(axis).normalized : axis.normalized
                piece.angle = ScenarioProfile(kind: .minimumJerk(total: degrees * .pi / 180), duration: T)
            case .to(let target)?:
                let (axis, angle) = (q.conjugate * target).scenarioAxisAngle
                piece.axis = axis
                piece.angle = ScenarioProfile(kind: .minimumJerk(total: angle), duration: T)
            case .turn(let degrees)?:
                piece.axis = q.conjugate.rotate(Vector3(0, 0, 1)).normalized
                piece.angle = ScenarioProfile(kind: .minimumJerk(total: degrees * .pi / 180), duration: T)
                piece.translation = .turn
            }
            let heading = WorldTrajectory.headingAxes(q)
            func toEarth(_ x: Vector3, _ frame: ScenarioTranslationFrame) -> Vector3 {
                switch frame {
                case .earth: x
                case .body: q.rotate(x)
                case .heading: heading.right * x.x + heading.forward * x.y + Vector3(0, 0, x.z)
                }
            }
            switch seg.translation {
            case nil: break
            case .displacement(let d, let frame)?: piece.translation = .displacement(toEarth(d, frame))
            case .toVelocity(let target, let frame)?: piece.translation = .velocityChange(toEarth(target, frame) - v)
            }
            let defaultRamp = min(1.0, T / 4)
            if let walk = seg.walk {
                piece.stepHz = walk.stepHz; piece.bob = walk.bobMeters; piece.sway = walk.swayMeters
                piece.swayDirection = heading.right; piece.walkRamp = walk.rampSeconds ?? defaultRamp
            }
            if let vib = seg.vibrate {
                piece.vibrateAmplitude = vib.amplitude; piece.vibrateHz = vib.frequencyHz
                piece.vibrateRamp = vib.rampSeconds ?? defaultRamp
            }
            if let osc = seg.oscillate {
                piece.oscillateAxis = osc.axis.normalized; piece.oscillateAmplitude = osc.amplitudeDegrees * .pi / 180
                piece.oscillateHz = osc.frequencyHz; piece.oscillateRamp = osc.rampSeconds ?? defaultRamp
            }
            let end = piece.evaluate(T)
            q = end.attitude; p = end.position; v = end.velocity
            pieces.append(piece)
            t += T
        }
        if t > duration + 1e-9 {
            throw ScenarioError(path: path + ["segments"], message: "the segments last \(t) s, longer than the scenario's duration_s (\(duration) s)")
        }
        if t < duration {
            pieces.append(WorldPiece(start: t, end: duration, label: v.norm > 1e-9 ? "coast" : "rest", q0: q, p0: p, v0: v))
            p += v * (duration - t)
        }
        self.pieces = pieces
        final = WorldKinematics(attitude: q, angularRate: .zero, position: p, velocity: .zero, acceleration: .zero)
    }

    /// Ramps must fit twice in the segment; frequencies must be positive
    /// (the decoder checks the same for files; this covers code).
    static func checkRamps(_ seg: ScenarioSegment, path: [String]) throws(ScenarioError) {
        let T = seg.durationSeconds
        func check(_ ramp: Double?, _ key: String) throws(ScenarioError) {
            guard let ramp else { return }
            guard ramp >= 0, 2 * ramp <= T else {
                throw ScenarioError(path: path + [key, "ramp_s"], message: "ramp_s must be within 0…\(T / 2) (half the segment), got \(ramp)")
            }
            // The envelope divides by the ramp squared (scenarioEnvelope).
            guard ramp == 0 || ramp >= scenarioSmallestPositive else {
                throw ScenarioError(path: path + [key, "ramp_s"], message: "ramp_s must be 0 or at least 1e-6 s, got \(ramp)")
            }
        }
        if case .rate(_, _, _, let ramp)? = seg.rotation { try check(ramp, "rotate") }
        try check(seg.walk?.rampSeconds, "walk"); try check(seg.vibrate?.rampSeconds, "vibrate")
        try check(seg.oscillate?.rampSeconds, "oscillate")
        for (hz, key) in [(seg.walk?.stepHz, "walk"), (seg.vibrate?.frequencyHz, "vibrate"), (seg.oscillate?.frequencyHz, "oscillate")] {
            if let hz, !(hz > 0 && hz.isFinite) {
                throw ScenarioError(path: path + [key], message: "the frequency must be > 0, got \(hz)")
            }
        }
    }

    /// Level right and forward directions of a body (earth frame): its Y
    /// axis projected on the horizontal (its −Z axis if Y is vertical).
    static func headingAxes(_ q: Quaternion) -> (right: Vector3, forward: Vector3) {
        var f = q.rotate(Vector3(0, 1, 0)); f.z = 0
        if f.norm < 1e-6 { f = -q.rotate(Vector3(0, 0, 1)); f.z = 0 }
        f = f.normalized
        return (Vector3(f.y, -f.x, 0), f)
    }

    /// Index of the piece that holds time `t` (nil: past the end).
    func pieceIndex(at t: Double) -> Int? {
        guard let last = pieces.last, t < last.end else { return nil }
        var lo = 0, hi = pieces.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if pieces[mid].end <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The body's state at `t` seconds (before 0: the start; after the
    /// last piece: still in its final pose).
    func evaluate(_ t: Double) -> WorldKinematics {
        guard let i = pieceIndex(at: max(t, 0)) else { return final }
        // In place: a copy of the piece (label and all) per sample cost more than the search.
        return pieces[i].evaluate(max(t, 0) - pieces[i].start)
    }
}

/// A scalar track (depth, temperature) compiled to pieces.
struct WorldTrack: Sendable {
    struct Piece: Sendable {
        var start: Double, end: Double, from: Double, to: Double, name: String?
        var profile: ScenarioProfile
    }
    var pieces: [Piece]
    var initial: Double, final: Double

    init(_ track: ScenarioTrack) {
        var t = 0.0, v = track.start
        var pieces: [Piece] = []
        for seg in track.segments {
            let target = seg.target ?? v, T = seg.durationSeconds
            let profile: ScenarioProfile
            switch track.shape {
            case .constantRate: profile = .trapezoid(distance: target - v, duration: T, ramp: ScenarioTrack.cornerSeconds(duration: T))
            case .minimumJerk: profile = ScenarioProfile(kind: .minimumJerk(total: target - v), duration: T)
            }
            pieces.append(Piece(start: t, end: t + T, from: v, to: target, name: seg.name, profile: profile))
            t += T; v = target
        }
        self.pieces = pieces; initial = track.start; final = v
    }

    func index(at t: Double) -> Int? {
        guard let last = pieces.last, t < last.end, t >= 0 else { return nil }
        var lo = 0, hi = pieces.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if pieces[mid].end <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    func value(at t: Double) -> Double {
        if t < 0 { return initial }
        guard let i = index(at: t) else { return final }
        let p = pieces[i]
        return p.from + p.profile.evaluate(t - p.start).value
    }
}
