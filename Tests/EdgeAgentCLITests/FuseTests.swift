import Testing
import Foundation
import EdgeConfig
import EdgeFusion
@testable import EdgeAgentCLI
import EdgeRuntime

/// `edge-agent fuse`: golden outputs on a committed synthetic recording, and
/// the error paths.
///
/// Regenerate the goldens (and the recording, which is generated
/// deterministically) with
///
///     EDGE_REGENERATE_GOLDENS=1 swift test --filter FuseGoldenTests
///
/// and explain the change in the commit message. A missing golden fails
/// (it is never re-created by a plain run).
@Suite(.serialized) struct FuseGoldenTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fusion")
    static let input = fixtures.appendingPathComponent("synthetic_turns.csv")
    static var regenerate: Bool { ProcessInfo.processInfo.environment["EDGE_REGENERATE_GOLDENS"] == "1" }
    static let regenerateCommand = "`EDGE_REGENERATE_GOLDENS=1 swift test --filter FuseGoldenTests`"

    /// The VQF path (`--self-calibration off`): the goldens predate the
    /// continuous calibration and are VQF's output, which must not change.
    static let goldens: [(mode: String, extra: [String], expected: String)] = [
        ("9d", ["--self-calibration", "off"], "synthetic_turns.9d.expected.csv"),
        ("6d", ["--self-calibration", "off"], "synthetic_turns.6d.expected.csv"),
        ("9d", ["--self-calibration", "off", "--frame", "xTrueNorthZVertical", "--declination", "4.5"],
         "synthetic_turns.truenorth.expected.csv"),
    ]

    @Test(arguments: goldens.indices)
    func fuseMatchesGolden(_ index: Int) throws {
        let golden = Self.goldens[index]
        if Self.regenerate {
            let text = SyntheticRecording.csv()
            if (try? String(contentsOf: Self.input, encoding: .utf8)) != text {
                try text.write(to: Self.input, atomically: true, encoding: .utf8)
            }
        }
        let out = temporaryPath("golden.csv")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (console, stdout, stderr) = Console.capturing()
        let status = EdgeAgentCLI.run(["edge-agent", "fuse", "--input", Self.input.path, "--output", out,
                                       "--mode", golden.mode, "--stats"] + golden.extra, console: console)
        #expect(status == 0, "stderr: \(stderr())")
        #expect(stdout().contains("samples=\(SyntheticRecording.rowCount)"))
        let expectedURL = Self.fixtures.appendingPathComponent(golden.expected)
        if Self.regenerate {
            try? FileManager.default.removeItem(at: expectedURL)
            try FileManager.default.copyItem(atPath: out, toPath: expectedURL.path)
            return
        }
        // A missing golden fails: re-creating it would let a deleted golden pass.
        guard FileManager.default.fileExists(atPath: expectedURL.path) else {
            Issue.record("""
                Tests/Fixtures/fusion/\(golden.expected) is missing. Re-record it with \(Self.regenerateCommand) \
                (Tests/Fixtures/fusion/README.md) and say in the commit why it changed.
                """)
            return
        }
        try compareFusedCSV(got: String(contentsOfFile: out, encoding: .utf8),
                            expected: String(contentsOf: expectedURL, encoding: .utf8), name: golden.expected)
    }

    /// Compares attitudes by rotation angle (q and −q are equal), other
    /// columns to 1e-6 (heading circularly), the accuracy column exactly.
    func compareFusedCSV(got: String, expected: String, name: String) throws {
        let g = got.split(separator: "\n"), e = expected.split(separator: "\n")
        #expect(g.count == e.count, "\(name): \(g.count) rows, expected \(e.count)")
        #expect(g.first == e.first, "\(name): header differs")
        var failures = 0
        for (lineNo, (a, b)) in zip(g, e).enumerated().dropFirst() {
            let x = a.split(separator: ",", omittingEmptySubsequences: false)
            let y = b.split(separator: ",", omittingEmptySubsequences: false)
            guard x.count == y.count, x.count >= 5, x[0] == y[0] else {
                Issue.record("\(name) line \(lineNo + 1): shape or t differs: '\(a)' vs '\(b)'"); failures += 1; continue
            }
            let p = x.map { Double($0) ?? .nan }, q = y.map { Double($0) ?? .nan }
            let qa = Quaternion(w: p[1], x: p[2], y: p[3], z: p[4]), qb = Quaternion(w: q[1], x: q[2], y: q[3], z: q[4])
            var ok = qa.angle(to: qb) < 1e-6
            for k in 5..<p.count {
                var d = abs(p[k] - q[k])
                if k == 8 { d = min(d, 360 - d) }  // heading_deg
                if !(d < 1e-6) { ok = false }
            }
            if !ok {
                failures += 1
                if failures <= 5 { Issue.record("\(name) line \(lineNo + 1):\n  got      \(a)\n  expected \(b)") }
            }
        }
        #expect(failures == 0, "\(name): \(failures) rows differ")
    }
}

/// The committed recording: 6 s of a board turning and tilting, IMU at
/// ~100 Hz with timing jitter and a 3-sample drop, magnetometer at 20 Hz
/// (empty cells between), one all-zero magnetometer row, a gyroscope bias.
/// Generated deterministically (fixed-seed xorshift, exact trajectory).
enum SyntheticRecording {
    static let rowCount = 597

    static func csv() -> String {
        var s = "t,gx,gy,gz,ax,ay,az,mx,my,mz\n"
        var rng: UInt64 = 0x2545F4914F6CDD1D
        func uniform() -> Double {
            rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27
            return Double((rng &* 2685821657736338717) >> 11) / Double(1 << 53)
        }
        func noise(_ sigma: Double) -> Double { (uniform() + uniform() + uniform() - 1.5) * 2 * sigma }
        func truth(_ t: Double) -> Quaternion {
            Quaternion(axis: Vector3(1, 0.4, 0), angle: 0.5 * sin(1.3 * t)) * Quaternion(yaw: -2.0 + 1.2 * t)
        }
        let field = Vector3(19, 0, -44)  // µT, NWU
        let bias = Vector3(0.01, -0.006, 0.004)
        var t = 0.0, tPrevious = -0.01
        var previous = truth(-0.01)
        var rows = 0
        var i = 0
        func r(_ v: Double) -> String { String((v * 1e6).rounded() / 1e6) }
        while rows < rowCount {
            i += 1
            let dt = 0.01 * (0.9 + 0.2 * uniform())
            t += dt
            if i >= 200 && i < 203 { continue }  // dropped samples
            let q = truth(t)
            // the gyroscope measures the rate over the whole interval since the last row
            let w = (previous.conjugate * q).rotationVector / (t - tPrevious) + bias
            previous = q
            tPrevious = t
            let f = q.inverseRotate(Vector3(0, 0, 9.81)) + Vector3(noise(0.02), noise(0.02), noise(0.02))
            var line = "\(r(t)),\(r(w.x + noise(0.002))),\(r(w.y + noise(0.002))),\(r(w.z + noise(0.002))),"
                + "\(r(f.x)),\(r(f.y)),\(r(f.z)),"
            if i == 300 {
                line += "0,0,0"
            } else if i % 5 == 0 {
                let m = q.inverseRotate(field)
                line += "\(r(m.x + noise(0.2))),\(r(m.y + noise(0.2))),\(r(m.z + noise(0.2)))"
            } else {
                line += ",,"
            }
            s += line + "\n"
            rows += 1
        }
        return s
    }
}

func temporaryPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("fuse-\(UUID().uuidString)-\(name)").path
}

@Suite struct FuseCommandTests {
    func run(_ args: [String]) -> (Int32, String, String) {
        let (console, out, err) = Console.capturing()
        let status = EdgeAgentCLI.run(["edge-agent", "fuse"] + args, console: console)
        return (status, out(), err())
    }

    func write(_ text: String) throws -> String {
        let p = temporaryPath("in.csv")
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }

    static let header = "t,gx,gy,gz,ax,ay,az,mx,my,mz\n"

    @Test func nonNumericImuValueNamesTheLine() throws {
        let p = try write(Self.header + "0,0,0,0,0,0,9.81,20,0,-40\n0.01,0,abc,0,0,0,9.81,,,\n")
        let (status, _, err) = run(["--input", p, "--output", temporaryPath("out.csv")])
        #expect(status == 1)
        #expect(err.contains("line 3") && err.contains("gy") && err.contains("abc"), "\(err)")
    }

    @Test func missingImuValueNamesTheLine() throws {
        let p = try write(Self.header + "0,0,0,0,0,0,9.81\n0.01,0,0,0,0,0\n")
        let (status, _, err) = run(["--input", p, "--output", temporaryPath("out.csv")])
        #expect(status == 1)
        #expect(err.contains("line 3") && err.contains("az"), "\(err)")
    }

    @Test func badHeaderAndBackwardTimeAndPartialMagAreErrors() throws {
        let p1 = try write("time,gx\n0,0\n")
        #expect(run(["--input", p1, "--output", temporaryPath("o.csv")]).0 == 1)
        let p2 = try write(Self.header + "1,0,0,0,0,0,9.81,,,\n0.5,0,0,0,0,0,9.81,,,\n")
        let (s2, _, e2) = run(["--input", p2, "--output", temporaryPath("o.csv")])
        #expect(s2 == 1 && e2.contains("line 3") && e2.contains("backwards"))
        let p3 = try write(Self.header + "0,0,0,0,0,0,9.81,1,,\n")
        let (s3, _, e3) = run(["--input", p3, "--output", temporaryPath("o.csv")])
        #expect(s3 == 1 && e3.contains("line 2"))
        #expect(run(["--input", "/nonexistent/x.csv", "--output", temporaryPath("o.csv")]).0 == 1)
    }

    @Test func badOptionsAreUsageErrors() throws {
        let p = try write(Self.header + "0,0,0,0,0,0,9.81,20,0,-40\n")
        let o = temporaryPath("o.csv")
        #expect(run(["--output", o]).0 == 2)
        #expect(run(["--input", p]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--mode", "7d"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--frame", "xSouth"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--mode", "6d", "--frame", "xMagneticNorthZVertical"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--frame", "xTrueNorthZVertical"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--declination", "abc"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--location", "91,0"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--bogus"]).0 == 2)
        #expect(run(["--input", p, "--output", o, "--frame", "xTrueNorthZVertical", "--location", "52.5,13.4"]).0 == 0)
    }

    @Test func outputHasOneRowPerInputRowAndStats() throws {
        let p = try write(Self.header + "0,0,0,0,0,0,9.81,20,0,-40\r\n0.01,0,0,0,0,0,9.81,,,\r\n0.02,0,0,0,0,0,9.81,0,0,0\r\n\r\n")
        let o = temporaryPath("o.csv")
        let (status, out, err) = run(["--input", p, "--output", o, "--stats"])
        #expect(status == 0)
        #expect(err.isEmpty)
        #expect(out.contains("samples=3") && out.contains("mag_samples=1") && out.contains("fusion_time_s="))
        #expect(out.contains("filter_time_per_sample_us="), "the like-for-like pass for bench/vqf-compare.py")
        let lines = try String(contentsOfFile: o, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("t,qw,qx,qy,qz,"))
        #expect(lines[1].hasPrefix("0,") && lines[2].hasPrefix("0.01,") && lines[3].hasPrefix("0.02,"))
    }

    @Test func warnsWhenNineDHasNoMagnetometer() throws {
        let p = try write(Self.header + "0,0,0,0,0,0,9.81,,,\n0.01,0,0,0,0,0,9.81,,,\n")
        let (status, _, err) = run(["--input", p, "--output", temporaryPath("o.csv")])
        #expect(status == 0 && err.contains("no magnetometer samples"))
    }

    @Test func sixDIgnoresTheMagnetometer() throws {
        let text = try String(contentsOf: FuseGoldenTests.input, encoding: .utf8)
        var noMag = ""
        for (i, line) in text.split(separator: "\n").enumerated() {
            if i == 0 { noMag += line + "\n"; continue }
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            noMag += f[0..<7].joined(separator: ",") + ",,,\n"
        }
        let a = temporaryPath("a.csv"), b = temporaryPath("b.csv")
        #expect(run(["--input", FuseGoldenTests.input.path, "--output", a, "--mode", "6d"]).0 == 0)
        #expect(run(["--input", try write(noMag), "--output", b, "--mode", "6d"]).0 == 0)
        #expect(try String(contentsOfFile: a, encoding: .utf8) == String(contentsOfFile: b, encoding: .utf8))
    }

    @Test func magnetometerCalibrationFileIsLoadedAndChecked() throws {
        // the file `edge-agent calibrate mag` writes, for the default board
        let cal = temporaryPath("calibration.json")
        let (c, _, e) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "calibrate", "mag", "--scenario", repositoryRoot + "/scenarios/calibrate-mag.json5",
                                  "--fast", "--output", cal, "--config", repositoryRoot + "/config/edge-agent.json5"], console: c) == 0, "\(e())")
        let o = temporaryPath("o.csv")
        let (rc, _, err) = run(["--input", FuseGoldenTests.input.path, "--output", o, "--mag-calibration", cal,
                                "--config", repositoryRoot + "/config/edge-agent.json5"])
        #expect(rc == 0, "\(err)")
        let rows = try String(contentsOfFile: o, encoding: .utf8).split(separator: "\n")
        // calibrated: accuracy no longer "uncalibrated" (-1) once the magnetometer is in
        #expect(!rows.last!.hasSuffix(",-1"))
        // the old fuse-only format is refused in words, not Swift's
        let old = temporaryPath("old.json")
        try #"{"hardIron":[1,2,3],"softIron":[[1,0,0],[0,1,0],[0,0,1]]}"#.write(toFile: old, atomically: true, encoding: .utf8)
        let (status, _, e2) = run(["--input", FuseGoldenTests.input.path, "--output", o, "--mag-calibration", old,
                                   "--config", repositoryRoot + "/config/edge-agent.json5"])
        #expect(status == 1 && e2.contains("old.json") && e2.contains("edge-agent calibrate mag"), "\(e2)")
        #expect(!e2.contains("DecodingError") && !e2.contains("keyNotFound"), "\(e2)")
        // --board and friends only go with a calibration
        #expect(run(["--input", FuseGoldenTests.input.path, "--output", o, "--board", "x.json5"]).0 == 2)
    }

    @Test func theCalibrationIsCarriedIntoTheBoardFrame() throws {
        // chip turned 90° on the board (chip -Y along board X): a field that
        // calibrates to f in the chip frame calibrates to R·f on the board.
        let chip = ChipSpec(kind: .qmc5883l, address: 0x0D, mounting: try Mounting(axes: ["-y", "+x", "+z"]))
        let c = MagnetometerCalibration(hardIron: Vector3(3, -5, 2),
                                        softIron: Matrix3(rows: [[1.02, 0.01, 0], [0.01, 0.98, 0.004], [0, 0.004, 1.0]]))
        let board = CalibrationLoader.boardFrameMagnetometer(c, chip: chip)
        for raw in [Vector3(20, -3, -40), Vector3(-11, 30, 5), Vector3(0, 0, 0)] {
            let expected = chip.mounting.toBoard(c.apply(raw))
            let got = board.apply(chip.mounting.toBoard(raw))
            #expect((got - expected).norm < 1e-12, "\(got) vs \(expected)")
        }
    }

    @Test func helpDescribesTheCommand() {
        let (status, out, _) = run(["--help"])
        #expect(status == 0 && out.contains("--mag-calibration") && out.contains("xMagneticNorthZVertical"))
    }
}
