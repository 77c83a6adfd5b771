// EdgeProtocol: the client protocol of edge-agent, as pure value types and
// byte-level encoding. No Foundation, no syscalls: the agent, the CoreMotion
// library and tests share these definitions.

/// Constants of the line-delimited JSON protocol spoken on the agent's
/// Unix-domain socket.
public enum EdgeProtocolInfo {
    /// The protocol version the agent announces in its first line
    /// (`{"class":"version","protocol":1,...}`). Bumped on any change a
    /// version-1 client could misread; adding keys or message classes does not
    /// bump it (clients ignore what they do not know).
    public static let version = 1
    /// The agent's name in the version line.
    public static let agentName = "edge-agent"
    /// Default path of the system service's socket.
    public static let defaultSocketPath = "/run/edge-agent/agent.sock"
}
