// `edge-bench loop`: the agent's fixed-rate loop on the simulated board, side
// by side with cyclictest at the same interval and scheduling policy.
#if canImport(Glibc)
import Glibc
#endif

enum LoopBenchmark {
    static let help = """
    Usage: edge-bench loop [--seconds S] [--rates R,R...] [--realtime] [--priority P]
                           [--repeat N] [--no-cyclictest] [--no-client] [--root DIR] [--agent PATH]

    Wake-up lateness of the agent's fixed-rate loop, next to cyclictest's.
    For each rate it runs, one after the other in this invocation:
      * the real daemon, `edge-agent run --config <generated> --duration S --quiet`,
        on the simulated board with the MPU-6050 at the rate (imu_batch 1, so
        the loop wakes at the full rate; DLPF 44 Hz up to 200 Hz, 184 Hz above
        500 Hz), one client subscribed to deviceMotion (every sample) so the
        engine does its full work; its exit summary gives lateness p50/p99/max
        and overruns (wake-ups later than one period);
      * `cyclictest -t1 -i <period µs> -D S -h 100000 --default-system` with the
        same policy: SCHED_OTHER (--policy=other -p 0), or with --realtime
        SCHED_FIFO at the same priority with mlockall for both (the agent's
        loop.realtime/priority/lock_memory); p50/p99 from its histogram.
    With --repeat N the pair alternates order (ours first, then cyclictest
    first) and the verdicts use the medians over the repeats.

    Targets: our p99 within 1.5x of cyclictest's; zero overruns at 200 Hz.

    Options:
      --seconds S     duration of each run (default 60)
      --rates LIST    loop rates in Hz (default 200,1000); 1000 / rate must be a whole number
      --realtime      SCHED_FIFO for both (needs root or CAP_SYS_NICE; the agent warns and
                      falls back otherwise, which the report flags)
      --priority P    SCHED_FIFO priority with --realtime (default 50)
      --repeat N      alternate ours/cyclictest N times per rate (default 1)
      --no-cyclictest only the agent (e.g. where rt-tests is not installed)
      --no-client     no subscribed client (the sensors idle: the loop's bare timing)
      --match-slack   give the agent's loop thread the timer slack cyclictest's thread runs with
                      (read from /proc; cyclictest's is 0, the agent's the default 50 µs), by
                      writing /proc/TID/timerslack_ns (needs CAP_SYS_NICE). Diagnostic: shows
                      how much of a SCHED_OTHER gap is the slack.
    \(CommonOptions.help)

    cyclictest comes from Debian's rt-tests: sudo apt-get install rt-tests
    """

    struct Row {
        var rate: Int
        var run: Int
        var ours: LatenessFigures
        var theirs: LatenessFigures?
        var samples: Int
    }

    static func run(_ args: [String], quick: Bool = false) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seconds = try o.int("--seconds", default: quick ? 10 : 60, in: 1...86_400)
        let rates = try o.ints("--rates", default: [200, 1000], in: 1...1000)
        let realtime = o.flag("--realtime")
        let priority = try o.int("--priority", default: 50, in: 1...99)
        let repeats = try o.int("--repeat", default: 1, in: 1...100)
        let noCyclictest = o.flag("--no-cyclictest")
        let noClient = o.flag("--no-client")
        let matchSlack = o.flag("--match-slack")
        let common = try CommonOptions.parse(&o)
        try o.finish("loop")
        for r in rates where 1000 % r != 0 {
            throw BenchError("loop: rate \(r) Hz is not 1 kHz / (1 + divider); use one of 1000, 500, 250, 200, 125, 100, ...")
        }
        let paths = try common.paths()
        let cyclictest = noCyclictest ? nil : findOnPath("cyclictest")
        if !noCyclictest && cyclictest == nil { throw BenchError(Cyclictest.installHint) }
        let policy = realtime ? "SCHED_FIFO priority \(priority) + mlockall" : "SCHED_OTHER (nice 0)"

        say("== loop: wake-up lateness, agent vs cyclictest, \(seconds) s per run, \(policy)")
        say("   agent: \(paths.agent) run --config <generated: simulated board, sample_rate_hz R, imu_batch 1, realtime \(realtime)> --duration \(seconds) --quiet")
        say("   load: \(loadAverage())")
        let scratch = try TempDirectory(prefix: "edge-bench-loop")
        var rows: [Row] = []
        var agentWarnings: Set<String> = []
        var ctCommands: [String] = []
        var lastCyclictestSlack: Int?
        for rep in 0..<repeats {
            for rate in rates {
                let period = 1_000_000 / rate
                let cyclictestFirst = rep % 2 == 1
                var theirs: LatenessFigures?
                func runCyclictest() throws {
                    guard let ct = cyclictest else { return }
                    say("   run \(rep + 1), \(rate) Hz: cyclictest -i \(period) for \(seconds) s ...")
                    let (f, cmd) = try Cyclictest.run(path: ct, intervalMicroseconds: period, seconds: seconds,
                                                      realtime: realtime, priority: priority, in: scratch)
                    theirs = f
                    if let sl = f.slackNs { lastCyclictestSlack = sl }
                    if !ctCommands.contains(cmd) { ctCommands.append(cmd) }
                }
                if cyclictestFirst || (matchSlack && lastCyclictestSlack == nil) { try runCyclictest() }
                say("   run \(rep + 1), \(rate) Hz: edge-agent for \(seconds) s ...")
                let (ours, samples, warnings) = try runAgent(paths: paths, rate: rate, seconds: seconds,
                                                             realtime: realtime, priority: priority, client: !noClient,
                                                             setSlack: matchSlack ? (lastCyclictestSlack ?? 0) : nil)
                agentWarnings.formUnion(warnings)
                if !cyclictestFirst && theirs == nil { try runCyclictest() }
                rows.append(Row(rate: rate, run: rep + 1, ours: ours, theirs: theirs, samples: samples))
            }
        }

        say()
        var t = Table(["rate", "run", "ours p50", "p99", "max", "overruns", "wake-ups", "slack", "client got",
                       "cyclictest p50", "p99", "max", "late>period", "slack", "p99 ratio"])
        for r in rows {
            let ratio = r.theirs.map { Double(r.ours.p99) / Double(max(1, $0.p99)) }
            t.add(["\(r.rate) Hz", "\(r.run)", "\(r.ours.p50) µs", "\(r.ours.p99) µs", "\(r.ours.max) µs",
                   "\(r.ours.overruns)", "\(r.ours.wakeUps)", slackText(r.ours.slackNs), "\(r.samples)",
                   r.theirs.map { "\($0.p50) µs" } ?? "-", r.theirs.map { "\($0.p99) µs" } ?? "-",
                   r.theirs.map { "\($0.max) µs" } ?? "-", r.theirs.map { "\($0.overruns)" } ?? "-",
                   slackText(r.theirs?.slackNs),
                   ratio.map { fixed($0, 2) + "x" } ?? "-"])
        }
        say(t.text)
        say()
        var allPass = true
        var v = Table(["rate", "median p99 ours", "median p99 cyclictest", "ratio", "p99 <= 1.5x", "overruns", "zero overruns @200"])
        for rate in rates {
            let rs = rows.filter { $0.rate == rate }
            let ours = median(rs.map { Double($0.ours.p99) })
            let theirs = median(rs.compactMap { $0.theirs.map { Double($0.p99) } })
            let ratio = ours / max(1, theirs)
            let overruns = rs.reduce(0) { $0 + $1.ours.overruns }
            let ratioOK = theirs.isNaN ? nil : ratio <= 1.5
            let overrunOK: Bool? = rate == 200 ? overruns == 0 : nil
            if ratioOK == false || overrunOK == false { allPass = false }
            v.add(["\(rate) Hz", fixed(ours, 0) + " µs", theirs.isNaN ? "-" : fixed(theirs, 0) + " µs",
                   theirs.isNaN ? "-" : fixed(ratio, 2) + "x", ratioOK.map(verdict) ?? "-", "\(overruns)",
                   overrunOK.map(verdict) ?? "(no target)"])
        }
        say(v.text)
        for c in ctCommands { say("   cyclictest command: \(c)") }
        if !agentWarnings.isEmpty {
            say("   NOTE: the agent warned - its policy may not match cyclictest's:")
            for w in agentWarnings.sorted() { say("     " + w) }
            allPass = false
        }
        let oursSlack = Set(rows.compactMap(\.ours.slackNs)), theirSlack = Set(rows.compactMap { $0.theirs?.slackNs })
        if !realtime && !matchSlack && !oursSlack.isEmpty && !theirSlack.isEmpty && oursSlack != theirSlack {
            say("   NOTE: timer slack differs (agent loop thread \(oursSlack.sorted().map(slackText).joined(separator: ",")), cyclictest's thread \(theirSlack.sorted().map(slackText).joined(separator: ","))):")
            say("   under SCHED_OTHER the kernel may defer each wake-up by the slack. --match-slack gives the agent's loop thread cyclictest's.")
        }
        if matchSlack { say("   --match-slack: the agent's loop thread got cyclictest's timer slack through /proc/TID/timerslack_ns.") }
        say("   client got = deviceMotion samples the subscribed client received (0 with --no-client: the sensors idle).")
        say("   lateness = wake-up time - absolute deadline on CLOCK_MONOTONIC, both tools; p50/p99 are 1 µs histogram upper edges.")
        return allPass
    }

    /// One agent run with a reading deviceMotion client; its exit summary.
    static func runAgent(paths: Paths, rate: Int, seconds: Int, realtime: Bool, priority: Int, client wanted: Bool,
                         setSlack: Int?) throws
        -> (LatenessFigures, samples: Int, warnings: [String]) {
        var setup = AgentSetup()
        setup.rateHz = rate
        setup.realtime = realtime
        setup.priority = priority
        let agent = try AgentRun(paths: paths, setup: setup, duration: Double(seconds))
        let client = try ReadingClient(socket: agent.socketPath, streams: wanted ? ["deviceMotion"] : [])
        try client.start()
        defer { client.stop(); client.join() }
        // The loop thread: the agent's newest thread (started after the
        // service thread, once the socket is up). Read, and maybe set, its
        // timer slack as early as possible.
        var slack: Int?
        var loopTid: Int?
        let until = monotonicNanoseconds() + 2_000_000_000
        while monotonicNanoseconds() < until {
            let tids = ProcFS.threadCPUNanoseconds(agent.pid).keys
            if tids.count >= 3 { loopTid = tids.max(); break }
            usleep(2_000)
        }
        if let tid = loopTid {
            if let ns = setSlack, !ProcFS.setTimerSlack(tid, nanoseconds: max(1, ns)) {
                warn("cannot set the agent loop thread's timer slack (needs CAP_SYS_NICE)")
            }
            slack = ProcFS.timerSlack(tid)
            sleepSeconds(min(5, Double(seconds) / 2))   // then the loop thread has the most CPU
            if let busiest = ProcFS.busiestThread(agent.pid), busiest != tid {
                warn("the agent's newest thread \(tid) is not its busiest (\(busiest)); slack figures may be off")
            }
        }
        let s = try agent.finish(within: Double(seconds) + 30)
        client.stop(); client.join()
        if let e = client.tally.errors.first { throw BenchError("the agent refused the client: \(e)") }
        return (LatenessFigures(p50: s.p50Microseconds, p99: s.p99Microseconds, max: s.maxMicroseconds,
                                overruns: s.overruns, wakeUps: s.wakeUps, slackNs: slack),
                client.tally.samples["deviceMotion"] ?? 0, agent.warnings)
    }
}

func slackText(_ ns: Int?) -> String {
    guard let ns else { return "-" }
    return ns >= 1000 ? "\(ns / 1000) µs" : "\(ns) ns"
}

/// "/proc/loadavg" first three fields, for the record.
func loadAverage() -> String {
    guard let t = readTextFile("/proc/loadavg") else { return "unknown" }
    let f = t.split(separator: " ")
    return f.count >= 3 ? "load average \(f[0]) \(f[1]) \(f[2]), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs" : "unknown"
}
