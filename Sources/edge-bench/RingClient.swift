// A client that reads its streams from the agent's shared-memory rings
// (EdgeClient's AgentClient with rings on, as Core Motion apps, watch,
// dive-logger and edge-mqtt use it), for `edge-bench footprint --transport ring`.
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeClient
import EdgeProtocol

/// What the footprint benchmark needs of a reading client.
protocol BenchReader: AnyObject {
    func stop()
    func join()
    var tally: ClientTally { get }
}

extension ReadingClient: BenchReader {}

/// The ways a benchmark client can read samples.
enum BenchTransport: String, CaseIterable {
    /// One JSON line per sample per client (`AgentConnection`).
    case lines
    /// The shared-memory rings (`AgentClient`, rings on).
    case ring
}

final class RingReadingClient: BenchReader, @unchecked Sendable {
    let client: AgentClient
    private var subscriptions: [Subscription] = []
    private final class Box: Sendable { let tally = Locked<ClientTally>(ClientTally()) }
    private let box = Box()
    private let trackedStream: StreamName?

    /// Connects (its own connection: one client of the agent) and
    /// subscribes to `streams` at `interval`; samples are counted on the
    /// client's ring thread.
    init(socket: String, streams: [String], interval: Double, track: String? = nil) throws {
        client = AgentClient(socketPath: socket, usesRings: true)
        trackedStream = track.flatMap(StreamName.init(rawValue:))
        do { try client.connect(timeoutMs: 10_000) } catch { throw BenchError("connect \(socket): \(error)") }
        box.tally.withLock { $0.versionSeen = true }
        for s in try BenchSocket.streams(streams) {
            let name = s.rawValue
            let tracked = s == trackedStream
            subscriptions.append(client.subscribe(s, intervalNs: UInt64((interval * 1e9).rounded()),
                onSample: { [box] sample in
                    box.tally.withLock {
                        $0.samples[name, default: 0] += 1
                        if tracked { $0.timestamps.append(sample.timestampNs) }
                    }
                },
                onError: { [box] e in box.tally.withLock { $0.errors.append("\(e)") } }))
        }
    }

    func start() throws {}
    func stop() { for s in subscriptions { s.cancel() } }
    func join() { client.close() }

    var tally: ClientTally {
        var t = box.tally.withLock { $0 }
        t.endedBy = "stopped; \(client.ringStreams.count) ring(s), \(client.counts.ringSamples) samples from rings, \(client.counts.ringLost) lost"
        return t
    }
}
