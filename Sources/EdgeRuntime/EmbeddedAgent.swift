#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// An agent running inside this process: the configuration's board (the
/// simulated board by default, real chips when the configuration says so),
/// the engine on its own loop thread, and the service on a socket of the
/// caller's choosing: an ``AgentRuntime`` without the terminal, the
/// signals and sd_notify.
///
/// The `CoreMotionInProcessAgent` product starts one for a Core Motion app
/// that opts in, on a private socket, and the app talks to it with the same
/// client it uses for a running agent (one code path for both).
/// Entitlements come from the configuration's `clients` list (or, without
/// one, the default: the current user gets `motion` and `altitude`). A real
/// board takes the bus lock as the agent does: a later `edge-agent run` then
/// refuses clearly.
public final class EmbeddedAgent: @unchecked Sendable {
    private let runtime: AgentRuntime
    /// Where clients connect.
    public var socketPath: String { runtime.socketPath }
    /// The configuration file read (nil: the built-in defaults).
    public var configPath: String? { runtime.configPath }
    /// The board profile's name.
    public var boardName: String { runtime.boardName }
    /// One line per device, as `run` prints them at start.
    public var startReport: [String] { runtime.deviceReport }

    /// Starts an agent with the configuration at `configPath` (nil: the
    /// lookup `run` uses: $EDGE_AGENT_CONFIG, /etc/edge-agent, the
    /// repository's config/) serving `socketPath`.
    /// - Throws: what `run` would report: a configuration or board that is
    ///   missing or invalid (``SetupError``), a bus that is locked or absent,
    ///   a socket that cannot be bound (``RunError``).
    public static func start(configPath: String? = nil, socketPath: String,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws -> EmbeddedAgent {
        var o = AgentRuntime.Options(configPath: configPath, environment: environment, log: { line in
            // the app's standard error: the in-process agent has no log of its own
            var bytes = Array("edge-agent (in this process): \(line)\n".utf8)
            _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        })
        o.socketPath = socketPath
        o.purpose = "in-process agent"
        return EmbeddedAgent(runtime: try AgentRuntime.start(o))
    }

    private init(runtime: AgentRuntime) { self.runtime = runtime }

    /// Stops the engine and the service (clients get `shutdown`); releases
    /// the bus. Idempotent.
    public func stop(reason: String = "in-process agent stopping") {
        runtime.stop(reason: reason)
    }

    deinit { stop() }
}
