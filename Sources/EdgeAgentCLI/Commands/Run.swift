#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeValues
import EdgeBus
import EdgeProtocol
import EdgeService
import EdgeSystem
import EdgeRuntime

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
        let statusEvery = quiet ? nil : statusArg ?? (console.isTerminal ? 0.5 : nil)
        let env = ProcessInfo.processInfo.environment
        let selection = try BoardSession.select(&a, environment: env)
        try a.finish()

        // Lines something outside the agent can repeat at will (SIGHUPs, a
        // flapping disk under the history): at most 5 of a kind per 10 s,
        // then a count.
        let log = LimitedLog { [console] in console.error($0) }
        let out = LimitedLog { [console] in console.print($0) }
        var options = AgentRuntime.Options(environment: env, log: { [log] line in
            if line.hasPrefix("warning:") { console.error(line) } else { log.line("history", line) }
        })
        options.socketPath = socketOverride
        options.requireCalibration = requireCalibration
        // A status display keeps device motion and altitude running with no client.
        if statusEvery != nil { options.alwaysOn = [.deviceMotion, .altitude] }
        options.keepsStatus = statusEvery != nil

        // Block the handled signals before any thread exists, so only the main
        // thread takes them (sigtimedwait).
        AgentSignals.block()
        let runtime = try AgentRuntime.start(options, selection: selection)
        for line in runtime.startReport { console.print(line) }
        return serve(runtime, duration: duration, status: statusEvery, console: console, log: log, out: out)
    }

    /// The status line for `columns` (``StatusLine``).
    static func statusLine(_ s: RuntimeStatus, clients: Int, seconds: Double, uncalibrated: [String], columns: Int) -> String {
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

    /// The main thread while the runtime runs: signals, the status line,
    /// the systemd watchdog, --duration. Returns the exit status.
    static func serve(_ runtime: AgentRuntime, duration: Double?, status: Double?, console: Console,
                      log: LimitedLog, out: LimitedLog) -> Int32 {
        let notify = SystemdNotify(environment: ProcessInfo.processInfo.environment)
        let watchdog = SystemdNotify.watchdogInterval(environment: ProcessInfo.processInfo.environment, pid: getpid())
        let readyStatus = "serving \(runtime.boardName) on \(runtime.socketPath)"
        try? notify.ready(status: readyStatus)
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
            if let every = status { timeout = min(timeout, every - Double(clock.nowNanoseconds &- lastStatus) / 1e9) }
            if let d = duration { timeout = min(timeout, d - sinceStart) }
            if let every = pingEvery { timeout = min(timeout, Double(every) / 1e9 / 2) }
            let sig = AgentSignals.wait(timeout: max(0.001, timeout))
            if !reportedWarnings {
                let w = runtime.loopWarnings
                if !w.isEmpty {
                    for line in w { console.error("warning: \(line)") }
                    reportedWarnings = true
                }
            }
            switch sig {
            case SIGTERM?, SIGINT?:
                stopReason = sig == SIGTERM ? "SIGTERM" : "SIGINT"
                if status != nil && console.isTerminal { console.write("\r\u{1B}[2K") }   // off the status line
                console.print(EdgeAgentCLI.stopNote(command: "run", signal: sig!))
                break loopWait
            case SIGHUP?:
                try? notify.reloading(monotonicMicroseconds: clock.nowNanoseconds / 1000)
                do {
                    for line in try runtime.reload() {
                        if line.hasPrefix("warning:") { log.line("sighup", "edge-agent: SIGHUP: " + line) } else { out.line("sighup", "edge-agent: SIGHUP: " + line) }
                    }
                } catch {
                    log.line("sighup", "edge-agent: SIGHUP: calibration not reloaded, keeping the old one: \(error)")
                }
                try? notify.ready(status: readyStatus)
            default:
                break
            }
            log.flush()
            out.flush()
            let now = clock.nowNanoseconds
            // Ping the watchdog only while the loop makes progress.
            let tick = runtime.lastTickNanoseconds
            if let every = pingEvery, tick != lastProgress, now &- lastPing >= every {
                try? notify.watchdog()
                lastPing = now
                lastProgress = tick
            }
            if let every = status, Double(now &- lastStatus) / 1e9 >= every {
                lastStatus = now
                let line = statusLine(runtime.status(), clients: runtime.serviceStatistics().clients.count,
                                      seconds: Double(now &- started) / 1e9, uncalibrated: runtime.uncalibratedChips,
                                      columns: console.isTerminal ? StatusLine.columns() : StatusLine.defaultColumns)
                if console.isTerminal { console.write("\r\u{1B}[2K" + line) } else { console.print(line) }
            }
            if let d = duration, Double(now &- started) / 1e9 >= d { break }
            if runtime.loopStopped { exitStatus = 1; stopReason = "loop stopped"; break }
        }
        if status != nil && console.isTerminal && stopReason == "duration elapsed" { console.write("\n") }
        try? notify.stopping()
        let report = runtime.stop(reason: stopReason)
        log.flush(all: true)
        out.flush(all: true)
        if let r = report {
            console.print("edge-agent: stopped after \(r.ticks) ticks; \(r.loopSummary)")
            console.print(publishedLine(r.service, alwaysOn: runtime.settings.alwaysOn))
        }
        return exitStatus
    }
}
