/// Settings of this platform's Core Motion that Apple's API has no place
/// for: which agent to use. A type of our own, so nothing is added to
/// Apple's types.
public enum EdgeMotionAgent {
    /// The agent's socket, instead of the lookup (`$EDGE_AGENT_SOCKET`, else
    /// the socket of the configuration `edge-agent run` reads). nil: the
    /// lookup. Setting it moves later updates to that agent (running
    /// updates stop receiving data; start them again) and disables the
    /// in-process fallback, so a missing agent is an error.
    public static var socketPath: String? {
        get { MotionService.shared.socketPath }
        set { MotionService.shared.socketPath = newValue }
    }

    /// The configuration to find the agent's socket in (its
    /// `service.socket_path`), and to start an in-process agent with when
    /// none answers, instead of the lookup `edge-agent run` uses
    /// (`$EDGE_AGENT_CONFIG`, `/etc/edge-agent/edge-agent.json5`, the
    /// repository's `config/edge-agent.json5`). nil: the lookup.
    public static var configurationPath: String? {
        get { MotionService.shared.configurationPath }
        set { MotionService.shared.configurationPath = newValue }
    }

    /// Whether an agent may be started inside this process when none answers
    /// (default true).
    public static var allowsInProcessAgent: Bool {
        get { MotionService.shared.allowsInProcessAgent }
        set { MotionService.shared.allowsInProcessAgent = newValue }
    }

    /// Where the data comes from now, in words ("the agent at
    /// /tmp/edge-agent.sock (service.socket_path of …)"), connecting if
    /// needed; or why there is none.
    public static var dataSource: String {
        let (source, error) = MotionService.shared.connectedSource()
        if let error { return "no agent: \(error.localizedDescription)" }
        return source?.description ?? "no agent"
    }
}
