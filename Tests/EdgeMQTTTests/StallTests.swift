import Testing
import EdgeProtocol
import EdgeClient
@testable import EdgeMQTT

/// The stall watchdog (StreamLiveness) and what the bridge makes of it, on a
/// virtual clock: no broker, no sleeping. A stalled agent must never leave
/// the node `online` (the integration test `aStalledAgentIsNotOnline` does
/// the same with a real agent under SIGSTOP).
@Suite struct StallTests {
    let s = StreamLiveness.Settings()

    @Test func theThresholdIsThreeIntervalsAndAtLeastTwoSeconds() {
        #expect(s.thresholdNs(intervalNs: 100_000_000) == 2_000_000_000)
        #expect(s.thresholdNs(intervalNs: 0) == 2_000_000_000, "every sample: the floor")
        #expect(s.thresholdNs(intervalNs: 1_000_000_000) == 3_000_000_000)
        #expect(s.thresholdNs(intervalNs: 3600 * 1_000_000_000) == 3 * 3600 * 1_000_000_000)
        #expect(s.thresholdNs(intervalNs: .max) == .max, "no overflow")
    }

    @Test func aSilenceBeyondTheThresholdStallsOnceAndASampleResumes() {
        var st = StreamLiveness.State()
        #expect(StreamLiveness.check(&st, thresholdNs: 2_000, nowNs: 10_000) == nil, "not watched before its first sample")
        #expect(StreamLiveness.sample(&st, nowNs: 1_000) == nil)
        #expect(StreamLiveness.check(&st, thresholdNs: 2_000, nowNs: 3_000) == nil, "exactly the threshold: not yet")
        #expect(StreamLiveness.check(&st, thresholdNs: 2_000, nowNs: 3_001) == .stalled(sinceNs: 1_000, silentNs: 2_001))
        #expect(st.isStalled && st.stalledSinceNs == 1_000)
        #expect(StreamLiveness.check(&st, thresholdNs: 2_000, nowNs: 9_000) == nil, "said once")
        #expect(StreamLiveness.sample(&st, nowNs: 9_500) == .resumed(silentNs: 8_500))
        #expect(!st.isStalled && st.lastArrivalNs == 9_500)
        #expect(StreamLiveness.check(&st, thresholdNs: 2_000, nowNs: 11_000) == nil)
        StreamLiveness.reset(&st)
        #expect(st == StreamLiveness.State())
    }

    @Test func streamsSentOnChangeAreNotWatched() {
        #expect(!StreamLiveness.isPeriodic(.pedometer) && !StreamLiveness.isPeriodic(.activity)
                && !StreamLiveness.isPeriodic(.pedometerEvent))
        #expect(StreamLiveness.isPeriodic(.deviceMotion) && StreamLiveness.isPeriodic(.altitude)
                && StreamLiveness.isPeriodic(.submersion))
    }

    @Test func theStatusIsOfflineOnlyWhenEveryPeriodicStreamIsStalled() {
        func online(active: Set<StreamName>, stalled: Set<StreamName>) -> Bool {
            Bridge.PlanInput(agentConnected: true, agentVersion: "0.1.0", grants: [:], active: active, devices: nil,
                             calibration: nil, stopping: false, stalled: stalled).online
        }
        #expect(online(active: [.deviceMotion, .altitude], stalled: []))
        #expect(online(active: [.deviceMotion, .altitude], stalled: [.altitude]), "one stream still delivers")
        #expect(!online(active: [.deviceMotion, .altitude], stalled: [.deviceMotion, .altitude]))
        #expect(!online(active: [.deviceMotion, .activity], stalled: [.deviceMotion]),
                "a stream sent on change proves nothing about a hung agent")
        #expect(online(active: [.activity], stalled: []), "only change streams: nothing to judge by")
    }

    // MARK: - the bridge on a virtual clock

    final class Lines: @unchecked Sendable {
        let log = BridgeLog(keepLines: true, sink: { _ in })
        func count(_ text: String) -> Int { log.kept.filter { $0.contains(text) }.count }
    }

    func makeBridge(_ streams: [StreamSettings], _ lines: Lines) throws -> (Bridge, RetainedStore, OutboundQueue) {
        let c = BridgeConfig(node: "n1", streams: streams)
        let queue = OutboundQueue(capacity: 10_000)
        let store = RetainedStore(wakeup: queue.wakeup)
        let bridge = Bridge(config: c, node: "n1", queue: queue, retained: store, log: lines.log)
        let line = #"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":1,"gid":1,"entitlements":["motion","altitude"],"maxLineBytes":4096,"queueCapacity":256}"#
        guard case .version(let v) = try ServerMessage.decode(line: Array(line.utf8)) else { throw HarnessError("no version") }
        bridge.handle(.connected(v), nowNs: 0)
        return (bridge, store, queue)
    }

    func motion(_ t: UInt64) -> FeedEvent {
        .sample(.deviceMotion(DeviceMotionSample(timestampNs: t, attitude: Quaternion(w: 1, x: 0, y: 0, z: 0), gravity: .zero,
                                                 userAcceleration: .zero, rotationRate: .zero, headingDeg: 90,
                                                 referenceFrame: .xMagneticNorthZVertical)))
    }

    func altitude(_ t: UInt64) -> FeedEvent {
        .sample(.altitude(AltitudeSample(timestampNs: t, relativeAltitude: 0, pressure: 101_325, temperature: 20)))
    }

    func status(_ store: RetainedStore) -> String? {
        store.entries["edge/n1/status"].map { String(decoding: $0.payload, as: UTF8.self) }
    }

    @Test func aHungAgentTakesTheNodeOfflineAndItsReturnBringsItBack() throws {
        let lines = Lines()
        let (bridge, store, queue) = try makeBridge([StreamSettings(stream: .deviceMotion, jsonIntervalS: 0.1, scalarsIntervalS: 1)], lines)
        let ms: UInt64 = 1_000_000
        bridge.handle(.subscribed(.deviceMotion, intervalS: 0.1), nowNs: 1000 * ms)
        for i in UInt64(0)..<10 { bridge.handle(motion(i * 100 * ms), nowNs: (1000 + i * 100) * ms) }
        #expect(status(store) == "online")
        // Last sample at 1.9 s; 3 × 0.1 s is below the 2 s floor.
        bridge.checkLiveness(nowNs: 3900 * ms)
        #expect(status(store) == "online", "2.0 s of silence: not yet")
        #expect(lines.count("stalled") == 0)
        bridge.checkLiveness(nowNs: 3901 * ms)
        #expect(status(store) == "offline", "every stream stalled: not online")
        let snap = bridge.snapshot()
        #expect(snap.silent && !snap.online && snap.agentConnected, "connected, and said to be stalled")
        #expect(snap.streams.first?.stalledSinceNs == 1900 * ms && snap.streams.first?.stallAfterNs == 2000 * ms)
        bridge.checkLiveness(nowNs: 10_000 * ms)
        #expect(lines.count("deviceMotion stalled: no sample from the agent for 2.0 s") == 1, "logged once: \(lines.log.kept)")
        #expect(lines.count("no subscribed stream delivers") == 1)

        while queue.pop() != nil {}
        bridge.handle(motion(20_000 * ms), nowNs: 20_000 * ms)
        #expect(status(store) == "online")
        #expect(lines.count("deviceMotion resumed after 18.1 s without samples") == 1, "\(lines.log.kept)")
        #expect(lines.count("the node resumed: status online again") == 1)
        #expect(queue.pop()?.topic == "edge/n1/deviceMotion", "data flows again")
        #expect(!bridge.snapshot().silent && bridge.snapshot().streams.first?.stalledSinceNs == nil)
    }

    @Test func oneStalledStreamIsReportedWhileTheOtherKeepsTheNodeOnline() throws {
        let lines = Lines()
        let (bridge, store, _) = try makeBridge([StreamSettings(stream: .deviceMotion, jsonIntervalS: 0.1, scalarsIntervalS: 0.1),
                                                 StreamSettings(stream: .altitude, jsonIntervalS: 1, scalarsIntervalS: 1)], lines)
        let s: UInt64 = 1_000_000_000
        bridge.handle(.subscribed(.deviceMotion, intervalS: 0.1), nowNs: 0)
        bridge.handle(.subscribed(.altitude, intervalS: 1), nowNs: 0)
        bridge.handle(altitude(0), nowNs: 1 * s)
        for i in UInt64(1)...10 {
            bridge.handle(motion(i * s), nowNs: i * s)
            bridge.checkLiveness(nowNs: i * s)
        }
        // altitude at 1 s intervals: stalled after 3 s, at 4 s + a check.
        #expect(status(store) == "online")
        #expect(lines.count("altitude stalled") == 1 && lines.count("deviceMotion stalled") == 0, "\(lines.log.kept)")
        #expect(lines.count("no subscribed stream delivers") == 0)
        let snap = bridge.snapshot()
        #expect(!snap.silent && snap.online)
        #expect(snap.streams.first { $0.stream == .altitude }?.stalledSinceNs == 1 * s)
        // The agent connection ends: nothing is watched until samples flow again.
        bridge.handle(.disconnected("closed"), nowNs: 11 * s)
        #expect(bridge.snapshot().streams.allSatisfy { $0.stalledSinceNs == nil && $0.lastArrivalNs == nil })
        bridge.checkLiveness(nowNs: 100 * s)
        #expect(lines.count("stalled") == 1)
    }
}

/// The agent connection's own watchdog: probes into its silence, on a
/// virtual clock.
@Suite struct AgentSilenceTests {
    let s = StreamLiveness.Settings()
    let sec: UInt64 = 1_000_000_000

    @Test func silenceIsProbedAndAnUnansweredProbeMeansUnresponsive() {
        var a = StreamLiveness.Agent()
        #expect(StreamLiveness.check(&a, s, nowNs: 100 * sec) == nil, "not connected: nothing to probe")
        #expect(!StreamLiveness.heard(&a, nowNs: 0))
        #expect(StreamLiveness.check(&a, s, nowNs: 3 * sec) == nil, "3 s exactly: not yet")
        #expect(StreamLiveness.check(&a, s, nowNs: 3 * sec + 1) == .probe)
        #expect(StreamLiveness.check(&a, s, nowNs: 6 * sec) == nil, "the probe has 3 s")
        #expect(StreamLiveness.check(&a, s, nowNs: 6 * sec + 2) == .unresponsive(silentNs: 6 * sec + 2))
        #expect(a.unresponsive)
        #expect(StreamLiveness.check(&a, s, nowNs: 7 * sec) == nil, "said once")
        #expect(StreamLiveness.check(&a, s, nowNs: 9 * sec + 3) == .probe, "asked again while it does not answer")
        #expect(StreamLiveness.heard(&a, nowNs: 10 * sec), "it had been unresponsive")
        #expect(!a.unresponsive && a.probeSentNs == nil)
        #expect(StreamLiveness.check(&a, s, nowNs: 12 * sec) == nil)
    }

    final class FakeFeed: SampleFeed, @unchecked Sendable {
        private let probes = Locked(0)
        var probeCount: Int { probes.withLock { $0 } }
        func start(subscriptions: [FeedSubscription], handler: @escaping @Sendable (FeedEvent) -> Void) {}
        func requestDevices() { probes.withLock { $0 += 1 } }
        func stop() {}
        var heartbeat: UInt64 { 0 }
    }

    /// Only `activity` (sent on a change): no stream can stall, so the
    /// probe is what takes a hung agent's node offline.
    @Test func aHungAgentWithOnlyChangeStreamsGoesOfflineAndComesBack() throws {
        let lines = BridgeLog(keepLines: true, sink: { _ in })
        let queue = OutboundQueue(capacity: 1000)
        let store = RetainedStore(wakeup: queue.wakeup)
        let bridge = Bridge(config: BridgeConfig(node: "n1", streams: [StreamSettings(stream: .activity)]), node: "n1",
                            queue: queue, retained: store, log: lines)
        let feed = FakeFeed()
        bridge.attach(feed)
        let line = #"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":1,"gid":1,"entitlements":["fitness"],"maxLineBytes":4096,"queueCapacity":256}"#
        guard case .version(let v) = try ServerMessage.decode(line: Array(line.utf8)) else { Issue.record("no version"); return }
        func status() -> String? { store.entries["edge/n1/status"].map { String(decoding: $0.payload, as: UTF8.self) } }
        func count(_ text: String) -> Int { lines.kept.filter { $0.contains(text) }.count }

        bridge.handle(.connected(v), nowNs: 0)
        bridge.handle(.subscribed(.activity, intervalS: 1), nowNs: 500_000_000)
        #expect(status() == "online")
        let before = feed.probeCount
        bridge.checkLiveness(nowNs: 3 * sec)
        #expect(feed.probeCount == before, "2.5 s of silence: no probe yet")
        bridge.checkLiveness(nowNs: 4 * sec)
        #expect(feed.probeCount == before + 1 && status() == "online", "asked; not yet judged")
        bridge.checkLiveness(nowNs: 7 * sec + 1)
        #expect(status() == "offline", "the probe went unanswered")
        #expect(bridge.snapshot().agentUnresponsive && !bridge.snapshot().online && bridge.snapshot().agentConnected)
        #expect(count("did not answer a devices request within 3.0 s: it is hung") == 1 && count("status offline until the agent answers") == 1,
                "\(lines.kept)")
        bridge.checkLiveness(nowNs: 8 * sec)
        #expect(count("it is hung") == 1, "said once")

        bridge.handle(.devices([]), nowNs: 9 * sec)
        #expect(status() == "online")
        #expect(count("the agent answers again") == 1 && count("the node resumed: status online again") == 1, "\(lines.kept)")
        #expect(!bridge.snapshot().agentUnresponsive)
    }
}
