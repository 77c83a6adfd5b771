// cyclictest (Debian rt-tests): the platform's own wake-up latency at the
// same interval and scheduling policy as the agent's loop, read from its
// histogram file.
#if canImport(Glibc)
import Glibc
#endif

/// Wake-up lateness figures, µs. `p50`/`p99` are upper bucket edges of a
/// 1 µs histogram (a wake-up 12.3 µs late counts in the 13 µs edge), the
/// convention of the agent's `LoopStatistics`.
struct LatenessFigures {
    var p50: Int
    var p99: Int
    var max: Int
    /// Wake-ups later than one full period.
    var overruns: Int
    var wakeUps: Int
    /// Timer slack of the measured thread, ns (nil: not read).
    var slackNs: Int? = nil
}

enum Cyclictest {
    static let installHint = "cyclictest not found: install it with `sudo apt-get install rt-tests` (Debian/Raspberry Pi OS), or pass --no-cyclictest"

    /// Runs one measurement thread for `seconds` at `intervalMicroseconds`,
    /// with the same policy as the agent: SCHED_OTHER (`--policy=other -p 0`),
    /// or SCHED_FIFO at `priority` with mlockall (`--policy=fifo -p P -m`).
    /// `--default-system`: cyclictest does not lower /dev/cpu_dma_latency, which
    /// the agent does not do either.
    static func run(path: String, intervalMicroseconds: Int, seconds: Int, realtime: Bool, priority: Int,
                    in dir: TempDirectory) throws -> (LatenessFigures, command: String) {
        let hist = dir.file("cyclictest-\(intervalMicroseconds).hist")
        let maxTracked = 100_000   // 100 ms, like the agent's histogram
        var argv = [path, "-t1", "-i", "\(intervalMicroseconds)", "-D", "\(seconds)", "-q",
                    "-h", "\(maxTracked)", "--histfile=\(hist)", "--default-system"]
        argv += realtime ? ["--policy=fifo", "-p", "\(priority)", "-m"] : ["--policy=other", "-p", "0"]
        let command = argv.map { $0 == path ? "cyclictest" : $0 }.joined(separator: " ")
        let p = try ChildProcess(argv, stdout: dir.file("cyclictest.out"), stderr: dir.file("cyclictest.err"))
        // Its measurement thread's timer slack, once it runs.
        var slack: Int?
        // (-t1: the main thread and one measurement thread, started after it.)
        if !p.wait(seconds: min(1, Double(seconds) / 2)),
           let tid = ProcFS.threadCPUNanoseconds(p.pid).keys.filter({ $0 != Int(p.pid) }).max() {
            slack = ProcFS.timerSlack(tid)
        }
        if !p.wait(seconds: Double(seconds) + 20) {
            p.stop(grace: 2)
            throw BenchError("cyclictest did not finish within \(seconds + 20) s")
        }
        guard p.exitStatus == 0, let text = readTextFile(hist) else {
            throw BenchError("cyclictest failed (exit status \(p.exitStatus ?? -1)): \(p.stderrText)\(p.stdoutText)")
        }
        guard var f = parseHistogram(text, periodMicroseconds: intervalMicroseconds) else {
            throw BenchError("cannot read cyclictest's histogram \(hist)")
        }
        f.slackNs = slack
        return (f, command)
    }

    /// Parses `--histfile` output: "BUCKET COUNT" lines (1 µs buckets, one
    /// thread) and "# Max Latencies: N", "# Histogram Overflows: N".
    static func parseHistogram(_ text: String, periodMicroseconds: Int) -> LatenessFigures? {
        var buckets: [(Int, Int)] = []
        var maxLatency: Int?
        var overflows = 0
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingPrefixSpaces()
            if line.hasPrefix("#") {
                if line.hasPrefix("# Max Latencies:") { maxLatency = Int(line.split(separator: " ").last ?? "") }
                if line.hasPrefix("# Histogram Overflows:") { overflows = Int(line.split(separator: " ").last ?? "") ?? 0 }
                continue
            }
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count >= 2, let b = Int(parts[0]), let c = Int(parts[1]) else { continue }
            if c > 0 { buckets.append((b, c)) }
        }
        let total = buckets.reduce(0) { $0 + $1.1 } + overflows
        guard total > 0, let mx = maxLatency else { return nil }
        func percentile(_ q: Double) -> Int {
            let target = Swift.max(1, Int((q * Double(total)).rounded(.up)))
            var seen = 0
            for (b, c) in buckets { seen += c; if seen >= target { return b + 1 } }
            return mx
        }
        let late = buckets.filter { $0.0 >= periodMicroseconds }.reduce(0) { $0 + $1.1 } + overflows
        return LatenessFigures(p50: percentile(0.5), p99: percentile(0.99), max: mx, overruns: late, wakeUps: total)
    }
}

extension Substring {
    func trimmingPrefixSpaces() -> String { String(drop(while: { $0 == " " || $0 == "\t" })) }
}
