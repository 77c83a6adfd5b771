// `edge-bench coremotion`: the CoreMotion library through the real agent -
// capture-to-handler delay, the agent's cost of many managers, and the
// library's own CPU per delivered sample.
import CoreMotion
import EdgeClient
import EdgeProtocol
import CAllocCount
import EdgeValues
#if canImport(Glibc)
import Glibc
#endif

enum CoreMotionBenchmark {
    static let help = """
    Usage: edge-bench coremotion [--seconds S] [--rounds N] [--rate HZ] [--delivery-ms MS] [--root DIR] [--agent PATH]

    The CoreMotion library as apps use it, against the real daemon
    (`edge-agent run`, simulated board, MPU-6050 and loop at HZ). Client
    processes are this executable (`edge-bench coremotion-client`): each
    runs M CMMotionManagers with deviceMotionUpdateInterval 1/HZ and
    startDeviceMotionUpdates(to: OperationQueue()) { ... }, and measures in
    the handler the delay from the sample's capture (CMLogItem.timestamp,
    CLOCK_MONOTONIC) to the handler running, and its own CPU time (every
    thread: the library's reader thread, Foundation's OperationQueue, the
    trivial handler) per delivered sample.

    Four set-ups, alternated for N rounds on one agent (one warm-up second
    each, then S seconds measured; medians over the rounds):
      F  the wake-up floor, no agent and no library: in one process a thread
         woken once per delivery interval by another (the client's reader)
         wakes a third (the handler's queue thread), which makes the
         delivery's calls at the samples' spacing, sleeping in between.
         The reader's CPU per sample is the floor of R, reader plus handler
         the floor of A (the fewest wake-ups paced calls on a queue thread
         can take); R and A are also given as multiples of them
      R  one process, one raw EdgeClient subscription (no CoreMotion): the
         reference for what the agent, the socket and the OS cost
      A  one process, one manager        (one subscriber)
      B  two processes, four managers each (8 managers, 2 processes)
    and the agent's CPU (/proc/PID/task/*/schedstat) over each window. The
    library's own share is A's figure less R's.

    Targets (issue 9):
      * capture-to-handler delay p99 <= one loop period + 1 ms (set-up A);
      * agent CPU in B <= 1.2 x agent CPU in A;
      * 0 heap allocations per decoded sample line (issue 22; counted
        before the rounds, on ServerMessage.decode of a device-motion line);
    and shown: the library's CPU per delivered sample (A and B).
    The agent's delivery batching (`service.delivery_interval_ms`, default
    20: the service thread wakes every other tick at 100 Hz) adds up to one
    tick; --delivery-ms 0 delivers every tick. The library paces handler
    calls at the samples' spacing (Apple calls a handler once per interval),
    so with batching every call, not only the oldest of a batch, comes about
    one delivery interval after its capture: the delay target above holds
    for paced calls only with --delivery-ms 0 (or a delivery interval of at
    most one period). R shows the batches as they arrive.

    Options:
      --seconds S       measured window per set-up and round (default 8)
      --rounds N        rounds of A and B (default 3)
      --rate HZ         IMU and loop rate, and the managers' rate (default 100)
      --delivery-ms MS  the agent's service.delivery_interval_ms (default: the agent's default, 20)
    \(CommonOptions.help)
    """

    /// One client process's result line.
    struct ClientResult {
        var samples = 0
        var cpuNs: UInt64 = 0
        /// Set-up F: the reader thread's share of ``cpuNs``.
        var readerNs: UInt64 = 0
        var delaysUs: [Double] = []
        /// Time between one subscriber's consecutive handler calls, µs.
        var gapsUs: [Double] = []

        /// "samples=N cpu_ns=C" then the delays, µs, one per line after
        /// "delays:", then the gaps between handler calls after "gaps:".
        var text: String {
            "samples=\(samples) cpu_ns=\(cpuNs) reader_ns=\(readerNs)\ndelays:\n" + delaysUs.map { fixed($0, 1) }.joined(separator: "\n")
                + "\ngaps:\n" + gapsUs.map { fixed($0, 1) }.joined(separator: "\n") + "\n"
        }

        static func parse(_ text: String) -> ClientResult? {
            var r = ClientResult()
            var inDelays = false, inGaps = false
            var sawHeader = false
            for line in text.split(separator: "\n") {
                if line == "gaps:" { inGaps = true; inDelays = false; continue }
                if inGaps { if let d = Double(line) { r.gapsUs.append(d) }; continue }
                if inDelays { if let d = Double(line) { r.delaysUs.append(d) }; continue }
                if line == "delays:" { inDelays = true; continue }
                for field in line.split(separator: " ") {
                    let kv = field.split(separator: "=")
                    guard kv.count == 2 else { continue }
                    if kv[0] == "samples", let v = Int(kv[1]) { r.samples = v; sawHeader = true }
                    if kv[0] == "cpu_ns", let v = UInt64(kv[1]) { r.cpuNs = v }
                    if kv[0] == "reader_ns", let v = UInt64(kv[1]) { r.readerNs = v }
                }
            }
            return sawHeader ? r : nil
        }
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let i = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[i]
    }

    // MARK: the client process

    /// `edge-bench coremotion-client --socket P --managers M --rate HZ
    /// --warmup S --seconds S`: prints a ClientResult.
    static func client(_ args: [String]) throws -> Bool {
        var o = Options(args)
        guard let socket = try o.string("--socket") else { throw BenchError("coremotion-client needs --socket PATH") }
        let managers = try o.int("--managers", default: 1, in: 1...64)
        let rate = try o.double("--rate", default: 100, in: 1...1000)
        let warmup = try o.double("--warmup", default: 1, in: 0...60)
        let seconds = try o.double("--seconds", default: 8, in: 0.5...3600)
        let raw = o.flag("--raw")
        let floorDeliveryMs = try o.string("--floor-delivery-ms").flatMap(Double.init)
        try o.finish("coremotion-client")
        if let d = floorDeliveryMs {
            // set-up F: the wake-up floor, no agent and no library
            let start = monotonicNanoseconds() + UInt64(warmup * 1e9)
            let f = WakeFloor(deliveryNs: UInt64(max(d, 1000 / rate) * 1e6), spacingNs: UInt64(1e9 / rate),
                              windowStart: start, windowEnd: start + UInt64(seconds * 1e9))
            f.start()
            sleepSeconds(Double(f.windowStart &- monotonicNanoseconds()) / 1e9)
            let r0 = WakeFloor.threadCPUNanoseconds(f.readerTid), h0 = WakeFloor.threadCPUNanoseconds(f.handlerTid)
            sleepSeconds(Double(f.windowEnd &- monotonicNanoseconds()) / 1e9)
            let r1 = WakeFloor.threadCPUNanoseconds(f.readerTid), h1 = WakeFloor.threadCPUNanoseconds(f.handlerTid)
            f.stop()
            let result = ClientResult(samples: f.calls, cpuNs: (r1 &- r0) + (h1 &- h0), readerNs: r1 &- r0)
            FileHandle.standardOutput.write(Data(result.text.utf8))
            return true
        }

        EdgeMotionAgent.socketPath = socket
        EdgeMotionAgent.allowsInProcessAgent = false
        let start = monotonicNanoseconds()
        let tally = Tally(windowStart: start + UInt64(warmup * 1e9), seconds: seconds,
                          capacity: Int(rate * seconds) * managers + 1024)
        var running: [CMMotionManager] = []
        var rawClient: AgentClient?
        var rawSubscription: Subscription?
        if raw {
            // The reference: EdgeClient alone, the sample on its reader thread.
            let c = AgentClient(socketPath: socket)
            rawClient = c
            rawSubscription = c.subscribe(.deviceMotion, intervalNs: UInt64(1e9 / rate), onSample: { sample in
                let now = monotonicNanoseconds()
                guard case .deviceMotion(let m) = sample else { return }
                tally.take(now: now, captureNs: Double(m.timestampNs), subscriber: 0)
            }, onError: { e in tally.fail(e.description) })
        }
        for index in 0..<(raw ? 0 : managers) {
            let m = CMMotionManager()
            m.deviceMotionUpdateInterval = 1 / rate
            m.startDeviceMotionUpdates(to: OperationQueue()) { motion, error in
                let now = monotonicNanoseconds()
                if let error { tally.fail(error.localizedDescription); return }
                guard let motion else { return }
                tally.take(now: now, captureNs: motion.timestamp * 1e9, subscriber: index)
            }
            running.append(m)
        }
        sleepSeconds(Double(tally.windowStart &- monotonicNanoseconds()) / 1e9)
        let cpu0 = ProcFS.schedCPUNanoseconds(getpid()) ?? 0
        sleepSeconds(Double(tally.windowEnd &- monotonicNanoseconds()) / 1e9)
        let cpu1 = ProcFS.schedCPUNanoseconds(getpid()) ?? 0
        for m in running { m.stopDeviceMotionUpdates() }
        rawSubscription?.cancel()
        rawClient?.close()
        let (samples, delays, gaps, error) = tally.result
        if let error { throw BenchError("a handler got an error: \(error)") }
        let result = ClientResult(samples: samples, cpuNs: cpu1 &- cpu0, delaysUs: delays, gapsUs: gaps)
        let text = result.text
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { b in
            var off = 0
            while off < b.count {
                let n = write(1, b.baseAddress! + off, b.count - off)
                if n <= 0 { break }
                off += n
            }
        }
        return true
    }

    /// What the handlers saw in the measured window (they run on several threads).
    final class Tally: @unchecked Sendable {
        let windowStart: UInt64
        let windowEnd: UInt64
        private let lock = NSLock()
        private var delays: [Double] = []
        private var gaps: [Double] = []
        /// Each subscriber's last handler call, ns.
        private var last: [Int: UInt64] = [:]
        private var samples = 0
        private var error: String?

        init(windowStart: UInt64, seconds: Double, capacity: Int) {
            self.windowStart = windowStart
            windowEnd = windowStart + UInt64(seconds * 1e9)
            delays.reserveCapacity(capacity)
        }

        /// One sample handled at `now` (ns), captured at `captureNs`, by
        /// `subscriber` (a manager, or the raw subscription).
        func take(now: UInt64, captureNs: Double, subscriber: Int) {
            guard now >= windowStart, now < windowEnd else { return }
            lock.withLock {
                samples += 1
                delays.append((Double(now) - captureNs) / 1000)
                if let l = last[subscriber], now > l { gaps.append(Double(now - l) / 1000) }
                last[subscriber] = now
            }
        }

        func fail(_ message: String) { lock.withLock { if error == nil { error = message } } }

        var result: (samples: Int, delaysUs: [Double], gapsUs: [Double], error: String?) {
            lock.withLock { (samples, delays, gaps, error) }
        }
    }

    // MARK: the benchmark

    struct Round {
        var agentCPUNs: UInt64
        var clients: [ClientResult]
        var seconds: Double
        var samples: Int { clients.reduce(0) { $0 + $1.samples } }
        var clientCPUNs: UInt64 { clients.reduce(0) { $0 + $1.cpuNs } }
        var delays: [Double] { clients.flatMap(\.delaysUs).sorted() }
        var gaps: [Double] { clients.flatMap(\.gapsUs).sorted() }
    }

    /// Heap allocations per decoded device-motion line, counted on this
    /// thread (CAllocCount): the sample fast path, and the JSON tree for
    /// the same line with a space after `{"class":"sample",`.
    static func decodeAllocations(_ n: Int = 10_000) -> (fast: Double, tree: Double, lines: Int) {
        let q = Quaternion(w: 0.9238795325112867, x: 0.3826834323650898, y: -0.012345678901234567, z: 0.000123456789)
        let v = Vector3(x: -0.12345678901234567, y: 9.701234567890123, z: 0.31415926535897931)
        let s = Sample.deviceMotion(DeviceMotionSample(
            timestampNs: 123_456_789_012_345, attitude: q, gravity: v, userAcceleration: v, rotationRate: v, magneticField: v,
            magneticFieldAccuracy: MagneticFieldCalibrationAccuracy.allCases.last!, headingDeg: 123.45678901234567,
            referenceFrame: ReferenceFrame.allCases.last!, attitude6D: q, northYawDeg: 1.5, northYawState: .live))
        var w = JSONWriter(capacity: 1024)
        MessageEncoder.sample(s, into: &w)
        var line = w.bytes
        line.removeLast()
        var spaced = line
        spaced.insert(UInt8(ascii: " "), at: Array(#"{"class":"sample","#.utf8).count)
        func count(_ bytes: [UInt8]) -> Double {
            let slice = bytes[...]
            var decoded = 0
            edge_alloc_count_begin()
            for _ in 0..<n { if case .sample? = try? ServerMessage.decode(line: slice) { decoded += 1 } }
            let allocations = edge_alloc_count_end()
            return decoded == n ? Double(allocations) / Double(n) : .nan
        }
        return (count(line), count(spaced), n)
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seconds = try o.double("--seconds", default: 8, in: 2...3600)
        let rounds = try o.int("--rounds", default: 3, in: 1...50)
        let rate = try o.int("--rate", default: 100, in: 10...1000)
        let deliveryText = try o.string("--delivery-ms")
        let common = try CommonOptions.parse(&o)
        try o.finish("coremotion")
        let paths = try common.paths()
        guard let me = selfExecutable() else { throw BenchError("cannot find this executable (/proc/self/exe)") }
        var setup = AgentSetup()
        setup.rateHz = rate
        if let d = deliveryText {
            guard let v = Double(d), v >= 0, v <= 1000 else { throw BenchError("--delivery-ms takes 0...1000, not \(d)") }
            setup.deliveryIntervalMs = v
        }
        let periodMs = 1000 / Double(rate)
        let warmup = 1.0

        say("== coremotion: CMMotionManager device motion at \(rate) Hz through the agent; \(rounds) rounds of A (1 process x 1 manager) and B (2 processes x 4 managers), \(fixed(seconds, 0)) s each")
        say("   agent: \(paths.agent) run --config <generated: simulated board, sample_rate_hz \(rate), delivery_interval_ms \(setup.deliveryIntervalMs.map { fixed($0, 0) } ?? "default (20)")> --quiet")
        say("   clients: \(me) coremotion-client (this executable, linked with the CoreMotion library)")
        say("   load: \(loadAverage())")
        // The decode path of every client (issue 22): heap allocations per line.
        let decode = decodeAllocations()
        let decodeOK = decode.fast == 0
        say("   decoding a device-motion line (ServerMessage.decode, \(decode.lines) lines): \(fixed(decode.fast, 2)) heap allocations per line on the sample fast path, \(fixed(decode.tree, 2)) through the JSON tree (the same line with a space, which the fast path leaves to the tree); target 0: \(verdict(decodeOK))")
        let total = Double(rounds) * 2 * (seconds + warmup + 3) + 30
        let agent = try AgentRun(paths: paths, setup: setup, duration: total)
        defer { _ = try? agent.stop() }

        func measure(processes: Int, managers: Int, raw: Bool = false, floor: Bool = false) throws -> Round {
            let dir = try TempDirectory(prefix: "edge-bench-cm")
            var children: [ChildProcess] = []
            for i in 0..<processes {
                children.append(try ChildProcess([me, "coremotion-client", "--socket", agent.socketPath,
                                                  "--managers", "\(managers)", "--rate", "\(rate)",
                                                  "--warmup", fixed(warmup, 3), "--seconds", fixed(seconds, 3)] + (raw ? ["--raw"] : [])
                                                 + (floor ? ["--floor-delivery-ms", fixed(setup.deliveryIntervalMs ?? 20, 3)] : []),
                                                 stdout: dir.file("client\(i).out"), stderr: dir.file("client\(i).err")))
            }
            defer { for c in children { c.stop(grace: 2) } }
            // The agent's window: the clients' (they started within a few ms of each other).
            sleepSeconds(warmup)
            let a0 = ProcFS.schedCPUNanoseconds(agent.pid) ?? 0
            sleepSeconds(seconds)
            let a1 = ProcFS.schedCPUNanoseconds(agent.pid) ?? 0
            var results: [ClientResult] = []
            for c in children {
                guard c.wait(seconds: 20) else { throw BenchError("a coremotion-client did not finish within 20 s") }
                guard c.exitStatus == 0, let r = ClientResult.parse(c.stdoutText) else {
                    throw BenchError("coremotion-client failed (status \(c.exitStatus ?? -1)):\n\(c.stderrText)")
                }
                results.append(r)
            }
            return Round(agentCPUNs: a1 &- a0, clients: results, seconds: seconds)
        }

        var a: [Round] = [], b: [Round] = [], ref: [Round] = [], fl: [Round] = []
        for r in 0..<rounds {
            fl.append(try measure(processes: 1, managers: 1, floor: true))
            ref.append(try measure(processes: 1, managers: 1, raw: true))
            a.append(try measure(processes: 1, managers: 1))
            b.append(try measure(processes: 2, managers: 4))
            let rr = ref.last!, ra = a.last!, rb = b.last!
            say("   round \(r + 1): R \(rr.samples) samples, agent \(fixed(Double(rr.agentCPUNs) / 1e6, 1)) ms CPU; A \(ra.samples), agent \(fixed(Double(ra.agentCPUNs) / 1e6, 1)) ms; B \(rb.samples), agent \(fixed(Double(rb.agentCPUNs) / 1e6, 1)) ms")
        }
        let summary = try agent.stop()

        func agentPercent(_ r: Round) -> Double { Double(r.agentCPUNs) / (r.seconds * 1e9) * 100 }
        func perSampleUs(_ r: Round) -> Double { r.samples > 0 ? Double(r.clientCPUNs) / Double(r.samples) / 1000 : .nan }
        let delaysR = ref.flatMap(\.delays).sorted()
        let delaysA = a.flatMap(\.delays).sorted()
        let delaysB = b.flatMap(\.delays).sorted()
        let expected = Double(rate) * seconds
        let agentR = median(ref.map(agentPercent))
        let agentA = median(a.map(agentPercent)), agentB = median(b.map(agentPercent))
        let ratio = agentB / agentA
        let ms = { (d: [Double], p: Double) in fixed(percentile(d, p) / 1000, 2) }
        let cpuPerSample = { (rs: [Round]) in median(rs.map(perSampleUs)) }

        say()
        var t = Table(["figure", "R: raw EdgeClient", "A: 1 process, 1 manager", "B: 2 processes, 8 managers"])
        t.add(["samples delivered per subscriber per round (expected \(fixed(expected, 0)))",
               fixed(median(ref.map { Double($0.samples) }), 0), fixed(median(a.map { Double($0.samples) }), 0),
               fixed(median(b.map { Double($0.samples) / 8 }), 0)])
        t.add(["capture-to-handler delay p50 (ms)", ms(delaysR, 0.5), ms(delaysA, 0.5), ms(delaysB, 0.5)])
        t.add(["capture-to-handler delay p99 (ms)", ms(delaysR, 0.99), ms(delaysA, 0.99), ms(delaysB, 0.99)])
        t.add(["capture-to-handler delay max (ms)", ms(delaysR, 1), ms(delaysA, 1), ms(delaysB, 1)])
        let gapsR = ref.flatMap(\.gaps).sorted(), gapsA = a.flatMap(\.gaps).sorted(), gapsB = b.flatMap(\.gaps).sorted()
        let close = { (g: [Double]) in
            g.isEmpty ? "-" : fixed(Double(g.filter { $0 < periodMs * 1000 / 4 }.count) / Double(g.count) * 100, 1)
        }
        t.add(["handler calls within a quarter period of the previous (%)", close(gapsR), close(gapsA), close(gapsB)])
        t.add(["gap between handler calls p1 / p50 / p99 (ms)",
               "\(ms(gapsR, 0.01)) / \(ms(gapsR, 0.5)) / \(ms(gapsR, 0.99))",
               "\(ms(gapsA, 0.01)) / \(ms(gapsA, 0.5)) / \(ms(gapsA, 0.99))",
               "\(ms(gapsB, 0.01)) / \(ms(gapsB, 0.5)) / \(ms(gapsB, 0.99))"])
        t.add(["agent CPU, median of rounds (% of one core)", fixed(agentR, 2), fixed(agentA, 2), fixed(agentB, 2)])
        t.add(["client processes' CPU per delivered sample, median (µs)", fixed(cpuPerSample(ref), 1),
               fixed(cpuPerSample(a), 1), fixed(cpuPerSample(b), 1)])
        let floorA = median(fl.map(perSampleUs))
        let floorR = median(fl.map { r in r.samples > 0 ? Double(r.clients.reduce(0) { $0 + $1.readerNs }) / Double(r.samples) / 1000 : .nan })
        t.add(["wake-up floor F (same run): reader / reader + paced handler thread, µs per sample",
               fixed(floorR, 1), fixed(floorA, 1), "-"])
        t.add(["client CPU per sample as a multiple of the floor", fixed(cpuPerSample(ref) / floorR, 2) + " x",
               fixed(cpuPerSample(a) / floorA, 2) + " x", "-"])
        t.add(["client processes' CPU, median (% of one core, all processes)",
               fixed(median(ref.map { Double($0.clientCPUNs) / ($0.seconds * 1e9) * 100 }), 2),
               fixed(median(a.map { Double($0.clientCPUNs) / ($0.seconds * 1e9) * 100 }), 2),
               fixed(median(b.map { Double($0.clientCPUNs) / ($0.seconds * 1e9) * 100 }), 2)])
        say(t.text)
        say("   agent: loop lateness p99 \(summary.p99Microseconds) µs, overruns \(summary.overruns) of \(summary.wakeUps) wake-ups, \(summary.droppedInQueues) dropped in client queues")
        say("   the gaps are between one subscriber's consecutive calls (R: the raw reader thread, in the agent's delivery")
        say("   bursts; A, B: the library's handlers, paced at the samples' spacing, one delivery tick after capture).")
        say("   the delay is the handler's CLOCK_MONOTONIC minus the sample's capture time: the loop's read, the")
        say("   agent's delivery batching, the socket, the library's reader thread and OperationQueue dispatch.")
        say("   client CPU is every thread of the client process (library, Foundation, the handler storing one number).")
        say("   the library's own share, A less R: delay p50 \(fixed((percentile(delaysA, 0.5) - percentile(delaysR, 0.5)) / 1000, 2)) ms, p99 \(fixed((percentile(delaysA, 0.99) - percentile(delaysR, 0.99)) / 1000, 2)) ms; CPU \(fixed(cpuPerSample(a) - cpuPerSample(ref), 1)) µs per sample")
        say("   (in B one connection's reading and decoding serves four managers, so its CPU per sample is lower)")
        say("   a p99 over the period in R as well is the agent, the OS and the machine's load, not the library.")

        let delayOK = percentile(delaysA, 0.99) / 1000 <= periodMs + 1
        let costOK = ratio <= 1.2
        var v = Table(["target", "figure", "verdict"])
        v.add(["delay p99 <= one loop period + 1 ms (\(fixed(periodMs + 1, 1)) ms), A", fixed(percentile(delaysA, 0.99) / 1000, 2) + " ms", verdict(delayOK)])
        v.add(["agent CPU, 8 managers in 2 processes <= 1.2 x one subscriber's", fixed(ratio, 2) + " x", verdict(costOK)])
        v.add(["heap allocations per decoded sample line == 0 (issue 22)", fixed(decode.fast, 2), verdict(decodeOK)])
        say(v.text)
        return delayOK && costOK && decodeOK
    }
}
