import EdgeLocations
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    ///
    /// An app in a package of its own (this one a dependency) has its
    /// executable in its own build tree, where no configuration is: then
    /// the `config/edge-agent.json5` of the package this library was built
    /// from (`packageRoot`) is read, the one `edge-agent run` reads there.
    public static func locate(environment: [String: String],
                              executablePaths: [String] = BoardLocator.currentExecutablePaths(),
                              packageRoot: String? = libraryPackageRoot) throws(ServiceSectionError) -> AgentSocketLocation {
        if let p = environment[environmentVariable], !p.isEmpty {
            return AgentSocketLocation(path: p, source: "$\(environmentVariable)")
        }
        if let found = BoardLocator.defaultConfigPath(environment: environment, executablePaths: executablePaths) {
            return try fromConfig(found)
        }
        var tried = BoardLocator.configCandidates(environment: environment, executablePaths: executablePaths)
        if let root = packageRoot {
            let config = root + "/config/edge-agent.json5"
            if FileManager.default.fileExists(atPath: config) {
                var location = try fromConfig(config)
                location.source += " (the configuration of the package this library was built from)"
                return location
            }
            tried.append(config)
        }
        return AgentSocketLocation(path: systemSocketPath,
                                   source: "the system service's socket; no configuration file found (looked for \(tried.joined(separator: ", ")))")
    }

    /// The root of the package this library was compiled from (three
    /// levels above this source file), when it is still there: where an
    /// app that depends on the package finds the configuration `edge-agent
    /// run` reads in it.
    public static let libraryPackageRoot: String? = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count > 3 else { return nil }
        parts.removeLast(3)
        let root = parts.joined(separator: "/")
        return FileManager.default.fileExists(atPath: root + "/Package.swift") ? root : nil
    }()

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
