// Issue 21 item 2, as a new user tries it: an app in a package of its own,
// outside this repository, that depends on this package by path, built with
// `swift build` and run from another directory with no $EDGE_AGENT_SOCKET
// and no $EDGE_AGENT_CONFIG. It must find the agent `edge-agent run` serves
// with this package's configuration (config/edge-agent.json5), as
// `edge-agent watch` does here: before, it looked at the system socket
// (/run/edge-agent/agent.sock) and found nothing.
//
// The test does not start an agent at that socket (a shared, fixed path on
// the machine): it checks which socket the app chose and why. With an agent
// running there the app gets data (checked by hand: `swift build` in such a
// package, `edge-agent run` in this repository, then the app: "available:
// true", a sample of z ≈ −1 g).
//
// Cost: the fixture builds CoreMotion and its four modules in a new build
// directory, about 25 s on an idle two-core machine. Swift 6 mode only (the
// Swift 5 test target shares this file).
#if swift(>=6)
import CoreMotion
import CoreMotionTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

@Suite(.ownThread) struct OutsidePackageAppTests {
    /// Runs `executable` with `arguments` in `directory`, no EDGE_* variables,
    /// and waits at most `seconds`; its output and status.
    static func run(_ executable: String, _ arguments: [String], in directory: String, seconds: Double) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        var env = ProcessInfo.processInfo.environment
        for k in ["EDGE_AGENT_SOCKET", "EDGE_AGENT_CONFIG"] { env[k] = nil }
        p.environment = env
        let log = directory + "/output-\(UInt32.random(in: 0...UInt32.max)).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let end = Date().addingTimeInterval(seconds)
        while p.isRunning && Date() < end {
            var none = pollfd()
            _ = poll(&none, 0, 50)
        }
        if p.isRunning { p.terminate(); p.waitUntilExit() }
        try? handle.close()
        return (p.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func anAppInItsOwnPackageFindsTheAgentOfThisPackagesConfiguration() throws {
        let root = TestAgent.packageRoot
        let identity = URL(fileURLWithPath: root).lastPathComponent
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("edge-outside-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir + "/Sources/MyMotionApp", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The lines the DocC catalog shows (WhereTheDataComesFrom, "An app in its own package").
        try """
            // swift-tools-version:6.0
            import PackageDescription
            let package = Package(
                name: "MyMotionApp",
                dependencies: [.package(path: "\(root)")],
                targets: [.executableTarget(name: "MyMotionApp", dependencies: [.product(name: "CoreMotion", package: "\(identity)")])]
            )
            """.write(toFile: dir + "/Package.swift", atomically: true, encoding: .utf8)
        try """
            import CoreMotion
            let m = CMMotionManager()
            print("available: \\(m.isAccelerometerAvailable)")
            print("source: \\(EdgeMotionAgent.dataSource)")
            """.write(toFile: dir + "/Sources/MyMotionApp/main.swift", atomically: true, encoding: .utf8)
        let (built, buildLog) = try Self.run("/usr/bin/env", ["swift", "build"], in: dir, seconds: 900)
        try #require(built == 0, "the app's package does not build:\n\(buildLog)")
        let (status, out) = try Self.run(dir + "/.build/debug/MyMotionApp", [], in: FileManager.default.temporaryDirectory.path, seconds: 60)
        #expect(status == 0, "\(out)")
        // This package's configuration, and its socket.
        let config = root + "/config/edge-agent.json5"
        #expect(out.contains(config), "\(out)")
        #expect(out.contains("the configuration of the package this library was built from"), "\(out)")
        #expect(!out.contains(AgentSocketLocatorNames.systemSocket), "\(out)")
    }
}

/// The system socket's path, as the app would name it.
enum AgentSocketLocatorNames { static let systemSocket = "/run/edge-agent/agent.sock" }
#endif
