import EdgeFusion

/// Deterministic synthetic sensor data for the filter tests.
///
/// Truth is a sensor-to-NWU orientation (Core Motion's
/// xMagneticNorthZVertical). Sensors: gyroscope = body rate that moves the
/// truth from the previous sample to this one exactly (plus bias and noise),
/// accelerometer = specific force in the sensor frame, magnetometer = the
/// earth field (plus disturbance) in the sensor frame.
struct Synthetic {
    /// Earth field in NWU, µT: 20 north, 45 down (dip ≈ 66°, like central Europe).
    static let earthField = Vector3(20, 0, -45)
    static let g = 9.81

    struct Sample {
        var t: Double
        var gyro: Vector3, accel: Vector3, mag: Vector3?
        var truth: Quaternion
    }

    /// xorshift64*: reproducible noise on every platform.
    struct Random {
        var s: UInt64
        init(seed: UInt64) { s = seed == 0 ? 0x9E3779B97F4A7C15 : seed }
        mutating func next() -> UInt64 {
            s ^= s >> 12; s ^= s << 25; s ^= s >> 27
            return s &* 2685821657736338717
        }
        /// Uniform in [0, 1).
        mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
        /// Approximately normal (sum of 4 uniforms), unit variance.
        mutating func normal() -> Double {
            (uniform() + uniform() + uniform() + uniform() - 2) * 3.0.squareRoot()
        }
        mutating func vector(_ sigma: Double) -> Vector3 { Vector3(normal(), normal(), normal()) * sigma }
    }

    var dt = 0.005
    var gyroBias = Vector3.zero
    var gyroNoise = 0.002          // rad/s
    var accelNoise = 0.02          // m/s²
    var magNoise = 0.2             // µT
    var seed: UInt64 = 1

    /// Generates `duration` seconds. `orientation(t)` is the truth,
    /// `acceleration(t)` the linear acceleration in NWU (m/s²),
    /// `magDisturbance(t)` an extra field in the sensor frame (µT),
    /// `withMag` false for 6D.
    func generate(duration: Double,
                  orientation: (Double) -> Quaternion,
                  acceleration: (Double) -> Vector3 = { _ in .zero },
                  magDisturbance: (Double) -> Vector3 = { _ in .zero },
                  biasAt: ((Double) -> Vector3)? = nil,
                  withMag: Bool = true) -> [Sample] {
        var rng = Random(seed: seed)
        var out: [Sample] = []
        let n = Int((duration / dt).rounded())
        var previous = orientation(-dt)
        for i in 0..<n {
            let t = Double(i) * dt
            let q = orientation(t)
            let rate = (previous.conjugate * q).rotationVector / dt
            previous = q
            let bias = biasAt?(t) ?? gyroBias
            let gyro = rate + bias + rng.vector(gyroNoise)
            let f = acceleration(t) + Vector3(0, 0, Self.g)
            let accel = q.inverseRotate(f) + rng.vector(accelNoise)
            let mag = withMag ? q.inverseRotate(Self.earthField) + magDisturbance(t) + rng.vector(magNoise) : nil
            out.append(Sample(t: t, gyro: gyro, accel: accel, mag: mag, truth: q))
        }
        return out
    }

    /// Runs a filter over samples; returns the filter and its NWU attitude per sample.
    static func run(_ samples: [Sample], settings: AttitudeFilter.Settings = .init(), dt: Double = 0.005,
                    frame: ReferenceFrame = .xMagneticNorthZVertical) -> (AttitudeFilter, [Quaternion]) {
        var f = AttitudeFilter(settings: settings, sampleInterval: dt)
        var qs: [Quaternion] = []
        qs.reserveCapacity(samples.count)
        for s in samples {
            f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: dt)
            qs.append(f.quaternion(in: frame))
        }
        return (f, qs)
    }
}

/// Angle (degrees) between the Z axes (inclination error) of two orientations.
func inclinationError(_ a: Quaternion, _ b: Quaternion) -> Double {
    let za = a.inverseRotate(Vector3(0, 0, 1)), zb = b.inverseRotate(Vector3(0, 0, 1))
    return mathAcos(max(-1, min(1, za.dot(zb)))) * 180 / .pi
}

/// Total rotation angle between two orientations, degrees (q and −q equal).
func angleDegrees(_ a: Quaternion, _ b: Quaternion) -> Double { a.angle(to: b) * 180 / .pi }

let deg = Double.pi / 180
