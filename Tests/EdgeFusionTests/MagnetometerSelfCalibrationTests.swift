import Testing
@testable import EdgeFusion

/// The continuous hard-iron estimator against synthetic truth: the readings
/// are the Earth's field turned by a known orientation plus a known
/// sensor-fixed offset (a magnet carried with the sensor), the gyroscope the
/// rate that produces that orientation.
@Suite struct MagnetometerSelfCalibrationTests {
    /// Tumbling about all three axes, about 1 rad/s.
    static func tumble(_ t: Double) -> Quaternion {
        Quaternion(axis: Vector3(0, 0, 1), angle: 0.9 * t)
            * Quaternion(axis: Vector3(1, 0, 0), angle: 1.1 * mathSin(0.35 * t))
            * Quaternion(axis: Vector3(0, 1, 0), angle: 0.8 * mathSin(0.5 * t + 1))
    }

    /// Runs the estimator over the samples; `each` sees it after every field.
    static func run(_ samples: [Synthetic.Sample], _ e: inout MagnetometerSelfCalibration, dt: Double = 0.005,
                    each: (Double, MagnetometerSelfCalibration) -> Void = { _, _ in }) {
        for s in samples {
            e.rotate(by: s.gyro, dt: dt)
            if let m = s.mag { e.update(field: m); each(s.t, e) }
        }
    }

    let offset = Vector3(15, -25, 10)

    @Test func learnsASensorFixedOffsetFromVariedRotationWithinAMinute() {
        let samples = Synthetic().generate(duration: 60, orientation: Self.tumble, magDisturbance: { _ in offset })
        var e = MagnetometerSelfCalibration()
        var highAt: Double?
        Self.run(samples, &e) { t, e in if highAt == nil && e.accuracy == .high { highAt = t } }
        #expect(e.accuracy == .high)
        #expect(highAt != nil && highAt! < 60)
        #expect((e.offset - offset).norm < 0.5, "learned \(e.offset), truth \(offset)")
        // the calibrated field is the Earth's: its size is 49.2 µT
        #expect(abs(e.state.fieldStrength - Synthetic.earthField.norm) < 1)
    }

    @Test func rotationAboutOneAxisLeavesThatAxisUnknownAndTheAccuracyUncalibrated() {
        let samples = Synthetic().generate(duration: 60, orientation: { Quaternion(axis: Vector3(0, 0, 1), angle: 0.9 * $0) },
                                           magDisturbance: { _ in offset })
        var e = MagnetometerSelfCalibration()
        Self.run(samples, &e)
        #expect(e.accuracy == .uncalibrated)
        // the horizontal components are observable: learned
        #expect(abs(e.offset.x - offset.x) < 0.5 && abs(e.offset.y - offset.y) < 0.5, "\(e.offset)")
    }

    @Test func aBoardThatNeverTurnsStaysUncalibrated() {
        let samples = Synthetic().generate(duration: 120, orientation: { _ in Quaternion(axis: Vector3(1, 0, 0), angle: 0.3) },
                                           magDisturbance: { _ in offset })
        var e = MagnetometerSelfCalibration()
        Self.run(samples, &e)
        #expect(e.accuracy == .uncalibrated)
        #expect(e.state.equations == 0)
    }

    @Test func aMovedMagnetIsDetectedTheAccuracyDropsAndTheNewOffsetIsLearned() {
        let moved = Vector3(-20, 5, 30)
        let samples = Synthetic().generate(duration: 120, orientation: Self.tumble,
                                           magDisturbance: { $0 < 60 ? offset : moved })
        var e = MagnetometerSelfCalibration()
        var highBefore = false, droppedAt: Double?, highAgainAt: Double?
        Self.run(samples, &e) { t, e in
            if t < 60 { highBefore = highBefore || e.accuracy == .high }
            if t >= 60 && droppedAt == nil && e.accuracy == .uncalibrated { droppedAt = t }
            if let d = droppedAt, t > d, highAgainAt == nil, e.accuracy == .high { highAgainAt = t }
        }
        #expect(highBefore)
        #expect(droppedAt != nil && droppedAt! < 65, "dropped at \(String(describing: droppedAt))")
        #expect(highAgainAt != nil, "never high again")
        #expect(e.state.jumps == 1)
        #expect((e.offset - moved).norm < 0.5, "learned \(e.offset), truth \(moved)")
    }

    @Test func handingTheStateOverHalfwayGivesTheSameOutput() {
        let samples = Synthetic().generate(duration: 20, orientation: Self.tumble, magDisturbance: { _ in offset })
        var whole = MagnetometerSelfCalibration()
        Self.run(samples, &whole)
        var first = MagnetometerSelfCalibration()
        Self.run(Array(samples[..<1999]), &first)
        var second = MagnetometerSelfCalibration(settings: first.settings, state: first.state)
        Self.run(Array(samples[1999...]), &second)
        #expect(second.state == whole.state)
    }

    @Test func aSeedStartsCalibratedAndAWrongSeedIsFoundOut() {
        let samples = Synthetic().generate(duration: 30, orientation: Self.tumble, magDisturbance: { _ in offset })
        var right = MagnetometerSelfCalibration()
        right.seed(offset: offset, uncertainty: 0.2, fieldStrength: 49)
        #expect(right.accuracy == .high)
        Self.run(samples, &right)
        #expect(right.accuracy == .high && right.state.jumps == 0)
        var wrong = MagnetometerSelfCalibration()
        wrong.seed(offset: offset + Vector3(10, 0, 0), uncertainty: 0.2, fieldStrength: 49)
        Self.run(samples, &wrong)
        #expect(wrong.state.jumps == 1)
        #expect((wrong.offset - offset).norm < 0.5, "\(wrong.offset)")
    }

    @Test func smallestEigenvalueAgreesWithJacobi() {
        var rng = Synthetic.Random(seed: 7)
        for _ in 0..<200 {
            let a = Matrix3(rng.vector(3), rng.vector(3), rng.vector(3))
            let s = a.transposed * a + Matrix3(scaledIdentity: rng.uniform())
            let jacobi = symmetricEigen(s).values
            #expect(abs(smallestEigenvalue(s) - min(jacobi.x, jacobi.y, jacobi.z)) < 1e-9 * max(1, s.trace))
        }
        #expect(smallestEigenvalue(Matrix3(diagonal: Vector3(3, 1, 2))) == 1)
    }
}

@Suite struct LearnedMagnetometerCalibrationTests {
    /// Folded into the guided calibration in the chip frame, the learned
    /// offset calibrates a raw reading to what the guided calibration, the
    /// mounting and the learned offset gave in the board frame; and seeding
    /// from it restores the learned uncertainty.
    @Test func theLearnedOffsetFoldsIntoTheChipFrameHardIron() throws {
        let offset = Vector3(15, -25, 10)
        let samples = Synthetic().generate(duration: 60, orientation: MagnetometerSelfCalibrationTests.tumble,
                                           magDisturbance: { _ in offset })
        var e = MagnetometerSelfCalibration()
        MagnetometerSelfCalibrationTests.run(samples, &e)
        try #require(e.accuracy == .high)
        let guided = MagnetometerCalibration(hardIron: Vector3(3, -5, 2),
                                             softIron: Matrix3(Vector3(1.02, 0.01, 0), Vector3(0.01, 0.98, 0.004), Vector3(0, 0.004, 1)),
                                             fieldStrength: 48, residual: 0.01)
        // the chip's X is the board's Y, its Y the board's −X (a 90° mounting)
        let mounting = Matrix3(Vector3(0, -1, 0), Vector3(1, 0, 0), Vector3(0, 0, 1))
        let learned = try #require(e.learnedCalibration(guided: guided, boardFromChip: mounting))
        var rng = Synthetic.Random(seed: 3)
        for _ in 0..<20 {
            let raw = rng.vector(40)
            let before = mounting * guided.apply(raw) - e.offset
            let after = mounting * learned.apply(raw)
            #expect((before - after).norm < 1e-9)
        }
        var restarted = MagnetometerSelfCalibration()
        restarted.seed(guided: learned)
        #expect(abs(restarted.state.uncertainty - e.state.uncertainty) < 1e-9)
        #expect(abs(learned.fieldStrength - e.state.fieldStrength) < 1e-12)
        // nothing learned yet: nothing to save
        #expect(MagnetometerSelfCalibration().learnedCalibration(guided: guided, boardFromChip: mounting) == nil)
    }

    /// The learned soft iron is saved with its hard iron in the chip frame:
    /// the board field the saved calibration gives is the one the learner
    /// removed both from (`G·y − c`), and it is the Earth's field (scaled to
    /// trace G = 3) in every orientation; a learner seeded from it starts
    /// with the soft iron already removed.
    @Test func theLearnedSoftIronFoldsIntoTheChipFrameCalibration() throws {
        let offset = Vector3(15, -25, 10)
        let d = Matrix3(Vector3(1.08, 0.04, -0.03), Vector3(0.04, 0.93, 0.05), Vector3(-0.03, 0.05, 1.0))
        let guided = MagnetometerCalibration(hardIron: Vector3(3, -5, 2),
                                             softIron: Matrix3(Vector3(1.02, 0.01, 0), Vector3(0.01, 0.98, 0.004), Vector3(0, 0.004, 1)),
                                             fieldStrength: 48, residual: 0.01)
        let mounting = Matrix3(Vector3(0, -1, 0), Vector3(1, 0, 0), Vector3(0, 0, 1))
        // the chip's raw reading whose guided board-frame field is D·m + b
        let sInverse = try #require(guided.softIron.inverse)
        let raw = { (m: Vector3) in guided.hardIron + sInverse * (mounting.transposed * (d * m + offset)) }
        let samples = Synthetic().generate(duration: 180, orientation: MagnetometerSelfCalibrationTests.tumble)
        var learning = MagnetometerSelfCalibration.Settings()
        learning.softIron = true
        var e = MagnetometerSelfCalibration(settings: learning)
        var rng = Synthetic.Random(seed: 5)
        for s in samples {
            e.rotate(by: s.gyro, dt: 0.005)
            e.update(field: d * s.truth.conjugate.rotate(Synthetic.earthField) + offset + rng.vector(0.2))
        }
        try #require(e.isSoftIronApplied, "shape 1 σ \(e.softIron.state.shapeUncertainty)")
        let learned = try #require(e.learnedCalibration(guided: guided, boardFromChip: mounting))
        #expect(learned.softIron != guided.softIron)
        let k = 3 / (try #require(d.inverse)).trace
        for t in stride(from: 0.0, to: 60, by: 3.1) {
            let m = MagnetometerSelfCalibrationTests.tumble(t).conjugate.rotate(Synthetic.earthField)
            let board = mounting * learned.apply(raw(m))
            // what the learner removed, the same algebra
            #expect((board - (e.appliedShape * (d * m + offset) - e.appliedScaledOffset)).norm < 1e-9)
            // the Earth's field, to the learning's accuracy
            #expect((board - k * m).norm < 0.3, "\(board) against \(k * m)")
        }
        // a restart: seeded from what was saved, nothing is left to remove
        var restarted = MagnetometerSelfCalibration(settings: learning)
        restarted.seed(guided: learned)
        #expect(restarted.state.uncertainty >= e.state.uncertainty * (1 - 1e-9))
        #expect(!restarted.isSoftIronApplied && !restarted.isApplied)
    }
}
