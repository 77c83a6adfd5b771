// EdgeProtocol: the client protocol of edge-agent, as pure value types and
// byte-level encoding. No Foundation, no syscalls: the agent, the CoreMotion
// library and tests share these definitions.

/// Constants of the line-delimited JSON protocol spoken on the agent's
/// Unix-domain socket.
public enum EdgeProtocolInfo {
    /// The protocol version the agent announces in its first line
    /// (`{"class":"version","protocol":2,...}`). Bumped on any change an
    /// older client could misread; adding keys or message classes does not
    /// bump it (clients ignore what they do not know). A client of another
    /// version refuses the agent at connect with both versions named
    /// (`AgentClientError.incompatibleProtocol`).
    ///
    /// 2: one wire convention (``convention``): device motion's gravity and
    /// user acceleration in the accelerometer's sign (specific force); the
    /// version line names the convention, the agent's frame and declination.
    public static let version = 2
    /// The wire convention, in the version line's `convention` key.
    public static let convention = "SI; board frame; accelerations are specific force (+9.81 m/s² up at rest; gravity + userAcceleration = acceleration); CLOCK_MONOTONIC ns"

    /// The agent's name in the version line.
    public static let agentName = "edge-agent"
    /// Default path of the system service's socket.
    public static let defaultSocketPath = "/run/edge-agent/agent.sock"
}
