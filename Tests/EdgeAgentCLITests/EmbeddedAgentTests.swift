import Testing
import Foundation
@testable import EdgeAgentCLI
import EdgeRuntime
import TestThreads

/// An agent inside the test process, as the CoreMotion library starts one
/// when no agent answers: the same protocol on a private socket.
@Suite(.serialized, .ownThread) struct EmbeddedAgentTests {
    @Test func servesTheDefaultConfigurationOnAPrivateSocketAndStopsCleanly() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("embedded")
        defer { DaemonPaths.removeTree(dir) }
        let socket = dir + "/agent.sock"
        let agent = try EmbeddedAgent.start(configPath: repositoryRoot + "/config/edge-agent.json5", socketPath: socket)
        defer { agent.stop() }
        #expect(agent.boardName.contains("Simulated"))
        #expect(agent.startReport.count == 4, "\(agent.startReport)")
        let c = try DaemonClient(path: socket, name: "in-process client")
        let deadline = DaemonDeadline(seconds: 20)
        let version = try #require(c.next(deadline))
        #expect(version.cls == "version")
        c.request(#"{"class":"subscribe","stream":"deviceMotion","interval_s":0.01,"id":1}"#)
        var motion: [DaemonMessage] = []
        while motion.count < 20, let m = c.next(deadline) {
            if m.cls == "sample", m.stream == "deviceMotion" { motion.append(m) }
        }
        #expect(motion.count == 20, "device motion from the in-process engine")
        let t = motion.compactMap(\.timestampNs)
        // Never faster than the requested 100 Hz, whatever the machine's
        // load (a FIFO batch is stamped on the chip's sample clock, which
        // keeps consecutive stamps at least 0.9 periods apart). That every
        // gap is 10 ± 0.5 ms is a bound on the loop's wake-ups, asserted on
        // a virtual clock that wakes late: JitteryWakeRateTests.
        let gaps = zip(t.dropFirst(), t).map { Int64(bitPattern: $0 &- $1) }
        #expect(t.count == 20 && gaps.allSatisfy { $0 >= 9_000_000 }, "at most the requested 100 Hz: \(gaps)")
        agent.stop()
        let shutdown = c.waitFor(class: "shutdown", DaemonDeadline(seconds: 10))
        #expect(shutdown != nil, "clients are told when it stops")
        #expect(!DaemonPaths.exists(socket), "the socket is removed")
    }

    @Test func aBadConfigurationIsAClearError() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("embedded-bad")
        defer { DaemonPaths.removeTree(dir) }
        try "{ faults: { reprobe_interval_s: Infinity } }".write(toFile: dir + "/bad.json5", atomically: true, encoding: .utf8)
        #expect(throws: SetupError.self) {
            _ = try EmbeddedAgent.start(configPath: dir + "/bad.json5", socketPath: dir + "/agent.sock")
        }
    }
}
