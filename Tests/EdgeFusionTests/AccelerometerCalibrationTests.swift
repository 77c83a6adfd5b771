import Testing
@testable import EdgeFusion

@Suite struct AccelerometerCalibrationTests {
    static let g = standardGravity
    static let bias = Vector3(0.25, -0.18, 0.4)         // m/s²
    static let gain = Vector3(1.02, 0.985, 1.01)         // raw = gain ⊙ truth + bias

    /// `seconds` at 200 Hz of the board still with `up` (chip frame) pointing up.
    static func hold(_ up: Vector3, seconds: Double, rng: inout Synthetic.Random) -> [(Vector3, Vector3)] {
        (0..<Int(seconds * 200)).map { _ in (gain * (up.normalized * g) + bias + rng.vector(0.03), rng.vector(0.001)) }
    }
    /// A second of turning between poses.
    static func move(rng: inout Synthetic.Random) -> [(Vector3, Vector3)] {
        (0..<200).map { i in
            let a = Double(i) / 200 * 3
            return (Vector3(mathSin(a), mathCos(a), 0.3) * g + rng.vector(0.3), Vector3(1.2, 0, 0.4))
        }
    }
    static func sixPoses(tilt: Double = 0, seed: UInt64 = 2) -> [(Vector3, Vector3)] {
        var rng = Synthetic.Random(seed: seed)
        var out: [(Vector3, Vector3)] = []
        for pose in AccelerometerPose.allCases {
            out += move(rng: &rng)
            // tilt the pose off vertical by `tilt` radians about another axis
            var up = pose.up
            up[(pose.axis + 1) % 3] = mathTan(tilt)
            out += hold(up, seconds: 2.5, rng: &rng)
        }
        return out
    }

    @Test func recoversBiasAndScaleFromSixPoses() throws {
        var cal = AccelerometerCalibrator()
        var completed: [AccelerometerPose] = []
        for (a, w) in Self.sixPoses() {
            if let p = cal.update(accel: a, gyro: w, temperature: 24) { completed.append(p) }
        }
        #expect(completed == AccelerometerPose.allCases)
        #expect(cal.isComplete && cal.progress == 1)
        let r = try cal.result()
        #expect((r.bias - Self.bias).magnitudes.max() < 0.01)
        #expect((r.scale * Self.gain - Vector3(1, 1, 1)).magnitudes.max() < 0.001)
        #expect(r.residual < 0.01)
        #expect(r.temperatureCelsius == 24)
        #expect(r.verdict.level == .good)
        // applying it gives 1 g in every pose
        #expect(abs(r.apply(Self.gain * Vector3(0, -Self.g, 0) + Self.bias).y + Self.g) < 0.01)
    }

    @Test func posesAFewDegreesOffVerticalStillCalibrate() throws {
        var cal = AccelerometerCalibrator()
        for (a, w) in Self.sixPoses(tilt: 8 * Double.pi / 180) { cal.update(accel: a, gyro: w, temperature: nil) }
        let r = try cal.result()
        // the up/down estimate alone would be ≈1 % off in scale; the refinement fixes it
        #expect((r.bias - Self.bias).magnitudes.max() < 0.02)
        #expect((r.scale * Self.gain - Vector3(1, 1, 1)).magnitudes.max() < 0.002)
        #expect(r.temperatureCelsius.isNaN)
    }

    @Test func reportsTheMissingPoses() {
        var cal = AccelerometerCalibrator()
        var rng = Synthetic.Random(seed: 5)
        for (a, w) in Self.hold(Vector3(0, 0, 1), seconds: 3, rng: &rng) + Self.hold(Vector3(-1, 0, 0), seconds: 1, rng: &rng) {
            cal.update(accel: a, gyro: w, temperature: 20)
        }
        #expect(cal.missingPoses == [.xUp, .xDown, .yUp, .yDown, .zDown])
        #expect(abs(cal.progress(.xDown) - 0.5) < 1e-9)
        #expect(cal.state.lastBlock == .pose(.xDown))
        #expect(throws: AccelerometerCalibrationError.missingPoses([.xUp, .xDown, .yUp, .yDown, .zDown])) { try cal.result() }
        #expect(AccelerometerCalibrationError.missingPoses([.xUp]).description.contains("+X up"))
    }

    @Test func movingAndOffAxisBlocksDoNotCount() {
        var cal = AccelerometerCalibrator()
        var rng = Synthetic.Random(seed: 6)
        for (a, w) in Self.move(rng: &rng) { cal.update(accel: a, gyro: w, temperature: nil) }
        #expect(cal.state.lastBlock == .moving)
        // still at 45° between X and Z: no axis near vertical
        for (a, w) in Self.hold(Vector3(1, 0, 1), seconds: 1, rng: &rng) { cal.update(accel: a, gyro: w, temperature: nil) }
        guard case .stillOffAxis = cal.state.lastBlock else { Issue.record("got \(cal.state.lastBlock)"); return }
        #expect(cal.progress == 0)
    }

    @Test func classifiesPoses() {
        let cal = AccelerometerCalibrator()
        #expect(cal.classify(Vector3(0, 0, 9.8)) == .zUp)
        #expect(cal.classify(Vector3(0.5, -9.7, 0.3)) == .yDown)
        #expect(cal.classify(Vector3(9.0, 0, 4.5)) == nil)   // 27° off
        #expect(cal.classify(Vector3(0, 0, 5)) == nil)       // not 1 g
    }

    @Test func handingTheStateOverGivesTheSameResult() throws {
        let data = Self.sixPoses(seed: 8)
        var whole = AccelerometerCalibrator()
        for (a, w) in data { whole.update(accel: a, gyro: w, temperature: 21) }
        var first = AccelerometerCalibrator()
        let half = data.count / 2 + 7
        for (a, w) in data[..<half] { first.update(accel: a, gyro: w, temperature: 21) }
        var second = AccelerometerCalibrator(settings: first.settings, state: first.state)
        for (a, w) in data[half...] { second.update(accel: a, gyro: w, temperature: 21) }
        #expect(try second.result() == whole.result())
    }
}
