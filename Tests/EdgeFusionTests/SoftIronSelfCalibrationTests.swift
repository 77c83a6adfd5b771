import Testing
@testable import EdgeFusion

/// The soft- and hard-iron estimator on simulated readings `y = D·m + b`
/// with a known `D` and `b`: the gyroscope turns the Earth's field, pairs
/// are closed every 30° of rotation (as `MagnetometerSelfCalibration` does).
@Suite struct SoftIronSelfCalibrationTests {
    /// Soft iron of a steel part near the sensor: 8 % stretch, 7 % squeeze, shear of a few per cent.
    static let softIron = Matrix3(Vector3(1.08, 0.04, -0.03), Vector3(0.04, 0.93, 0.05), Vector3(-0.03, 0.05, 1.0))
    static let hardIron = Vector3(15, -25, 10)

    /// Runs the estimator over `duration` s of `orientation` (200 Hz).
    static func learn(duration: Double, orientation: @escaping (Double) -> Quaternion,
                      softIron d: Matrix3 = softIron, hardIron b: Vector3 = hardIron) -> SoftIronSelfCalibration {
        var sim = Synthetic()
        sim.magNoise = 0
        let samples = sim.generate(duration: duration, orientation: orientation)
        var rng = Synthetic.Random(seed: 7)
        var estimator = SoftIronSelfCalibration()
        var rotation = Quaternion.identity
        var key: Vector3?
        var elapsed = 0.0
        let pairCosine = mathCos(30 * Double.pi / 360)
        for s in samples {
            rotation = (rotation * Quaternion(rotationVector: s.gyro * sim.dt)).renormalized
            elapsed += sim.dt
            let m = s.truth.conjugate.rotate(Synthetic.earthField)
            let y = d * m + b + rng.vector(0.2)
            guard let first = key else { key = y; rotation = .identity; continue }
            guard abs(rotation.w) <= pairCosine else { continue }
            estimator.add(first: first, second: y, rotation: rotation.rotationMatrix.transposed, elapsed: elapsed)
            key = y; rotation = .identity; elapsed = 0
        }
        return estimator
    }

    /// `D⁻¹` scaled to trace 3, the convention the estimator reports in
    /// (rotation cannot tell the field's overall scale).
    static func expectedShape(_ d: Matrix3) -> Matrix3 {
        let g = d.inverse!
        return (3 / g.trace) * g
    }

    static func largestDifference(_ a: Matrix3, _ b: Matrix3) -> Double {
        let e = a - b
        return [e.r0, e.r1, e.r2].map { max(abs($0.x), abs($0.y), abs($0.z)) }.max()!
    }

    @Test func tumblingRecoversSoftAndHardIron() throws {
        let e = Self.learn(duration: 120, orientation: MagnetometerSelfCalibrationTests.tumble)
        #expect(e.isShapeKnown, "shape 1 σ \(e.state.shapeUncertainty) after \(e.state.equations) pairs")
        let shapeError = Self.largestDifference(e.shape, Self.expectedShape(Self.softIron))
        #expect(shapeError < 0.003, "G off by up to \(shapeError)")
        #expect((e.offset - Self.hardIron).norm < 0.3, "hard iron \(e.offset)")
        // the calibrated field has one strength in every orientation
        var lo = Double.infinity, hi = 0.0
        for t in stride(from: 0.0, to: 60, by: 0.7) {
            let y = Self.softIron * MagnetometerSelfCalibrationTests.tumble(t).conjugate.rotate(Synthetic.earthField) + Self.hardIron
            let n = try #require(e.calibrated(y)).norm
            lo = min(lo, n); hi = max(hi, n)
        }
        #expect(hi / lo - 1 < 0.005, "calibrated strength \(lo)…\(hi) µT")
        // and its error is within a few times the claimed uncertainty
        #expect(shapeError < 6 * e.state.shapeUncertainty, "error \(shapeError), 1 σ \(e.state.shapeUncertainty)")
    }

    @Test func hardIronAloneGivesNoSoftIron() {
        let e = Self.learn(duration: 120, orientation: MagnetometerSelfCalibrationTests.tumble, softIron: .identity)
        #expect(Self.largestDifference(e.shape, .identity) < 0.003, "G \(e.shape)")
        #expect((e.offset - Self.hardIron).norm < 0.3, "hard iron \(e.offset)")
    }

    /// Turning about the vertical alone leaves the shape along that axis
    /// unknown: the estimator must say so, not apply a guess.
    @Test func turningAboutOneAxisIsNotEnough() {
        let e = Self.learn(duration: 120, orientation: { Quaternion(yaw: 0.9 * $0) })
        #expect(!e.isShapeKnown, "shape 1 σ \(e.state.shapeUncertainty)")
        #expect(e.calibrated(Vector3(20, 0, -45)) == nil)
    }

    /// In the loop (`MagneticFieldLearning`, as the fusion stage runs it):
    /// a board carrying soft and hard iron, tumbling. Hard iron alone
    /// leaves the soft iron's heading error; with `softIron` the learned
    /// shape is removed once known and the attitude error falls.
    static func attitudeError(softIron learnsSoftIron: Bool) -> Double {
        var sim = Synthetic()
        let truthField = { (q: Quaternion) in Self.softIron * q.conjugate.rotate(Synthetic.earthField) + Self.hardIron }
        let samples = sim.generate(duration: 180, orientation: MagnetometerSelfCalibrationTests.tumble)
        sim.magNoise = 0
        var learningSettings = MagnetometerSelfCalibration.Settings()
        learningSettings.softIron = learnsSoftIron
        let settings = AttitudeFilter.Settings()
        var filter = AttitudeFilter(settings: settings.running, sampleInterval: sim.dt)
        var learning = MagneticFieldLearning(enabled: true, settings: learningSettings)
        var rng = Synthetic.Random(seed: 3)
        var squares = 0.0, count = 0.0
        for s in samples {
            learning.update(&filter, gyro: s.gyro, accel: s.accel, mag: truthField(s.truth) + rng.vector(0.2), dt: sim.dt)
            guard s.t >= 120 else { continue }
            let e = angleDegrees(filter.quaternion(in: .xMagneticNorthZVertical), s.truth)
            squares += e * e; count += 1
        }
        return (squares / count).squareRoot()
    }

    @Test func inTheLoopTheSoftIronLeavesTheHeading() {
        let hard = Self.attitudeError(softIron: false), soft = Self.attitudeError(softIron: true)
        #expect(soft < 0.2, "with soft iron \(soft)°, hard iron only \(hard)°")
        #expect(soft < 0.25 * hard, "with soft iron \(soft)°, hard iron only \(hard)°")
    }
}
