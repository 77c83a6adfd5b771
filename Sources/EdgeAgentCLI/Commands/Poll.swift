#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
      {"class":"sample","stream":"altitude",...}
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
        let c = try WatchConnection.connect(choice.path, configPath: choice.configPath,
                                            configuredGroup: choice.configuredGroup)
        let reply = try exchange(c, stream: stream, timeoutMs: 5000)
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

    /// A whole unsigned integer from a JSON number's literal (no rounding
    /// through Double, so nanoseconds beyond 2^53 stay exact).
    static func exactInteger(_ v: JSONValue?) -> UInt64? {
        if case .number(_, let literal)? = v { return UInt64(literal) }
        return nil
    }

    /// Version line, then `poll`, `ping` and `streams`; waits (bounded) for
    /// the three replies.
    static func exchange(_ c: WatchConnection, stream: StreamName, timeoutMs: Int64) throws -> Reply {
        let started = WatchSession.monotonicMs()
        var versionSeen = false
        var sample: (line: String, t: UInt64)?
        var now: UInt64?
        var idle: Bool?
        while sample == nil || now == nil || idle == nil {
            if WatchSession.monotonicMs() - started > timeoutMs {
                throw WatchError("no answer from \(c.path) within \(timeoutMs / 1000) s; is it an edge-agent socket?")
            }
            let lines = try c.readLines(timeoutMs: 200)
            for line in lines {
                guard let m = try? JSONValue.parse(Array(line.utf8)) else { continue }
                let cls = WatchSession.string(m["class"])
                if !versionSeen {
                    guard cls == "version" else {
                        throw WatchError("\(c.path) did not start with a version line; is it an edge-agent socket?")
                    }
                    guard let p = WatchSession.number(m["protocol"]), Int(exactly: p) == EdgeProtocolInfo.version else {
                        throw WatchError("the agent at \(c.path) speaks another protocol than \(EdgeProtocolInfo.version); use the edge-agent tool of the same release as the agent.")
                    }
                    versionSeen = true
                    c.send(#"{"class":"poll","stream":"\#(stream.rawValue)","id":"poll"}"#)
                    c.send(#"{"class":"ping","id":"poll-now"}"#)
                    c.send(#"{"class":"streams","id":"poll-streams"}"#)
                    continue
                }
                let id = WatchSession.string(m["id"])
                switch cls {
                case "sample" where WatchSession.string(m["stream"]) == stream.rawValue && sample == nil:
                    guard let t = exactInteger(m["timestamp_ns"]) else { throw WatchError("the agent's sample has no timestamp_ns: \(line)") }
                    sample = (line, t)
                case "pong" where id == "poll-now":
                    now = exactInteger(m["timestamp_ns"])
                    if now == nil { throw WatchError("the agent's pong has no timestamp_ns: \(line)") }
                case "streams" where id == "poll-streams":
                    var nobody = false
                    if case .array(let list)? = m["streams"] {
                        for e in list where WatchSession.string(e["stream"]) == stream.rawValue {
                            nobody = e["demandInterval_s"] == .null
                        }
                    }
                    idle = nobody
                case "error" where id == "poll":
                    let code = WatchSession.string(m["code"]) ?? "?"
                    let message = WatchSession.string(m["message"]) ?? ""
                    if code == "noSample" {
                        throw WatchError("no sample of \(stream.rawValue) yet: the stream has produced none since the agent started (nobody subscribes to it, so its sensors may be idle). Subscribe first (e.g. `edge-agent watch`), or list \"\(stream.rawValue)\" in always_on in the agent's configuration.")
                    }
                    if code == "notEntitled" {
                        throw WatchError.notEntitled(stream: stream.rawValue, entitlement: stream.entitlement.rawValue,
                                                     user: nil, uid: nil)
                    }
                    throw WatchError("the agent refused the poll: \(code): \(message)")
                case "shutdown":
                    throw WatchError("the agent shut down before it answered.")
                default:
                    break
                }
            }
            if c.closed { throw WatchError("the agent at \(c.path) closed the connection before it answered.") }
        }
        return Reply(line: sample!.line, captureNs: sample!.t, agentNowNs: now!, nobodySubscribes: idle!)
    }
}
