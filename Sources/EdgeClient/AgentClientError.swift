#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol

/// Why a client could not talk to the agent, or why the agent refused a
/// request. Every case's ``description`` says what happened and what to do;
/// `edge-agent watch` prints it as is, and the `CoreMotion` library puts it in
/// the `NSError` it hands to an app's handler.
public enum AgentClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens on the socket: no socket file (`ENOENT`, `ENOTDIR`)
    /// or a file nobody accepts on (`ECONNREFUSED`, a stale socket).
    case noAgent(path: String, errno: Int32)
    /// connect(2) was refused for permissions (`EACCES`, `EPERM`). `group`
    /// is the group owning the socket (or its directory) when it could be
    /// looked up, else the configured `service.socket_group`.
    case permissionDenied(path: String, group: String?, configPath: String?, configuredGroup: String?)
    /// Any other failure of a system call on the socket.
    case system(call: String, path: String, errno: Int32)
    /// The socket path does not fit `sockaddr_un` (1 to 107 bytes).
    case badSocketPath(String)
    /// The first line was not the agent's version line.
    case notAnAgent(path: String, detail: String)
    /// The agent speaks a protocol version this client does not.
    case incompatibleProtocol(path: String, agent: Int, client: Int)
    /// No version line, or no reply, within the time allowed.
    case timedOut(path: String, waitingFor: String, seconds: Double)
    /// The agent refused a request for lack of an entitlement (`notEntitled`).
    /// The connection stays.
    case notEntitled(stream: StreamName, entitlement: Entitlement, uid: UInt32?, message: String)
    /// The agent serves its maximum of clients, or this uid's, or of
    /// connections holding no entitlement (`tooManyClients`,
    /// `tooManyClientsForUID`, `tooManyUnentitledClients`); it closed the
    /// connection.
    case tooManyClients(code: ErrorCode, message: String)
    /// Any other error the agent sent in reply to a request (`code` is nil
    /// for a code this build does not know; `codeName` has it).
    case refused(code: ErrorCode?, codeName: String, message: String, stream: StreamName?)
    /// The agent closed the connection (`reason`: its `shutdown` line, or
    /// what was seen), or the connection broke.
    case disconnected(path: String, reason: String)
    /// A line from the agent that could not be decoded where one was needed.
    case undecodable(path: String, reason: String)

    /// Makes the error of a failed connect(2).
    public static func connect(path: String, errno e: Int32, socketGroup: String?,
                               configuredGroup: String? = nil, configPath: String? = nil) -> AgentClientError {
        switch e {
        case ENOENT, ECONNREFUSED, ENOTDIR:
            return .noAgent(path: path, errno: e)
        case EACCES, EPERM:
            return .permissionDenied(path: path, group: socketGroup ?? configuredGroup, configPath: configPath,
                                     configuredGroup: configuredGroup)
        default:
            return .system(call: "connect", path: path, errno: e)
        }
    }

    /// The error of an `error` reply.
    public static func reply(code: ErrorCode?, codeName: String, message: String, stream: StreamName?,
                             uid: UInt32?) -> AgentClientError {
        switch code {
        case .notEntitled?:
            let s = stream ?? .deviceMotion
            return .notEntitled(stream: s, entitlement: s.entitlement, uid: uid, message: message)
        case .tooManyClients?, .tooManyClientsForUID?, .tooManyUnentitledClients?:
            return .tooManyClients(code: code!, message: message)
        default:
            return .refused(code: code, codeName: codeName, message: message, stream: stream)
        }
    }

    /// The agent cannot be reached at all (so a caller may fall back to an
    /// agent of its own): nothing listens on the socket.
    public var isNoAgent: Bool {
        if case .noAgent = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .noAgent(let path, let e):
            let what = e == ECONNREFUSED ? "nothing is listening on \(path)" : "no agent socket at \(path)"
            return "\(what). Is the agent running? Check with `systemctl status edge-agent`, or start one with `edge-agent run`. (Another socket: --socket PATH or $\(AgentSocket.environmentVariable).)"
        case .permissionDenied(let path, let group, let configPath, let configuredGroup):
            let config = configPath ?? "the agent's configuration"
            let setting = "service.socket_group in \(config)"
            guard let group else {
                return "permission denied connecting to \(path): the socket (or its directory) does not admit this user. Members of the socket's group may connect: find it with `ls -l \(path)`, join it (`sudo usermod -aG GROUP $USER`, then log in again), or have the agent's owner set \(setting)."
            }
            if group == "root" || group == "0" {
                return "permission denied connecting to \(path): the socket belongs to group root (the agent runs as root and \(configuredGroup == nil ? "no socket group is configured" : "its socket group is root")), so only root may connect. Do not join root: give the clients a group of their own - `sudo groupadd edge-motion`, set socket_group: \"edge-motion\" under service in \(config), join it (`sudo usermod -aG edge-motion $USER`, then log in again) and restart the agent; or run the agent as your own user."
            }
            var text = "permission denied connecting to \(path): the socket admits its owner and members of group '\(group)'. Add yourself (`sudo usermod -aG \(group) $USER`, then log in again) or run as a member."
            if configPath != nil && configuredGroup == nil {
                text += " ('\(group)' is the agent's own group, as no socket group is configured; to choose the group clients need, set \(setting) and restart the agent.)"
            }
            return text
        case .system(let call, let path, let e):
            if call == "connect" { return "cannot connect to \(path): \(String(cString: strerror(e))) (errno \(e))" }
            return "\(call) on \(path): \(String(cString: strerror(e))) (errno \(e))"
        case .badSocketPath(let path):
            return "socket path must be 1 to 107 bytes: \(path)"
        case .notAnAgent(let path, let detail):
            return "\(path) did not start with a version line; is it an edge-agent socket? (\(detail))"
        case .incompatibleProtocol(let path, let agent, let client):
            return "the agent at \(path) speaks protocol \(agent); this client speaks protocol \(client). Use a client of the same release as the agent."
        case .timedOut(let path, let what, let seconds):
            return "no \(what) from \(path) within \(seconds < 1 ? String(seconds) : String(Int(seconds))) s; is it an edge-agent socket, and is the agent responsive?"
        case .notEntitled(let stream, let entitlement, let uid, _):
            let who = uid.flatMap(AgentSocket.userName).map { "user \"\($0)\"" } ?? uid.map { "uid \($0)" } ?? "this user"
            let subject = uid.flatMap(AgentSocket.userName).map { "user: \"\($0)\"" } ?? uid.map { "uid: \($0)" } ?? "user: \"NAME\""
            return """
                not entitled to \(stream.rawValue): \(who) does not hold the "\(entitlement.rawValue)" entitlement. \
                Grant it in the clients section of the agent's configuration \
                (/etc/edge-agent/edge-agent.json5), then restart the agent:
                  clients: [ { \(subject), entitlements: ["\(entitlement.rawValue)"] } ]
                """
        case .tooManyClients(let code, let message):
            return "the agent refused the connection (\(code.rawValue)): \(message). Close other clients of this user, or raise service.max_clients / max_clients_per_uid / max_unentitled_clients in the agent's configuration."
        case .refused(_, let codeName, let message, _):
            return "the agent refused the request: \(codeName): \(message)"
        case .disconnected(let path, let reason):
            return "the agent at \(path) closed the connection: \(reason)"
        case .undecodable(let path, let reason):
            return "a line from \(path) could not be read: \(reason)"
        }
    }
}
