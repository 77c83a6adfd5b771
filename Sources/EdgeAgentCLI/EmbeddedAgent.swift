#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeBus
import EdgeLinux
import EdgeConfig
import EdgeEngine
import EdgeHistory
import EdgeProtocol
import EdgeService
import EdgeSim

/// An agent running inside this process: the configuration's board (the
/// simulated board by default, real chips when the configuration says so),
/// the engine on its own loop thread, and the service on a socket of the
/// caller's choosing - what `edge-agent run` starts, without the terminal,
/// the signals and sd_notify.
///
/// The `CoreMotion` library starts one when no agent answers, on a private
/// socket, and talks to it with the same client it uses for a running agent
/// (one code path for both). Entitlements come from the configuration's
/// `clients` list (or, without one, the default: the current user gets
/// `motion` and `altitude`). A real board takes the bus lock as the agent
/// does: a later `edge-agent run` then refuses clearly.
public final class EmbeddedAgent: @unchecked Sendable {
    /// Where clients connect.
    public let socketPath: String
    /// The configuration file read (nil: the built-in defaults).
    public let configPath: String?
    /// The board profile's name.
    public let boardName: String
    /// One line per device, as `run` prints them at start.
    public let startReport: [String]

    private let server: ServiceServer
    private let stopLoop: () -> Void
    private let session: BoardSession
    private var stopped = false

    /// Starts an agent with the configuration at `configPath` (nil: the
    /// lookup `run` uses: $EDGE_AGENT_CONFIG, /etc/edge-agent, the
    /// repository's config/) serving `socketPath`.
    /// - Throws: what `run` would report: a configuration or board that is
    ///   missing or invalid (``SetupError``), a bus that is locked or absent,
    ///   a socket that cannot be bound.
    public static func start(configPath: String? = nil, socketPath: String,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws -> EmbeddedAgent {
        var args = Arguments(configPath.map { ["--config", $0] } ?? [], command: "embedded agent")
        let selection = try BoardSession.select(&args, environment: environment)
        let config = selection.config
        let session = try BoardSession.open(selection, purpose: "in-process agent")
        let calibration = try CalibrationLoader.resolve(CalibrationLoader.Files(selection), for: session,
                                                        required: config.calibrationRequired, warn: { _ in }).engine
        let policy = try EngineSetup.policy(config)
        let server: ServiceServer
        do {
            server = try ServiceServer(configuration: EngineSetup.service(config, socketPath: socketPath), policy: policy)
        } catch {
            throw RunError("cannot serve clients on \(socketPath): \(error)")
        }
        let settings = EngineSetup.settings(config)
        let devices = EngineSetup.devices(session.profile)
        // The fitness history, as `run` keeps it (config fitness.history).
        var recorder: HistoryRecorder?
        if let h = config.fitness.history {
            let path = EngineSetup.path(h.path, config: selection.configPath)
            do {
                recorder = HistoryRecorder(history: try FitnessHistory(path: path, retentionSeconds: h.retentionDays * 86400))
                // the app's standard error: the in-process agent has no log of its own
                recorder?.onHealthChange = { change in
                    var line = Array("edge-agent (in this process): \(change)\n".utf8)
                    _ = line.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
                }
                server.setHistorySource(try FitnessHistorySource(path: path, retentionSeconds: h.retentionDays * 86400, recorder: recorder))
            } catch {
                server.stop(reason: "in-process agent failed to start")
                throw RunError("fitness history: \(error)")
            }
        }
        let sink: any SampleSink = recorder.map { HistorySink(inner: server, recorder: $0) } ?? server
        let launched: (report: [String], stop: () -> Void)
        do {
            if let sim = session.bus.base as? SimulatedBus {
                launched = try launch(bus: sim, session: session, devices: devices, settings: settings,
                                      calibration: calibration, sink: sink, history: recorder)
            } else if let linux = session.bus.base as? LinuxI2CBus {
                launched = try launch(bus: linux, session: session, devices: devices, settings: settings,
                                      calibration: calibration, sink: sink, history: recorder)
            } else {
                launched = try launch(bus: session.bus, session: session, devices: devices, settings: settings,
                                      calibration: calibration, sink: sink, history: recorder)
            }
        } catch {
            server.stop(reason: "in-process agent failed to start")
            throw error
        }
        return EmbeddedAgent(socketPath: socketPath, configPath: selection.configPath, boardName: session.profile.name,
                             startReport: launched.report, server: server, session: session, stop: launched.stop)
    }

    private init(socketPath: String, configPath: String?, boardName: String, startReport: [String],
                 server: ServiceServer, session: BoardSession, stop: @escaping () -> Void) {
        self.socketPath = socketPath; self.configPath = configPath; self.boardName = boardName
        self.startReport = startReport; self.server = server; self.session = session; stopLoop = stop
    }

    /// The engine specialised on the concrete bus type, on its loop thread.
    private static func launch<B: I2CBus>(bus: B, session: BoardSession, devices: [EngineDevice], settings: EngineSettings,
                                          calibration: EngineCalibration, sink: any SampleSink,
                                          history: HistoryRecorder?) throws -> ([String], () -> Void) {
        let hub = SensorHub(bus: bus, clock: session.clock, devices: devices, settings: settings,
                            calibration: calibration, sink: sink)
        let report = hub.start()
        let loop = EngineLoop(hub: hub, clock: session.clock)
        history?.start()
        let thread = try LoopThread(name: "edge-loop") { loop.run() }
        // the stop closure keeps the sink alive (the hub holds it weakly)
        return (report, { loop.stop(); thread.join(); history?.stop(); withExtendedLifetime(sink) {} })
    }

    /// Stops the engine and the service (clients get `shutdown`); releases
    /// the bus. Idempotent.
    public func stop(reason: String = "in-process agent stopping") {
        guard !stopped else { return }
        stopped = true
        stopLoop()
        server.stop(reason: reason)
        session.lock = nil
    }

    deinit { stop() }
}
