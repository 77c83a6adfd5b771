import Testing
import EdgeConfig
import Foundation
import EdgeFusion
@testable import EdgeAgentCLI

/// Every sample CSV a tool writes is read by every tool that reads samples:
/// `record --csv` (timestampNs,accelX,...) and `simulate --csv`
/// (t,gx,...) each go through `fuse` and `replay`, and the values that come
/// out are the values that went in.
@Suite struct SampleFormatRoundTripTests {
    static let config = repositoryRoot + "/config/edge-agent.json5"

    func run(_ args: [String]) -> (Int32, String, String) {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent"] + args, console: c)
        return (rc, out(), err())
    }

    func temp(_ name: String) -> String { NSTemporaryDirectory() + "edge-rt-\(UUID().uuidString)-" + name }

    /// `simulate --csv` of 1 s of slow turning.
    func simulated() throws -> String {
        let path = temp("sim.csv")
        let (rc, _, err) = run(["simulate", repositoryRoot + "/scenarios/rotate-z.json5", "--duration", "1",
                                "--csv", path, "--config", Self.config])
        #expect(rc == 0, "\(err)")
        return path
    }

    /// `record --csv` of 1 s of the simulated board, on a virtual clock.
    func recorded() throws -> String {
        let path = temp("rec.csv")
        let (rc, _, err) = run(["record", path, "--csv", "--virtual-clock", "--duration", "1", "--config", Self.config])
        #expect(rc == 0, "\(err)")
        return path
    }

    /// The accelerometer samples of `replay`'s JSON lines: (timestamp ns, x, y, z).
    func accelerometer(_ jsonLines: String) throws -> [(UInt64, Double, Double, Double)] {
        try jsonLines.split(separator: "\n").compactMap { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard o["stream"] as? String == "accelerometer", let a = o["acceleration_mps2"] as? [String: Double] else { return nil }
            return (UInt64(try #require(o["timestamp_ns"] as? Int)), a["x"]!, a["y"]!, a["z"]!)
        }
    }

    @Test func simulateCSVReplays() throws {
        let csv = try simulated()
        let (rc, out, err) = run(["replay", csv])
        #expect(rc == 0, "\(err)")
        let rows = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n").dropFirst()
        let samples = try accelerometer(out)
        #expect(samples.count == rows.count)
        // values straight from the file: t s → ns, ax, ay, az
        for (row, s) in zip(rows, samples).prefix(50) {
            let c = row.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            #expect(s.0 == UInt64((c[0]! * 1e9).rounded()))
            #expect(s.1 == c[4]! && s.2 == c[5]! && s.3 == c[6]!)
        }
        #expect(out.contains("\"stream\":\"deviceMotion"))
    }

    @Test func recordCSVFuses() throws {
        let csv = try recorded()
        let out = temp("rec.fused.csv")
        let (rc, _, err) = run(["fuse", "--input", csv, "--output", out])
        #expect(rc == 0, "\(err)")
        let input = try SampleCSV.load(path: csv)
        let fused = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        #expect(fused.count == input.count + 1)
        #expect(fused[1].hasPrefix(SampleCSV.seconds(nanoseconds: input[0].timestampNs) + ","))

        // A second path to the same numbers: the rows rewritten by hand in
        // fuse's seconds layout fuse to the same attitudes.
        var text = SampleCSV.secondsHeader + "\n"
        for r in input {
            let a = r.accel!, g = r.gyro!
            text += "\(SampleCSV.seconds(nanoseconds: r.timestampNs)),\(g.x),\(g.y),\(g.z),\(a.x),\(a.y),\(a.z),"
            text += r.mag.map { "\($0.x),\($0.y),\($0.z)" } ?? ",,"
            text += "\n"
        }
        let seconds = temp("rec.seconds.csv"), out2 = temp("rec.seconds.fused.csv")
        try text.write(toFile: seconds, atomically: true, encoding: .utf8)
        #expect(run(["fuse", "--input", seconds, "--output", out2]).0 == 0)
        #expect(try String(contentsOfFile: out2, encoding: .utf8) == String(contentsOfFile: out, encoding: .utf8))
    }

    @Test func simulateCSVFusesAndRecordCSVReplays() throws {
        let sim = try simulated()
        #expect(run(["fuse", "--input", sim, "--output", temp("sim.fused.csv")]).0 == 0)
        let rec = try recorded()
        let (rc, out, err) = run(["replay", rec])
        #expect(rc == 0, "\(err)")
        let rows = try SampleCSV.load(path: rec)
        let samples = try accelerometer(out)
        #expect(samples.count == rows.count)
        #expect(samples.first?.0 == rows.first?.timestampNs)
        #expect(samples.first?.3 == rows.first?.accel?.z)
    }

    @Test func theLibraryReaderReadsBothLayouts() throws {
        let (simRows, simFormat, simCut) = try SampleCSV.loadKeepingCompleteLines(path: try simulated())
        #expect(simFormat == .seconds && simCut == nil)
        #expect(simRows.count == 200)   // 1 s at 200 Hz
        #expect(simRows.allSatisfy { $0.accel != nil && $0.gyro != nil && $0.orientation == nil })
        // One field per output period of the configured QMC5883L rate.
        let magHz = try ConfigLoader.load(AgentConfig.self, from: Self.config).sensors.qmc5883l.outputRate.hertz
        #expect(abs(simRows.filter { $0.mag != nil }.count - magHz) <= 1)
        let (recRows, recFormat, _) = try SampleCSV.loadKeepingCompleteLines(path: try recorded())
        #expect(recFormat == .wearables && recRows.count > 150)
    }

    @Test func anUnknownHeaderListsTheAcceptedOnes() throws {
        let path = temp("bad.csv")
        try "time,ax,ay,az\n0,0,0,9.81\n".write(toFile: path, atomically: true, encoding: .utf8)
        for tool in [["fuse", "--input", path, "--output", temp("o.csv")], ["replay", path]] {
            let (rc, _, err) = run(tool)
            #expect(rc == 1)
            #expect(err.contains("time,ax,ay,az") && err.contains(SampleCSV.header) && err.contains(SampleCSV.secondsHeader), "\(err)")
        }
        // fuse's own output is not a recording, and says so
        let fused = temp("fused.csv")
        try "t,qw,qx,qy,qz,roll_rad,pitch_rad\n0,1,0,0,0,0,0\n".write(toFile: fused, atomically: true, encoding: .utf8)
        #expect(run(["replay", fused]).2.contains("output of `edge-agent fuse`"))
    }
}
