import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeProtocol
import EdgeSystem
import EdgeCommandLine

/// `edge-mqtt`: the command line. `main.swift` only calls ``main(_:)``.
public enum EdgeMQTTCLI {
    public static let usage = """
    edge-mqtt \(EdgeMQTTInfo.version): publishes edge-agent's samples to an MQTT broker, with Home Assistant discovery

    Usage: edge-mqtt COMMAND [OPTIONS]

    Commands:
      run      the bridge (the daemon; systemd runs `edge-mqtt run`)
      check    connect to the agent and the broker once, publish discovery
               and one message per topic, and report what the broker refused
      status   what a running bridge is connected to, what it publishes at
               which rate, what it dropped, how often it reconnected
      discovery  print the Home Assistant discovery payloads run publishes
      help     this text, or `edge-mqtt help COMMAND`

    Options of every command:
      --config FILE   the configuration (default: $EDGE_MQTT_CONFIG, else the
                      first that exists of /etc/edge-mqtt/edge-mqtt.json5,
                      config/edge-mqtt.json5 here, and config/edge-mqtt.json5
                      of the build tree or installation this executable
                      belongs to); keys in docs/mqtt.md. `run` logs which
                      file and which agent socket it uses, and why
      -h, --help      the command's help
      --version       print the version

    Exit status: 0 success; 1 the bridge could not do its job (check found a
    refusal, status found no bridge); 2 bad use or a bad configuration.
    Topics, discovery and the status report: docs/mqtt.md.
    """

    static let runHelp = """
    Usage: edge-mqtt run [--config FILE] [--node NAME] [--agent-socket PATH]
                         [--status-socket PATH] [--verbose]

    Connects to edge-agent's socket (as a client, bound by its entitlements)
    and to the MQTT broker, and publishes until SIGTERM or SIGINT:
      <prefix>/<node>/<stream>            the protocol's sample objects, rate limited per stream
      <prefix>/<node>/attitude/roll_deg …  one number per topic (docs/mqtt.md has the table)
      <prefix>/<node>/status              retained online / offline (also the Last Will)
      <prefix>/<node>/devices, calibration, bridge   retained state
      homeassistant/sensor/<node>/…/config  Home Assistant discovery (retained)
    Samples come from the agent's shared-memory rings where it offers them
    (EDGE_AGENT_RINGS=0 in the environment: as JSON lines); samples a ring
    overwrote before the bridge read them are logged and counted in status.
    Reconnects to the agent and to the broker on its own (broker: capped
    exponential backoff); while the broker is away, messages wait in a bounded
    queue that drops the oldest (counted, reported on reconnect). SIGTERM
    publishes offline and disconnects cleanly; exit status 0.
    The bridge runs in a child process that this one supervises: if it dies
    of a signal (libmosquitto aborts on some malformed MQTT 5 packets) it is
    restarted after the reconnect backoff, and `status` says how often and
    why. MQTT 3.1.1, the default, is not affected (docs/mqtt.md, "Malformed
    packets").

      --node NAME            the <node> topic level (default: the configuration's
                             node, else the host name)
      --agent-socket PATH    the agent's socket (default: agent.socket_path; when
                             the configuration names none, the one edge-agent's
                             clients find: $EDGE_AGENT_SOCKET, else the socket of
                             the agent configuration `edge-agent run` would read)
      --status-socket PATH   this bridge's status socket (default: status_socket)
      --verbose              also log every retry and libmosquitto's warnings
    """

    static let checkHelp = """
    Usage: edge-mqtt check [--config FILE] [--node NAME] [--agent-socket PATH] [--timeout S]

    Reads the configuration and the password file, takes one sample of each
    enabled stream from the agent, connects to the broker (client id
    <client_id>-check, so a running bridge keeps its connection), publishes
    the Home Assistant discovery and one message on every topic the bridge
    would publish, and reports per topic whether the broker accepted it:
      ok        acknowledged (QoS 1/2) or delivered back to check's own subscription
      refused   the broker said no (MQTT 5 reason code, e.g. 0x87 not authorised)
      unseen    no acknowledgement and not delivered back within the timeout
                (MQTT 3.1.1 cannot say why: an ACL, or this user may not read it)
    It does not publish the status topic (a running bridge owns it).
    Exit status 0 when everything was accepted, 1 otherwise, 2 bad configuration.

      --timeout S   how long to wait for the agent and the broker (default 5)
    """

    static let discoveryHelp = """
    Usage: edge-mqtt discovery [--config FILE] [--node NAME] [--every-stream]

    Prints the Home Assistant discovery payloads `run` would publish, one JSON
    line each ({"topic": …, "payload": {…}}), with every configured stream
    taken as granted by the agent. Connects to nothing.
    Home Assistant 2024.3 and newer read them (Tests/Integration/
    ha-discovery-check.py checks each with Home Assistant's own schemas).

      --every-stream   also every stream the configuration leaves out or disables
    """

    static let statusHelp = """
    Usage: edge-mqtt status [--config FILE | --socket PATH] [--json]

    Asks the running bridge (its status socket, status_socket in the
    configuration) what it is connected to, what it publishes at which rate,
    what it dropped and how often it reconnected, and prints it. --json
    prints the bridge's JSON report as is (keys in docs/mqtt.md).
    Exit status 1 when no bridge answers.
    """

    /// Runs a command line (without the program name); returns the exit status.
    /// `supervise`: `run` starts the bridge as a worker process and restarts
    /// it when it dies of a signal (``Supervisor``); the `edge-mqtt`
    /// executable passes true, tests running commands in-process false.
    public static func main(_ arguments: [String], log: BridgeLog = BridgeLog(), supervise: Bool = false) -> Int32 {
        var args = arguments
        guard let command = args.first else {
            print(usage)
            return 2
        }
        args.removeFirst()
        switch command {
        case "-h", "--help", "help":
            if let topic = args.first, let text = help(for: topic) { print(text) } else { print(usage) }
            return 0
        case "--version":
            print("edge-mqtt \(EdgeMQTTInfo.version)")
            return 0
        case "run", "check", "status", "discovery":
            if args.contains("-h") || args.contains("--help") { print(help(for: command)!); return 0 }
            do {
                let options = try Options(args, command: command)
                switch command {
                case "run" where supervise && !Supervisor.isWorker:
                    return Supervisor.run(arguments: args, backoff: RunCommand.restartBackoff(options), log: log)
                case "run": return RunCommand.run(options, log: log)
                case "check": return CheckCommand.run(options, log: log)
                case "discovery": return DiscoveryCommand.run(options)
                default: return StatusCommand.run(options)
                }
            } catch {
                printError("edge-mqtt \(command): \(error.description) (see edge-mqtt \(command) --help)")
                return 2
            }
        default:
            let hint = Arguments.suggestion(for: command, among: ["check", "discovery", "help", "run", "status"])
            printError("edge-mqtt: unknown command '\(command)'\(hint); commands: run, check, status, discovery, help")
            return 2
        }
    }

    static func help(for command: String) -> String? {
        switch command {
        case "run": return runHelp
        case "check": return checkHelp
        case "status": return statusHelp
        case "discovery": return discoveryHelp
        default: return nil
        }
    }
}

/// The options of run / check / status.
struct Options {
    var config: String?
    var node: String?
    var agentSocket: String?
    var statusSocket: String?
    var verbose = false
    var json = false
    var timeoutS = 5.0
    var everyStream = false

    /// The options each command takes (the others are unknown options).
    static let allowed: [String: [String]] = [
        "run": ["--config", "--node", "--agent-socket", "--status-socket", "--verbose"],
        "check": ["--config", "--node", "--agent-socket", "--timeout", "--verbose"],
        "status": ["--config", "--socket", "--json"],
        "discovery": ["--config", "--node", "--every-stream"],
    ]

    init(_ arguments: [String], command: String) throws(UsageError) {
        var a = Arguments(arguments, command: command)
        let allowed = Self.allowed[command] ?? []
        for name in allowed {
            switch name {
            case "--config": config = try a.option(name)
            case "--node": node = try a.option(name)
            case "--agent-socket": agentSocket = try a.option(name)
            case "--status-socket", "--socket": statusSocket = try a.option(name)
            case "--verbose": verbose = a.flag(name)
            case "--json": json = a.flag(name)
            case "--every-stream": everyStream = a.flag(name)
            case "--timeout":
                if let t = try a.option(name) {
                    guard let s = Double(t), s.isFinite, s > 0, s <= 600 else {
                        throw UsageError("--timeout must be a number of seconds from 0 to 600, got \(t)")
                    }
                    timeoutS = s
                }
            default: break
            }
        }
        try a.finish(known: allowed)
    }

    var overrides: BridgeOverrides { BridgeOverrides(node: node, agentSocket: agentSocket, statusSocket: statusSocket) }
}

func printError(_ line: String) { BridgeLog.standardError(line + "\n") }

/// Blocks SIGTERM, SIGINT and SIGHUP (for sigtimedwait on the returned set)
/// and ignores SIGPIPE: `run`'s and the supervisor's first step.
func blockShutdownSignals() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&set, s) }
    pthread_sigmask(SIG_BLOCK, &set, nil)
    signal(SIGPIPE, SIG_IGN)
    return set
}

// MARK: - run

enum RunCommand {
    /// The supervisor's wait between restarts of the bridge process: the
    /// broker's reconnect back-off (defaults when the configuration cannot
    /// be read: the worker then says why and exits 2).
    static func restartBackoff(_ options: Options) -> Backoff {
        var initial = 0.5, maximum = 30.0
        // In a child: the supervisor stays small (BridgeSetup.resolveInChild).
        if let setup = try? BridgeSetup.resolveInChild(config: options.config, overrides: options.overrides,
                                                       readPassword: false) {
            initial = setup.config.broker.reconnectInitialS
            maximum = setup.config.broker.reconnectMaxS
        }
        return Backoff(initialNs: UInt64(initial * 1e9), maximumNs: UInt64(maximum * 1e9))
    }

    static func run(_ options: Options, log defaultLog: BridgeLog) -> Int32 {
        let log = options.verbose ? BridgeLog(verbose: true) : defaultLog
        let setup: ResolvedBridge
        // Read in a child process, so the JSON5 decoder's pages never
        // become part of this long-running one (BridgeSetup.resolveInChild).
        do { setup = try BridgeSetup.resolveInChild(config: options.config, overrides: options.overrides) } catch {
            printError("edge-mqtt: \(error.description)")
            return 2
        }
        // Which files, and why (the same lookups as edge-agent's tools).
        log.info("config \(setup.configPath) (\(setup.configSource)); agent socket \(setup.agentSocket) (\(setup.agentSocketSource))")
        // Signals are taken synchronously by this thread (sigtimedwait);
        // blocked before any thread starts so every thread inherits the mask.
        var set = blockShutdownSignals()

        let status: StatusServer
        do { status = try StatusServer(path: setup.statusSocket) } catch {
            printError("edge-mqtt: \(error.description)")
            return 2
        }
        let wakeup = Wakeup()
        let queue = OutboundQueue(capacity: setup.config.queue.capacity, wakeup: wakeup)
        let retained = RetainedStore(wakeup: wakeup)
        let bridge = Bridge(config: setup.config, node: setup.node, queue: queue, retained: retained, log: log)
        let b = setup.config.broker
        // The agent's socket is read by the broker thread itself: one
        // wake-up per batch the agent delivers, published in the same turn.
        let feed = PolledAgentFeed(socketPath: setup.agentSocket, wakeup: wakeup)
        let link = BrokerLink(settings: setup.broker, bridge: bridge, log: log, reconnectInitialS: b.reconnectInitialS,
                              reconnectMaxS: b.reconnectMaxS, maxInflight: setup.config.queue.maxInflight,
                              statusServer: status, workerRestarts: Supervisor.reportFromEnvironment(), feed: feed)
        let streams = setup.config.enabledStreams.map {
            "\($0.stream.rawValue)" + ($0.json ? " json every \(ScalarCatalog.format($0.jsonIntervalS, decimals: 3)) s" : "")
                + ($0.scalars && !ScalarCatalog.entities(of: $0.stream).isEmpty ? ", scalars every \(ScalarCatalog.format($0.scalarsIntervalS, decimals: 3)) s" : "")
        }
        log.info("node \(setup.node)\(setup.nodeFromHostName ? " (the host name)" : ""); broker \(setup.broker.address) (MQTT \(setup.broker.protocolVersion.rawValue)\(setup.broker.tls == nil ? "" : ", TLS")\(setup.broker.username.map { ", user \($0)" } ?? "")); topics \(bridge.plan.base)/…; status socket \(setup.statusSocket); streams: \(streams.isEmpty ? "none" : streams.joined(separator: "; "))")
        bridge.attach(feed)
        do { try link.start() } catch {
            printError("edge-mqtt: \(error.description)")
            return 2
        }

        let environment = SystemdNotify.processEnvironment(["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"])
        let notify = SystemdNotify(environment: environment)
        try? notify.ready(status: "publishing \(bridge.plan.base)/… to \(setup.broker.address)")
        let watchdog = SystemdNotify.watchdogInterval(environment: environment, pid: getpid())
        var lastBeats = link.heartbeat
        var lastPingNs: UInt64 = 0
        var reason = "SIGTERM"
        let supervised = Supervisor.isWorker
        let parent = getppid()
        while true {
            var ts = timespec(tv_sec: 0, tv_nsec: 500_000_000)
            let sig = sigtimedwait(&set, nil, &ts)
            if supervised && getppid() != parent {
                // The supervisor was killed (SIGKILL, OOM): so is the bridge.
                // No clean DISCONNECT: the broker publishes the Last Will.
                log.info("the supervisor (pid \(parent)) is gone: exiting at once, so the broker publishes the Last Will")
                _exit(1)
            }
            if sig == SIGTERM || sig == SIGINT {
                reason = sig == SIGTERM ? "SIGTERM" : "SIGINT"
                break
            }
            // The stall watchdog: from this thread, so a hung broker thread
            // (it reads the agent too) is found as well (its samples stop).
            bridge.checkLiveness()
            log.flushSuppressed()
            if sig == SIGHUP {
                log.info("SIGHUP: the configuration is read at start only; restart the service to apply a change (systemctl restart edge-mqtt)")
            }
            if let watchdog {
                let now = monotonicNowNs()
                let interval = UInt64(watchdog.components.seconds) * 1_000_000_000 + UInt64(watchdog.components.attoseconds / 1_000_000_000)
                let beats = link.heartbeat
                // The broker thread (which also reads the agent) must have
                // turned since the last ping.
                if now - lastPingNs >= interval / 2, beats != lastBeats {
                    try? notify.watchdog()
                    lastPingNs = now
                    lastBeats = beats
                }
            }
        }
        try? notify.stopping()
        log.info("\(reason): stopping")
        feed.stop()
        link.stop()
        log.info("stopped")
        return 0
    }
}
