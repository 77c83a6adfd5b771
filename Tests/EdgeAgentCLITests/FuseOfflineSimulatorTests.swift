// Issue 19, item 1: `fuse --offline` on recordings of the simulator, whose
// truth log says where the board really pointed: the smoother's error is
// below the causal filter's on the same file. As a user would: `simulate`
// writes the recording and the truth, `fuse` reads it, from a directory of
// the test's own; the errors are computed here from the two CSVs.
import Testing
import Foundation
import EdgeValues

@Suite struct FuseOfflineSimulatorTests {
    /// Rows of numbers of a CSV (header skipped; the first `columns` cells).
    static func rows(_ path: String, columns: Int) throws -> [[Double]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().map { line in
            line.split(separator: ",", omittingEmptySubsequences: false).prefix(columns).map { Double($0) ?? .nan }
        }
    }

    /// RMS over the rows of the total rotation angle and of the tilt
    /// (angle between the Z axes) between two sensor-to-earth attitudes, degrees.
    static func errors(_ estimate: [[Double]], _ truth: [[Double]]) -> (total: Double, inclination: Double) {
        var total = 0.0, tilt = 0.0
        for (e, t) in zip(estimate, truth) {
            let p = Quaternion(w: e[1], x: e[2], y: e[3], z: e[4]), q = Quaternion(w: t[1], x: t[2], y: t[3], z: t[4])
            let a = p.angle(to: q) * 180 / .pi
            let zp = p.inverseRotate(Vector3(0, 0, 1)), zq = q.inverseRotate(Vector3(0, 0, 1))
            let b = acos(max(-1, min(1, zp.dot(zq)))) * 180 / .pi
            total += a * a; tilt += b * b
        }
        let n = Double(min(estimate.count, truth.count))
        return ((total / n).squareRoot(), (tilt / n).squareRoot())
    }

    @Test(arguments: ["pickup-walk", "calibrate-mag"])
    func theSmootherBeatsTheCausalFilterOnASimulatedRecording(_ scenario: String) throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("offline")
        defer { DaemonPaths.removeTree(dir) }
        let root = DaemonPaths.packageRoot
        let sim = try ToolRun.run(["simulate", "\(root)/scenarios/\(scenario).json5", "--csv", "s.csv", "--truth", "s.truth.csv"],
                                  in: dir, seconds: 300)
        try #require(sim.status == 0, "\(sim.err)")
        var errors: [String: (total: Double, inclination: Double)] = [:]
        for (name, extra) in [("causal", [String]()), ("offline", ["--offline"])] {
            let fuse = try ToolRun.run(["fuse", "--input", "s.csv", "--output", "\(name).csv",
                                        "--mag-calibration", "\(root)/config/calibration.json"] + extra, in: dir, seconds: 300)
            try #require(fuse.status == 0, "\(fuse.err)")
            let out = try Self.rows(dir + "/\(name).csv", columns: 5), truth = try Self.rows(dir + "/s.truth.csv", columns: 5)
            try #require(out.count == truth.count && out.count > 1000, "\(out.count) rows, truth \(truth.count)")
            errors[name] = Self.errors(out, truth)
        }
        let c = try #require(errors["causal"]), o = try #require(errors["offline"])
        #expect(o.total < 0.95 * c.total, "\(scenario): total RMS offline \(o.total)°, causal \(c.total)°")
        #expect(o.inclination < c.inclination, "\(scenario): inclination RMS offline \(o.inclination)°, causal \(c.inclination)°")
    }
}
