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
    Usage: edge-bench footprint [--seconds S] [--clients N[,N...]] [--transport lines|ring|both]
                                [--interval S] [--streams LIST]
                                [--config FILE] [--agents NAME=PATH,...] [--repeat N] [--baseline]
                                [--root DIR] [--agent PATH]

    CPU and memory of the real daemon (the release edge-agent) running the
    repository's default configuration (config/edge-agent.json5: the
    simulated board, every sensor) with its socket moved to a private
    directory, serving N clients that each subscribe to
    \(defaultStreams.joined(separator: ", ")) at --interval (0.01 s: 100 Hz,
    as Core Motion apps ask) and read everything. Next to it, in the same
    invocation: cyclictest waking one thread at 100 Hz and doing nothing
    else - the floor of any 100 Hz process on this machine. With --agents,
    several builds (say the previous commit, this one, and a -static-stdlib
    build) run in turn, alternating, each next to the same floor.

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

    Targets (per build): CPU <= 1.5x the floor (median of the repeats, each
    repeat measuring both); resident memory (VmHWM) <= 14 MB; no full Foundation.

    Options:
      --seconds S          measurement window (default 30)
      --clients N[,N...]   clients (default 8); several counts run in turn
      --transport T        how the clients read: lines (one JSON line per sample
                           per client), ring (the shared-memory rings, through
                           EdgeClient's AgentClient), or both in turn (default lines).
                           Ring target: CPU <= 1.2x the floor at every client count
      --interval S         the clients' subscription interval (default 0.01)
      --streams LIST       comma-separated streams each client subscribes to
      --config FILE        agent configuration (default: ROOT/config/edge-agent.json5)
      --agents LIST        NAME=PATH[@CONFIG],... builds to compare (default: the one --agent
                           names); an older build may need its own CONFIG
      --repeat N           repeats, alternating the builds (default 1); verdicts use
                           the median CPU ratio and the largest memory
      --baseline           also run each build with 1 client
    \(CommonOptions.help)
    """

    struct Figures {
        var build: String
        var clients: Int
        var transport: BenchTransport
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
        /// The floor measured in the same repeat, % of one core.
        var floorPercent: Double?
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seconds = try o.double("--seconds", default: 30, in: 1...86_400)
        let clientCounts = try (o.string("--clients") ?? "8").split(separator: ",").map { item -> Int in
            guard let n = Int(item), (1...200).contains(n) else { throw BenchError("--clients wants counts 1...200, like 1,8,64; got '\(item)'") }
            return n
        }
        let clients = clientCounts.max() ?? 8
        let transportText = try o.string("--transport") ?? "lines"
        let transports: [BenchTransport]
        if transportText == "both" { transports = BenchTransport.allCases }
        else if let t = BenchTransport(rawValue: transportText) { transports = [t] }
        else { throw BenchError("--transport wants lines, ring or both; got '\(transportText)'") }
        let interval = try o.double("--interval", default: 0.01, in: 0...10)
        let streams = try o.string("--streams").map { $0.split(separator: ",").map(String.init) } ?? defaultStreams
        let configOption = try o.string("--config")
        let agentsOption = try o.string("--agents")
        let baseline = o.flag("--baseline")
        let repeats = try o.int("--repeat", default: 1, in: 1...50)
        let common = try CommonOptions.parse(&o)
        try o.finish("footprint")
        let paths = try common.paths()
        let config = configOption ?? paths.root + "/config/edge-agent.json5"
        guard fileExists(config) else { throw BenchError("no configuration at \(config) (pass --config FILE)") }
        var builds: [(name: String, agent: String, config: String)] = [("agent", paths.agent, config)]
        if let list = agentsOption {
            builds = try list.split(separator: ",").map { item in
                let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                let target = parts.count == 2 ? parts[1].split(separator: "@", maxSplits: 1).map(String.init) : []
                guard parts.count == 2, let exe = target.first, isExecutable(exe) else {
                    throw BenchError("--agents wants NAME=PATH[@CONFIG],... with executable paths; got '\(item)'")
                }
                let own = target.count == 2 ? target[1] : config
                guard fileExists(own) else { throw BenchError("no configuration at \(own)") }
                return (parts[0], exe, own)
            }
        }
        let floorRate = 100
        say("== footprint: \(clientCounts.map(String.init).joined(separator: ",")) clients (\(transports.map(\.rawValue).joined(separator: ", "))) on \(streams.joined(separator: ",")) every \(fixed(interval, 3)) s, window \(fixed(seconds, 0)) s")
        say("   config: \(config) (socket moved to a private directory)")
        for b in builds { say("   build \(b.name): \(b.agent)" + (b.config == config ? "" : " with \(b.config)")) }
        say("   load: \(loadAverage())")
        var runs: [Figures] = []
        for rep in 0..<repeats {
            // The floor first, then each build (the order alternates between repeats).
            let floor = try wakeUpFloor(rate: floorRate, seconds: min(seconds, 15))
            let order = rep % 2 == 0 ? builds : builds.reversed()
            for b in order {
                for transport in transports {
                    for n in baseline && !clientCounts.contains(1) ? [1] + clientCounts : clientCounts {
                        say("   run \(rep + 1): \(b.name), \(n) client(s), \(transport.rawValue) ...")
                        var f = try measure(paths: Paths(root: paths.root, agent: b.agent), config: b.config, clients: n,
                                            streams: streams, interval: interval, seconds: seconds, transport: transport)
                        f.build = b.name
                        f.floorPercent = floor
                        runs.append(f)
                    }
                }
            }
        }

        say()
        var t = Table(["build", "clients", "transport", "CPU (schedstat)", "floor", "ratio", "CPU (utime+stime)", "VmRSS max", "VmHWM",
                       "RssAnon", "RssFile", "Pss", "threads", "samples/client", "overruns", "dropped"])
        for f in runs {
            t.add([f.build, "\(f.clients)", f.transport.rawValue, fixed(f.cpuPercent, 2) + " %", f.floorPercent.map { fixed($0, 2) + " %" } ?? "-",
                   f.floorPercent.map { fixed(f.cpuPercent / max($0, 1e-9), 2) + "x" } ?? "-",
                   fixed(f.statCPUPercent, 2) + " %", mb(f.rssKB), mb(f.hwmKB), mb(f.anonKB), mb(f.fileKB), mb(f.pssKB),
                   "\(f.threads)", fixed(f.samplesPerClient, 0), "\(f.summary.overruns)", "\(f.summary.droppedInQueues)"])
        }
        say(t.text)
        for f in runs {
            say("   \(f.build), \(f.clients) client(s), \(f.transport.rawValue): loop thread \(fixed(f.loopPercent, 2)) %, service thread \(fixed(f.servicePercent, 2)) %, main thread \(fixed(f.mainPercent, 2)) %; \(f.summary.ticks) ticks")
        }
        say("   floor: cyclictest waking one thread at \(floorRate) Hz and doing nothing else (SCHED_OTHER), measured before each repeat")
        var v = Table(["build", "target", "measured", "verdict"])
        var allOK = true
        var allRingOK = true
        for (i, b) in builds.enumerated() {
            for n in clientCounts where transports.contains(.ring) {
                let mine = runs.filter { $0.build == b.name && $0.clients == n && $0.transport == .ring }
                let ratios = mine.compactMap { f in f.floorPercent.map { f.cpuPercent / max($0, 1e-9) } }
                let ratio = ratios.isEmpty ? nil : median(ratios)
                let ok = ratio.map { $0 <= 1.2 } ?? false
                v.add([b.name, "\(n) ring clients: CPU <= 1.2x the floor (median of \(mine.count))",
                       ratio.map { fixed($0, 2) + "x (" + fixed(median(mine.map(\.cpuPercent)), 2) + " %)" } ?? "no cyclictest", verdict(ok)])
                if i == 0 { allRingOK = allRingOK && ok }
            }
            guard transports.contains(.lines) else { continue }
            let mine = runs.filter { $0.build == b.name && $0.clients == clients && $0.transport == .lines }
            let ratios = mine.compactMap { f in f.floorPercent.map { f.cpuPercent / max($0, 1e-9) } }
            let ratio = ratios.isEmpty ? nil : median(ratios)
            let hwm = mine.map(\.hwmKB).max() ?? 0
            let links = try foundationLinks(b.agent)
            let cpuOK = ratio.map { $0 <= 1.5 } ?? false
            let memOK = hwm <= 14 * 1024
            v.add([b.name, "CPU <= 1.5x the floor (median of \(mine.count))",
                   ratio.map { fixed($0, 2) + "x (" + fixed(median(mine.map(\.cpuPercent)), 2) + " %)" } ?? "no cyclictest", verdict(cpuOK)])
            v.add([b.name, "resident memory <= 14 MB (VmHWM, largest)", mb(hwm), verdict(memOK)])
            v.add([b.name, "no full Foundation / ICU linked", links.full ? "linked" : "not linked", verdict(!links.full)])
            if i == 0 { allOK = cpuOK && memOK && !links.full }
        }
        say(v.text)
        if builds.count > 1 { say("   (the exit status judges the first build, \(builds[0].name))") }
        return (transports.contains(.lines) ? allOK : true) && allRingOK
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

    static func measure(paths: Paths, config: String, clients n: Int, streams: [String], interval: Double,
                        seconds: Double, transport: BenchTransport) throws -> Figures {
        let agent = try AgentRun(paths: paths, config: config, duration: seconds + 60)
        var readers: [BenchReader] = []
        defer { for c in readers { c.stop(); c.join() } }
        for _ in 0..<n {
            switch transport {
            case .lines:
                let c = try ReadingClient(socket: agent.socketPath, streams: streams, interval: interval, track: "deviceMotion")
                try c.start()
                readers.append(c)
            case .ring:
                readers.append(try RingReadingClient(socket: agent.socketPath, streams: streams, interval: interval))
            }
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
        return Figures(build: "", clients: n, transport: transport, cpuPercent: Double(cpu1 - cpu0) / wall * 100,
                       statCPUPercent: (st1 - st0) / (wall / 1e9) * 100,
                       rssKB: max(rssMax, status["VmRSS"] ?? 0), hwmKB: hwm,
                       anonKB: status["RssAnon"] ?? 0, fileKB: status["RssFile"] ?? 0, pssKB: pss,
                       threads: status["Threads"] ?? 0, summary: summary, samplesPerClient: perClient,
                       loopPercent: share(loopTid), servicePercent: servicePercent, mainPercent: share(mainTid),
                       floorPercent: nil)
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
