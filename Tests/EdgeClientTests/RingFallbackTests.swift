#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import EdgeProtocol
import EdgeValues
import CEdgeShims
@testable import EdgeClient
import TestThreads

// A ring offered that this client cannot read (docs/protocol.md,
// "Shared-memory rings"): no descriptor came with the offer, or the offer's
// layout is not this build's. The client says so in its counters, closes
// what it was given, subscribes again without a ring and gets the stream as
// lines; nothing is lost to the subscriber but what the agent never sent.
// The agent here is a script on a Unix socket that speaks the protocol
// from the encoder (MessageEncoder), so the client sees exactly the
// offers a real agent could make, and the cases a real agent only makes
// when the kernel or another build is involved.

/// How the scripted agent answers a `subscribe` that asks for a ring.
enum ScriptedOffer {
    /// A `ring` object, but no descriptor on the socket.
    case withoutDescriptor
    /// A real ring's descriptor, but an offer whose layout is another build's.
    case otherLayout
}

/// One connection's worth of a scripted agent: a version line, then an
/// answer to each subscribe, and `samples` accelerometer lines after the
/// first subscribe that asks for no ring.
final class ScriptedRingAgent: @unchecked Sendable {
    let directory: String
    var path: String { directory + "/agent.sock" }
    private var serving: ListeningThread?
    /// Subscribe requests seen, in order: whether each asked for a ring.
    let asked = NSLock()
    private var _ringAsks: [Bool] = []
    var ringAsks: [Bool] { asked.withLock { _ringAsks } }
    /// The name the ring's memfd shows in /proc/PID/fd.
    static let memfdName = "scripted-agent-ring"

    init(offer: ScriptedOffer, samples: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ring-fallback-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let p = directory + "/agent.sock"
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in p.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 && listen(listener, 1) == 0 else {
            let e = errno
            close(listener)
            try #require(Bool(false), "bind/listen \(p): errno \(e)")
            return
        }
        // The listener is the thread's to close (ListeningThread says why).
        serving = ListeningThread(listener: listener) { [self] l in self.serve(l, offer: offer, samples: samples) }
    }

    deinit {
        serving?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func line(_ c: Int32, _ write: (inout JSONWriter) -> Void, fds: [Int32] = []) {
        var w = JSONWriter()
        write(&w)
        var bytes = w.bytes
        bytes.append(0x0A)
        _ = bytes.withUnsafeBytes { b in
            fds.withUnsafeBufferPointer { f in edge_send_with_fds(c, b.baseAddress, b.count, f.baseAddress, Int32(f.count)) }
        }
    }

    private func serve(_ l: Int32, offer: ScriptedOffer, samples: Int) {
        let c = accept(l, nil, nil)
        guard c >= 0 else { return }
        defer { close(c) }
        line(c) { MessageEncoder.version(agentVersion: "0.0.0-test", uid: getuid(), gid: getgid(), entitlements: [.motion],
                                         maxLineBytes: 4096, queueCapacity: 256, into: &$0) }
        var pending: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        var p = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
        // Until the client hangs up (bounded: 30 s without a request).
        while poll(&p, 1, 30_000) > 0 {
            let n = buf.withUnsafeMutableBytes { read(c, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            pending += buf[0..<n]
            while let nl = pending.firstIndex(of: 0x0A) {
                let req = Array(pending[..<nl])
                pending.removeSubrange(...nl)
                guard let o = try? JSONSerialization.jsonObject(with: Data(req)) as? [String: Any],
                      o["class"] as? String == "subscribe", let name = o["stream"] as? String,
                      let stream = StreamName(rawValue: name) else { continue }
                let id = (o["id"] as? Int).map { RequestID.number(String($0)) }
                let wantsRing = o["ring"] != nil
                asked.withLock { _ringAsks.append(wantsRing) }
                if wantsRing {
                    switch offer {
                    case .withoutDescriptor:
                        line(c) { MessageEncoder.subscribed(stream, intervalS: 0.01, ring: .current(start: 0), id: id, into: &$0) }
                    case .otherLayout:
                        var base: UnsafeMutableRawPointer?
                        var length = 0
                        let fd = edge_ring_create(Self.memfdName, UInt32(SampleRingFormat.slotCount),
                                                  UInt32(SampleRingFormat.recordBytes), SampleRingFormat.layoutID ^ 1,
                                                  UInt32(stream.index), &base, &length)
                        guard fd >= 0 else { return }
                        var other = RingOffer.current(start: 0)
                        other.layoutID ^= 1
                        line(c, { MessageEncoder.subscribed(stream, intervalS: 0.01, ring: other, id: id, into: &$0) }, fds: [fd])
                        close(fd)
                        if let base { munmap(base, length) }
                    }
                } else {
                    line(c) { MessageEncoder.subscribed(stream, intervalS: 0.01, id: id, into: &$0) }
                    for i in 0..<samples {
                        let s = Sample.accelerometer(AccelerometerSample(timestampNs: 1_000_000_000 + UInt64(i) * 10_000_000,
                                                                         acceleration: Vector3(0, 0, Double(i))))
                        line(c) { MessageEncoder.sample(s, into: &$0) }
                    }
                }
            }
        }
    }
}

/// Descriptors of this process that are the scripted agent's ring.
func openScriptedRings() -> Int {
    let dir = "/proc/self/fd"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
    return names.filter { n in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + n))?.contains(ScriptedRingAgent.memfdName) == true
    }.count
}

@Suite(.serialized, .ownThread) struct RingFallbackTests {
    func fallsBackToLines(_ offer: ScriptedOffer) throws -> AgentClient.Counters {
        let agent = try ScriptedRingAgent(offer: offer, samples: 50)
        let client = AgentClient(socketPath: agent.path, usesRings: true)
        defer { client.close() }
        let got = Locked<[Double]>([])
        let errors = Locked<[String]>([])
        let sub = client.subscribe(.accelerometer, intervalNs: 0,
                                   onSample: { s in if case .accelerometer(let a) = s { got.withLock { $0.append(a.acceleration.z) } } },
                                   onError: { e in errors.withLock { $0.append("\(e)") } })
        defer { sub.cancel() }
        let deadline = Date().addingTimeInterval(30)
        while got.withLock({ $0.count }) < 50 && Date() < deadline { usleep(10_000) }
        // Every sample the agent sent as lines, in order, once.
        #expect(got.withLock { $0 } == (0..<50).map(Double.init))
        #expect(errors.withLock { $0 }.isEmpty)
        // It asked for a ring once, then for lines.
        #expect(agent.ringAsks == [true, false])
        return client.counts
    }

    @Test func anOfferWithoutADescriptorFallsBackToLines() throws {
        let c = try fallsBackToLines(.withoutDescriptor)
        #expect(c.ringFallbacks == 1)
        #expect(c.lastRingFallback == "accelerometer: no descriptor came with the offer")
        #expect(c.ringSamples == 0)
    }

    @Test func aRingOfAnotherLayoutIsClosedAndTheStreamComesAsLines() throws {
        let c = try fallsBackToLines(.otherLayout)
        #expect(c.ringFallbacks == 1)
        #expect(c.lastRingFallback == "accelerometer: the ring's layout differs from this build's")
        #expect(c.ringSamples == 0)
        // The descriptor it was given is closed, not kept (the agent's copy
        // closed as soon as it was sent).
        #expect(openScriptedRings() == 0)
    }
}
