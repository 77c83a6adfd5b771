import Testing
import Foundation
@testable import EdgeAgentCLI

/// No tool writes over a file it reads. Files are compared by what they are
/// (device + inode; the resolved path for a file not yet there), so another
/// spelling, a symlink or a hard link is caught too.
@Suite struct OutputOverwritesInputTests {
    func run(_ args: [String]) -> (Int32, String, String) {
        let (c, out, err) = Console.capturing()
        let rc = EdgeAgentCLI.run(["edge-agent"] + args, console: c)
        return (rc, out(), err())
    }

    /// A fresh directory holding a small `fuse` input.
    func directory() throws -> (dir: String, input: String, text: String) {
        let dir = NSTemporaryDirectory() + "edge-overlap-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let text = "t,gx,gy,gz,ax,ay,az,mx,my,mz\n0,0,0,0,0,0,9.81,20,0,-40\n0.01,0,0,0,0,0,9.81,,,\n"
        let input = dir + "/in.csv"
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        return (dir, input, text)
    }

    @Test func fuseRefusesToWriteOverItsInputUnderAnySpelling() throws {
        let (dir, input, text) = try directory()
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.csv", withDestinationPath: input)
        try FileManager.default.linkItem(atPath: input, toPath: dir + "/hard.csv")
        for output in [input, dir + "/./in.csv", dir + "/../" + (dir as NSString).lastPathComponent + "/in.csv",
                       dir + "/link.csv", dir + "/hard.csv"] {
            let (rc, _, err) = run(["fuse", "--input", input, "--output", output])
            #expect(rc == 2, "\(output)")
            #expect(err.contains("--output") && err.contains("same file as --input"), "\(err)")
            #expect(try String(contentsOfFile: input, encoding: .utf8) == text, "the input is untouched")
        }
        // the calibration file is an input as well
        let (rc, _, err) = run(["fuse", "--input", input, "--output", dir + "/cal.json", "--mag-calibration", dir + "/cal.json"])
        #expect(rc == 2 && err.contains("--mag-calibration"), "\(err)")
        // and another file is fine
        #expect(run(["fuse", "--input", input, "--output", dir + "/out.csv", "--mode", "6d"]).0 == 0)
    }

    @Test func simulateRefusesOutputsThatAreItsInputsOrEachOther() throws {
        let (dir, _, _) = try directory()
        let scenario = dir + "/rest.json5"
        let scenarioText = try String(contentsOfFile: repositoryRoot + "/scenarios/rest-flat.json5", encoding: .utf8)
        try scenarioText.write(toFile: scenario, atomically: true, encoding: .utf8)
        let configPath = dir + "/edge-agent.json5"
        try String(contentsOfFile: repositoryRoot + "/config/edge-agent.json5", encoding: .utf8)
            .replacingOccurrences(of: "board: \"simulated\"", with: "board: \"\(repositoryRoot)/boards/simulated.json5\"")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        let config = ["--config", configPath, "--duration", "0.05"]
        let (rc, _, err) = run(["simulate", scenario, "--csv", scenario] + config)
        #expect(rc == 2 && err.contains("--csv") && err.contains("SCENARIO"), "\(err)")
        #expect(try String(contentsOfFile: scenario, encoding: .utf8) == scenarioText)
        // --truth over the configuration
        let (rc2, _, err2) = run(["simulate", scenario, "--truth", dir + "/./edge-agent.json5"] + config)
        #expect(rc2 == 2 && err2.contains("the configuration"), "\(err2)")
        // two outputs naming one file that does not exist yet
        let (rc3, _, err3) = run(["simulate", scenario, "--csv", dir + "/new.csv", "--truth", dir + "//./new.csv"] + config)
        #expect(rc3 == 2 && err3.contains("name the same file"), "\(err3)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/new.csv"))
        // devices are not files: /dev/null may take both
        #expect(run(["simulate", scenario, "--csv", "/dev/null", "--truth", "/dev/null"] + config).0 == 0)
    }

    @Test func recordReplayAndCalibrateRefuseToo() throws {
        let (dir, input, text) = try directory()
        // copies, so a tool that did overwrite would not damage the repository
        let config = dir + "/edge-agent.json5"
        let configText = try String(contentsOfFile: repositoryRoot + "/config/edge-agent.json5", encoding: .utf8)
            .replacingOccurrences(of: "board: \"simulated\"", with: "board: \"\(repositoryRoot)/boards/simulated.json5\"")
        try configText.write(toFile: config, atomically: true, encoding: .utf8)
        let scenario = dir + "/calibrate-gyro.json5"
        try FileManager.default.copyItem(atPath: repositoryRoot + "/scenarios/calibrate-gyro.json5", toPath: scenario)
        let (rc, _, err) = run(["record", config, "--config", config, "--virtual-clock", "--duration", "0.05"])
        #expect(rc == 2 && err.contains("the configuration"), "\(err)")
        let (rc2, _, err2) = run(["replay", input, "--output", input])
        #expect(rc2 == 2 && err2.contains("same file as FILE"), "\(err2)")
        #expect(try String(contentsOfFile: input, encoding: .utf8) == text)
        let (rc3, _, err3) = run(["calibrate", "gyro", "--config", config, "--output", config, "--scenario", scenario, "--fast"])
        #expect(rc3 == 2 && err3.contains("the configuration"), "\(err3)")
        let (rc4, _, err4) = run(["calibrate", "gyro", "--config", config, "--output", scenario, "--scenario", scenario, "--fast"])
        #expect(rc4 == 2 && err4.contains("--scenario"), "\(err4)")
        #expect(try String(contentsOfFile: config, encoding: .utf8) == configText)
    }
}
