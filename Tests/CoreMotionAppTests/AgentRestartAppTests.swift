// An agent that crashes and is started again under a running app: the
// loss is reported (never a silent stall), the same handlers resume, and
// the pedometer's cumulative counts never go down. Only `import CoreMotion`.
// In the Swift 6 language mode only (this directory is also the Swift 5
// target's): the mode changes nothing here, and each case runs an agent
// twice on the tests' critical path (the agent tests run one at a time).
#if swift(>=6)
import CoreMotion
import CoreMotionTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

@Suite(.serialized, .ownThread) struct AgentRestartAppTests {
    @Test func aCrashedAgentIsReportedAndTheSameHandlerResumes() async throws {
        try await withAgent(.restFlat) { agent in
            let manager = CMMotionManager()
            manager.accelerometerUpdateInterval = 0.05
            let inbox = Inbox<CMAccelerometerData>()
            manager.startAccelerometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually(seconds: 20) { inbox.count >= 5 })
            #expect(inbox.errors.isEmpty, "\(inbox.errors)")

            agent.terminate(with: SIGKILL) // a crash: the socket file stays, nobody accepts
            #expect(await eventually(seconds: 10) { !inbox.errors.isEmpty }, "the loss must reach the handler")
            let e = try #require(inbox.errors.first)
            #expect(e.domain == CMErrorDomain && e.code == Int(CMErrorNotAvailable.rawValue))
            #expect(e.localizedDescription.contains("connection to the agent was lost"), "\(e.localizedDescription)")
            #expect(manager.isAccelerometerActive, "the update stays active")
            let lastBefore = try #require(inbox.items.last).timestamp

            try agent.relaunch()
            #expect(await eventually(seconds: 20) { (inbox.items.last?.timestamp ?? 0) > lastBefore + 0.5 },
                    "samples resume on the same handler without a new start")
            #expect(inbox.errors.count == 1, "one error for one loss: \(inbox.errors)")
            // at rest, face up: the resumed samples are the board's, in Apple's units (g)
            let z = try #require(inbox.items.last).acceleration.z
            #expect(abs(z + 1) < 0.1, "\(z) g")

            // a second loss is reported again
            agent.terminate(with: SIGTERM)
            #expect(await eventually(seconds: 10) { inbox.errors.count == 2 }, "\(inbox.errors)")
            manager.stopAccelerometerUpdates()
            #expect(!manager.isAccelerometerActive)
        }
    }

    /// The agent counts steps from its own start; the library's cumulative
    /// counts continue across its restart (what the old run counted is
    /// kept, the new run adds to it).
    @Test func pedometerCountsNeverGoDownAcrossAnAgentRestart() async throws {
        try await withAgent(.walking) { agent in
            EdgeMotionAgent.socketPath = nil
            EdgeMotionAgent.configurationPath = agent.configPath
            defer { EdgeMotionAgent.configurationPath = nil }
            let pedometer = CMPedometer()
            let data = Inbox<CMPedometerData>()
            pedometer.startUpdates(from: Date()) { d, e in data.take(d, e) }
            // part of the walk (14 steps in 8 s, from 1 s after the start)
            #expect(await eventually(seconds: 30) { (data.items.last?.numberOfSteps.intValue ?? 0) >= 5 })
            agent.terminate(with: SIGKILL)
            let before = try #require(data.items.last).numberOfSteps.intValue
            #expect(await eventually(seconds: 10) { !data.errors.isEmpty }, "the loss must reach the handler")

            // the new agent's scenario walks its 14 steps again
            try agent.relaunch()
            #expect(await eventually(seconds: 40) { (data.items.last?.numberOfSteps.intValue ?? 0) >= before + 12 },
                    "\(before) before the restart, then \(data.items.last?.numberOfSteps.intValue ?? 0)")
            // the walk ends 9 s after the start; wait for its last steps
            #expect(await eventually(seconds: 20) {
                guard let d = data.items.last else { return false }
                return Date().timeIntervalSince(d.endDate) > 3
            })
            let counts = data.items.map(\.numberOfSteps.intValue)
            #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 <= $1 }, "counts went down: \(counts)")
            let final = try #require(counts.last)
            #expect(abs(final - (before + 14)) <= 2, "\(final) of \(before) + 14 steps")
            let distances = data.items.compactMap { $0.distance?.doubleValue }
            #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 <= $1 + 1e-9 })
            pedometer.stopUpdates()
        }
    }
}
#endif
