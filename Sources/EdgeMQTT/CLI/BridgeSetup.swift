#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeConfig
import EdgeProtocol

/// The configuration resolved for one bridge: its file, the node name, the
/// paths made absolute, the password read.
public struct ResolvedBridge: Sendable {
    public var configPath: String
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

    /// `--config`, else $EDGE_MQTT_CONFIG, else /etc/edge-mqtt/edge-mqtt.json5
    /// when it exists, else config/edge-mqtt.json5 in the working directory.
    public static func locateConfig(_ explicit: String?) -> String {
        if let explicit { return explicit }
        if let env = getenv(environmentVariable), env.pointee != 0 { return String(cString: env) }
        if access(systemConfig, F_OK) == 0 { return systemConfig }
        return "config/edge-mqtt.json5"
    }

    /// Loads and checks the configuration, reads the password file.
    public static func resolve(configPath: String, overrides: BridgeOverrides = BridgeOverrides(),
                               readPassword: Bool = true) throws(SetupFailure) -> ResolvedBridge {
        let config: BridgeConfig
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
        let agent = overrides.agentSocket ?? BoardLocator.resolve(config.agent.socketPath, nextTo: configPath)
        let status = overrides.statusSocket ?? BoardLocator.resolve(config.statusSocket, nextTo: configPath)
        for (what, p) in [("agent socket", agent), ("status socket", status)] where p.utf8.count > 107 {
            throw SetupFailure("the \(what) path \(p) is \(p.utf8.count) bytes; a Unix socket address holds at most 107")
        }
        return ResolvedBridge(configPath: configPath, config: config, node: node, nodeFromHostName: fromHost,
                              broker: broker, agentSocket: agent, statusSocket: status)
    }
}
