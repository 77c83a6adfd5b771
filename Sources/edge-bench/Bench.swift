// edge-bench: benchmarks that print figures, run on demand (never by the
// tests). Each subcommand runs its comparisons side by side in one
// invocation on one machine, and prints tables, medians, ratios and
// verdicts against the targets. bench/README.md explains them.
#if canImport(Glibc)
import Glibc
#endif

enum BenchCommand {
    static let help = """
    Usage: edge-bench <command> [options]      (edge-bench <command> --help for each)

    Benchmarks of the edge agent; they print figures and verdicts against the
    targets. Build both in release first (one --product per build: given two,
    SwiftPM builds only the last):
        swift build -c release --product edge-agent && swift build -c release --product edge-bench
    and run from the repository root: .build/release/edge-bench <command>

    Commands:
      loop        loop wake-up lateness at 200 Hz and 1 kHz (60 s) next to cyclictest
      footprint   agent CPU (vs a 100 Hz wake-up floor) and memory, default config, 8 clients (30 s)
      fanout      64 clients on deviceMotion at 100 Hz, one never reading (20 s)
      altitude    fused altitude vs barometer alone on the simulator (virtual clock)
      altitude-filter
                  the altitude filters alone on synthetic data (instant, deterministic)
      step        CPU time of one loop step in process: engine tick vs simulated chips alone
      alloc       heap allocations on the loop thread in steady state (target: none)
      coremotion  the CoreMotion library through the agent: capture-to-handler delay, 8 managers
                  in 2 processes vs one subscriber's agent CPU, library CPU per sample (about 1 min)
      mqtt        the MQTT bridge against mosquitto: delay, CPU, RSS, a 20-bridge fleet, a broker restart
                  (needs edge-mqtt built too: swift build -c release --product edge-mqtt)
      all         everything above with short durations (about 1.5 min)

    Exit status: 0 all targets met, 1 a target missed, 2 the benchmark could not run.
    Figures on a shared machine are noisy; compare within one run, not across runs.
    """

    static func main(_ args: [String]) -> Int32 {
        Children.installSignalHandlers()
        guard let command = args.first, command != "--help", command != "-h", command != "help" else {
            say(help)
            return args.isEmpty ? 2 : 0
        }
        let rest = Array(args.dropFirst())
        do {
            let ok: Bool
            switch command {
            case "loop": ok = try LoopBenchmark.run(rest)
            case "footprint": ok = try FootprintBenchmark.run(rest)
            case "fanout": ok = try FanoutBenchmark.run(rest)
            case "altitude": ok = try AltitudeEngineBenchmark.run(rest)
            case "altitude-filter": ok = try AltitudeFilterBenchmark.run(rest)
            case "step": ok = try StepBenchmark.run(rest)
            case "alloc": ok = try AllocBenchmark.run(rest)
            case "coremotion": ok = try CoreMotionBenchmark.run(rest)
            case "coremotion-client": ok = try CoreMotionBenchmark.client(rest)
            case "mqtt": ok = try MQTTBenchmark.run(rest)
            case "all": ok = try runAll(rest)
            default:
                warn("unknown command '\(command)'\n\n" + help)
                return 2
            }
            Children.killAll()
            return ok ? 0 : 1
        } catch {
            Children.killAll()
            warn("\(error)")
            return 2
        }
    }

    static let allHelp = """
    Usage: edge-bench all [--realtime] [--root DIR] [--agent PATH]

    Runs every benchmark with short durations, one after the other:
      loop --seconds 10 (200 Hz, 1 kHz), footprint --seconds 10, fanout --seconds 10,
      altitude --seeds 3, coremotion --seconds 3 --rounds 1, step --seconds 20.
    About 1.5 minutes. For the figures the targets are judged on, run each
    command with its defaults (loop 60 s, footprint 30 s, fanout 20 s).
    \(CommonOptions.help)
    """

    static func runAll(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(allHelp); return true }
        let realtime = o.flag("--realtime")
        let common = try CommonOptions.parse(&o)
        try o.finish("all")
        var pass: [(String, Bool)] = []
        let agentArgs = (common.root.map { ["--root", $0] } ?? []) + (common.agent.map { ["--agent", $0] } ?? [])
        var loopArgs = ["--seconds", "10"] + agentArgs
        if realtime { loopArgs.append("--realtime") }
        if findOnPath("cyclictest") == nil { say(Cyclictest.installHint); loopArgs.append("--no-cyclictest") }
        pass.append(("loop", try LoopBenchmark.run(loopArgs)))
        say()
        pass.append(("footprint", try FootprintBenchmark.run(["--seconds", "10"] + agentArgs)))
        say()
        pass.append(("fanout", try FanoutBenchmark.run(["--seconds", "10"] + agentArgs)))
        say()
        pass.append(("altitude", try AltitudeEngineBenchmark.run(["--seeds", "3"] + (common.root.map { ["--root", $0] } ?? []))))
        say()
        pass.append(("coremotion", try CoreMotionBenchmark.run(["--seconds", "3", "--rounds", "1"] + agentArgs)))
        say()
        _ = try StepBenchmark.run(["--seconds", "20"])
        say()
        say("== all: " + pass.map { "\($0.0) \(verdict($0.1))" }.joined(separator: ", "))
        return pass.allSatisfy(\.1)
    }
}
