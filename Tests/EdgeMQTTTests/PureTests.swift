import Testing
import Foundation
import EdgeProtocol
@testable import EdgeMQTT

@Suite struct NodeNameTests {
    @Test func hostNamesBecomeTopicLevels() {
        #expect(NodeName.fromHostName("pi.local") == "pi-local")
        #expect(NodeName.fromHostName("boat_node-3") == "boat_node-3")
        #expect(NodeName.fromHostName("..weird..name..") == "weird-name")
        #expect(NodeName.fromHostName("") == "edge-node")
        #expect(NodeName.fromHostName(String(repeating: "a", count: 100)).count == NodeName.maxLength)
        #expect(NodeName.problem(with: "ok_1-2") == nil)
        #expect(NodeName.problem(with: "a b") != nil)
        #expect(NodeName.problem(with: "") != nil)
    }
}

@Suite struct PasswordFileTests {
    func file(_ text: String, mode: mode_t) throws -> String {
        let path = NSTemporaryDirectory() + "edge-mqtt-pw-\(UInt32.random(in: 0...UInt32.max))"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    @Test func theFirstLineOfAPrivateFileIsThePassword() throws {
        let path = try file("hunter2\nsecond line\n", mode: 0o600)
        defer { unlink(path) }
        let pw = try BrokerPassword(readingFile: path)
        #expect(pw.withCString { String(cString: $0) } == "hunter2")
        #expect(!pw.description.contains("hunter2"))
        #expect(!"\(pw)".contains("hunter2"))
        let group = try file("x\r\n", mode: 0o640)
        defer { unlink(group) }
        #expect(try BrokerPassword(readingFile: group).withCString { String(cString: $0) } == "x")
    }

    @Test func aFileOtherUsersMayReadIsRefusedWithWhatToDo() throws {
        let path = try file("hunter2\n", mode: 0o644)
        defer { unlink(path) }
        #expect {
            _ = try BrokerPassword(readingFile: path)
        } throws: { e in
            guard let e = e as? PasswordFileError, case .worldAccessible(let mode) = e.kind else { return false }
            let text = e.description
            return mode & 0o777 == 0o644 && text.contains("readable by every user (mode 0644)")
                && text.contains("chmod 0600 \(path)") && !text.contains("hunter2")
        }
    }

    @Test func missingAndEmptyFilesSaySo() throws {
        #expect(throws: PasswordFileError.self) { _ = try BrokerPassword(readingFile: "/nonexistent/pw") }
        let empty = try file("\n", mode: 0o600)
        defer { unlink(empty) }
        #expect {
            _ = try BrokerPassword(readingFile: empty)
        } throws: { ($0 as? PasswordFileError)?.kind == .empty }
    }
}

@Suite struct QueueTests {
    func message(_ i: Int) -> OutboundMessage {
        OutboundMessage(topic: "t/\(i)", payload: Array("\(i)".utf8), qos: 0, retain: false, group: .data)
    }

    @Test func whenFullTheOldestIsDroppedAndCounted() {
        let q = OutboundQueue(capacity: 3)
        for i in 0..<5 { q.push(message(i)) }
        #expect(q.counts.dropped == 2 && q.counts.queued == 3 && q.counts.pushed == 5 && q.counts.highWater == 3)
        #expect(q.pop()?.topic == "t/2")
        #expect(q.markBrokerConnected() == 2, "drops since the last connection, then counting again")
        #expect(q.counts.droppedSinceMark == 0 && q.counts.dropped == 2)
        q.pushFront(message(9))
        #expect(q.pop()?.topic == "t/9", "an unsent message goes back to the front")
        #expect(q.pop()?.topic == "t/3")
        #expect(q.pop()?.topic == "t/4")
        #expect(q.pop() == nil)
    }

    @Test func aPushIntoAnEmptyQueueWakesTheBrokerThread() {
        let w = Wakeup()
        let q = OutboundQueue(capacity: 4, wakeup: w)
        var p = pollfd(fd: w.fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&p, 1, 0) == 0)
        q.push(message(1))
        #expect(poll(&p, 1, 0) == 1)
        w.drain()
        #expect(poll(&p, 1, 0) == 0)
    }
}

@Suite struct PacingTests {
    @Test func backoffDoublesWithJitterAndNeverPassesTheCap() {
        var b = Backoff(initialNs: 500_000_000, maximumNs: 4_000_000_000, seed: 42)
        var ceilings: [UInt64] = []
        for _ in 0..<8 {
            let c = b.currentCeilingNs
            ceilings.append(c)
            let d = b.next()
            #expect(d >= c / 2 && d <= c)
        }
        #expect(ceilings == [500_000_000, 1_000_000_000, 2_000_000_000, 4_000_000_000, 4_000_000_000,
                             4_000_000_000, 4_000_000_000, 4_000_000_000])
        b.reset()
        #expect(b.currentCeilingNs == 500_000_000)
    }
}

@Suite struct ScalarTests {
    @Test func valuesArePrintedWithFixedDecimals() {
        #expect(ScalarCatalog.format(1013.254, decimals: 2) == "1013.25")
        #expect(ScalarCatalog.format(-0.04, decimals: 1) == "0.0")
        #expect(ScalarCatalog.format(-12.35, decimals: 1) == "-12.4")
        #expect(ScalarCatalog.format(0.05, decimals: 2) == "0.05")
        #expect(ScalarCatalog.format(7, decimals: 0) == "7")
        #expect(ScalarCatalog.format(nil, decimals: 1) == "null")
        #expect(ScalarCatalog.format(.nan, decimals: 1) == "null")
    }

    @Test func rollPitchAndHeadingComeFromTheAttitude() {
        // 30° about the board's Y axis is Core Motion's roll; 20° about X is pitch.
        let roll = Quaternion(w: cos(.pi / 12), x: 0, y: sin(.pi / 12), z: 0)
        let m = DeviceMotionSample(timestampNs: 1, attitude: roll, gravity: .zero, userAcceleration: .zero,
                                   rotationRate: .zero, headingDeg: 123.4, referenceFrame: .xMagneticNorthZVertical)
        let v = ScalarCatalog.values(of: .deviceMotion(m))
        #expect(abs(v[0]! - 30) < 1e-9 && abs(v[1]!) < 1e-9 && v[2] == 123.4)
        let pitch = Quaternion(w: cos(.pi / 18), x: sin(.pi / 18), y: 0, z: 0)
        let p = ScalarCatalog.values(of: .deviceMotion(DeviceMotionSample(timestampNs: 1, attitude: pitch, gravity: .zero,
                                                                          userAcceleration: .zero, rotationRate: .zero)))
        #expect(abs(p[1]! - 20) < 1e-9 && p[2] == nil)
        let a = ScalarCatalog.values(of: .altitude(AltitudeSample(timestampNs: 1, relativeAltitude: 1.5, pressure: 101325, temperature: 21)))
        #expect(a == [1.5, 1013.25, 21])
    }

    /// No two topics of a plan are one topic, over every stream (configured
    /// or not) and the options that shape topics (prefix, node, discovery
    /// prefix); a combination that would share one is refused by the set-up
    /// with the pair named. (c7b77b9: the activity stream's JSON and its
    /// scalar were both `<prefix>/<node>/activity`.)
    @Test func noTwoTopicsOfAPlanCollide() throws {
        let standard = TopicPlan(prefix: "edge", node: "n", discoveryPrefix: "homeassistant")
        #expect(standard.collisions.isEmpty, "\(standard.collisions)")
        #expect(standard.allTopics.contains { $0.topic == "edge/n/activity" } && standard.allTopics.contains { $0.topic == "edge/n/bridge" })
        let dir = try Paths.temporaryDirectory("plan")
        defer { Paths.remove(dir) }
        let prefixes = ["edge", "a/b", "homeassistant", "fleet/site1"]
        let nodes = ["n", "b", "status", "sensor", "activity", "config", "site1"]
        let discoveryPrefixes = ["homeassistant", "edge", "edge/n", "a/b", "a", "fleet/site1/sensor", "fleet", "a/b/b"]
        var refused = 0
        for p in prefixes {
            for n in nodes {
                for d in discoveryPrefixes {
                    let plan = TopicPlan(prefix: p, node: n, discoveryPrefix: d)
                    // An independent count: the topics as a set.
                    let distinct = Set(plan.allTopics.map(\.topic)).count
                    #expect((distinct == plan.allTopics.count) == plan.collisions.isEmpty)
                    let path = dir + "/\(refused)-\(distinct).json5"
                    try Paths.write("{ node: '\(n)', topics: { prefix: '\(p)', discovery_prefix: '\(d)' } }", to: path)
                    do {
                        _ = try BridgeSetup.resolve(configPath: path, readPassword: false)
                        #expect(plan.collisions.isEmpty, "accepted, yet \(plan.collisions)")
                    } catch {
                        refused += 1
                        #expect(!plan.collisions.isEmpty && error.description.contains(plan.collisions[0].topic), "\(error)")
                    }
                }
            }
        }
        // e.g. prefix edge, node n, discovery prefix edge/n: Home Assistant's status is the node's.
        #expect(refused > 0)
    }

    @Test func everyEntityHasATopicOfItsOwn() {
        let plan = TopicPlan(prefix: "edge", node: "n", discoveryPrefix: "homeassistant")
        let topics = ScalarCatalog.entities.map(plan.scalar)
        #expect(Set(topics).count == topics.count)
        #expect(topics.contains("edge/n/attitude/roll_deg") && topics.contains("edge/n/altitude/relative_m")
                && topics.contains("edge/n/pressure/hpa") && topics.contains("edge/n/heading_deg")
                && topics.contains("edge/n/steps") && topics.contains("edge/n/activity/state") && topics.contains("edge/n/depth_m"))
        #expect(Set(ScalarCatalog.entities.map(\.key)).count == ScalarCatalog.entities.count)
        for e in ScalarCatalog.entities {
            let w = e.deviceClass == nil && e.options == nil
            let payload = DiscoveryBuilder(plan: plan, stateQoS: 0, agentVersion: "1").config(for: e, intervalS: 1)
            let problems = HomeAssistantSchema.problems(topic: plan.discovery(e.key), payload: String(decoding: payload, as: UTF8.self))
            #expect(problems.isEmpty, "\(e.key) (generic: \(w)): \(problems)")
        }
    }
}

/// The fitness streams' scalars: the step count as an integer, the activity
/// as one of the enum sensor's `options` (Home Assistant rejects a state
/// that is not among them).
@Suite struct FitnessScalarTests {
    @Test func stepsAndActivityPayloads() {
        let p = PedometerSample(timestampNs: 2_000_000_000, startNs: 1_000_000_000, steps: 42, distance: 30.5,
                                floorsAscended: 1, floorsDescended: 0, currentCadence: 1.8, currentPace: 0.7,
                                averageActivePace: 0.7)
        #expect(ScalarCatalog.payloads(of: .pedometer(p)) == ["42"])
        let options = ScalarCatalog.entities(of: .activity).first?.options ?? []
        let cases: [(ActivityFlags, String)] = [([.stationary, .automotive], "automotive"), ([.walking], "walking"),
                                                 ([.stationary], "stationary"), ([.unknown], "unknown"), ([], "unknown"),
                                                 ([.running, .walking], "running"), ([.cycling], "cycling")]
        for (flags, name) in cases {
            let a = ActivitySample(timestampNs: 1, startNs: 0, flags: flags, confidence: .high)
            #expect(ScalarCatalog.payloads(of: .activity(a)) == [name], "\(flags)")
            #expect(options.contains(name))
        }
    }
}
