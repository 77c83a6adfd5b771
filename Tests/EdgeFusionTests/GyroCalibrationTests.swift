import Testing
@testable import EdgeFusion

@Suite struct GyroCalibrationTests {
    static let bias = Vector3(0.021, -0.013, 0.0075)   // rad/s
    static let gravity = Vector3(0, 0, 9.80665)

    /// A still board: bias + white noise on the gyro, gravity + noise on the accel.
    static func still(_ n: Int, seed: UInt64 = 1, temperature: Double = 27) -> [(Vector3, Vector3, Double)] {
        var rng = Synthetic.Random(seed: seed)
        return (0..<n).map { _ in (bias + rng.vector(0.001), gravity + rng.vector(0.03), temperature + rng.normal() * 0.01) }
    }

    @Test func averagesTheBiasOfAStillBoard() throws {
        var cal = GyroCalibrator()
        for (g, a, t) in Self.still(1000) { cal.update(gyro: g, accel: a, temperature: t) }
        #expect(cal.isStill)
        #expect(cal.progress == 1)
        let r = try cal.result()
        // σ/√n = 0.001/√1000 ≈ 3e-5 per axis
        #expect((r.bias - Self.bias).norm < 2e-4)
        #expect(abs(r.temperatureCelsius - 27) < 0.01)
        #expect(r.sampleCount == 1000)
        #expect(r.noise.max() < 0.002 && r.noise.min() > 0.0005)
        #expect(r.verdict.level == .good)
        #expect((r.apply(Self.bias + Vector3(1, 2, 3)) - Vector3(1, 2, 3)).norm < 2e-4)
    }

    @Test func refusesWhenTheBoardTurned() {
        var cal = GyroCalibrator()
        for (i, (g, a, t)) in Self.still(1000).enumerated() {
            // a nudge: 0.3 rad/s about Z for 0.5 s in the middle
            let turning = (400..<500).contains(i) ? Vector3(0, 0, 0.3) : .zero
            cal.update(gyro: g + turning, accel: a, temperature: t)
        }
        #expect(!cal.isStill)
        #expect(throws: GyroCalibrationError.self) { try cal.result() }
        do { _ = try cal.result() } catch {
            guard case .moved(let dev, let limit, _, _) = error else { Issue.record("expected .moved, got \(error)"); return }
            #expect(dev > limit)
            #expect(error.description.contains("the board moved"))
        }
    }

    @Test func refusesWhenTheBoardWasShaken() {
        var cal = GyroCalibrator()
        var rng = Synthetic.Random(seed: 9)
        for (g, a, t) in Self.still(600) { cal.update(gyro: g, accel: a + rng.vector(0.5), temperature: t) }
        #expect(throws: GyroCalibrationError.self) { try cal.result() }
    }

    @Test func needsEnoughSamples() {
        var cal = GyroCalibrator()
        for (g, a, t) in Self.still(50) { cal.update(gyro: g, accel: a, temperature: t) }
        #expect(throws: GyroCalibrationError.tooFewSamples(got: 50, needed: 200)) { try cal.result() }
        #expect(abs(cal.progress - 0.25) < 1e-12)
    }

    @Test func handingTheStateOverGivesTheSameResult() throws {
        let data = Self.still(800, seed: 4)
        var whole = GyroCalibrator()
        for (g, a, t) in data { whole.update(gyro: g, accel: a, temperature: t) }
        var first = GyroCalibrator()
        for (g, a, t) in data[..<400] { first.update(gyro: g, accel: a, temperature: t) }
        var second = GyroCalibrator(settings: first.settings, state: first.state)
        for (g, a, t) in data[400...] { second.update(gyro: g, accel: a, temperature: t) }
        #expect(try second.result() == whole.result())
    }

    @Test func aLargeBiasIsAPoorVerdict() {
        let r = GyroCalibration(bias: Vector3(0.5, 0, 0), temperatureCelsius: 25, noise: Vector3(repeating: 0.001), sampleCount: 1000)
        #expect(r.verdict.level == .poor)
        #expect(r.verdict.description.contains("°/s"))
    }
}
