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
      * every reader's timestamps advance by exactly one IMU period (10 ms;
        within 5 %): no gap, no duplicate, from its first sample on;
      * all readers got the same samples over the window they share;
      * the agent's `stats` for each reader: nothing dropped;
      * the agent's exit summary: loop overruns 0, ring overruns 0.

    Targets: zero overruns; every reading client receives every sample.

    Options:
      --seconds S   how long the clients stay (default 20)
      --clients N   clients including the silent one (default 64)
      --rate HZ     MPU-6050 rate = loop rate (default 100)
    \(CommonOptions.help)
    """

    struct ReaderFigures {
        var count = 0
        var first: UInt64 = 0
        var last: UInt64 = 0
        var missing = 0
        var badGaps = 0
        var duplicates = 0
    }

    static func analyse(_ t: [UInt64], periodNs: UInt64) -> ReaderFigures {
        var f = ReaderFigures()
        f.count = t.count
        guard let first = t.first, let last = t.last else { return f }
        f.first = first; f.last = last
        let tolerance = periodNs / 20
        for i in 1..<max(1, t.count) {
            guard t[i] > t[i - 1] else { f.duplicates += 1; continue }
            let d = t[i] - t[i - 1]
            if d + tolerance < periodNs || d > periodNs + tolerance {
                f.badGaps += 1
                if d > periodNs { f.missing += Int((Double(d) / Double(periodNs)).rounded()) - 1 }
            }
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
        let summary = try agent.stop()
        // The agent told every client it is stopping and closed: readers end on EOF (bounded by stop()).
        let joinDeadline = monotonicNanoseconds() + 10_000_000_000
        while readers.contains(where: { !$0.isFinished }) && monotonicNanoseconds() < joinDeadline { usleep(20_000) }
        for c in readers { c.stop(); c.join() }
        _ = silent

        let figures = readers.map { analyse($0.tally.timestamps, periodNs: periodNs) }
        let errors = readers.flatMap { $0.tally.errors }
        if let e = errors.first { throw BenchError("the agent refused a client: \(e)") }
        let withData = figures.filter { $0.count > 0 }
        let commonStart = withData.map(\.first).max() ?? 0
        let commonEnd = withData.map(\.last).min() ?? 0
        let expectedInWindow = commonEnd >= commonStart ? Int((commonEnd - commonStart + periodNs / 2) / periodNs) + 1 : 0
        let inWindow = readers.map { $0.tally.timestamps.filter { $0 >= commonStart && $0 <= commonEnd }.count }
        let counts = figures.map(\.count)
        let missing = figures.reduce(0) { $0 + $1.missing }
        let badGaps = figures.reduce(0) { $0 + $1.badGaps }
        let duplicates = figures.reduce(0) { $0 + $1.duplicates }
        let statsDropped = readers.compactMap { $0.tally.statsDropped }
        let noStats = readers.filter { $0.tally.statsDropped == nil }.count
        let readersMissing = figures.filter { $0.missing > 0 || $0.badGaps > 0 || $0.duplicates > 0 }.count

        say()
        var t = Table(["figure", "value"])
        t.add(["reading clients", "\(readers.count) (+1 silent)"])
        t.add(["samples per reader: min / median / max", "\(counts.min() ?? 0) / \(fixed(median(counts.map(Double.init)), 0)) / \(counts.max() ?? 0)"])
        t.add(["shared window", fixed(Double(commonEnd &- commonStart) / 1e9, 2) + " s, \(expectedInWindow) samples expected"])
        t.add(["samples per reader in the shared window: min / max", "\(inWindow.min() ?? 0) / \(inWindow.max() ?? 0)"])
        t.add(["gaps != 1 period (all readers)", "\(badGaps) (\(missing) samples missing, \(duplicates) duplicates/out of order) in \(readersMissing) reader(s)"])
        t.add(["agent stats: dropped for readers (sum)", "\(statsDropped.reduce(0, +))" + (noStats > 0 ? " (\(noStats) readers got no stats reply)" : "")])
        t.add(["agent: loop overruns", "\(summary.overruns) of \(summary.wakeUps) wake-ups (p99 \(summary.p99Microseconds) µs, max \(summary.maxMicroseconds) µs)"])
        t.add(["agent: ring overruns", "\(summary.ringOverruns)"])
        t.add(["agent: published / dropped in client queues at exit", "\(summary.published) / \(summary.droppedInQueues)"])
        say(t.text)

        let overrunsOK = summary.overruns == 0 && summary.ringOverruns == 0
        let everySample = missing == 0 && badGaps == 0 && duplicates == 0
            && (inWindow.min() ?? -1) == expectedInWindow && (inWindow.max() ?? -1) == expectedInWindow
            && statsDropped.allSatisfy { $0 == 0 } && noStats == 0 && withData.count == readers.count
        var v = Table(["target", "verdict"])
        v.add(["zero overruns (loop and ring)", verdict(overrunsOK)])
        v.add(["every reader receives every sample", verdict(everySample)])
        say(v.text)
        return overrunsOK && everySample
    }
}
