#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeConfigFiles
import EdgeProtocol
import EdgeLocations
import EdgeClient

/// The configuration resolved for one bridge: its file, the node name, the
/// paths made absolute, the password read.
public struct ResolvedBridge: Sendable {
    public var configPath: String
    /// Why that file (`--config`, `$EDGE_MQTT_CONFIG`, installed, …).
    public var configSource: String = "--config"
    /// Why that agent socket (`--agent-socket`, `agent.socket_path of FILE`,
    /// or AgentSocketLocator's reason).
    public var agentSocketSource: String = ""

    public var config: BridgeConfig
    public var node: String
    /// Whether the node name came from the host name.
    public var nodeFromHostName: Bool
    public var broker: BrokerSettings
    public var agentSocket: String
    public var statusSocket: String
}

/// A set-up problem: the message says which file and what to do.
public struct SetupFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Command-line values that override the file.
public struct BridgeOverrides: Sendable {
    public var node: String?
    public var agentSocket: String?
    public var statusSocket: String?
    public init(node: String? = nil, agentSocket: String? = nil, statusSocket: String? = nil) {
        self.node = node; self.agentSocket = agentSocket; self.statusSocket = statusSocket
    }
}

public enum BridgeSetup {
    /// The installed configuration's path.
    public static let systemConfig = "/etc/edge-mqtt/edge-mqtt.json5"
    public static let environmentVariable = "EDGE_MQTT_CONFIG"

    /// The file name in every `config/` directory.
    public static let fileName = "edge-mqtt.json5"

    /// The files tried when no `--config` is given, in order (the same way
    /// `edge-agent run` finds its own, ``BoardLocator``):
    /// $EDGE_MQTT_CONFIG (alone: a wrong one is an error naming it),
    /// /etc/edge-mqtt/edge-mqtt.json5 (deploy/install.sh), config/edge-mqtt.json5
    /// in the working directory, then config/edge-mqtt.json5 of each data
    /// directory of the executable (the build tree it belongs to, an
    /// installation's share/edge-agent).
    public static func configCandidates(environment: [String: String],
                                        executablePaths: [String] = BoardLocator.currentExecutablePaths()) -> [(path: String, why: String)] {
        if let p = environment[environmentVariable], !p.isEmpty { return [(p, "$\(environmentVariable)")] }
        var list: [(String, String)] = [(systemConfig, "installed"), ("config/" + fileName, "config/ in the working directory")]
        for dir in BoardLocator.dataDirectories(executablePaths: executablePaths) {
            list.append((dir + "/config/" + fileName, "the data directory of this executable, \(dir)"))
        }
        var seen = Set<String>()
        return list.filter { seen.insert($0.0).inserted }
    }

    /// `--config`, else the first of ``configCandidates(environment:executablePaths:)``
    /// that exists, with why; nil when none does.
    public static func locateConfig(_ explicit: String?, environment: [String: String] = processEnvironment(),
                                    executablePaths: [String] = BoardLocator.currentExecutablePaths()) -> (path: String, why: String)? {
        if let explicit { return (explicit, "--config") }
        let candidates = configCandidates(environment: environment, executablePaths: executablePaths)
        if candidates.first?.why.hasPrefix("$") == true { return candidates[0] }
        return candidates.first { access($0.path, F_OK) == 0 }
    }

    /// What ``locateConfig(_:environment:executablePaths:)`` found, or a
    /// failure that lists every place looked at.
    public static func requireConfig(_ explicit: String?) throws(SetupFailure) -> (path: String, why: String) {
        if let found = locateConfig(explicit) { return found }
        let tried = configCandidates(environment: processEnvironment()).map(\.path)
        throw SetupFailure("no configuration found (looked for \(tried.joined(separator: ", "))): pass --config FILE, set $\(environmentVariable), or install one (deploy/install.sh --mqtt puts deploy/edge-mqtt.json5 at \(systemConfig))")
    }

    /// The variables the lookups read.
    public static func processEnvironment() -> [String: String] {
        var env: [String: String] = [:]
        for name in [environmentVariable, AgentSocketLocator.environmentVariable, BoardLocator.configEnvironmentVariable] {
            if let v = getenv(name) { env[name] = String(cString: v) }
        }
        return env
    }

    /// Finds the configuration (`--config` or the lookup), then ``resolve(configPath:overrides:readPassword:)``.
    public static func resolve(config explicit: String?, overrides: BridgeOverrides = BridgeOverrides(),
                               readPassword: Bool = true) throws(SetupFailure) -> ResolvedBridge {
        let found = try requireConfig(explicit)
        var r = try resolve(configPath: found.path, overrides: overrides, readPassword: readPassword)
        r.configSource = found.why
        return r
    }

    /// Loads and checks the configuration, reads the password file.
    public static func resolve(configPath: String, overrides: BridgeOverrides = BridgeOverrides(),
                               readPassword: Bool = true) throws(SetupFailure) -> ResolvedBridge {
        var config: BridgeConfig
        do {
            config = try BridgeConfig.load(from: configPath)
        } catch {
            var text = error.description
            if error.kind == .notFound {
                text += " (pass --config FILE, set $\(environmentVariable), or install one: deploy/install.sh puts config/edge-mqtt.json5's sibling deploy/edge-mqtt.json5 at \(systemConfig))"
            }
            throw SetupFailure(text)
        }
        var node: String
        var fromHost = false
        if let n = overrides.node {
            if let problem = NodeName.problem(with: n) {
                throw SetupFailure("--node \"\(n)\": a node name is 1 to \(NodeName.maxLength) letters, digits, '_' or '-': \(problem)")
            }
            node = n
        } else if let n = config.node {
            node = n
        } else {
            node = NodeName.fromHostName(NodeName.systemHostName())
            fromHost = true
        }
        // Topics the prefix, the node and the discovery prefix make shared
        // (e.g. discovery_prefix "edge/n1" turns Home Assistant's status
        // into this node's): refused, with the pair.
        let plan = TopicPlan(prefix: config.topics.prefix, node: node, discoveryPrefix: config.topics.discoveryPrefix)
        if let c = plan.collisions.first {
            throw SetupFailure("\(configPath): topics.prefix \"\(plan.prefix)\", node \"\(node)\" and topics.discovery_prefix \"\(plan.discoveryPrefix)\" give \(c.users.joined(separator: " and ")) one topic, \(c.topic); choose a prefix or discovery_prefix that is not the other's <prefix>/<node>")
        }
        let b = config.broker
        var password: BrokerPassword?
        if readPassword, let file = b.passwordFile {
            do {
                password = try BrokerPassword(readingFile: BoardLocator.resolve(file, nextTo: configPath))
            } catch {
                throw SetupFailure("\(configPath): broker.password_file: \(error)")
            }
        }
        let tls = b.tls.map { t in
            TLSSection(caFile: t.caFile.map { BoardLocator.resolve($0, nextTo: configPath) },
                       certFile: t.certFile.map { BoardLocator.resolve($0, nextTo: configPath) },
                       keyFile: t.keyFile.map { BoardLocator.resolve($0, nextTo: configPath) })
        }
        let broker = BrokerSettings(host: b.host, port: b.port, protocolVersion: b.protocolVersion, keepaliveS: b.keepaliveS,
                                    clientID: b.clientID ?? "edge-mqtt-" + node, username: b.username, password: password,
                                    tls: tls, connectTimeoutS: b.connectTimeoutS)
        let agent: String
        let agentWhy: String
        if let a = overrides.agentSocket {
            agent = a; agentWhy = "--agent-socket"
        } else if config.agent.socketPathGiven {
            agent = BoardLocator.resolve(config.agent.socketPath, nextTo: configPath)
            agentWhy = "agent.socket_path of \(configPath)"
        } else {
            do {
                let found = try AgentSocketLocator.locate(environment: processEnvironment())
                agent = found.path; agentWhy = found.source
            } catch {
                throw SetupFailure("\(configPath) names no agent.socket_path, and the agent's configuration cannot be read to find it: \(error.description) (set agent.socket_path, --agent-socket or $\(AgentSocketLocator.environmentVariable))")
            }
        }
        config.agent.socketPath = agent
        let status = overrides.statusSocket ?? BoardLocator.resolve(config.statusSocket, nextTo: configPath)
        for (what, p) in [("agent socket", agent), ("status socket", status)] where p.utf8.count > 107 {
            throw SetupFailure("the \(what) path \(p) is \(p.utf8.count) bytes; a Unix socket address holds at most 107")
        }
        return ResolvedBridge(configPath: configPath, agentSocketSource: agentWhy, config: config, node: node, nodeFromHostName: fromHost,
                              broker: broker, agentSocket: agent, statusSocket: status)
    }
}
