import EdgeLocations

/// Which socket a client of the agent connects to, and why that one.
public struct AgentSocketLocation: Equatable, Sendable {
    public var path: String
    /// How it was chosen, for notes ("$EDGE_AGENT_SOCKET",
    /// "service.socket_path of FILE", ...).
    public var source: String
    /// The configuration read for it, if any.
    public var configPath: String?
    /// Its `service.socket_group` (nil: the agent's own group).
    public var configuredGroup: String?

    public init(path: String, source: String, configPath: String? = nil, configuredGroup: String? = nil) {
        self.path = path; self.source = source; self.configPath = configPath; self.configuredGroup = configuredGroup
    }
}

/// The socket lookup every client shares (`edge-agent watch` and `poll`, the
/// `CoreMotion` library): the socket `run` binds with the configuration it
/// would read.
public enum AgentSocketLocator {
    /// Environment variable naming the agent's socket.
    public static let environmentVariable = "EDGE_AGENT_SOCKET"
    /// The system service's socket (deploy/edge-agent.json5; the agent's default).
    public static let systemSocketPath = "/run/edge-agent/agent.sock"

    /// `$EDGE_AGENT_SOCKET` when set and not empty; else `service.socket_path`
    /// of the configuration `run` would read (``BoardLocator/defaultConfigPath(environment:executablePaths:)``:
    /// `$EDGE_AGENT_CONFIG`, `/etc/edge-agent/edge-agent.json5`,
    /// `config/edge-agent.json5` here, then that of the build tree the
    /// executable belongs to); else the system service's socket.
    /// - Throws: the configuration's load error (file, key, line).
    public static func locate(environment: [String: String],
                              executablePaths: [String] = BoardLocator.currentExecutablePaths()) throws(ServiceSectionError) -> AgentSocketLocation {
        if let p = environment[environmentVariable], !p.isEmpty {
            return AgentSocketLocation(path: p, source: "$\(environmentVariable)")
        }
        if let found = BoardLocator.defaultConfigPath(environment: environment, executablePaths: executablePaths) {
            return try fromConfig(found)
        }
        let tried = BoardLocator.configCandidates(environment: environment, executablePaths: executablePaths)
        return AgentSocketLocation(path: systemSocketPath,
                                   source: "the system service's socket; no configuration file found (looked for \(tried.joined(separator: ", ")))")
    }

    /// The socket of the configuration at `path`: its `service.socket_path`,
    /// relative to the file's directory.
    public static func fromConfig(_ path: String) throws(ServiceSectionError) -> AgentSocketLocation {
        let service = try ServiceSection.read(path)
        return AgentSocketLocation(path: BoardLocator.resolve(service.socketPath ?? systemSocketPath, nextTo: path),
                                   source: service.socketPath == nil ? "the system service's socket (\(path) sets no service.socket_path)"
                                                                     : "service.socket_path of \(path)",
                                   configPath: path, configuredGroup: service.socketGroup)
    }
}
