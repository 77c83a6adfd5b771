#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import EdgeValues
import EdgeProtocol
import EdgeService
import EdgeClient
import TestThreads

// The client library against a real ServiceServer on a temporary socket
// (the agent's own server code, in this process). Every wait is bounded and
// polls a condition; nothing sleeps to let things happen.

func clientSocketPath(_ tag: String) -> String {
    "/tmp/edge-client-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
}

/// Polls `condition` every few ms until it holds or `seconds` pass.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = monotonicNowNs() + UInt64(seconds * 1e9)
    while monotonicNowNs() < end {
        if condition() { return true }
        var none = pollfd()
        _ = poll(&none, 0, 5)
    }
    return condition()
}

let imu = DeviceInfo(id: "mpu6050@0x68", kind: "mpu6050", address: "simulated@0x68", state: .present,
                     streams: [.accelerometer, .gyroscope, .deviceMotion], rateHz: 100)

func motionSample(_ t: UInt64) -> Sample {
    .deviceMotion(DeviceMotionSample(timestampNs: t, attitude: .identity, gravity: Vector3(0, 0, -9.80665),
                                     userAcceleration: .zero, rotationRate: .zero))
}

/// Collects what a subscriber got.
final class Inbox: Sendable {
    let samples = Locked<[UInt64]>([])
    let errors = Locked<[AgentClientError]>([])
    var count: Int { samples.withLock { $0.count } }
    func subscribe(_ c: AgentClient, _ s: StreamName, intervalNs: UInt64) -> Subscription {
        c.subscribe(s, intervalNs: intervalNs,
                    onSample: { x in self.samples.withLock { $0.append(x.timestampNs) } },
                    onError: { e in self.errors.withLock { $0.append(e) } })
    }
}

@Suite(.ownThread) struct MultiplexingRulesTests {
    @Test func wireIntervalServesEverySubscriberOnAGrid() {
        #expect(wireInterval(for: [UInt64]()) == nil)
        #expect(wireInterval(for: [20_000_000]) == 20_000_000)
        #expect(wireInterval(for: [20_000_000, 50_000_000]) == 10_000_000)
        #expect(wireInterval(for: [10_000_000, 20_000_000, 100_000_000]) == 10_000_000)
        #expect(wireInterval(for: [20_000_000, 0]) == 0)
        // 1/60 s and 1/100 s share no useful period: the faster one.
        #expect(wireInterval(for: [16_666_667, 10_000_000]) == 10_000_000)
    }

    @Test func decimatorKeepsTheRateOnTheCaptureClock() {
        var d = Decimator(intervalNs: 50_000_000)
        // 10 ms samples with ±0.5 ms jitter: every fifth, average exactly 50 ms.
        var kept: [UInt64] = []
        for i in 0..<101 {
            let jitter: UInt64 = i % 2 == 0 ? 0 : 500_000
            let t = 1_000_000_000 + UInt64(i) * 10_000_000 + jitter
            if d.admit(t) { kept.append(t) }
        }
        #expect(kept.count == 21)
        #expect(kept.last! - kept.first! >= 999_000_000)
        var all = Decimator(intervalNs: 0)
        let both = [all.admit(1), all.admit(1)]
        #expect(both == [true, true])
        // A gap restarts the grid instead of bursting to catch up.
        var g = Decimator(intervalNs: 10_000_000)
        let admitted = [0, 1_000_000_000, 1_001_000_000, 1_010_000_000].map { g.admit($0) }
        #expect(admitted == [true, true, false, true])
        // A chip 2 % fast at 100 Hz, asked for 50 Hz: every other sample, none lost.
        var fast = Decimator(intervalNs: 20_000_000)
        let everyOther = (0..<100).filter { fast.admit(UInt64($0) * 9_800_000) }
        #expect(everyOther == Array(stride(from: 0, to: 100, by: 2)), "\(everyOther)")
    }

    @Test func backoffDoublesToItsCapAndResets() {
        var b = Backoff(initialNs: 50, maximumNs: 300)
        #expect([b.next(), b.next(), b.next(), b.next(), b.next()] == [50, 100, 200, 300, 300])
        b.reset()
        #expect(b.next() == 50)
    }
}

@Suite(.ownThread) struct AgentClientTests {
    @Test func subscribersInOneProcessShareOneConnectionAndOneWireSubscription() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("mux")),
                                       devices: [imu])
        defer { server.stop() }
        let client = AgentClient(socketPath: server.socketPath)
        defer { client.close() }
        let fast = Inbox(), slow = Inbox()
        let a = fast.subscribe(client, .deviceMotion, intervalNs: 20_000_000)
        let b = slow.subscribe(client, .deviceMotion, intervalNs: 50_000_000)
        defer { a.cancel(); b.cancel() }
        // One wire subscription at the common period (10 ms), one client.
        #expect(eventually { server.demand()[.deviceMotion] == 0.01 }, "\(server.demand())")
        #expect(server.statistics().clients.count == 1)
        // One second of 10 ms samples (capture clock).
        for i in 0...100 { server.publish(motionSample(1_000_000_000 + UInt64(i) * 10_000_000)) }
        #expect(eventually { fast.count == 51 && slow.count == 21 }, "\(fast.count) \(slow.count)")
        let gaps = fast.samples.withLock { s in zip(s.dropFirst(), s).map { $0 - $1 } }
        #expect(gaps.allSatisfy { $0 == 20_000_000 })
        // The slow subscriber leaves: the wire slows down to what is left.
        b.cancel()
        #expect(eventually { server.demand()[.deviceMotion] == 0.02 }, "\(server.demand())")
        a.cancel()
        #expect(eventually { server.demand()[.deviceMotion] == nil })
    }

    @Test func repliesAreMatchedToTheirRequests() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("req")),
                                       devices: [imu])
        defer { server.stop() }
        let client = AgentClient(socketPath: server.socketPath)
        defer { client.close() }
        let v = try client.connect()
        #expect(v.protocolVersion == EdgeProtocolInfo.version && v.uid == getuid())
        guard case .devices(let list, _) = try client.request(.devices) else { Issue.record("not devices"); return }
        #expect(list == [imu])
        guard case .pong(let t, _) = try client.request(.ping) else { Issue.record("not a pong"); return }
        #expect(t > 0)
        #expect(throws: AgentClientError.self) { try client.request(.poll(.deviceMotion)) }
    }

    /// A poll's reply is a sample line; with its request's id it reaches
    /// the request, whether or not this client also subscribes to the
    /// stream (it used to go to the subscribers, and every poll waited its
    /// whole timeout). The timeout is far above any answer's time.
    @Test func aPollIsAnsweredWhileTheStreamIsSubscribed() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("poll")),
                                       devices: [imu])
        defer { server.stop() }
        let client = AgentClient(socketPath: server.socketPath)
        defer { client.close() }
        let inbox = Inbox()
        let sub = inbox.subscribe(client, .deviceMotion, intervalNs: 0)
        defer { sub.cancel() }
        #expect(eventually { server.demand()[.deviceMotion] != nil })
        server.publish(motionSample(7_000_000_000))
        #expect(eventually { inbox.count == 1 })
        for _ in 0..<3 {
            guard case .sample(.deviceMotion(let m)) = try client.request(.poll(.deviceMotion), timeoutMs: 30_000) else {
                Issue.record("not a device-motion sample"); return
            }
            #expect(m.timestampNs == 7_000_000_000)
        }
        #expect(inbox.count == 1, "the poll replies are not the subscription's samples")
        // Unsubscribed too.
        sub.cancel()
        guard case .sample = try client.request(.poll(.deviceMotion), timeoutMs: 30_000) else { Issue.record("no reply"); return }
    }

    @Test func reconnectsAfterTheAgentRestartsAndSubscribesAgain() throws {
        let path = clientSocketPath("restart")
        var server: ServiceServer? = try ServiceServer(configuration: ServiceConfiguration(socketPath: path), devices: [imu])
        let client = AgentClient(socketPath: path, backoff: Backoff(initialNs: 10_000_000, maximumNs: 100_000_000))
        defer { client.close() }
        let events = Locked<[AgentEvent]>([])
        let o = client.observe { e in events.withLock { $0.append(e) } }
        defer { o.cancel() }
        let inbox = Inbox()
        let s = inbox.subscribe(client, .deviceMotion, intervalNs: 0)
        defer { s.cancel() }
        #expect(eventually { server!.demand()[.deviceMotion] != nil })
        server!.publish(motionSample(1))
        #expect(eventually { inbox.count == 1 })
        server!.stop(reason: "restart")
        server = nil
        #expect(eventually { events.withLock { $0.contains(.shutdown(reason: "restart")) } })
        #expect(eventually { events.withLock { $0.contains { if case .disconnected = $0 { return true }; return false } } })
        // The agent is back on the same socket: the client finds it and subscribes again.
        let again = try ServiceServer(configuration: ServiceConfiguration(socketPath: path), devices: [imu])
        defer { again.stop() }
        #expect(eventually { again.demand()[.deviceMotion] != nil })
        again.publish(motionSample(2))
        #expect(eventually { inbox.count == 2 })
        #expect(client.counts.connections == 2)
        #expect(inbox.errors.withLock { $0.isEmpty })
    }

    @Test func noAgentSaysHowToStartOne() {
        let path = clientSocketPath("none")
        #expect { try AgentConnection.connect(to: path) } throws: { e in
            guard let e = e as? AgentClientError, e.isNoAgent else { return false }
            return e.description.contains("no agent socket at \(path). Is the agent running?")
        }
        let client = AgentClient(socketPath: path)
        defer { client.close() }
        #expect(throws: AgentClientError.noAgent(path: path, errno: ENOENT)) { try client.connect() }
    }

    @Test func permissionDeniedNamesTheSocketsGroup() {
        let e = AgentClientError.connect(path: "/run/edge-agent/agent.sock", errno: EACCES, socketGroup: "edge-motion")
        #expect(e.description.contains("members of group 'edge-motion'"))
        #expect(e.description.contains("sudo usermod -aG edge-motion $USER"))
    }

    @Test func aRefusedSubscriptionReachesItsSubscriberWithTheEntitlementToGrant() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("ent")),
                                       policy: EntitlementPolicy(byUID: [getuid(): [.altitude]]), devices: [imu])
        defer { server.stop() }
        let client = AgentClient(socketPath: server.socketPath)
        defer { client.close() }
        let inbox = Inbox()
        let s = inbox.subscribe(client, .deviceMotion, intervalNs: 10_000_000)
        defer { s.cancel() }
        #expect(eventually { !inbox.errors.withLock { $0.isEmpty } })
        let e = try #require(inbox.errors.withLock { $0.first })
        guard case .notEntitled(.deviceMotion, .motion, let uid, _) = e else { Issue.record("\(e)"); return }
        #expect(uid == getuid())
        #expect(e.description.contains("does not hold the \"motion\" entitlement"))
    }

    @Test func aFullAgentIsTooManyClients() throws {
        var config = ServiceConfiguration(socketPath: clientSocketPath("full"))
        config.maxClients = 1
        let server = try ServiceServer(configuration: config, devices: [imu])
        defer { server.stop() }
        let first = try AgentConnection.connect(to: server.socketPath)
        defer { first.close() }
        #expect { try AgentConnection.connect(to: server.socketPath) } throws: { e in
            guard case .tooManyClients(.tooManyClients, _)? = e as? AgentClientError else { return false }
            return true
        }
    }
}

/// What the client says when the socket is not a (compatible) agent's: a
/// listener of the test's own answers with one line and closes.
@Suite(.ownThread) struct NotAnAgentTests {
    /// Binds `path`, accepts one connection on its own thread, writes `line`, closes.
    final class OneLineServer: @unchecked Sendable {
        private let serving: ListeningThread
        init(path: String, line: String) throws {
            unlink(path)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { p in
                for (i, b) in path.utf8.enumerated() { p[i] = b }
            }
            let bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0, listen(fd, 4) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
            // The listener is the thread's to close (ListeningThread says why:
            // this server's late thread once took another test's client).
            serving = ListeningThread(listener: fd) { listener in
                let c = accept(listener, nil, nil)
                guard c >= 0 else { return }
                _ = line.withCString { send(c, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                close(c)
            }
        }
        /// Stops listening: a later connect is refused, not accepted and
        /// closed ("closed before any line").
        func stop() { serving.stop() }
    }

    @Test func aSocketThatSpeaksSomethingElseIsNotAnAgent() throws {
        let path = clientSocketPath("http")
        let server = try OneLineServer(path: path, line: "HTTP/1.1 400 Bad Request\r\n\r\n")
        defer { server.stop(); unlink(path) }
        #expect { try AgentConnection.connect(to: path) } throws: { e in
            guard case .notAnAgent(path, _)? = e as? AgentClientError else { return false }
            return "\(e)".contains("is it an edge-agent socket?")
        }
    }

    @Test func anAgentOfAnotherProtocolSaysBothVersions() throws {
        let path = clientSocketPath("v999")
        let server = try OneLineServer(path: path, line: #"{"class":"version","protocol":999,"agent":"edge-agent"}"# + "\n")
        defer { server.stop(); unlink(path) }
        #expect { try AgentConnection.connect(to: path) } throws: { e in
            guard case .incompatibleProtocol(path, 999, EdgeProtocolInfo.version)? = e as? AgentClientError else { return false }
            return "\(e)".contains("speaks protocol 999") && "\(e)".contains("this client speaks protocol \(EdgeProtocolInfo.version)")
        }
    }

    /// A crashed agent leaves its socket file: nobody accepts (ECONNREFUSED),
    /// which is "no agent", not a system failure; once an agent binds there
    /// again, the client's subscription gets data without being asked again.
    @Test func aStaleSocketIsNoAgentAndTheClientConnectsWhenOneIsBack() throws {
        let path = clientSocketPath("stale")
        let stale = try OneLineServer(path: path, line: "")
        stale.stop()  // the file stays; nobody listens
        #expect(throws: AgentClientError.noAgent(path: path, errno: ECONNREFUSED)) { try AgentConnection.connect(to: path) }
        let client = AgentClient(socketPath: path)
        defer { client.close() }
        let inbox = Inbox()
        let s = inbox.subscribe(client, .deviceMotion, intervalNs: 0)
        defer { s.cancel() }
        unlink(path)
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: path), devices: [imu])
        defer { server.stop() }
        #expect(eventually { client.isConnected })
        #expect(eventually {
            server.publish(motionSample(1))
            return inbox.count > 0
        })
    }
}
