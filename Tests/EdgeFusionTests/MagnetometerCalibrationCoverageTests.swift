import Testing
@testable import EdgeFusion

@Suite struct MagnetometerCalibrationCoverageTests {
    let truth = MagnetometerCalibration(
        hardIron: Vector3(12, -8, 5),
        softIron: {
            let m = Matrix3(Vector3(1.04, 0.02, 0), Vector3(0.02, 0.97, 0.01), Vector3(0, 0.01, 1.0))
            return (1 / mathCbrt(m.determinant)) * m
        }())

    /// Directions of a board turned about one axis: a circle (cone) of field directions.
    static func circle(about axis: Vector3, field: Vector3, steps: Int) -> [Vector3] {
        (0..<steps).map { Quaternion(axis: axis.normalized, angle: 2 * Double.pi * Double($0) / Double(steps)).rotate(field) }
    }

    @Test func coverageGrowsWithOrientationsAndTheFitRecoversTheIron() throws {
        var cal = MagnetometerCalibrator()
        var rng = Synthetic.Random(seed: 12)
        let field = Vector3(24, 0, -41.6)   // 48 µT, 60° down
        // turning flat only: a cone around Z — a fraction of the directions
        for d in Self.circle(about: Vector3(0, 0, 1), field: field, steps: 400) {
            cal.update(field: truth.distort(d) + rng.vector(0.2))
        }
        #expect(cal.coverage < 0.5)
        #expect(!cal.isComplete)
        #expect(throws: MagnetometerCalibrationError.self) { try cal.result() }
        #expect(cal.missingDirections.count == 26 - cal.binsSeen)
        // then through all orientations
        for d in EllipsoidFitTests.directions(1500) { cal.update(field: truth.distort(d * 48) + rng.vector(0.2)) }
        #expect(cal.binsSeen == 26)
        #expect(cal.isComplete && cal.progress == 1)
        let fit = try cal.result()
        #expect((fit.hardIron - truth.hardIron).norm < 0.3)
        #expect(abs(fit.fieldStrength - 48) < 0.5)
        #expect(fit.residual < 0.01)
        #expect(fit.verdict.level == .good)
    }

    @Test func stillSamplesAreNotKeptTwice() {
        var cal = MagnetometerCalibrator()
        for _ in 0..<100 { cal.update(field: Vector3(20, 0, -40)) }
        #expect(cal.state.samples.count == 1)
        #expect(cal.binsSeen == 0)   // a single point has no direction from its own centre
    }

    @Test func notEnoughCoverageSaysHowMany() {
        let e = MagnetometerCalibrationError.notEnoughCoverage(binsSeen: 10, needed: 24)
        #expect(e.description.contains("10 of 26"))
        #expect(e.description.contains("turn the board slowly through all orientations"))
    }

    @Test func aDistortedFieldIsNotAGoodVerdict() {
        let cal = MagnetometerCalibration(hardIron: .zero, softIron: Matrix3(diagonal: Vector3(1.5, 1, 1 / 1.5)),
                                          fieldStrength: 120, residual: 0.08)
        #expect(cal.verdict.level == .poor)
        #expect(cal.verdict.notes.count == 3)
    }

    @Test func handingTheStateOverGivesTheSameResult() throws {
        let data = EllipsoidFitTests.directions(600).map { truth.distort($0 * 50) }
        var whole = MagnetometerCalibrator()
        for d in data { whole.update(field: d) }
        var first = MagnetometerCalibrator()
        for d in data[..<300] { first.update(field: d) }
        var second = MagnetometerCalibrator(settings: first.settings, state: first.state)
        for d in data[300...] { second.update(field: d) }
        #expect(second.state == whole.state)
        #expect(try second.result() == whole.result())
    }
}
