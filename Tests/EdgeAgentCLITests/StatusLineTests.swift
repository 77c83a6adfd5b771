// Issue 16, item 15: `run`'s status line (137 characters) wrapped at 120
// columns, and the default configuration's list of entitlements omitted
// `fitness`.
import Testing
import Foundation
import EdgeConfig
import EdgeProtocol
@testable import EdgeAgentCLI
import EdgeRuntime

@Suite struct StatusLineTests {
    /// The widest values each field can take: negative angles and altitude,
    /// five-digit lateness, every calibratable chip of a board uncalibrated.
    static let widest = StatusLine.Values(
        seconds: 86399.9, rollDeg: -179.9, pitchDeg: -89.9, yawDeg: -179.9, relativeAltitude: -1234.56,
        pressure: 101325, clients: 128, p99Microseconds: 99999, overruns: 99999,
        uncalibrated: ["mpu6050@0x68", "mpu6050@0x69", "qmc5883l@0x0d"])

    /// c7b77b9's line for these values was 158 columns (and no word of calibration).
    @Test func theWidestLineFitsAHundredColumnsKeepingWhatMatters() {
        let line = StatusLine.render(Self.widest, columns: StatusLine.defaultColumns)
        #expect(StatusLine.defaultColumns == 100)
        #expect(line.unicodeScalars.count <= 100, "\(line.unicodeScalars.count): \(line)")
        // three chips named do not fit beside the attitude: counted
        #expect(line.hasPrefix("t=86399.9 s  roll -179.9° pitch -89.9° yaw -179.9°  uncalibrated: 3 chips  altitude -1234.56 m"), "\(line)")
        var two = Self.widest
        two.uncalibrated = ["mpu6050@0x68", "qmc5883l@0x0d"]
        let named = StatusLine.render(two, columns: 100)
        #expect(named == "t=86399.9 s  roll -179.9° pitch -89.9° yaw -179.9°  uncalibrated: mpu6050@0x68, qmc5883l@0x0d", "\(named)")
        #expect(!line.hasSuffix("…"), "whole fields are dropped, not cut: \(line)")
    }

    @Test(arguments: [40, 60, 80, 99, 100, 120, 200])
    func everyWidthIsKept(_ columns: Int) {
        let line = StatusLine.render(Self.widest, columns: columns)
        #expect(line.unicodeScalars.count <= columns, "\(columns): \(line)")
        // a wide terminal gets everything
        if columns >= 200 {
            #expect(line == StatusLine.fields(Self.widest).joined(separator: "  "))
            #expect(line.hasSuffix("clients 128  loop p99 99999 µs  overruns 99999"))
        }
    }

    @Test func aCalibratedBoardShowsEverythingInAHundredColumns() {
        var v = Self.widest
        v.uncalibrated = []
        let line = StatusLine.render(v, columns: 100)
        #expect(line == "t=86399.9 s  roll -179.9° pitch -89.9° yaw -179.9°  altitude -1234.56 m  1013.25 hPa  clients 128", "\(line)")
    }

    /// `run` draws through it: the old formatter's 137 columns at typical values.
    @Test func runFormatsWithTheWidth() {
        var s = RuntimeStatus()
        s.rollDeg = -12.3; s.pitchDeg = 4.5; s.yawDeg = -170.2; s.relativeAltitude = -0.42; s.pressure = 100_812.5
        s.p99Microseconds = 1234; s.overruns = 2
        let line = RunCommand.statusLine(s, clients: 3, seconds: 123.4, uncalibrated: [], columns: 120)
        #expect(line == "t=123.4 s  roll -12.3° pitch 4.5° yaw -170.2°  altitude -0.42 m  1008.13 hPa  clients 3  loop p99 1234 µs  overruns 2", "\(line)")
        #expect(RunCommand.statusLine(s, clients: 3, seconds: 123.4, uncalibrated: [], columns: 100).unicodeScalars.count <= 100)
    }
}

@Suite struct EntitlementListTests {
    static let all: [Entitlement] = [.motion, .altitude, .submersionShallow, .submersionFull, .fitness]

    /// c7b77b9: config/edge-agent.json5, config/README.md and the protocol's
    /// table listed four of the five.
    @Test func everyListOfEntitlementsNamesAllFive() throws {
        let root = DaemonPaths.packageRoot
        for file in ["config/edge-agent.json5", "config/README.md"] {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            let list = try #require(text.split(separator: "\n").first { line in
                line.contains("motion") && line.contains("altitude") && line.contains("submersion.full")
            }, "\(file): no line lists the entitlements")
            for e in Self.all { #expect(list.contains(e.rawValue), "\(file): \(list) omits \(e)") }
        }
        // the protocol's table of entitlements (docs/protocol.md points to it)
        let proto = try String(contentsOfFile: root + "/Sources/EdgeService/EdgeService.docc/ClientProtocol.md", encoding: .utf8)
        for e in Self.all { #expect(proto.contains("\n| `\(e.rawValue)` | "), "ClientProtocol.md: no row for \(e)") }
    }

    /// c7b77b9: the installed configuration granted motion and altitude only.
    @Test func theInstalledConfigurationGrantsFitness() throws {
        let deploy = try ConfigLoader.load(AgentConfig.self, from: DaemonPaths.packageRoot + "/deploy/edge-agent.json5")
        let grant = try #require(deploy.clients?.first { $0.group == "edge-motion" })
        #expect(grant.entitlements.contains("fitness"), "\(grant.entitlements)")
    }
}

@Suite struct UncalibratedInWatchTests {
    /// The full view and the plain line name an uncalibrated device and why
    /// (c7b77b9's devices carried no calibration at all).
    @Test func watchShowsAnUncalibratedDeviceAndWhy() {
        var s = fullState()
        s.devices[0].calibration = "uncalibrated"
        s.devices[0].calibrationNote = "config/calibration.json was measured on other chips (simulation seed 16 when calibrated, 99 now)"
        s.devices[1].calibration = nil
        let view = WatchView.render(s)
        let row = view.split(separator: "\n").first { $0.hasPrefix("  imu ") }
        #expect(row?.hasSuffix("  UNCALIBRATED") == true, "\(view)")
        #expect(view.contains("\n    uncalibrated: config/calibration.json was measured on other chips (simulation seed 16 when calibrated, 99 now)"), "\(view)")
        #expect(WatchView.plainLine(s).contains(" devices=imu:present:0,baro:present:3,accessoryImu:missing:12 uncalibrated=imu "))
        s.devices[0].calibration = "calibrated"
        #expect(!WatchView.render(s).contains("UNCALIBRATED") && !WatchView.plainLine(s).contains("uncalibrated="))
    }

    /// Not a terminal: 100 columns.
    @Test func aPipeGetsAHundredColumns() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        #expect(StatusLine.columns(fd: fds[1]) == 100)
    }
}
