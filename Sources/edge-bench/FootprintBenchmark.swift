// `edge-bench footprint`: the agent's CPU and resident memory at 100 Hz with
// all sensors running and N clients reading, next to the same agent with
// one client, in one invocation.
#if canImport(Glibc)
import Glibc
#endif
import EdgeBus

enum FootprintBenchmark {
    static let defaultStreams = ["deviceMotion", "accelerometer", "gyroscope", "magnetometer", "altitude"]

    static let help = """
    Usage: edge-bench footprint [--seconds S] [--clients N] [--streams LIST] [--rate HZ]
                                [--repeat N] [--no-baseline] [--root DIR] [--agent PATH]

    CPU and memory of the real daemon (the release edge-agent) on the simulated
    board at 100 Hz with the MPU-6050, BMP280 (ultra-high resolution) and
    QMC5883L all running, serving N clients that each subscribe to
    \(defaultStreams.joined(separator: ", ")) (every sample) and read everything.
    Side by side in one invocation: first the same agent with 1 client
    (baseline), then with N clients.

    Measured on the agent process only, over a window that starts 3 s after
    the clients subscribed:
      CPU    = sum of on-CPU time of all its threads (/proc/PID/task/*/schedstat)
               over the window / wall time, in % of one core; utime+stime from
               /proc/PID/stat as a cross-check
      memory = VmRSS (sampled every second; the largest) and VmHWM (peak) from
               /proc/PID/status, split into RssAnon (the agent's own) and RssFile
               (mapped libraries: Swift runtime, FoundationEssentials), and Pss
               from /proc/PID/smaps_rollup
    and `ldd` of the agent: it must not link full Foundation (libFoundation.so)
    or ICU; FoundationEssentials is fine.
    The simulated chips (noise, trajectory) run inside the agent, so on real
    chips the figure trades their cost for I2C transfers.

    Targets: CPU <= 2 % of one core; resident memory <= 24 MB; no full Foundation.

    Options:
      --seconds S     measurement window (default 30)
      --clients N     clients in the main run (default 8)
      --streams LIST  comma-separated streams each client subscribes to
      --rate HZ       MPU-6050 rate = loop rate (default 100)
      --repeat N      alternate the 1-client and N-client runs N times (default 1);
                      the verdicts use the median CPU and the largest memory
      --no-baseline   skip the 1-client run
    \(CommonOptions.help)
    """

    struct Figures {
        var clients: Int
        var cpuPercent: Double
        var statCPUPercent: Double
        var rssKB: Int
        var hwmKB: Int
        var anonKB: Int
        var fileKB: Int
        /// Proportional set size (shared library pages split among their users), kB.
        var pssKB: Int
        var threads: Int
        var summary: AgentSummary
        var samplesPerClient: Double
        /// CPU % of one core: the loop thread (engine + simulated chips), the
        /// service thread (encoding, socket writes), the main thread.
        var loopPercent: Double
        var servicePercent: Double
        var mainPercent: Double
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seconds = try o.double("--seconds", default: 30, in: 1...86_400)
        let clients = try o.int("--clients", default: 8, in: 0...120)
        let streams = try o.string("--streams").map { $0.split(separator: ",").map(String.init) } ?? defaultStreams
        let rate = try o.int("--rate", default: 100, in: 1...1000)
        let noBaseline = o.flag("--no-baseline")
        let repeats = try o.int("--repeat", default: 1, in: 1...50)
        let common = try CommonOptions.parse(&o)
        try o.finish("footprint")
        let paths = try common.paths()

        say("== footprint: agent CPU and memory at \(rate) Hz, clients subscribed to \(streams.joined(separator: ",")), window \(fixed(seconds, 0)) s")
        say("   agent: \(paths.agent) run --config <generated: simulated board, sample_rate_hz \(rate), BMP280 x16/x2 IIR off, QMC5883L 100 Hz> --quiet")
        say("   load: \(loadAverage())")
        var runs: [Figures] = []
        for rep in 0..<repeats {
            var order = noBaseline || clients == 1 ? [clients] : [1, clients]
            if rep % 2 == 1 { order.reverse() }
            for n in order {
                say("   run \(rep + 1): \(n) client(s) ...")
                runs.append(try measure(paths: paths, rate: rate, clients: n, streams: streams, seconds: seconds))
            }
        }
        let links = try foundationLinks(paths.agent)
        // Reference: what one thread that only wakes at the same rate costs on
        // this machine (cyclictest, SCHED_OTHER): the agent wakes two threads a
        // tick (loop and service), so twice this is its floor here.
        let floor = try wakeUpFloor(rate: rate, seconds: min(seconds, 15))

        say()
        var t = Table(["clients", "CPU (schedstat)", "CPU (utime+stime)", "VmRSS max", "VmHWM", "RssAnon", "RssFile", "Pss",
                       "threads", "samples/client", "overruns", "ring overruns", "dropped"])
        for f in runs {
            t.add(["\(f.clients)", fixed(f.cpuPercent, 2) + " %", fixed(f.statCPUPercent, 2) + " %",
                   mb(f.rssKB), mb(f.hwmKB), mb(f.anonKB), mb(f.fileKB), mb(f.pssKB), "\(f.threads)",
                   fixed(f.samplesPerClient, 0), "\(f.summary.overruns)", "\(f.summary.ringOverruns)",
                   "\(f.summary.droppedInQueues)"])
        }
        say(t.text)
        for f in runs {
            say("   \(f.clients) client(s): loop thread (engine + simulated chips) \(fixed(f.loopPercent, 2)) %, service thread \(fixed(f.servicePercent, 2)) %, main thread \(fixed(f.mainPercent, 2)) %")
        }
        let mains = runs.filter { $0.clients == clients }
        let baselines = runs.filter { $0.clients == 1 && clients != 1 }
        let cpu = median(mains.map(\.cpuPercent))
        let hwm = mains.map(\.hwmKB).max() ?? 0, rss = mains.map(\.rssKB).max() ?? 0
        if !baselines.isEmpty {
            let base = median(baselines.map(\.cpuPercent))
            say("   \(clients) clients vs 1 (medians): CPU \(fixed(cpu, 2)) % vs \(fixed(base, 2)) %, \(fixed(cpu / max(base, 1e-9), 2))x")
        }
        if let f = floor {
            say("   reference: cyclictest waking one thread at \(rate) Hz (nothing else) uses \(fixed(f, 2)) % of a core here; the agent wakes its loop every tick and its service thread at most every service.delivery_interval_ms")
        }
        say("   ldd \(paths.agent): " + (links.lines.isEmpty ? "no Foundation libraries" : links.lines.joined(separator: "; ")))
        var v = Table(["target", "measured", "verdict"])
        let cpuOK = cpu <= 2
        let memOK = hwm <= 24 * 1024 && rss <= 24 * 1024
        v.add(["CPU <= 2 % of one core (\(clients) clients\(mains.count > 1 ? ", median of \(mains.count)" : ""))", fixed(cpu, 2) + " %", verdict(cpuOK)])
        v.add(["resident memory <= 24 MB (VmHWM\(mains.count > 1 ? ", largest" : ""))", mb(hwm), verdict(memOK)])
        v.add(["no full Foundation / ICU linked", links.full ? "linked" : "not linked", verdict(!links.full)])
        say(v.text)
        return cpuOK && memOK && !links.full
    }

    static func mb(_ kb: Int) -> String { fixed(Double(kb) / 1024, 1) + " MB" }

    /// CPU % of cyclictest alone at `rate` (nil when cyclictest is missing).
    static func wakeUpFloor(rate: Int, seconds: Double) throws -> Double? {
        guard let path = findOnPath("cyclictest") else { return nil }
        let dir = try TempDirectory(prefix: "edge-bench-floor")
        let interval = 1_000_000 / rate
        let p = try ChildProcess([path, "-t1", "-i", "\(interval)", "-D", "\(Int(seconds.rounded(.up)) + 2)", "-q",
                                  "--default-system", "--policy=other", "-p", "0"],
                                 stdout: dir.file("floor.out"), stderr: dir.file("floor.err"))
        defer { p.stop() }
        _ = p.wait(seconds: 1)
        let clock = MonotonicClock()
        guard let a = ProcFS.schedCPUNanoseconds(p.pid) else { return nil }
        let t0 = clock.nowNanoseconds
        _ = p.wait(seconds: seconds)
        guard let b = ProcFS.schedCPUNanoseconds(p.pid) else { return nil }
        let wall = Double(clock.nowNanoseconds - t0)
        return wall > 0 ? Double(b - a) / wall * 100 : nil
    }

    static func measure(paths: Paths, rate: Int, clients n: Int, streams: [String], seconds: Double) throws -> Figures {
        var setup = AgentSetup()
        setup.rateHz = rate
        let agent = try AgentRun(paths: paths, setup: setup, duration: seconds + 60)
        var readers: [ReadingClient] = []
        defer { for c in readers { c.stop(); c.join() } }
        for _ in 0..<n {
            let c = try ReadingClient(socket: agent.socketPath, streams: streams, track: "deviceMotion")
            try c.start()
            readers.append(c)
        }
        sleepSeconds(3)   // subscriptions reach the engine; sensors wake; caches warm
        let pid = agent.pid
        guard let cpu0 = ProcFS.schedCPUNanoseconds(pid), let st0 = ProcFS.statCPUSeconds(pid) else {
            throw BenchError("cannot read /proc/\(pid) (the agent exited?): \(agent.process.stderrText)")
        }
        let threads0 = ProcFS.threadCPUNanoseconds(pid)
        let t0 = monotonicNanoseconds()
        var rssMax = 0
        let end = t0 + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < end {
            sleepSeconds(min(1, Double(end - monotonicNanoseconds()) / 1e9))
            rssMax = max(rssMax, ProcFS.status(pid)["VmRSS"] ?? 0)
        }
        guard let cpu1 = ProcFS.schedCPUNanoseconds(pid), let st1 = ProcFS.statCPUSeconds(pid) else {
            throw BenchError("the agent exited during the measurement: \(agent.process.stderrText)")
        }
        let t1 = monotonicNanoseconds()
        let threads1 = ProcFS.threadCPUNanoseconds(pid)
        // The agent's threads: main (TID = PID), the service thread, then the
        // loop thread (started last, so the highest TID).
        let tids = threads1.keys.sorted()
        func share(_ tid: Int?) -> Double {
            guard let tid, let a = threads0[tid], let b = threads1[tid] else { return .nan }
            return Double(b &- a) / Double(t1 - t0) * 100
        }
        let loopTid = tids.last, mainTid = Int(pid)
        let serviceTids = tids.filter { $0 != loopTid && $0 != mainTid }
        let servicePercent = serviceTids.map { share($0) }.reduce(0, +)
        let status = ProcFS.status(pid)
        let pss = ProcFS.parseStatus(readTextFile("/proc/\(pid)/smaps_rollup"))["Pss"] ?? 0
        guard let hwm = status["VmHWM"], hwm > 0 else { throw BenchError("cannot read VmHWM from /proc/\(pid)/status") }
        let wall = Double(t1 - t0)
        let summary = try agent.stop()
        for c in readers { c.stop(); c.join() }
        for c in readers { if let e = c.tally.errors.first { throw BenchError("the agent refused a client: \(e)") } }
        let perClient = readers.isEmpty ? 0 : Double(readers.reduce(0) { $0 + $1.tally.samples.values.reduce(0, +) }) / Double(readers.count)
        return Figures(clients: n, cpuPercent: Double(cpu1 - cpu0) / wall * 100,
                       statCPUPercent: (st1 - st0) / (wall / 1e9) * 100,
                       rssKB: max(rssMax, status["VmRSS"] ?? 0), hwmKB: hwm,
                       anonKB: status["RssAnon"] ?? 0, fileKB: status["RssFile"] ?? 0, pssKB: pss,
                       threads: status["Threads"] ?? 0, summary: summary, samplesPerClient: perClient,
                       loopPercent: share(loopTid), servicePercent: servicePercent, mainPercent: share(mainTid))
    }

    /// The Foundation / ICU libraries `ldd` lists for the agent; `full` when
    /// libFoundation.so or ICU is among them.
    static func foundationLinks(_ agent: String) throws -> (lines: [String], full: Bool) {
        let dir = try TempDirectory(prefix: "edge-bench-ldd")
        guard let ldd = findOnPath("ldd") else { return (["(ldd not found)"], false) }
        let r = try runCapturing([ldd, agent], in: dir)
        let names = r.out.split(separator: "\n").map { $0.trimmingPrefixSpaces() }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0.lowercased().contains("foundation") || $0.lowercased().contains("icu") }
        let full = names.contains { $0.hasPrefix("libFoundation.so") || $0.lowercased().contains("icu") }
        return (names, full)
    }
}
