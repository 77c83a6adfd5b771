#if canImport(Glibc)
import Glibc
#endif
import Testing
import EdgeProtocol
@testable import EdgeService

/// Reads sample timestamps from `c` until it holds `count` of them (bounded wait).
func readSamples(_ c: TestClient, until count: Int, into stamps: inout [UInt64], timeoutMs: Int64 = 10_000) -> Bool {
    let deadline = monotonicMs() + timeoutMs
    while stamps.count < count {
        let left = deadline - monotonicMs()
        guard left > 0, let m = c.readMessage(timeoutMs: left) else { return false }
        if m.string("class") == "sample", let t = m.number("timestamp_ns") { stamps.append(UInt64(t)) }
    }
    return true
}

@Suite("Fan-out")
struct FanOutTests {
    @Test func stuckClientNeverBlocksPublishOrTheOthers() throws {
        let server = try makeServer("slow", configure: {
            $0.queueCapacity = 32
            $0.socketSendBufferBytes = 4096
        })
        defer { server.stop() }
        let stuck = try connectClient(server, receiveBuffer: 1024)
        let fast = try connectClient(server)
        _ = try #require(subscribe(stuck, "deviceMotion"))
        _ = try #require(subscribe(fast, "deviceMotion"))

        let total = 1000
        var stamps: [UInt64] = []
        var refused = 0
        for chunk in stride(from: 0, to: total, by: 20) {
            for i in chunk..<(chunk + 20) where !server.publish(.deviceMotion(motionSample(i))) { refused += 1 }
            #expect(readSamples(fast, until: chunk + 20, into: &stamps), "fast client stalled at \(stamps.count)")
        }
        #expect(refused == 0)
        #expect(stamps == (0..<total).map { baseTimestamp + UInt64($0) * period100Hz })

        let stats = server.statistics()
        #expect(stats.overruns == 0)
        #expect(stats.published == total)
        #expect(stats.encoded == total, "each sample is encoded once, not once per client")
        let stuckStats = try #require(stats.clients.first { $0.dropped > 0 })
        #expect(stuckStats.queued <= 32)
        #expect(stats.clients.filter { $0.dropped > 0 }.count == 1)

        // The stuck client's own view: when it finally reads, it is told how much it lost.
        stuck.request(#"{"class":"stats"}"#)
        var dropped: Double?
        let deadline = monotonicMs() + 10_000
        while dropped == nil, monotonicMs() < deadline, let m = stuck.readMessage() {
            if m.string("class") == "stats" { dropped = m.number("dropped") }
        }
        #expect((dropped ?? 0) > 0)
    }

    /// A server with a small client queue, a client subscribed to device
    /// motion that never reads (tiny socket buffers), and a second client
    /// for barriers.
    static func stuckClient(_ name: String, queueCapacity: Int) throws -> (ServiceServer, TestClient, TestClient) {
        let server = try makeServer(name, configure: {
            $0.queueCapacity = queueCapacity
            $0.socketSendBufferBytes = 4096
        })
        let stuck = try connectClient(server, receiveBuffer: 1024)
        let watcher = try connectClient(server)
        _ = try #require(subscribe(stuck, "deviceMotion"))
        return (server, stuck, watcher)
    }

    /// A client too slow for its samples still learns that a device
    /// stopped, and gets its replies: a full queue sheds samples only.
    /// (It used to drop the oldest line of any kind, so an event queued
    /// behind a backlog went, and the client went on showing the device as
    /// connected.)
    @Test func aSlowClientLosesSamplesButNeverAConnectionEvent() throws {
        let (server, stuck, watcher) = try Self.stuckClient("slowevent", queueCapacity: 16)
        defer { server.stop() }
        for i in 0..<200 { server.publish(.deviceMotion(motionSample(i))) }
        _ = try #require(watcher.barrier())
        server.publishConnection(ConnectionEvent(timestampNs: 7, deviceID: "bmp280@0x76", kind: "bmp280",
                                                 state: .degraded, reason: "the chip was reset"))
        stuck.request(#"{"class":"ping","id":"behind"}"#)
        _ = try #require(watcher.barrier())
        for i in 200..<600 { server.publish(.deviceMotion(motionSample(i))) }
        _ = try #require(watcher.barrier())
        let dropped = try #require(server.statistics().clients.first { $0.dropped > 0 }).dropped
        #expect(dropped > 300, "the stuck client lost samples: \(dropped)")

        var event: JSONValue?, pong = false
        var lastSample: Double?
        let deadline = monotonicMs() + 10_000
        while monotonicMs() < deadline, !(event != nil && pong && lastSample == Double(baseTimestamp + 599 * period100Hz)),
              let m = stuck.readMessage(timeoutMs: 2000) {
            switch m.string("class") {
            case "connection": event = m
            case "pong": pong = m.string("id") == "behind"
            case "sample": lastSample = m.number("timestamp_ns")
            default: break
            }
        }
        let e = try #require(event, "the connection event was dropped from the full queue")
        #expect(e.string("device") == "bmp280@0x76")
        #expect(e.bool("connected") == false)
        #expect(pong, "the reply to its ping was dropped")
        #expect(lastSample == Double(baseTimestamp + 599 * period100Hz), "the newest samples are the ones kept")
    }

    /// `edge-agent run` prints `droppedTotal` at stop ("… D dropped in client
    /// queues"); it used to sum only the clients still connected, so a slow
    /// client that went away took its drops out of the summary.
    @Test func totalsKeepTheCountsOfDisconnectedClients() throws {
        let (server, stuck, watcher) = try Self.stuckClient("gone", queueCapacity: 8)
        defer { server.stop() }
        for i in 0..<300 { server.publish(.deviceMotion(motionSample(i))) }
        _ = try #require(watcher.barrier()) // the ring is drained: every drop is counted
        let before = server.statistics()
        let dropped = try #require(before.clients.first { $0.dropped > 0 }).dropped
        #expect(before.droppedTotal == dropped)
        #expect(before.deliveredTotal == before.clients.reduce(0) { $0 + $1.delivered })

        stuck.disconnect()
        let deadline = monotonicMs() + 5000
        while server.statistics().clients.count > 1 && monotonicMs() < deadline { _ = watcher.barrier() }
        let after = server.statistics()
        #expect(after.clients.count == 1)
        #expect(after.droppedTotal == dropped, "the departed client's drops still count")
        #expect(after.deliveredTotal >= before.deliveredTotal, "and so do its delivered lines")

        server.stop()
        let stopped = server.statistics()
        #expect(stopped.clients.isEmpty)
        #expect(stopped.droppedTotal == dropped)
        #expect(stopped.deliveredTotal >= after.deliveredTotal)
    }

    @Test func sixtyFourClientsOneNeverReading() throws {
        let server = try makeServer("fan64", configure: { $0.socketSendBufferBytes = 8192 })
        defer { server.stop() }
        let clientCount = 64
        var clients: [TestClient] = []
        for _ in 0..<clientCount {
            let c = try connectClient(server)
            _ = try #require(subscribe(c, "deviceMotion", interval: 0.01))
            clients.append(c)
        }
        let stuck = clients.removeLast()
        _ = stuck

        let total = 500
        var stamps = Array(repeating: [UInt64](), count: clients.count)
        for chunk in stride(from: 0, to: total, by: 10) {
            for i in chunk..<(chunk + 10) { server.publish(.deviceMotion(motionSample(i))) }
            for (k, c) in clients.enumerated() {
                #expect(readSamples(c, until: chunk + 10, into: &stamps[k]), "client \(k) stalled")
            }
        }
        let expected = (0..<total).map { baseTimestamp + UInt64($0) * period100Hz }
        for s in stamps { #expect(s == expected) }
        let stats = server.statistics()
        #expect(stats.overruns == 0)
        #expect(stats.published == total)
        #expect(stats.clients.count == clientCount)
    }

    /// Bursts of publishes spread over the service thread's wake-up handling,
    /// each followed by waiting for the whole burst. With no idle poll
    /// timeout, a lost wake-up leaves the end of a burst undelivered and the
    /// wait fails. (The race it guards is narrow; this catches a missing or
    /// mis-ordered wake path, not every interleaving.)
    @Test func noWakeUpIsLost() throws {
        let server = try makeServer("wake", configure: {
            $0.idlePollTimeoutMs = -1
            $0.queueCapacity = 4096
        })
        defer { server.stop() }
        let c = try connectClient(server)
        _ = try #require(subscribe(c, "gyroscope"))
        var stamps: [UInt64] = []
        var next: UInt64 = 1
        for round in 0..<200 {
            for k in 0..<(1 + round % 7) {
                server.publish(.gyroscope(GyroscopeSample(timestampNs: next, rotationRate: .zero)))
                next += 1
                // Spread the burst over the service thread's wake-up (a spin,
                // not a sleep: it only varies the interleaving).
                let until = monotonicNs() + UInt64((round * 7 + k * 13) % 40) * 1000
                while monotonicNs() < until {}
            }
            guard readSamples(c, until: Int(next - 1), into: &stamps, timeoutMs: 5000) else {
                Issue.record("burst \(round) not delivered: lost wake-up")
                return
            }
        }
        #expect(stamps == (1..<next).map { $0 })
    }
}
