#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeClient
import EdgeProtocol

/// `edge-agent poll STREAM`: the latest sample of one stream from a running
/// agent, and how old it is.
public enum PollCommand: Subcommand {
    public static let name = "poll"
    public static let summary = "The latest sample of one stream from a running agent, and how old it is"
    public static let help = """
    Usage: edge-agent poll STREAM [--socket PATH | --config FILE] [--json]

    Asks a running agent for the latest sample of STREAM (the protocol's
    `poll` request: deviceMotion, altitude, absoluteAltitude, accelerometer,
    gyroscope, magnetometer, accessoryMotion, ...) and says how old it is:
    the agent's CLOCK_MONOTONIC at the reply (a `ping` sent right after the
    poll) minus the sample's capture time. A stream nobody subscribes to is
    idle (its sensors may sleep), so its latest sample can be old; poll then
    says so, and how to keep it fresh (subscribe, e.g. with `edge-agent
    watch`, or list it in always_on in the agent's configuration).

    Output: one line with the age, then the sample as the agent sent it:
      altitude: sample 0.012 s old (captured at 1234567890123 ns; the agent's clock: 1234579890123 ns)
      {"class":"sample","id":1,"stream":"altitude",...}
    With --json: the sample alone, with "age_s" (seconds) added as its last key.

    Socket: as for `edge-agent watch` (--socket PATH, --config FILE, else
    $EDGE_AGENT_SOCKET, else the configuration `run` reads).

    Options:
      --socket PATH  the agent's Unix-domain socket
      --config FILE  take the socket path from this configuration
      --json         one JSON line (errors too, as {"class":"error",...})

    Exit status: 0 a sample was printed; 1 no sample yet (noSample), not
    entitled, the agent not reachable or not an agent; 2 bad usage.
    """
    public static var reportsErrorsAsJSON: Bool { true }

    /// Older than this, the note says why a sample may be stale, s.
    static let staleAfterSeconds = 1.0

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let json = a.flag("--json")
        let socket = try a.option("--socket")
        let configArg = try a.option("--config")
        let streamWord = try a.positional("STREAM (e.g. altitude or deviceMotion)")
        try a.finish()
        guard let stream = StreamName(rawValue: streamWord) else {
            throw UsageError("unknown stream '\(streamWord)'; streams: \(StreamName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if socket != nil && configArg != nil {
            throw UsageError("use either --socket PATH or --config FILE (whose service.socket_path is used), not both")
        }
        let choice = try WatchCommand.chooseSocket(socket: socket, config: configArg,
                                                   environment: ProcessInfo.processInfo.environment)
        if !choice.explicit && !json { console.error("edge-agent poll: socket \(choice.path) (\(choice.source))") }
        let reply: Reply
        do {
            let c = try AgentConnection.connect(to: choice.path, timeoutMs: 5000, configPath: choice.configPath,
                                                configuredGroup: choice.configuredGroup)
            reply = try exchange(c, stream: stream, timeoutMs: 5000)
        } catch {
            throw WatchError(error, tool: "edge-agent poll")
        }
        if json {
            console.print(String(reply.line.dropLast()) + ",\"age_s\":" + fixed(reply.ageSeconds, 6) + "}")
        } else {
            console.print("\(stream.rawValue): sample \(fixed(reply.ageSeconds, 3)) s old (captured at \(reply.captureNs) ns; the agent's clock: \(reply.agentNowNs) ns)")
            console.print(reply.line)
        }
        if reply.ageSeconds > staleAfterSeconds {
            let why = reply.nobodySubscribes
                ? "nobody subscribes to \(stream.rawValue), so the agent has idled it and this is the last sample from before"
                : "the stream's sensor has not delivered since (is a device degraded? see `edge-agent watch`)"
            console.error("edge-agent poll: note: the sample is \(fixed(reply.ageSeconds, 1)) s old: \(why). For fresh samples subscribe (e.g. `edge-agent watch`) or list \"\(stream.rawValue)\" in always_on in the agent's configuration.")
        }
        return 0
    }

    /// The poll's answer.
    struct Reply: Equatable {
        /// The sample line exactly as the agent sent it.
        var line: String
        var captureNs: UInt64
        /// The agent's CLOCK_MONOTONIC when it answered the ping after the poll.
        var agentNowNs: UInt64
        /// The `streams` reply said nobody subscribes (demandInterval_s null).
        var nobodySubscribes: Bool
        var ageSeconds: Double { agentNowNs >= captureNs ? Double(agentNowNs - captureNs) / 1e9 : 0 }
    }

    /// `poll`, `ping` and `streams`, each reply matched by its id (bounded).
    static func exchange(_ c: AgentConnection, stream: StreamName, timeoutMs: Int) throws(AgentClientError) -> Reply {
        let sampleID = c.send(.poll(stream))
        let pingID = c.send(.ping)
        let streamsID = c.send(.streams)
        let deadline = monotonicNowNs() + UInt64(timeoutMs) * 1_000_000
        var sample: (line: String, t: UInt64)?
        var now: UInt64?
        var idle: Bool?
        while sample == nil || now == nil || idle == nil {
            let left = deadline > monotonicNowNs() ? deadline - monotonicNowNs() : 0
            guard left > 0 else {
                throw .timedOut(path: c.socketPath, waitingFor: "answer", seconds: Double(timeoutMs) / 1000)
            }
            let line: ReceivedLine?
            do { line = try c.receive(timeoutMs: Int32(clamping: left / 1_000_000 + 1)) } catch .disconnected {
                throw .disconnected(path: c.socketPath, reason: "it closed the connection before it answered")
            }
            guard let line, case .success(let m) = line.message else { continue }
            switch m {
            case .sample(let s) where s.stream == stream && sample == nil:
                // The poll's reply: replies come in request order, so the
                // first sample of the stream before the pong is it.
                if now == nil { sample = (line.text, s.timestampNs) }
            case .pong(let t, pingID):
                now = t
            case .streams(let list, streamsID):
                idle = list.first { $0.stream == stream }.map { $0.demandIntervalS == nil } ?? false
            case .error(.noSample?, _, _, _, sampleID):
                throw .refused(code: .noSample, codeName: "noSample", message: "no sample of \(stream.rawValue) yet: the stream has produced none since the agent started (nobody subscribes to it, so its sensors may be idle). Subscribe first (e.g. `edge-agent watch`), or list \"\(stream.rawValue)\" in always_on in the agent's configuration.", stream: stream)
            case .error(let code, let name, let message, let s, sampleID):
                throw AgentClientError.reply(code: code, codeName: name, message: message, stream: s, uid: nil)
            case .shutdown:
                throw .disconnected(path: c.socketPath, reason: "the agent shut down before it answered")
            default:
                break
            }
        }
        return Reply(line: sample!.line, captureNs: sample!.t, agentNowNs: now!, nobodySubscribes: idle!)
    }

}
