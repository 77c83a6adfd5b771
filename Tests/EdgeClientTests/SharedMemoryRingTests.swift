#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import EdgeValues
import EdgeProtocol
import EdgeService
import CEdgeShims
@testable import EdgeClient

// The shared-memory rings (docs/protocol.md, "Shared-memory rings") between
// the agent's real service code and the client library, in this process:
// what a ring reader gets is what a line reader gets; the agent's work does
// not grow with ring readers; a reader that stops loses the oldest samples
// and is told, and nobody else notices; the descriptor goes only to a client
// entitled to the stream, and it cannot be written or resized; an agent that
// restarts gives an error and then a new ring. Waits are bounded polls.

/// Collects whole samples (the line path's decoding and the ring's memory
/// copy must give equal values).
final class SampleInbox: Sendable {
    let samples = Locked<[Sample]>([])
    let lost = Locked<Int>(0)
    var count: Int { samples.withLock { $0.count } }
    func subscribe(_ c: AgentClient, _ s: StreamName, intervalNs: UInt64 = 0,
                   gate: (@Sendable () -> Void)? = nil) -> Subscription {
        c.subscribe(s, intervalNs: intervalNs,
                    onSample: { x in gate?(); self.samples.withLock { $0.append(x) } },
                    onError: { e in Issue.record("subscription refused: \(e)") },
                    onLoss: { n in self.lost.withLock { $0 += n } })
    }
}

/// A device-motion sample with every field set from `i` (north yaw null on odd ones).
func richMotion(_ i: Int) -> Sample {
    let t = 5_000_000_000 + UInt64(i) * 10_000_000
    let a = Double(i) * 0.01
    let q = Quaternion(w: cos(a / 2), x: sin(a / 2) * 0.6, y: sin(a / 2) * 0.8, z: 0)
    return .deviceMotion(DeviceMotionSample(
        timestampNs: t, attitude: q, gravity: Vector3(0.1 * a, -0.2, 9.8), userAcceleration: Vector3(a, -a, 0.5),
        rotationRate: Vector3(0.01, 0.02 * a, -0.03), magneticField: Vector3(20 + a, -5, 40),
        magneticFieldAccuracy: i % 3 == 0 ? .high : .low, headingDeg: i % 2 == 0 ? 12.5 + a : nil,
        referenceFrame: i % 2 == 0 ? .xMagneticNorthZVertical : .xArbitraryZVertical,
        attitude6D: Quaternion(w: 1, x: 0, y: 0, z: 0), northYawDeg: i % 2 == 0 ? -33.25 : nil,
        northYawState: i % 2 == 0 ? .live : .none))
}

private func subscribed(_ server: ServiceServer, clients n: Int, to s: StreamName) -> Bool {
    let list = server.statistics().clients
    return list.count == n && list.allSatisfy { $0.subscriptions.contains(s) }
}

@Suite struct SharedMemoryRingTests {
    @Test func aRingReaderGetsExactlyWhatALineReaderGets() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("ring")),
                                       devices: [imu])
        defer { server.stop() }
        let ringClient = AgentClient(socketPath: server.socketPath, usesRings: true)
        let lineClient = AgentClient(socketPath: server.socketPath, usesRings: false)
        defer { ringClient.close(); lineClient.close() }
        let viaRing = SampleInbox(), viaLines = SampleInbox()
        let a = viaRing.subscribe(ringClient, .deviceMotion)
        let b = viaLines.subscribe(lineClient, .deviceMotion)
        defer { a.cancel(); b.cancel() }
        #expect(eventually { subscribed(server, clients: 2, to: .deviceMotion) })
        for i in 0..<300 { server.publish(richMotion(i)) }
        #expect(eventually { viaRing.count == 300 && viaLines.count == 300 }, "\(viaRing.count) \(viaLines.count)")
        let ring = viaRing.samples.withLock { $0 }, lines = viaLines.samples.withLock { $0 }
        #expect(ring == lines)
        #expect(ring == (0..<300).map(richMotion))
        #expect(ringClient.counts.ringSamples == 300 && lineClient.counts.ringSamples == 0)
        #expect(ringClient.counts.ringFallbacks == 0)
        // Lines were encoded for the line reader only.
        #expect(server.statistics().encoded == 300)
    }

    @Test func theAgentsWorkDoesNotGrowWithRingReaders() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("ring8")),
                                       devices: [imu])
        defer { server.stop() }
        let clients = (0..<8).map { _ in AgentClient(socketPath: server.socketPath, usesRings: true) }
        defer { for c in clients { c.close() } }
        let inboxes = clients.map { _ in SampleInbox() }
        let subs = zip(clients, inboxes).map { c, i in i.subscribe(c, .deviceMotion) }
        defer { for s in subs { s.cancel() } }
        #expect(eventually { subscribed(server, clients: 8, to: .deviceMotion) })
        for i in 0..<200 { server.publish(richMotion(i)) }
        #expect(eventually { inboxes.allSatisfy { $0.count == 200 } }, "\(inboxes.map(\.count))")
        let stats = server.statistics()
        // Nothing encoded, nothing queued or written per client: one ring write per sample.
        #expect(stats.encoded == 0)
        #expect(stats.clients.allSatisfy { $0.delivered < 10 && $0.dropped == 0 }, "\(stats.clients)")
    }

    @Test func aReaderThatStopsLosesTheOldestSamplesIsToldAndSlowsNobody() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("ringslow")),
                                       devices: [imu])
        defer { server.stop() }
        let stuck = AgentClient(socketPath: server.socketPath, usesRings: true)
        let healthy = AgentClient(socketPath: server.socketPath, usesRings: true)
        defer { stuck.close(); healthy.close() }
        let gate = Locked<Bool>(false)   // true: the stuck reader's handler may return
        let entered = Locked<Bool>(false)
        let slow = SampleInbox(), fine = SampleInbox()
        let a = slow.subscribe(stuck, .deviceMotion, gate: {
            entered.withLock { $0 = true }
            while !gate.withLock({ $0 }) { var p = pollfd(); _ = poll(&p, 0, 1) }
        })
        let b = fine.subscribe(healthy, .deviceMotion)
        defer { a.cancel(); b.cancel() }
        #expect(eventually { subscribed(server, clients: 2, to: .deviceMotion) })
        server.publish(richMotion(0))
        #expect(eventually { entered.withLock { $0 } })
        // The stuck reader holds its first sample while 2999 more are written
        // (more than twice its ring). The other reader gets every one, and
        // the agent's own hand-over never overflowed.
        for i in 1..<3000 {
            server.publish(richMotion(i))
            if i % 500 == 0 { _ = eventually { fine.count >= i } }
        }
        #expect(eventually { fine.count == 3000 }, "\(fine.count)")
        #expect(server.statistics().overruns == 0)
        gate.withLock { $0 = true }
        #expect(eventually { slow.count + slow.lost.withLock { $0 } == 3000 },
                "got \(slow.count), told of \(slow.lost.withLock { $0 }) lost")
        let lost = slow.lost.withLock { $0 }
        #expect(lost >= 3000 - 1 - SampleRingFormat.slotCount)
        #expect(stuck.counts.ringLost == lost)
        // What it did get is the newest, in order.
        let got = slow.samples.withLock { $0 }.map(\.timestampNs)
        #expect(got == got.sorted() && got.last == richMotion(2999).timestampNs)
        #expect(fine.lost.withLock { $0 } == 0)
    }

    @Test func aRestartedAgentGivesAnErrorThenANewRing() throws {
        let path = clientSocketPath("ringrestart")
        var server: ServiceServer? = try ServiceServer(configuration: ServiceConfiguration(socketPath: path), devices: [imu])
        let client = AgentClient(socketPath: path, backoff: Backoff(initialNs: 10_000_000, maximumNs: 100_000_000),
                                 usesRings: true)
        defer { client.close() }
        let events = Locked<[AgentEvent]>([])
        let o = client.observe { e in events.withLock { $0.append(e) } }
        defer { o.cancel() }
        let inbox = SampleInbox()
        let s = inbox.subscribe(client, .deviceMotion)
        defer { s.cancel() }
        #expect(eventually { subscribed(server!, clients: 1, to: .deviceMotion) })
        server!.publish(richMotion(1))
        #expect(eventually { inbox.count == 1 })
        server!.stop(reason: "restart")
        server = nil
        #expect(eventually { events.withLock { $0.contains { if case .disconnected = $0 { return true }; return false } } })
        #expect(eventually { client.ringStreams.isEmpty })
        let again = try ServiceServer(configuration: ServiceConfiguration(socketPath: path), devices: [imu])
        defer { again.stop() }
        #expect(eventually { subscribed(again, clients: 1, to: .deviceMotion) })
        again.publish(richMotion(2))
        #expect(eventually { inbox.count == 2 })
        #expect(client.counts.ringSamples == 2 && client.counts.connections == 2)
        #expect(client.ringStreams == [.deviceMotion])
        #expect(again.statistics().encoded == 0)
    }

    @Test func eachReaderOfTheSubmersionRingSeesOnlyItsDepth() throws {
        let uid = getuid()
        let shallowPath = clientSocketPath("ringdeep")
        // Two servers: this process can only be one uid, so one policy each.
        let full = try ServiceServer(configuration: ServiceConfiguration(socketPath: shallowPath + "f"),
                                     policy: EntitlementPolicy(byUID: [uid: [.submersionFull]]), devices: [imu])
        let shallow = try ServiceServer(configuration: ServiceConfiguration(socketPath: shallowPath + "s"),
                                        policy: EntitlementPolicy(byUID: [uid: [.submersionShallow]]), devices: [imu])
        defer { full.stop(); shallow.stop() }
        let deep = SubmersionSample(timestampNs: 9_000_000_000, depth: 12, pressure: 221_000, surfacePressure: 101_325,
                                    temperature: 14, state: .submerged, depthState: .submergedDeep,
                                    shallowDepthState: .pastMaxDepth)
        var seen: [SubmersionSample] = []
        for server in [full, shallow] {
            let c = AgentClient(socketPath: server.socketPath, usesRings: true)
            defer { c.close() }
            let inbox = SampleInbox()
            let s = inbox.subscribe(c, .submersion)
            defer { s.cancel() }
            #expect(eventually { subscribed(server, clients: 1, to: .submersion) })
            server.publish(.submersion(deep))
            #expect(eventually { inbox.count == 1 })
            #expect(c.counts.ringSamples == 1)
            if case .submersion(let m)? = inbox.samples.withLock({ $0.first }) { seen.append(m) }
        }
        #expect(seen.count == 2)
        #expect(seen.first?.depth == 12 && seen.first?.maximumDepth == 40)
        #expect(seen.last.map { $0.depth.isNaN && $0.pressure.isNaN && $0.depthState == .pastMaxDepth } == true)
    }
}

/// The descriptor itself, read with the kernel's calls and no client library.
@Suite struct RingDescriptorTests {
    /// Sends `line` and returns the reply line and the descriptors that came with it.
    func exchange(_ path: String, _ line: String) throws -> (String, [Int32]) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in path.utf8.enumerated() { p[i] = b }
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { throw HarnessFailure("connect: errno \(errno)") }
        defer { close(fd) }
        var reader = LineReader()
        _ = reader.read(fd, timeoutMs: 5000)
        guard reader.takeLine() != nil else { throw HarnessFailure("no version line") }
        _ = Array(line.utf8 + [10]).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let end = monotonicNowNs() + 10_000_000_000
        var fds: [Int32] = []
        while monotonicNowNs() < end {
            _ = reader.read(fd, timeoutMs: 100)
            while let fd = reader.takeDescriptor() { fds.append(fd) }
            if let reply = reader.takeLine() { return (String(decoding: reply, as: UTF8.self), fds) }
        }
        throw HarnessFailure("no reply")
    }

    struct HarnessFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    @Test func onlyAnEntitledClientGetsTheRingAndNobodyCanWriteIt() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: clientSocketPath("ringfd")),
                                       policy: EntitlementPolicy(byUID: [getuid(): [.altitude]]), devices: [imu])
        defer { server.stop() }
        let layout = SampleRingFormat.layoutIDText
        // Not entitled to motion: an error, and no descriptor.
        let (refused, none) = try exchange(server.socketPath,
                                           #"{"class":"subscribe","stream":"deviceMotion","ring":"\#(layout)","id":1}"#)
        #expect(refused.contains(#""code":"notEntitled""#), "\(refused)")
        #expect(none.isEmpty)
        // Another layout (another build): lines, no descriptor.
        let (other, noRing) = try exchange(server.socketPath,
                                           #"{"class":"subscribe","stream":"altitude","ring":"0123456789abcdef","id":2}"#)
        #expect(other.hasPrefix(#"{"class":"subscribed""#) && !other.contains(#""ring""#), "\(other)")
        #expect(noRing.isEmpty)
        // Entitled: the reply offers a ring and exactly one descriptor came.
        let (reply, fds) = try exchange(server.socketPath,
                                        #"{"class":"subscribe","stream":"altitude","ring":"\#(layout)","id":3}"#)
        #expect(reply.contains(#""ring":{"slots":1024"#), "\(reply)")
        try #require(fds.count == 1)
        let ring = fds[0]
        defer { close(ring) }
        // Sealed: it cannot shrink or grow, and nobody can map it writable
        // or write to it (the agent's own mapping predates the seal).
        // <linux/fcntl.h>: F_GET_SEALS = F_LINUX_SPECIFIC_BASE (1024) + 10;
        // F_SEAL_SEAL 1, F_SEAL_SHRINK 2, F_SEAL_GROW 4, F_SEAL_FUTURE_WRITE 0x10.
        let seals = fcntl(ring, 1034)
        #expect(seals & 0x17 == 0x17, "seals \(seals)")
        var st = stat()
        #expect(fstat(ring, &st) == 0)
        let writable = mmap(nil, Int(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, ring, 0)
        #expect(writable == MAP_FAILED && errno == EPERM)
        #expect(ftruncate(ring, 0) != 0)
        let byte: [UInt8] = [1]
        #expect(pwrite(ring, byte, 1, 0) < 0 && errno == EPERM)
        // It maps read-only, and its header is this build's.
        var base: UnsafeRawPointer?
        var length = 0
        #expect(edge_ring_map_reader(ring, SampleRingFormat.layoutID, UInt32(SampleRingFormat.recordBytes),
                                     UInt32(StreamName.altitude.index), &base, &length) == 0)
        if let base {
            #expect(base.load(as: UInt32.self) == 0x5247_4445)   // "EDGR"
            #expect(edge_ring_slot_count(base) == UInt32(SampleRingFormat.slotCount))
            // A read-only mapping of another stream's ring is refused.
            var other: UnsafeRawPointer?
            var otherLength = 0
            #expect(edge_ring_map_reader(ring, SampleRingFormat.layoutID, UInt32(SampleRingFormat.recordBytes),
                                         UInt32(StreamName.deviceMotion.index), &other, &otherLength) == -EPROTO)
            edge_ring_unmap(base, length)
        }
    }
}
