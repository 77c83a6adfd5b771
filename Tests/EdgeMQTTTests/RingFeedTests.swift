#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import EdgeValues
import EdgeProtocol
import EdgeService
import EdgeClient
@testable import EdgeMQTT

// The bridge's feed on the agent's shared-memory rings (docs/protocol.md,
// "Shared-memory rings"), driven turn by turn as the broker thread drives
// it: against the agent's real service code in this process (real rings),
// and against a scripted agent for an offer that cannot be read. No
// sleeping: every wait is a bounded loop of turns.

private func socketPath(_ tag: String) -> String {
    "/tmp/edge-mqtt-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
}

private let imu = DeviceInfo(id: "mpu6050@0x68", kind: "mpu6050", address: "simulated@0x68", state: .present,
                             streams: [.accelerometer, .gyroscope, .deviceMotion], rateHz: 100)

private func motion(_ i: Int) -> Sample {
    .deviceMotion(DeviceMotionSample(timestampNs: 1_000_000_000 + UInt64(i) * 10_000_000, attitude: .identity,
                                     gravity: Vector3(0, 0, -9.80665), userAcceleration: Vector3(Double(i), 0, 0),
                                     rotationRate: .zero))
}

/// What a feed reported.
private final class Events: @unchecked Sendable {
    let lock = NSLock()
    var samples: [Sample] = []
    var lost = 0
    var lostEvents = 0
    func handle(_ e: FeedEvent) {
        lock.lock(); defer { lock.unlock() }
        switch e {
        case .sample(let s): samples.append(s)
        case .lost(_, let n): lost += n; lostEvents += 1
        default: break
        }
    }
    var count: Int { lock.lock(); defer { lock.unlock() }; return samples.count }
}

/// Turns the feed (as the broker thread does: poll its socket, then a
/// turn) until `done` holds; false after `seconds`.
private func drive(_ feed: PolledAgentFeed, _ seconds: Double = 20, until done: () -> Bool) -> Bool {
    let end = monotonicNowNs() + UInt64(seconds * 1e9)
    while monotonicNowNs() < end {
        if done() { return true }
        var p = pollfd(fd: feed.pollDescriptor, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, p.fd >= 0 ? 1 : 0, 5)
        feed.service(readable: r > 0, nowNs: monotonicNowNs())
    }
    return done()
}

@Suite(.serialized) struct RingFeedTests {
    /// The feed maps the ring the agent offers and gets every sample from
    /// it, none as a line; it stops turning while 2999 samples are written
    /// (more than twice the ring), then reports the ones overwritten as
    /// `.lost` and goes on with the newest, in order. Another reader of the
    /// same ring, turned meanwhile, loses none.
    @Test func aFeedThatFallsARingBehindReportsTheSamplesLost() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socketPath("ringlost")),
                                       devices: [imu])
        defer { server.stop() }
        let feed = PolledAgentFeed(socketPath: server.socketPath, usesRings: true)
        let healthy = PolledAgentFeed(socketPath: server.socketPath, usesRings: true)
        defer { feed.stop(); healthy.stop() }
        let events = Events(), fine = Events()
        let sub = [FeedSubscription(stream: .deviceMotion, intervalNs: 0)]
        feed.start(subscriptions: sub) { events.handle($0) }
        healthy.start(subscriptions: sub) { fine.handle($0) }
        #expect(drive(feed) { feed.readsRings }, "no ring mapped: \(feed.ringCounts)")
        #expect(drive(healthy) { healthy.readsRings })
        _ = server.publish(motion(0))
        #expect(drive(feed) { events.count == 1 })
        // The bridge's thread stopped (SIGSTOP, a starved process): nobody
        // turns the feed. The healthy reader keeps up, and paces the
        // writing so that the agent's own hand-over never overflows.
        for i in 1..<3000 {
            _ = server.publish(motion(i))
            if i % 200 == 0 { _ = drive(healthy) { fine.count >= i } }
        }
        #expect(drive(healthy) { fine.count == 3000 }, "\(fine.count)")
        #expect(fine.lost == 0 && server.statistics().overruns == 0)
        #expect(drive(feed) { events.count + events.lost == 3000 }, "got \(events.count), lost \(events.lost)")
        #expect(events.lost >= 3000 - 1 - SampleRingFormat.slotCount, "lost \(events.lost)")
        #expect(events.lostEvents >= 1)
        let counts = feed.ringCounts
        #expect(counts.lost == events.lost && counts.lineSamples == 0 && counts.fallbacks == 0, "\(counts)")
        #expect(counts.streams == [.deviceMotion])
        let got = events.samples.map(\.timestampNs)
        #expect(got == got.sorted() && got.last == motion(2999).timestampNs)
        #expect(events.samples.last == motion(2999), "a ring record decodes to the sample written")
    }

    /// A feed told not to use rings (`EDGE_AGENT_RINGS=0`) reads lines, and
    /// a ring feed decimates the ring's records to its interval as the
    /// agent decimates lines: the same samples either way.
    @Test func ringAndLinesGiveTheSameSamplesAtAnInterval() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socketPath("ringdec")),
                                       devices: [imu])
        defer { server.stop() }
        let viaRing = PolledAgentFeed(socketPath: server.socketPath, usesRings: true)
        let viaLines = PolledAgentFeed(socketPath: server.socketPath, usesRings: false)
        defer { viaRing.stop(); viaLines.stop() }
        let ring = Events(), lines = Events()
        let sub = [FeedSubscription(stream: .deviceMotion, intervalNs: 50_000_000)]
        viaRing.start(subscriptions: sub) { ring.handle($0) }
        viaLines.start(subscriptions: sub) { lines.handle($0) }
        #expect(drive(viaRing) { viaRing.readsRings })
        #expect(drive(viaLines) { server.statistics().clients.count == 2
                    && server.statistics().clients.allSatisfy { $0.subscriptions.contains(.deviceMotion) } })
        for i in 0..<200 {
            _ = server.publish(motion(i))
            if i % 50 == 49 { _ = drive(viaRing, 5) { ring.count >= (i + 1) / 5 }; _ = drive(viaLines, 0.01) { false } }
        }
        #expect(drive(viaLines) { lines.count == 40 }, "lines \(lines.count)")
        #expect(drive(viaRing) { ring.count == 40 }, "ring \(ring.count)")
        #expect(ring.samples == lines.samples)
        // Every record is read, the last four (after the 40th sample kept)
        // maybe only on a later turn: the agent's service thread writes the
        // ring after publish returns, so the 40th can be read before them
        // (under ThreadSanitizer beside a test run: 196 at the check above).
        #expect(drive(viaRing) { viaRing.ringCounts.samples == 200 } && viaRing.ringCounts.lineSamples == 0,
                "\(viaRing.ringCounts)")
        #expect(ring.count == 40)
        #expect(viaLines.ringCounts.samples == 0 && viaLines.ringCounts.lineSamples == 40, "\(viaLines.ringCounts)")
        #expect(!viaLines.readsRings)
    }

    /// stop() may come from another thread (edge-mqtt's main thread on
    /// SIGTERM) while the broker thread polls the feed's socket or waits on
    /// its rings' words outside the lock: it shuts the socket down (the
    /// agent sees the client leave) but keeps the descriptor and the
    /// mappings until the driving thread's next turn, so that no number or
    /// address is freed under that thread; then they go.
    @Test func stopLeavesTheSocketAndRingsToTheDrivingThreadsNextTurn() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socketPath("ringstop")),
                                       devices: [imu])
        defer { server.stop() }
        let feed = PolledAgentFeed(socketPath: server.socketPath, usesRings: true)
        let events = Events()
        feed.start(subscriptions: [FeedSubscription(stream: .deviceMotion, intervalNs: 0)]) { events.handle($0) }
        #expect(drive(feed) { feed.readsRings }, "no ring mapped: \(feed.ringCounts)")
        let fd = feed.pollDescriptor
        try #require(fd >= 0)
        func inode(_ fd: Int32) -> UInt64? {
            var st = stat()
            return fstat(fd, &st) == 0 ? UInt64(st.st_ino) : nil
        }
        let socketInode = try #require(inode(fd))
        #expect(server.statistics().clients.count == 1)

        feed.stop()
        #expect(inode(fd) == socketInode, "the socket stays open until the driving thread's turn")
        #expect(feed.pollDescriptor == -1 && !feed.readsRings && !feed.waitsOnRings)
        // The agent sees the client leave at once (the socket is shut down).
        let end = monotonicNowNs() + 20_000_000_000
        while server.statistics().clients.count != 0 && monotonicNowNs() < end { _ = poll(nil, 0, 5) }
        #expect(server.statistics().clients.count == 0)

        let before = events.count
        feed.service(readable: false, nowNs: monotonicNowNs())
        #expect(inode(fd) != socketInode, "released on the driving thread's turn")
        _ = server.publish(motion(1))
        feed.service(readable: false, nowNs: monotonicNowNs())
        #expect(events.count == before, "no event after stop")
    }

    /// A stream decimated to 1 Hz (or 10 Hz) does not wake the thread at each of the
    /// agent's deliveries (every 20 ms) only to drop their samples: after a
    /// sample, the feed asks to be turned at the next one's due capture
    /// time (plus 1 ms) and not to wait on the rings until then. A stream
    /// whose next sample is due within a delivery waits on the rings.
    @Test func aSlowStreamSleepsUntilItsNextSampleIsDue() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: socketPath("ringtimer")),
                                       devices: [imu])
        defer { server.stop() }
        func run(intervalNs: UInt64) -> (wakeAtNs: UInt64?, waitsOnRings: Bool, capturedNs: UInt64) {
            let feed = PolledAgentFeed(socketPath: server.socketPath, usesRings: true)
            defer { feed.stop() }
            let events = Events()
            feed.start(subscriptions: [FeedSubscription(stream: .deviceMotion, intervalNs: intervalNs)]) { events.handle($0) }
            #expect(drive(feed) { feed.readsRings })
            // A sample captured now (CLOCK_MONOTONIC, as the agent's are).
            let t = monotonicNowNs()
            _ = server.publish(.deviceMotion(DeviceMotionSample(timestampNs: t, attitude: .identity, gravity: .zero,
                                                               userAcceleration: .zero, rotationRate: .zero)))
            #expect(drive(feed) { events.count == 1 })
            return (feed.wakeAtNs, feed.waitsOnRings, t)
        }
        let slow = run(intervalNs: 1_000_000_000)
        #expect(slow.wakeAtNs == slow.capturedNs + 1_000_000_000 + 1_000_000, "\(String(describing: slow.wakeAtNs))")
        #expect(!slow.waitsOnRings)
        let fast = run(intervalNs: 10_000_000)
        #expect(fast.wakeAtNs == nil && fast.waitsOnRings)
    }

    /// An agent that offers a ring but passes no descriptor (or one this
    /// build cannot read): the feed counts the fallback, says why, asks for
    /// the stream again without a ring and takes its samples as lines.
    @Test func aRingThatCannotBeReadFallsBackToLines() throws {
        let path = socketPath("ringfake")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in raw.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        defer { close(listener); unlink(path) }

        let feed = PolledAgentFeed(socketPath: path, usesRings: true)
        defer { feed.stop() }
        let events = Events()
        feed.start(subscriptions: [FeedSubscription(stream: .deviceMotion, intervalNs: 0)]) { events.handle($0) }
        _ = drive(feed, 0.05) { false }   // connects (the backlog holds it)
        let agent = accept(listener, nil, nil)
        try #require(agent >= 0)
        defer { close(agent) }
        func send(_ line: String) { let b = Array((line + "\n").utf8); _ = b.withUnsafeBytes { write(agent, $0.baseAddress, $0.count) } }
        var received = ""
        func read(until text: String) -> Bool {
            drive(feed, 10) {
                var buf = [UInt8](repeating: 0, count: 4096)
                var p = pollfd(fd: agent, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, 0) > 0 {
                    let n = buf.withUnsafeMutableBytes { Glibc.read(agent, $0.baseAddress, $0.count) }
                    if n > 0 { received += String(decoding: buf[0..<n], as: UTF8.self) }
                }
                return received.contains(text)
            }
        }
        send(#"{"class":"version","protocol":\#(EdgeProtocolInfo.version),"agent":"edge-agent","agentVersion":"0.1.0","uid":1,"gid":1,"entitlements":["motion"],"maxLineBytes":4096,"queueCapacity":256}"#)
        let layout = SampleRingFormat.layoutIDText
        #expect(read(until: #""ring":"\#(layout)""#), "the first subscribe asks for a ring: \(received)")
        received = ""
        send(#"{"class":"subscribed","stream":"deviceMotion","interval_s":0,"id":"subscribe deviceMotion","ring":{"slots":1024,"record_bytes":\#(SampleRingFormat.recordBytes),"layout":"\#(layout)","start":0}}"#)
        #expect(read(until: "\n"), "asked again: \(received)")
        #expect(received.contains(#""subscribe""#) && received.contains("deviceMotion") && !received.contains(#""ring""#),
                "the stream asked for again without a ring: \(received)")
        send(#"{"class":"subscribed","stream":"deviceMotion","interval_s":0,"id":"subscribe deviceMotion"}"#)
        var w = JSONWriter(capacity: 512)
        MessageEncoder.sample(motion(7), into: &w)
        send(String(decoding: w.bytes, as: UTF8.self).trimmingCharacters(in: .newlines))
        #expect(drive(feed) { events.count == 1 })
        #expect(events.samples == [motion(7)])
        let counts = feed.ringCounts
        #expect(counts.fallbacks == 1 && counts.samples == 0 && counts.lineSamples == 1, "\(counts)")
        #expect(counts.lastFailure == "deviceMotion: no descriptor came with the offer", "\(counts)")
        #expect(!feed.readsRings)
    }
}
