// MosquittoSession against a real mosquitto on loopback (Support/Harness.swift):
// what a batch of publishes costs on the wire and in libmosquitto. The kernel
// is the independent witness: TCP_INFO's count of segments the socket sent.
// Bounded, polling waits only.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import EdgeMQTT

/// `tcpi_segs_out` of `struct tcp_info` (Linux include/uapi/linux/tcp.h,
/// since 4.2): the segments a TCP socket has sent, at byte offset 136
/// (8 bytes of states and flags, 24 `__u32` fields, 4 `__u64` rates and
/// byte counts before it).
private func segmentsSent(_ fd: Int32) -> UInt32? {
    var buffer = [UInt8](repeating: 0, count: 256)
    var length = socklen_t(buffer.count)
    let rc = buffer.withUnsafeMutableBytes { getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length) }
    guard rc == 0, length >= 140 else { return nil }
    return buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 136, as: UInt32.self) }
}

/// A session connected to `broker`, its log lines counted.
private final class Connected {
    let session: MosquittoSession
    var connected = false
    var logLines: [String] = []

    init(_ broker: Broker, clientID: String) throws {
        session = try MosquittoSession(BrokerSettings(host: "127.0.0.1", port: broker.port, clientID: clientID), will: nil)
        session.callbacks.connected = { [unowned self] reason in connected = reason == 0 }
        session.callbacks.log = { [unowned self] _, line in logLines.append(line) }
        try session.startConnect()
        let deadline = Deadline(10)
        while !connected && !deadline.expired { _ = session.service(timeoutMs: 50) }
        guard connected else { throw HarnessError("no CONNACK from \(broker.address)\n\(broker.log)") }
    }

    /// Services the session until libmosquitto has written everything.
    func drain() -> Bool {
        let deadline = Deadline(10)
        while session.wantsWrite && !deadline.expired { _ = session.service(timeoutMs: 20) }
        _ = session.service(timeoutMs: 0)
        return !session.wantsWrite
    }

    func publish(_ n: Int, topic: String) {
        for i in 0..<n {
            _ = session.publish(topic: topic, payload: Array("{\"sample\":\(i)}".utf8), qos: 0, retain: false)
        }
    }
}

@Suite("MosquittoSession batches", .serialized)
struct SessionBatchTests {
    /// An agent delivery's samples published between cork() and uncork()
    /// leave in one TCP segment; each publish alone would be a segment of
    /// its own (the session sets TCP_NODELAY): without the cork, this
    /// first batch on a fresh connection is eight segments.
    ///
    /// Linux sends corked data anyway after 200 ms (tcp(7), TCP_CORK), so a
    /// batch whose publishing thread lost the processor that long between
    /// cork and uncork (a loaded two-core CI machine under a sanitizer)
    /// proves nothing either way: it is tried again on a new connection,
    /// up to ten times. Only the first batch of a connection is counted:
    /// later ones are coalesced by the kernel's autocorking, or counted
    /// before they leave, whether corked or not.
    @Test func aCorkedBatchLeavesInOneSegment() throws {
        try requireTools()
        let dir = try Paths.temporaryDirectory("cork")
        defer { Paths.remove(dir) }
        let broker = try Broker(directory: dir)
        try broker.start()
        defer { broker.stop() }
        var tries: [(segments: UInt32, corkedNs: UInt64)] = []
        for attempt in 1...10 {
            let c = try Connected(broker, clientID: "cork-test-\(attempt)")
            #expect(c.drain())
            let fd = c.session.socket
            let before = try #require(segmentsSent(fd))
            let corked = DispatchTime.now().uptimeNanoseconds
            #expect(c.session.cork())
            c.publish(8, topic: "cork/test")
            c.session.uncork()
            let corkedNs = DispatchTime.now().uptimeNanoseconds - corked
            #expect(c.drain())
            let after = try withExtendedLifetime(c) { try #require(segmentsSent(fd)) }   // c owns fd
            tries.append((after &- before, corkedNs))
            if corkedNs < 150_000_000 { break }
        }
        // One data segment; one more at most (an ACK of something the broker sent).
        let conclusive = tries.last!
        try #require(conclusive.corkedNs < 150_000_000, "inconclusive: every batch was corked 150 ms or more: \(tries)")
        #expect(conclusive.segments <= 2, "8 publishes in a corked batch left in \(conclusive.segments) segments (tries: \(tries))")
    }

    /// While its log is not forwarded, libmosquitto formats no line per
    /// publish (lib/logging_mosq.c formats each one whenever a log callback
    /// is set); forwarded, every publish is a "sending PUBLISH" line.
    @Test func noLogLineIsFormattedPerPublishWhileTheLogIsOff() throws {
        try requireTools()
        let dir = try Paths.temporaryDirectory("logoff")
        defer { Paths.remove(dir) }
        let broker = try Broker(directory: dir)
        try broker.start()
        defer { broker.stop() }
        let c = try Connected(broker, clientID: "log-test")
        #expect(c.drain())
        c.logLines = []
        c.publish(5, topic: "log/test")
        #expect(c.drain())
        #expect(c.logLines.filter { $0.contains("PUBLISH") }.count >= 5, "forwarded: \(c.logLines)")
        c.session.forwardsLog = false
        c.logLines = []
        c.publish(20, topic: "log/test")
        #expect(c.drain())
        #expect(c.logLines.isEmpty, "not forwarded, yet: \(c.logLines)")
        // On again: lines come again (a reconnection's errors are reported).
        c.session.forwardsLog = true
        c.publish(1, topic: "log/test")
        #expect(c.drain())
        #expect(c.logLines.contains { $0.contains("PUBLISH") })
    }
}
