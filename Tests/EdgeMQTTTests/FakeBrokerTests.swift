// The real `edge-mqtt run` against a fake broker on loopback that answers
// every CONNECT with garbage, truncated or malformed packets of every MQTT
// control packet type (issue 16, item 3), for both protocol versions; then
// a real mosquitto takes the port and data must resume, with the status
// saying what happened. Debian 12's libmosquitto 2.0.11 asserts in
// log__printf (called with NULL from property__read, lib/property_mosq.c)
// on an MQTT 5 property identifier it does not know: under MQTT 5 the
// bridge process dies and its supervisor restarts it; MQTT 3.1.1 never
// reads properties and must not die at all.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

/// A TCP listener on 127.0.0.1 that reads whatever a client sends first
/// (its CONNECT) and answers with the next packet of `replies`, then waits
/// for the client to hang up (at most 1 s) and closes.
final class FakeBroker: @unchecked Sendable {
    let port: Int
    let replies: [[UInt8]]
    private let listener: Int32
    private let lock = NSLock()
    private var served = 0
    private var stopped = false
    private var thread: Thread?

    init(port: Int, replies: [[UInt8]]) throws {
        self.port = port
        self.replies = replies
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw HarnessError("socket failed") }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && listen(s, 8) == 0
        guard ok else { close(s); throw HarnessError("fake broker: cannot listen on \(port)") }
        listener = s
    }

    /// Connections answered so far.
    var connections: Int { lock.withLock { served } }

    func start() {
        let t = Thread { [self] in serve() }
        thread = t
        t.start()
    }

    private func serve() {
        while !lock.withLock({ stopped }) {
            var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let c = accept(listener, nil, nil)
            guard c >= 0 else { continue }
            defer { close(c) }
            // The CONNECT (any bytes: this broker does not care).
            var buf = [UInt8](repeating: 0, count: 4096)
            var q = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            guard poll(&q, 1, 2000) > 0, read(c, &buf, buf.count) > 0 else { continue }
            let index = lock.withLock { () -> Int in served += 1; return served - 1 }
            let reply = replies[index % replies.count]
            _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // Until the client hangs up (it should: every reply is bad), at most 0.3 s.
            let end = nowNs() + 300_000_000
            while nowNs() < end {
                var r = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
                if poll(&r, 1, 50) > 0 && read(c, &buf, buf.count) <= 0 { break }
            }
        }
    }

    /// Stops accepting and closes the port (a real broker may take it). A
    /// second call does nothing: closing the number again could close
    /// another test's descriptor.
    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        while thread?.isFinished == false { usleep(10_000) }
        thread = nil   // the thread's closure holds self: let both go
        close(listener)
    }
}

/// The bad replies, for one protocol version. Independent of libmosquitto:
/// the MQTT 3.1.1 (OASIS Standard, 29 Oct 2014, §2 and §3) and MQTT 5.0
/// (OASIS Standard, 7 Mar 2019, §2.1, §2.2.2, §3) fixed headers, with bodies
/// that are cut short, random, or carry an overlong or unknown property.
enum BadPackets {
    /// The fixed header's first byte of each type with the flags §2.1.3 requires.
    static let firstBytes: [UInt8] = [0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
                                      0x62, 0x82, 0xA2, 0x3B, 0x3F]
    /// A valid CONNACK "accepted" of the version (3.1.1 §3.2; 5.0 §3.2 with an empty property list).
    static func connack(v5: Bool) -> [UInt8] { v5 ? [0x20, 0x03, 0x00, 0x00, 0x00] : [0x20, 0x02, 0x00, 0x00] }

    static func all(v5: Bool, seed: UInt64) -> [[UInt8]] {
        var state = seed
        func next() -> UInt64 {   // xorshift64*: reproducible without the library's generator
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: next() >> 32) } }
        var out: [[UInt8]] = []
        // The issue's six bytes: AUTH, reason 0x93, property length 126, identifier 0x78.
        out.append([0xF0, 0x04, 0x93, 0x7E, 0x78, 0xA2])
        // A remaining length of five continuation bytes (§2.2.3 allows four).
        out.append([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        for first in firstBytes {
            // Truncated: the header promises 10 bytes, 3 arrive, then the connection closes.
            out.append([first, 0x0A, 0x00, 0x01, 0x02])
            // Random bodies of a valid length.
            let body = bytes(1 + Int(next() % 24))
            out.append([first, UInt8(body.count)] + body)
            // An unknown property identifier (0x78) with an overlong property
            // length after a plausible prefix (packet id / reason / topic).
            out.append([first, 0x07, 0x00, 0x01, 0x00, 0x7E, 0x78, 0x01, 0x02])
            // The same after an accepted CONNACK: the connected handlers.
            out.append(connack(v5: v5) + [first, 0x06, 0x00, 0x01, 0x00, 0x7E, 0x78, 0xA2])
            out.append(connack(v5: v5) + [first, UInt8(body.count)] + body)
        }
        // Garbage: random bytes of random length, alone and after a CONNACK.
        for i in 0..<16 {
            let g = bytes(1 + Int(next() % 64))
            out.append(i % 2 == 0 ? g : connack(v5: v5) + g)
        }
        return out
    }
}

@Suite(.serialized, .ownThread) struct FakeBrokerTests {
    /// One protocol version: every bad reply, then a real broker on the same
    /// port; the bridge process must never be lost, data must resume, and
    /// the status must say how often the bridge process was restarted.
    func survive(protocolVersion: String, tag: String) throws -> (restarts: Int, replies: Int, log: String) {
        try requireTools()
        let dir = try Paths.temporaryDirectory(tag)
        defer { Paths.remove(dir) }
        let agent = try Agent(directory: dir)
        try agent.start()
        defer { agent.stop() }
        let port = try freePort()
        let v5 = protocolVersion == "5"
        // Every bad reply, sanitizer or not (there each abort is symbolized
        // and each restarted process starts slowly: the wait is generous).
        let replies = BadPackets.all(v5: v5, seed: 16)
        let fake = try FakeBroker(port: port, replies: replies)
        fake.start()
        let bridge = try BridgeProcess(directory: dir, node: "fz", brokerPort: port, agentSocket: agent.socket,
                                       broker: #"protocol: "\#(protocolVersion)", connect_timeout_s: 2,"#,
                                       backoff: "reconnect_initial_s: 0.05, reconnect_max_s: 0.1")
        try bridge.start()
        defer { bridge.stop() }
        let served = waitUntil(240) { fake.connections >= replies.count || !bridge.child.isRunning }
        fake.stop()
        #expect(served && bridge.child.isRunning,
                "MQTT \(protocolVersion): \(fake.connections) of \(replies.count) bad replies sent, bridge running: \(bridge.child.isRunning)\n\(bridge.log.suffix(4000))")
        guard bridge.child.isRunning else { return (0, fake.connections, bridge.log) }

        // A real broker on the same port: the bridge connects and data resumes.
        let broker = try Broker(directory: dir, port: port)
        try broker.start()
        defer { broker.stop() }
        let sub = Subscriber(broker: broker)
        try sub.start()
        defer { sub.stop() }
        #expect(waitUntil(60) { sub.last(on: "edge/fz/status")?.payload == "online" && sub.last(on: "edge/fz/deviceMotion") != nil },
                "MQTT \(protocolVersion): no data from the good broker\n\(bridge.log.suffix(4000))\n\(broker.log)")
        let status = bridge.status()
        let process = status?["process"] as? [String: Any]
        let restarts = (process?["restarts"] as? NSNumber)?.intValue ?? -1
        #expect((process?["supervised"] as? Bool) == true, "\(String(describing: status))")
        #expect((status?["broker"] as? [String: Any])?["state"] as? String == "connected", "\(String(describing: status))")
        if restarts > 0 {
            #expect((process?["last_exit"] as? String)?.contains("SIGABRT") == true, "\(String(describing: process))")
            #expect(bridge.log.contains("supervisor: bridge process"), "the supervisor says why it restarted")
            // The `bridge` counters topic says so too.
            #expect(waitUntil(10) {
                sub.last(on: "edge/fz/bridge").map { $0.payload.contains("\"process_restarts\":\(restarts)") } == true
            }, "\(sub.messages(on: "edge/fz/bridge"))")
        }
        return (restarts, fake.connections, bridge.log)
    }

    /// MQTT 3.1.1 (the default): no bad reply aborts the bridge process.
    @Test func mqtt311SurvivesEveryBadReplyWithoutARestart() throws {
        let r = try survive(protocolVersion: "3.1.1", tag: "fz311")
        #expect(r.restarts == 0, "MQTT 3.1.1: \(r.restarts) restarts\n\(r.log.suffix(4000))")
        #expect(!r.log.contains("Assertion"), "libmosquitto asserted under 3.1.1")
    }

    /// MQTT 5: libmosquitto 2.0.11 aborts on the unknown property; the
    /// supervisor restarts the bridge process, which then publishes to the
    /// good broker. (On c7b77b9 the bridge exits with status 134.)
    @Test func mqtt5SurvivesEveryBadReplyThroughRestarts() throws {
        let r = try survive(protocolVersion: "5", tag: "fz5")
        #expect(r.restarts >= 1, "the issue's AUTH packet aborts libmosquitto 2.0.11 under MQTT 5: \(r.restarts) restarts")
        print("MQTT 5: \(r.restarts) restarts of the bridge process for \(r.replies) bad replies")
    }
}
