#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import EdgeCommandLine
import EdgeValues
import EdgeBus
import EdgeLinux
import EdgeConfig
import EdgeEngine
import EdgeHistory
import EdgeProtocol
import EdgeService
import EdgeSystem
import EdgeSim

/// `edge-agent run`: the daemon.
public enum RunCommand: Subcommand {
    public static let name = "run"
    public static let summary = "Run the agent: the fixed-rate sensor loop and the client socket"
    public static let help = """
    Usage: edge-agent run [--config FILE] [--board NAME|FILE] [--duration S] [--socket PATH]
                          [--status S | --quiet] [--require-calibration]

    Runs the agent: starts every chip of the board profile, runs one
    fixed-rate loop (absolute deadlines on CLOCK_MONOTONIC, or the MPU-6050's
    data-ready edge), fuses the chips into device motion and barometric
    altitude, and serves them to local clients on a Unix socket (line-
    delimited JSON; see the EdgeService DocC catalog and docs/protocol.md).
    `edge-agent watch` shows a running agent live.

    Configuration: --config FILE, else $EDGE_AGENT_CONFIG, else
    /etc/edge-agent/edge-agent.json5 when installed, else
    config/edge-agent.json5 in the working directory, else the one of the
    repository a build-tree executable (.build/.../edge-agent) belongs to -
    which selects the simulated board playing scenarios/desk-idle.json5, so
    this works with no sensors attached, from any directory. Board profiles
    named by a bare name are found next to the configuration, in the
    repository, or in /usr/local/share/edge-agent/boards (deploy/install.sh);
    --board takes a name (simulated-dive), a file name (simulated-dive.json5),
    boards/simulated-dive.json5 or a path, from any directory.
    A startup line names the config, board and socket; `edge-agent watch`
    finds the same socket the same way.

    Calibration: for each chip, the first of the configuration's
    calibration_file and the board profile's calibration_file that was
    measured on that chip. A chip whose calibration was measured on other
    chips (another board, another simulation seed) runs uncalibrated: the
    agent says so at start, in the status line and in the devices snapshot
    (`watch`), and the magnetic field accuracy is `uncalibrated`.
    A live dive: `edge-agent run --board simulated-dive` (the dive board
    plays scenarios/dive-18m.json5), then `dive-logger record` in another
    terminal (docs/submersion.md).

    Options:
      --config FILE   configuration (config/README.md documents the keys)
      --board NAME    use this board profile instead of the configuration's:
                      a name (simulated-dive) or a file
      --duration S    stop by itself after S seconds (default: run until stopped)
      --socket PATH   override service.socket_path
      --status S      print a status line every S seconds (0.05 to 3600:
                      attitude, altitude and pressure in hPa, clients, loop
                      lateness); on a terminal it redraws in place.
                      Default: every 0.5 s when standard output is a terminal,
                      never otherwise (under systemd). A status display keeps
                      device motion and altitude running even with no client;
                      without one and without clients the sensors idle.
      --quiet         no status line (not together with --status)
      --require-calibration
                      refuse to start (exit 2) when a chip that can be
                      calibrated (MPU-6050, QMC5883L) has no calibration
                      measured on it; calibration_required: true in the
                      configuration does the same

    Signals: SIGTERM or SIGINT (Ctrl-C) stop cleanly, exit status 0 -
    clients are told ({"class":"shutdown"}), the socket is removed, counters
    are printed; SIGHUP reloads the calibration file. Under systemd
    (Type=notify) it reports readiness and pings the watchdog while the loop
    makes progress.

    The agent takes a lock on the I2C bus: a second agent, or a tool such as
    `read`, refuses clearly instead of fighting over the chips.

    Exit status: 0 after --duration or a signal; 1 the agent could not run
    (a chip, bus, GPIO or socket error, the loop stopped); 2 bad usage, or a
    configuration, board profile, scenario or calibration file that is
    missing or invalid.
    """

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let duration = try a.double("--duration", in: 0.001...1e9)
        let socketOverride = try a.option("--socket")
        let quiet = a.flag("--quiet")
        let statusArg = try a.double("--status", in: 0.05...3600)
        if quiet && statusArg != nil {
            throw UsageError("--quiet and --status S contradict each other: --status prints a status line every S seconds, --quiet none; give one of them")
        }
        let requireCalibration = a.flag("--require-calibration")
        let statusEvery = statusArg ?? (console.isTerminal && !quiet ? 0.5 : nil)
        let env = ProcessInfo.processInfo.environment
        let selection = try BoardSession.select(&a, environment: env)
        try a.finish()
        let config = selection.config
        let settings = EngineSetup.settings(config)
        let calibrationFiles = CalibrationLoader.Files(selection)
        let calibrationRequired = requireCalibration || config.calibrationRequired
        let socketPath = socketOverride ?? EngineSetup.path(config.service.socketPath, config: selection.configPath)
        let serviceConfig = EngineSetup.service(config, socketPath: socketPath)
        let policy: EntitlementPolicy
        do {
            policy = try EngineSetup.policy(config)
        } catch let e as ConfigError {
            throw SetupError(e)
        }
        let session = try BoardSession.open(selection, purpose: "run")
        let calibration: AgentCalibration
        do {
            calibration = try CalibrationLoader.resolve(calibrationFiles, for: session, required: calibrationRequired,
                                                        warn: { console.error("warning: " + $0) })
        } catch let e as CalibrationRequired {
            throw SetupError(e)
        } catch {
            throw SetupError(error, hint: "calibration_file in \(selection.configPath ?? "the configuration") or in the board profile: fix the file, remove it, or run `edge-agent calibrate` again")
        }
        for u in calibration.uncalibrated where u.skipped {
            console.error("warning: \(u.chip) runs uncalibrated: \(u.reason)")
        }

        // Block the handled signals before any thread exists, so only the main
        // thread takes them (sigtimedwait).
        AgentSignals.block()
        let server: ServiceServer
        do {
            server = try ServiceServer(configuration: serviceConfig, policy: policy)
        } catch {
            throw RunError("cannot serve clients on \(socketPath): \(error)")
        }
        console.print("edge-agent: config \(selection.configPath ?? "(built-in defaults)"), board \"\(session.profile.name)\" (\(session.profileSource)) on \(session.bus.name), socket \(socketPath), protocol \(EdgeProtocolInfo.version)")
        if let sim = session.simulated {
            // Scenario times (motion, faults) count from here; clients' timestamp_ns are on the same clock.
            console.print("  simulation: scenario time 0 s is CLOCK_MONOTONIC \(sim.bus.startNanoseconds) ns")
        }
        for line in calibration.startLines { console.print("  " + line) }

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
        var engineSettings = settings
        if dataReady != nil { engineSettings.mpu6050.dataReadyInterrupt = true }
        let status = quiet ? nil : statusEvery
        if status != nil { engineSettings.alwaysOn.formUnion([.deviceMotion, .altitude]) }

        // Lines something outside the agent can repeat at will (SIGHUPs, a
        // flapping disk under the history): at most 5 of a kind per 10 s,
        // then a count.
        let runtimeLog = LimitedLog { [console] in console.error($0) }
        let runtimeOut = LimitedLog { [console] in console.print($0) }
        var recorder: HistoryRecorder?
        if let h = config.fitness.history {
            let path = EngineSetup.path(h.path, config: selection.configPath)
            do {
                recorder = HistoryRecorder(history: try FitnessHistory(path: path, retentionSeconds: h.retentionDays * 86400))
            } catch {
                throw RunError("fitness history: \(error)")
            }
            recorder?.onHealthChange = { [runtimeLog] change in runtimeLog.line("history", "edge-agent: " + change.description) }
            console.print("  fitness history: \(path) (SQLite, WAL; kept \(h.retentionDays) days)")
            do {
                server.setHistorySource(try FitnessHistorySource(path: path, retentionSeconds: h.retentionDays * 86400, recorder: recorder))
            } catch {
                console.error("edge-agent: warning: fitness history: clients' history requests cannot be answered: \(error)")
            }
        }
        let context = RunContext(session: session, selection: selection, settings: engineSettings,
                                 calibration: calibration, calibrationFiles: calibrationFiles,
                                 calibrationRequired: calibrationRequired, server: server,
                                 dataReady: dataReady, duration: duration, console: console, status: status,
                                 history: recorder, log: runtimeLog, out: runtimeOut)
        if let linux = session.bus.base as? LinuxI2CBus {
            return try runEngine(bus: linux, context)
        } else if let sim = session.bus.base as? SimulatedBus {
            return try runEngine(bus: sim, context)
        }
        return try runEngine(bus: session.bus, context)
    }

    struct RunContext {
        var session: BoardSession
        var selection: BoardSession.Selection
        var settings: EngineSettings
        var calibration: AgentCalibration
        var calibrationFiles: CalibrationLoader.Files
        var calibrationRequired: Bool
        var server: ServiceServer
        var dataReady: (any DataReadyLine)?
        var duration: Double?
        var console: Console
        var status: Double?
        /// The fitness history's recorder (config fitness.history), if on.
        var history: HistoryRecorder?
        /// The rate-limited log of what happens while it runs (standard
        /// error), and of what it does (standard output).
        var log: LimitedLog
        var out: LimitedLog
    }

    final class Progress: Sendable {
        let lastTick = Atomic<UInt64>(0)
        let warnings = Locked<[String]>([])
        let snapshot = Locked(StatusSnapshot())
    }

    /// What the status line shows, copied by the loop thread after a tick
    /// (only if the lock is free: the loop never waits for the display).
    struct StatusSnapshot: Sendable {
        var ticks = 0
        var rollDeg = 0.0, pitchDeg = 0.0, yawDeg = 0.0
        var relativeAltitude = 0.0, pressure = 0.0
        var p99Microseconds: UInt64 = 0
        var overruns = 0
    }

    /// The status line for `columns` (``StatusLine``).
    static func statusLine(_ s: StatusSnapshot, clients: Int, seconds: Double, uncalibrated: [String], columns: Int) -> String {
        StatusLine.render(StatusLine.Values(seconds: seconds, rollDeg: s.rollDeg, pitchDeg: s.pitchDeg, yawDeg: s.yawDeg,
                                            relativeAltitude: s.relativeAltitude, pressure: s.pressure, clients: clients,
                                            p99Microseconds: s.p99Microseconds, overruns: s.overruns,
                                            uncalibrated: uncalibrated), columns: columns)
    }

    /// The closing count of what reached clients, and why nothing did when
    /// nothing did (the sensors idle while no stream is asked for).
    static func publishedLine(_ stats: ServiceStatistics, alwaysOn: Set<StreamName>) -> String {
        var line = "edge-agent: published \(stats.published) samples to \(stats.acceptedClients) client connection(s), \(stats.droppedTotal) dropped in client queues, \(stats.overruns) ring overruns"
        if stats.published == 0 && alwaysOn.isEmpty {
            line += stats.acceptedClients == 0
                ? " (no client connected, so no stream was asked for and the sensors idled; a client such as `edge-agent watch`, a status line (--status S) or always_on in the configuration starts them)"
                : " (no client subscribed to a stream; the sensors idled)"
        }
        return line
    }

    /// The engine specialised on the concrete bus type.
    static func runEngine<B: I2CBus>(bus: B, _ c: RunContext) throws -> Int32 {
        let console = c.console
        // The hub holds its sink weakly: this function keeps the history's tee alive.
        let historySink = c.history.map { HistorySink(inner: c.server, recorder: $0) }
        let hub = SensorHub(bus: bus, clock: c.session.clock, devices: EngineSetup.devices(c.session.profile),
                            settings: c.settings, calibration: c.calibration.engine, sink: historySink ?? c.server)
        c.history?.start()
        for line in hub.start() { console.print("  " + line) }
        console.print("  reference frame: \(c.settings.referenceFrame.rawValue)")
        var uncalibratedChips = c.calibration.statusChips
        let loop = EngineLoop(hub: hub, clock: c.session.clock, dataReady: c.dataReady)
        let progress = Progress()
        let wantStatus = c.status != nil
        let frame = c.settings.referenceFrame
        loop.afterTick = { [unowned loop] t in   // unowned: the loop holds this closure
            progress.lastTick.store(t, ordering: .relaxed)
            guard wantStatus, hub.ticks % 20 == 0 else { return }
            _ = progress.snapshot.withLockIfAvailable { s in
                s.ticks = hub.ticks
                if let f = hub.primaryFilter {
                    let a = f.deviceMotion(in: frame).attitude
                    s.rollDeg = a.roll * 180 / .pi; s.pitchDeg = a.pitch * 180 / .pi; s.yawDeg = a.yaw * 180 / .pi
                }
                let alt = hub.altitudeOutput
                s.relativeAltitude = alt.relativeAltitude; s.pressure = alt.pressure
                s.p99Microseconds = loop.statistics.percentile(0.99) / 1000
                s.overruns = loop.statistics.overruns
            }
        }
        let realtime = c.selection.config.loop.realtime
        let priority = Int32(c.selection.config.loop.priority), lockMemory = c.selection.config.loop.lockMemory
        let thread = try LoopThread(name: "edge-loop") {
            if realtime {
                let w = RealTime.apply(priority: priority, lockMemory: lockMemory)
                progress.warnings.withLock { $0 = w }
            }
            loop.run()
        }
        console.print("  loop: \(Double(1_000_000_000 / loop.periodNanoseconds)) Hz" +
                      (hub.batch > 1 ? " (FIFO batches of \(hub.batch) at \(fixed(1e9 * Double(hub.batch) / Double(loop.periodNanoseconds), 0)) Hz\(c.settings.imuBatch == 0 ? "; the batch follows demand" : ""))" : "") +
                      (c.dataReady != nil ? ", woken by the data-ready line" : ", absolute deadlines") +
                      (realtime ? ", SCHED_FIFO \(priority) requested" : ""))

        let notify = SystemdNotify(environment: ProcessInfo.processInfo.environment)
        let watchdog = SystemdNotify.watchdogInterval(environment: ProcessInfo.processInfo.environment, pid: getpid())
        try? notify.ready(status: "serving \(c.session.profile.name) on \(c.server.socketPath)")
        let clock = MonotonicClock()
        let started = clock.nowNanoseconds
        var lastProgress: UInt64 = 0
        var lastPing = started
        var lastStatus = started
        var reportedWarnings = false
        var exitStatus: Int32 = 0
        var stopReason = "duration elapsed"
        let pingEvery = watchdog.map { UInt64($0.components.seconds) * 1_000_000_000 + UInt64($0.components.attoseconds / 1_000_000_000) }
        var waits = 0
        loopWait: while true {
            // Sleep until something is due - a signal, the status line, the
            // end of --duration, a watchdog ping - not on a fixed beat: a
            // thread woken without work costs as much as one with it. The
            // first waits are short, for the loop thread's start-up warnings.
            let sinceStart = Double(clock.nowNanoseconds &- started) / 1e9
            var timeout = waits < 4 ? 0.25 : 60
            waits += 1
            if let every = c.status { timeout = min(timeout, every - Double(clock.nowNanoseconds &- lastStatus) / 1e9) }
            if let d = c.duration { timeout = min(timeout, d - sinceStart) }
            if let every = pingEvery { timeout = min(timeout, Double(every) / 1e9 / 2) }
            let sig = AgentSignals.wait(timeout: max(0.001, timeout))
            if !reportedWarnings, let w = progress.warnings.withLock({ $0.isEmpty ? nil : $0 }) {
                for line in w { console.error("warning: \(line)") }
                reportedWarnings = true
            }
            switch sig {
            case SIGTERM?, SIGINT?:
                stopReason = sig == SIGTERM ? "SIGTERM" : "SIGINT"
                if c.status != nil && console.isTerminal { console.write("\r\u{1B}[2K") }   // off the status line
                console.print(EdgeAgentCLI.stopNote(command: "run", signal: sig!))
                break loopWait
            case SIGHUP?:
                try? notify.reloading(monotonicMicroseconds: clock.nowNanoseconds / 1000)
                do {
                    let cal = try CalibrationLoader.resolve(c.calibrationFiles, for: c.session, readIdentity: false,
                                                            required: c.calibrationRequired,
                                                            warn: { c.log.line("sighup", "edge-agent: SIGHUP: warning: " + $0) })
                    loop.enqueue { $0.apply(calibration: cal.engine) }
                    uncalibratedChips = cal.statusChips
                    c.out.line("sighup", "edge-agent: SIGHUP: calibration reloaded from \(c.calibrationFiles.list.isEmpty ? "(none)" : c.calibrationFiles.list.map(\.path).joined(separator: " and "))")
                    for u in cal.uncalibrated where u.skipped { c.log.line("sighup", "edge-agent: SIGHUP: warning: \(u.chip) runs uncalibrated: \(u.reason)") }
                } catch {
                    c.log.line("sighup", "edge-agent: SIGHUP: calibration not reloaded, keeping the old one: \(error)")
                }
                try? notify.ready(status: "serving \(c.session.profile.name) on \(c.server.socketPath)")
            default:
                break
            }
            c.log.flush()
            c.out.flush()
            let now = clock.nowNanoseconds
            // Ping the watchdog only while the loop makes progress.
            let tick = progress.lastTick.load(ordering: .relaxed)
            if let every = pingEvery, tick != lastProgress, now &- lastPing >= every {
                try? notify.watchdog()
                lastPing = now
                lastProgress = tick
            }
            if let every = c.status, Double(now &- lastStatus) / 1e9 >= every {
                lastStatus = now
                let snap = progress.snapshot.withLock { $0 }
                let line = statusLine(snap, clients: c.server.statistics().clients.count, seconds: Double(now &- started) / 1e9,
                                      uncalibrated: uncalibratedChips,
                                      columns: console.isTerminal ? StatusLine.columns() : StatusLine.defaultColumns)
                if console.isTerminal { console.write("\r\u{1B}[2K" + line) } else { console.print(line) }
            }
            if let d = c.duration, Double(now &- started) / 1e9 >= d { break }
            if loop.isStopping { exitStatus = 1; stopReason = "loop stopped"; break }
        }
        if c.status != nil && console.isTerminal && stopReason == "duration elapsed" { console.write("\n") }
        try? notify.stopping()
        loop.stop()
        thread.join()
        c.history?.stop()
        if let e = c.history?.health.error { console.error("edge-agent: fitness history: the last commit failed: \(e)") }
        withExtendedLifetime(historySink) {}
        let stats = c.server.statistics()   // before stop(): it forgets its clients
        c.server.stop(reason: stopReason)
        c.log.flush(all: true)
        c.out.flush(all: true)
        console.print("edge-agent: stopped after \(hub.ticks) ticks; \(loop.statistics.summary)")
        console.print(publishedLine(stats, alwaysOn: c.settings.alwaysOn))
        return exitStatus
    }
}
