// `edge-bench fanout`: many clients on device motion, one never reading.
#if canImport(Glibc)
import Glibc
#endif

enum FanoutBenchmark {
    static let help = """
    Usage: edge-bench fanout [--seconds S] [--clients N] [--rate HZ] [--root DIR] [--agent PATH]

    Fan-out of the real daemon on the simulated board: N clients subscribe
    to deviceMotion with interval 0 (every sample) at 100 Hz; one of them
    subscribes and then never reads a byte. The others read everything on
    their own threads and keep every capture timestamp. One second before
    the end each reader asks the agent for its connection's `stats`.

    Checked:
      * all readers got the same samples (capture timestamps) over the window
        they share, with no duplicate, and the fullest one as many as the
        agent published (deviceMotion is the only stream subscribed);
      * the agent's `stats` for each reader: nothing dropped;
      * the agent's exit summary: loop overruns 0, ring overruns 0.
    Also shown: one reader's timestamp gaps against the IMU period (1 period,
    exactly or with wake-up jitter; 2 periods = a tick with no new IMU sample).

    Targets: zero overruns; every reading client receives every sample.

    Options:
      --seconds S   how long the clients stay (default 20)
      --clients N   clients including the silent one (default 64)
      --rate HZ     MPU-6050 rate = loop rate (default 100)
    \(CommonOptions.help)
    """

    /// Timestamp gaps of one reader, classified against the IMU period P.
    /// Capture timestamps are the loop's read time (MPU6050.readRawIfReady),
    /// so a gap is P plus the difference of two wake-up latenesses; a gap of
    /// about 2P is a loop tick that found no new IMU sample (the IMU's own
    /// clock runs slower than the loop's timer).
    struct ReaderFigures {
        var count = 0
        var first: UInt64 = 0
        var last: UInt64 = 0
        /// |gap − P| ≤ 1 µs.
        var exact = 0
        /// 0.5P < gap < 1.5P.
        var onePeriod = 0
        /// 1.5P ≤ gap < 2.5P.
        var twoPeriods = 0
        /// Anything else (longer gaps, or shorter than P/2).
        var other = 0
        var duplicates = 0
        /// Largest |gap − P| among one-period gaps, ns.
        var jitterNs: UInt64 = 0
    }

    static func analyse(_ t: [UInt64], periodNs: UInt64) -> ReaderFigures {
        var f = ReaderFigures()
        f.count = t.count
        guard let first = t.first, let last = t.last else { return f }
        f.first = first; f.last = last
        guard t.count > 1 else { return f }
        let p = Double(periodNs)
        for i in 1..<t.count {
            guard t[i] > t[i - 1] else { f.duplicates += 1; continue }
            let d = t[i] - t[i - 1]
            let x = Double(d) / p
            if x > 0.5 && x < 1.5 {
                f.onePeriod += 1
                let dev = d > periodNs ? d - periodNs : periodNs - d
                if dev <= 1000 { f.exact += 1 }
                f.jitterNs = max(f.jitterNs, dev)
            } else if x >= 1.5 && x < 2.5 { f.twoPeriods += 1 } else { f.other += 1 }
        }
        return f
    }

    static func run(_ args: [String]) throws -> Bool {
        var o = Options(args)
        if o.wantsHelp { say(help); return true }
        let seconds = try o.double("--seconds", default: 20, in: 3...86_400)
        let n = try o.int("--clients", default: 64, in: 2...127)
        let rate = try o.int("--rate", default: 100, in: 1...1000)
        let common = try CommonOptions.parse(&o)
        try o.finish("fanout")
        let paths = try common.paths()
        let periodNs = UInt64(1_000_000_000 / rate)

        say("== fanout: \(n) clients on deviceMotion (interval 0) at \(rate) Hz, 1 never reading, \(fixed(seconds, 0)) s")
        say("   agent: \(paths.agent) run --config <generated: simulated board, sample_rate_hz \(rate), queue_capacity 256> --quiet")
        say("   load: \(loadAverage())")
        var setup = AgentSetup()
        setup.rateHz = rate
        let agent = try AgentRun(paths: paths, setup: setup, duration: seconds + 60)
        let silent = try SilentClient(socket: agent.socketPath, streams: ["deviceMotion"])
        var readers: [ReadingClient] = []
        defer { for c in readers { c.stop(); c.join() } }
        for _ in 0..<(n - 1) {
            let c = try ReadingClient(socket: agent.socketPath, streams: ["deviceMotion"], track: "deviceMotion")
            try c.start()
            readers.append(c)
        }
        let started = monotonicNanoseconds()
        let end = started + UInt64(seconds * 1e9)
        for c in readers { c.requestStats(atNanoseconds: end - 1_000_000_000) }
        sleepSeconds(Double(end - monotonicNanoseconds()) / 1e9)
        // The silent client finally reads: its backlog, then its stats.
        let silentStats = silent.drainForStats(seconds: 5)
        let summary = try agent.stop()
        // The agent told every client it is stopping and closed: readers end on EOF (bounded by stop()).
        let joinDeadline = monotonicNanoseconds() + 10_000_000_000
        while readers.contains(where: { !$0.isFinished }) && monotonicNanoseconds() < joinDeadline { usleep(20_000) }
        for c in readers { c.stop(); c.join() }

        let figures = readers.map { analyse($0.tally.timestamps, periodNs: periodNs) }
        let errors = readers.flatMap { $0.tally.errors }
        if let e = errors.first { throw BenchError("the agent refused a client: \(e)") }
        let withData = figures.filter { $0.count > 0 }
        let commonStart = withData.map(\.first).max() ?? 0
        let commonEnd = withData.map(\.last).min() ?? 0
        let windows = readers.map { $0.tally.timestamps.filter { $0 >= commonStart && $0 <= commonEnd } }
        let reference = windows.first ?? []
        let identical = windows.filter { $0 == reference }.count
        let counts = figures.map(\.count)
        let statsDropped = readers.compactMap { $0.tally.statsDropped }
        let noStats = readers.filter { $0.tally.statsDropped == nil }.count
        let sum = { (k: KeyPath<ReaderFigures, Int>) in figures.reduce(0) { $0 + $1[keyPath: k] } }
        let ref = figures.first ?? ReaderFigures()

        say()
        var t = Table(["figure", "value"])
        t.add(["reading clients", "\(readers.count) (+1 silent, subscribed first)"])
        t.add(["deviceMotion samples the agent published (its only stream here)", "\(summary.published)"])
        t.add(["samples per reader: min / median / max", "\(counts.min() ?? 0) / \(fixed(median(counts.map(Double.init)), 0)) / \(counts.max() ?? 0)"])
        t.add(["readers with the same samples over the shared \(fixed(Double(commonEnd &- commonStart) / 1e9, 2)) s", "\(identical) of \(readers.count) (\(reference.count) samples each)"])
        t.add(["duplicates / out of order (all readers)", "\(sum(\.duplicates))"])
        t.add(["agent stats: dropped for readers (sum)", "\(statsDropped.reduce(0, +))" + (noStats > 0 ? " (\(noStats) readers got no stats reply)" : "")])
        t.add(["agent: loop overruns", "\(summary.overruns) of \(summary.wakeUps) wake-ups (p99 \(summary.p99Microseconds) µs, max \(summary.maxMicroseconds) µs)"])
        t.add(["agent: ring overruns", "\(summary.ringOverruns)"])
        t.add(["silent client: dropped by the agent / backlog it read at the end",
               (silentStats.dropped.map { "\($0)" } ?? "no stats reply") + " / \(silentStats.samples) samples"])
        t.add(["one reader's gaps: 1 period (exact ±1 µs) / 2 periods / other", "\(ref.onePeriod) (\(ref.exact)) / \(ref.twoPeriods) / \(ref.other)"])
        t.add(["one reader's largest |gap − period| among 1-period gaps", fixed(Double(ref.jitterNs) / 1000, 0) + " µs"])
        say(t.text)
        say("   timestamps are the loop's read time, so gaps carry wake-up jitter; a 2-period gap is a tick that")
        say("   found no new IMU sample (the simulated MPU-6050's clock, ±0.2 % PLL error, drifts against the loop timer).")

        let overrunsOK = summary.overruns == 0 && summary.ringOverruns == 0
        // Every reader got every sample the agent published: all the same
        // samples over the shared window, nothing dropped for any of them,
        // and the fullest reader has as many as the agent published.
        let everySample = identical == readers.count && !reference.isEmpty && sum(\.duplicates) == 0
            && statsDropped.allSatisfy { $0 == 0 } && noStats == 0 && withData.count == readers.count
            && (counts.max() ?? 0) == summary.published
        var v = Table(["target", "verdict"])
        v.add(["zero overruns (loop and ring)", verdict(overrunsOK)])
        v.add(["every reader receives every published sample", verdict(everySample)])
        say(v.text)
        return overrunsOK && everySample
    }
}
