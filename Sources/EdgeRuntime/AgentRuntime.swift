#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import EdgeBus
import EdgeLinux
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeHistory
import EdgeProtocol
import EdgeService
import EdgeSim
import EdgeValues

/// The agent as one value: the board (selected and opened), its
/// calibration, the entitlement policy, the service on its socket, the
/// fitness history, the engine (hub and loop) on its own real-time thread.
///
/// `edge-agent run` is this plus signals, a status line and sd_notify;
/// ``EmbeddedAgent`` (the in-process agent a Core Motion app may opt into)
/// is this on a private socket. Everything is built in one place, in one
/// order, so the two cannot drift.
///
/// Lifecycle: ``start(_:)`` (throws what `run` would report, with nothing
/// left running), then ``reload()`` any number of times, then ``stop(reason:)``
/// (idempotent; also on deinit).
public final class AgentRuntime: @unchecked Sendable {
    /// What to start.
    public struct Options: Sendable {
        /// The configuration file (nil: the lookup `run` uses:
        /// $EDGE_AGENT_CONFIG, /etc/edge-agent, the repository's config/).
        public var configPath: String?
        /// A board profile's name or file instead of the configuration's.
        public var board: String?
        /// The default chips on /dev/i2c-N instead of a board profile.
        public var bus: Int?
        /// The socket instead of the configuration's `service.socket_path`.
        public var socketPath: String?
        /// Refuse to start when a chip that can be calibrated has no
        /// calibration measured on it (or the configuration's `calibration_required`).
        public var requireCalibration = false
        /// Streams to keep running with no client (a status display).
        public var alwaysOn: Set<StreamName> = []
        /// Keeps a snapshot for ``status()`` every 20 ticks.
        public var keepsStatus = false
        /// Named in the bus lock ("edge-agent run").
        public var purpose = "run"
        /// The environment the lookups read.
        public var environment: [String: String]
        /// Warnings and what happens while it runs (standard error for
        /// `run`), rate-limited by the caller where it repeats.
        public var log: @Sendable (String) -> Void
        public init(configPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                    log: @escaping @Sendable (String) -> Void = { _ in }) {
            self.configPath = configPath; self.environment = environment; self.log = log
        }
    }

    /// The board and configuration chosen.
    package let selection: BoardSession.Selection
    package let session: BoardSession
    /// The engine's settings as run (configuration, plus data-ready and always-on).
    public let settings: EngineSettings
    /// Where clients connect.
    public let socketPath: String
    /// The configuration file read (nil: the built-in defaults).
    public var configPath: String? { selection.configPath }
    /// The board profile's name.
    public var boardName: String { session.profile.name }
    /// What `run` prints at start, in order: the configuration, board and
    /// socket; the simulation clock; calibration; the history; one line
    /// per device; the reference frame; the loop.
    public let startReport: [String]
    /// One line per device, as its start went (a part of ``startReport``).
    public let deviceReport: [String]
    /// The chips the status line names as uncalibrated (updated by ``reload()``).
    public var uncalibratedChips: [String] { state.withLock { $0.uncalibrated } }

    package let server: ServiceServer
    private let engine: any RunningEngine
    private let history: HistoryRecorder?
    /// The sensor recorder (`recorder` configured), flushed at stop.
    private let sensorRecorder: AccelerometerRecorder?
    private let calibrationFiles: CalibrationLoader.Files
    private let calibrationRequired: Bool
    private let log: @Sendable (String) -> Void
    private let state: Locked<State>
    private struct State {
        var stopped = false
        var uncalibrated: [String]
    }

    // MARK: start

    /// Selects and opens the board, loads the calibration, binds the socket,
    /// opens the history and the recorder, starts the engine on its loop
    /// thread, and only then accepts clients (those that connected meanwhile
    /// first).
    /// - Throws: ``SetupError`` for a configuration, board, scenario or
    ///   calibration that is missing or invalid (exit 2 in `run`); a
    ///   ``RunError`` or the bus's error for what stops it running (exit 1).
    public static func start(_ o: Options) throws -> AgentRuntime {
        let selection = try BoardSession.select(board: o.board, bus: o.bus, config: o.configPath, environment: o.environment)
        return try start(o, selection: selection)
    }

    /// ``start(_:)`` for a selection already made (the command line's).
    package static func start(_ o: Options, selection: BoardSession.Selection) throws -> AgentRuntime {
        let config = selection.config
        let calibrationFiles = CalibrationLoader.Files(selection)
        let calibrationRequired = o.requireCalibration || config.calibrationRequired
        let socketPath = o.socketPath ?? EngineSetup.path(config.service.socketPath, config: selection.configPath)
        let policy: EntitlementPolicy
        do {
            policy = try EngineSetup.policy(config)
        } catch let e as ConfigError {
            throw SetupError(e)
        }
        let session = try BoardSession.open(selection, purpose: o.purpose)
        let calibration: AgentCalibration
        do {
            calibration = try CalibrationLoader.resolve(calibrationFiles, for: session, required: calibrationRequired,
                                                        warn: { o.log("warning: " + $0) })
        } catch let e as CalibrationRequired {
            throw SetupError(e)
        } catch {
            throw SetupError(error, hint: "calibration_file in \(selection.configPath ?? "the configuration") or in the board profile: fix the file, remove it, or run `edge-agent calibrate` again")
        }
        for u in calibration.uncalibrated where u.skipped {
            o.log("warning: \(u.chip) runs uncalibrated: \(u.reason)")
        }
        var settings = EngineSetup.settings(config)
        settings.alwaysOn.formUnion(o.alwaysOn)
        let dataReady: (any DataReadyLine)?
        if config.loop.dataReady, let spec = session.profile.chip(.mpu6050)?.dataReady {
            if let sim = session.simulated {
                dataReady = sim.dataReadyLine(forAddress: session.profile.chip(.mpu6050)!.address)
            } else {
                dataReady = try LibgpiodLine(chipLabel: spec.chip, offset: spec.line)
            }
        } else {
            dataReady = nil
        }
        if dataReady != nil { settings.mpu6050.dataReadyInterrupt = true }

        var serviceConfig = EngineSetup.service(config, socketPath: socketPath)
        serviceConfig.agentFrame = settings.referenceFrame.rawValue
        serviceConfig.agentDeclinationDeg = config.fusion.declinationDeg
        let server: ServiceServer
        do {
            // Bound now (a second agent stops here, before it opens any
            // store), but accepting no client until the history, the
            // recorder and the engine's first devices snapshot are in
            // place: a client that connects meanwhile waits in the backlog,
            // and an agent's first answer is never `noHistory` or no devices.
            server = try ServiceServer(configuration: serviceConfig, policy: policy, acceptingClients: false)
        } catch {
            throw RunError("cannot serve clients on \(socketPath): \(error)")
        }
        var report = ["edge-agent: config \(selection.configPath ?? "(built-in defaults)"), board \"\(session.profile.name)\" (\(session.profileSource)) on \(session.bus.name), socket \(socketPath), protocol \(EdgeProtocolInfo.version)"]
        if let sim = session.simulated {
            // Scenario times (motion, faults) count from here; clients' timestamp_ns are on the same clock.
            report.append("  simulation: scenario time 0 s is CLOCK_MONOTONIC \(sim.bus.startNanoseconds) ns")
        }
        report += calibration.startLines.map { "  " + $0 }

        var recorder: HistoryRecorder?
        if let h = config.fitness.history {
            let path = EngineSetup.path(h.path, config: selection.configPath)
            do {
                recorder = HistoryRecorder(history: try FitnessHistory(path: path, retentionSeconds: h.retentionDays * 86400))
            } catch {
                server.stop(reason: "agent failed to start")
                throw RunError("fitness history: \(error)")
            }
            recorder?.onHealthChange = { change in o.log("edge-agent: " + change.description) }
            report.append("  fitness history: \(path) (SQLite, WAL; kept \(h.retentionDays) days)")
            do {
                server.setHistorySource(try FitnessHistorySource(path: path, retentionSeconds: h.retentionDays * 86400, recorder: recorder))
            } catch {
                o.log("edge-agent: warning: fitness history: clients' history requests cannot be answered: \(error)")
            }
        }
        var sensorRecorder: AccelerometerRecorder?
        if let r = config.recorder {
            let path = EngineSetup.path(r.path, config: selection.configPath)
            do {
                sensorRecorder = try AccelerometerRecorder(store: try AccelerometerStore(path: path, maxBytes: r.maxBytes))
            } catch {
                server.stop(reason: "agent failed to start")
                throw RunError("sensor recorder: \(error)")
            }
            sensorRecorder?.onHealthChange = { line in o.log("edge-agent: " + line) }
            report.append("  sensor recorder: \(path) (SQLite, WAL; 50 Hz accelerometer kept 3 days, at most \(r.maxMegabytes) MB)")
            server.setRecorderSource(SensorRecorderSource(sensorRecorder!))
        }
        var sink: any SampleSink = recorder.map { HistorySink(inner: server, recorder: $0) } ?? server
        if let sensorRecorder { sink = RecorderSink(inner: sink, recorder: sensorRecorder) }
        sensorRecorder?.start()
        let parts = EngineParts(profile: session.profile, config: config, settings: settings,
                                calibration: calibration.engine, sink: sink, dataReady: dataReady,
                                realtime: config.loop.realtime ? (Int32(config.loop.priority), config.loop.lockMemory) : nil,
                                keepsStatus: o.keepsStatus, history: recorder)
        let engine: any RunningEngine
        do {
            if let linux = session.bus.base as? LinuxI2CBus {
                engine = try Engine(bus: linux, clock: session.clock, parts)
            } else if let sim = session.bus.base as? SimulatedBus {
                engine = try Engine(bus: sim, clock: session.clock, parts)
            } else {
                engine = try Engine(bus: session.bus, clock: session.clock, parts)
            }
        } catch {
            sensorRecorder?.stop()
            server.stop(reason: "agent failed to start")
            throw error
        }
        // The engine has probed the board and published its devices (SensorHub.start).
        server.startAcceptingClients()
        report += engine.startLines.map { "  " + $0 }
        report.append("  reference frame: \(settings.referenceFrame.rawValue)")
        report.append("  " + engine.loopLine)
        return AgentRuntime(selection: selection, session: session, settings: settings, socketPath: socketPath,
                            startReport: report, server: server, engine: engine, history: recorder, sensorRecorder: sensorRecorder,
                            calibrationFiles: calibrationFiles, calibrationRequired: calibrationRequired,
                            uncalibrated: calibration.statusChips, log: o.log)
    }

    private init(selection: BoardSession.Selection, session: BoardSession, settings: EngineSettings, socketPath: String,
                 startReport: [String], server: ServiceServer, engine: any RunningEngine, history: HistoryRecorder?,
                 sensorRecorder: AccelerometerRecorder?,
                 calibrationFiles: CalibrationLoader.Files, calibrationRequired: Bool, uncalibrated: [String],
                 log: @escaping @Sendable (String) -> Void) {
        self.selection = selection; self.session = session; self.settings = settings; self.socketPath = socketPath
        self.startReport = startReport; self.deviceReport = engine.startLines; self.server = server; self.engine = engine; self.history = history
        self.sensorRecorder = sensorRecorder
        self.calibrationFiles = calibrationFiles; self.calibrationRequired = calibrationRequired; self.log = log
        state = Locked(State(uncalibrated: uncalibrated))
    }

    // MARK: while it runs

    /// Reads the calibration files again (SIGHUP) and hands the result to
    /// the loop, which applies it from its next tick. Returns what to say;
    /// throws when nothing was reloaded (the old calibration stays).
    public func reload() throws -> [String] {
        var warnings: [String] = []
        let cal = try CalibrationLoader.resolve(calibrationFiles, for: session, readIdentity: false,
                                                required: calibrationRequired, warn: { warnings.append("warning: " + $0) })
        engine.apply(calibration: cal.engine)
        state.withLock { $0.uncalibrated = cal.statusChips }
        let files = calibrationFiles.list.isEmpty ? "(none)" : calibrationFiles.list.map(\.path).joined(separator: " and ")
        return ["calibration reloaded from \(files)"] + warnings
            + cal.uncalibrated.filter(\.skipped).map { "warning: \($0.chip) runs uncalibrated: \($0.reason)" }
    }

    /// The monotonic time of the loop's last tick, ns (0 before the first):
    /// what a watchdog pings on.
    public var lastTickNanoseconds: UInt64 { engine.lastTick }
    /// The loop stopped by itself (its thread ended).
    public var loopStopped: Bool { engine.isStopping }
    /// Warnings from the loop thread's start (real-time priority, memory lock).
    public var loopWarnings: [String] { engine.warnings }
    /// The status line's values (only with ``Options/keepsStatus``).
    public func status() -> RuntimeStatus { engine.status }
    /// The service's counters.
    public func serviceStatistics() -> ServiceStatistics { server.statistics() }

    // MARK: stop

    /// Stops the loop, flushes the history, stops the service (clients get
    /// `shutdown` with `reason`) and releases the bus. Idempotent.
    @discardableResult
    public func stop(reason: String) -> StopReport? {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return nil }
        engine.stop()
        saveLearnedMagnetometerCalibration()
        history?.stop()
        if let e = history?.health.error { log("edge-agent: fitness history: the last commit failed: \(e)") }
        sensorRecorder?.stop()
        if let e = sensorRecorder?.health.error { log("edge-agent: sensor recorder: the last commit failed: \(e)") }
        let stats = server.statistics()   // before stop(): it forgets its clients
        server.stop(reason: reason)
        session.lock = nil
        return StopReport(ticks: engine.ticks, loopSummary: engine.loopSummary, service: stats)
    }

    /// Saves what the continuous magnetometer calibration learned, with
    /// the chip it was learned on, next to the calibration file
    /// (``CalibrationLoader/Files/learned``), so that the next start begins
    /// calibrated. Nothing learned, or no calibration file: nothing written.
    private func saveLearnedMagnetometerCalibration() {
        guard let path = calibrationFiles.learned,
              let chip = session.profile.chip(.qmc5883l) ?? session.profile.chip(.hmc5883l),
              let learned = engine.learnedMagnetometerCalibration(boardFromChip: Matrix3(rows: chip.mounting.matrix)) else { return }
        do {
            let chips = try BoardChips.of(profile: session.profile, profilePath: session.simulated != nil ? session.profileSource : nil)
            try CalibrationLoader.saveLearned(learned, chip: chip.id, chips: chips, to: path,
                                              created: CalibrationFile.timestamp(unixSeconds: Date().timeIntervalSince1970))
            log("calibration: what the magnetometer learned saved to \(path)")
        } catch {
            log("edge-agent: warning: could not save what the magnetometer learned to \(path): \(error)")
        }
    }

    /// What ``stop(reason:)`` saw last.
    public struct StopReport: Sendable {
        public var ticks: Int
        public var loopSummary: String
        public var service: ServiceStatistics
    }

    deinit { stop(reason: "agent stopping") }
}

/// What a status line shows, copied by the loop thread every 20 ticks
/// (only when the lock is free: the loop never waits for a reader).
public struct RuntimeStatus: Sendable {
    public var ticks = 0
    public var rollDeg = 0.0, pitchDeg = 0.0, yawDeg = 0.0
    /// m, and Pa.
    public var relativeAltitude = 0.0, pressure = 0.0
    public var p99Microseconds: UInt64 = 0
    public var overruns = 0
    public init() {}
}

/// What the engine is built from (the bus type aside).
private struct EngineParts {
    var profile: BoardProfile
    var config: AgentConfig
    var settings: EngineSettings
    var calibration: EngineCalibration
    var sink: any SampleSink
    var dataReady: (any DataReadyLine)?
    var realtime: (priority: Int32, lockMemory: Bool)?
    var keepsStatus: Bool
    var history: HistoryRecorder?
}

/// The engine running on its thread, whatever its bus type.
private protocol RunningEngine: AnyObject, Sendable {
    var startLines: [String] { get }
    var loopLine: String { get }
    var lastTick: UInt64 { get }
    var isStopping: Bool { get }
    var warnings: [String] { get }
    var status: RuntimeStatus { get }
    var ticks: Int { get }
    var loopSummary: String { get }
    func apply(calibration: EngineCalibration)
    func stop()
    func learnedMagnetometerCalibration(boardFromChip: Matrix3) -> MagnetometerCalibration?
}

/// The hub and loop specialised on the concrete bus type (the drivers are
/// generic over it), on their own thread.
private final class Engine<B: I2CBus>: RunningEngine, @unchecked Sendable {
    let hub: SensorHub<B>
    let loop: EngineLoop<B>
    let startLines: [String]
    let loopLine: String
    private var thread: LoopThread?
    private let sink: any SampleSink   // the hub holds its sink weakly
    private let history: HistoryRecorder?
    private let progress = Atomic<UInt64>(0)
    private let startWarnings = Locked<[String]>([])
    private let snapshot = Locked(RuntimeStatus())

    init(bus: B, clock: any TimeSource, _ p: EngineParts) throws {
        sink = p.sink
        history = p.history
        (hub, loop) = EngineSetup.engine(bus: bus, clock: clock, profile: p.profile, config: p.config, settings: p.settings,
                                         calibration: p.calibration, sink: p.sink, dataReady: p.dataReady)
        p.history?.start()
        startLines = hub.start()
        loopLine = "loop: \(Double(1_000_000_000 / loop.periodNanoseconds)) Hz" +
            (hub.batch > 1 ? " (FIFO batches of \(hub.batch) at \(Int((1e9 * Double(hub.batch) / Double(loop.periodNanoseconds)).rounded())) Hz\(p.settings.imuBatch == 0 ? "; the batch follows demand" : ""))" : "") +
            (p.dataReady != nil ? ", woken by the data-ready line" : ", absolute deadlines") +
            (p.realtime.map { ", SCHED_FIFO \($0.priority) requested" } ?? "")
        let frame = p.settings.referenceFrame
        let keepsStatus = p.keepsStatus
        loop.afterTick = { [unowned self] t in   // unowned: the engine outlives its loop's closure
            self.progress.store(t, ordering: .relaxed)
            guard keepsStatus, self.hub.ticks % 20 == 0 else { return }
            _ = self.snapshot.withLockIfAvailable { s in
                s.ticks = self.hub.ticks
                if let f = self.hub.primaryFilter {
                    let a = f.deviceMotion(in: frame).attitude
                    s.rollDeg = a.roll * 180 / .pi; s.pitchDeg = a.pitch * 180 / .pi; s.yawDeg = a.yaw * 180 / .pi
                }
                let alt = self.hub.altitudeOutput
                s.relativeAltitude = alt.relativeAltitude; s.pressure = alt.pressure
                s.p99Microseconds = self.loop.statistics.percentile(0.99) / 1000
                s.overruns = self.loop.statistics.overruns
            }
        }
        let loop = self.loop, warnings = startWarnings, realtime = p.realtime
        do {
            thread = try LoopThread(name: "edge-loop") {
                if let rt = realtime {
                    let w = RealTime.apply(priority: rt.priority, lockMemory: rt.lockMemory)
                    warnings.withLock { $0 = w }
                }
                loop.run()
            }
        } catch {
            p.history?.stop()
            throw error
        }
    }

    var lastTick: UInt64 { progress.load(ordering: .relaxed) }
    var isStopping: Bool { loop.isStopping }
    var warnings: [String] { startWarnings.withLock { $0 } }
    var status: RuntimeStatus { snapshot.withLock { $0 } }
    var ticks: Int { hub.ticks }
    var loopSummary: String { loop.statistics.summary }
    func apply(calibration: EngineCalibration) { loop.enqueue { $0.apply(calibration: calibration) } }
    /// Only once stopped: the loop thread no longer touches the hub.
    func learnedMagnetometerCalibration(boardFromChip m: Matrix3) -> MagnetometerCalibration? {
        thread == nil ? hub.learnedMagnetometerCalibration(boardFromChip: m) : nil
    }

    func stop() {
        loop.stop()
        thread?.join()
        thread = nil
        withExtendedLifetime(sink) {}
    }
}
