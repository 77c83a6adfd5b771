import Testing
import EdgeValues

/// EdgeValues' `LogLimiter` (pure; EdgeFusionTests is where EdgeValues'
/// value types are tested, next to the quaternion).
@Suite struct LogLimiterTests {
    static let s: UInt64 = 1_000_000_000

    /// A worked example by hand: 3 lines per 10 s; lines once a second.
    @Test func aBurstWritesTheFirstLinesThenOneSummaryWhenTheNextLinePasses() {
        var limiter = LogLimiter(settings: .init(linesPerWindow: 3, windowNs: 10 * Self.s))
        var written: [String] = []
        for i in 0..<10 {
            written += limiter.update(key: "birth", line: "birth \(i)", nowNs: UInt64(i) * Self.s)
        }
        #expect(written == ["birth 0", "birth 1", "birth 2"])
        // 10 s after the first line a new window begins: summary, then the line.
        #expect(limiter.update(key: "birth", line: "birth 10", nowNs: 10 * Self.s)
                == ["birth 9 (7 similar lines suppressed)", "birth 10"])
        #expect(limiter.state.suppressedTotal == 7)
    }

    @Test func expireReportsABurstThatStopped() {
        var limiter = LogLimiter(settings: .init(linesPerWindow: 1, windowNs: 5 * Self.s))
        #expect(limiter.update(key: "k", line: "a", nowNs: 0) == ["a"])
        #expect(limiter.update(key: "k", line: "b", nowNs: 1) == [])
        #expect(limiter.expire(nowNs: 5 * Self.s - 1) == [])            // still open
        #expect(limiter.expire(nowNs: 5 * Self.s) == ["b (1 similar line suppressed)"])
        #expect(limiter.state.windows.isEmpty)
        #expect(limiter.expire(nowNs: 50 * Self.s) == [])               // said once
        // A window with nothing suppressed ends silently.
        #expect(limiter.update(key: "k", line: "c", nowNs: 60 * Self.s) == ["c"])
        #expect(limiter.expire(nowNs: 70 * Self.s) == [])
    }

    @Test func keysDoNotSuppressEachOther() {
        var limiter = LogLimiter(settings: .init(linesPerWindow: 1, windowNs: Self.s))
        #expect(limiter.update(key: "a", line: "a1", nowNs: 0) == ["a1"])
        #expect(limiter.update(key: "b", line: "b1", nowNs: 1) == ["b1"])
        #expect(limiter.update(key: "a", line: "a2", nowNs: 2) == [])
        #expect(limiter.update(key: "b", line: "b2", nowNs: 3) == [])
    }

    /// The issue's flood: 1.17 M births in 20 s (here a tenth of them, the
    /// same shape) become a handful of lines, and the counts add up.
    @Test func theFloodOfTheIssueBecomesAHandfulOfLines() {
        var limiter = LogLimiter()   // 5 per 10 s
        let n = 117_000
        var out: [String] = []
        for i in 0..<n {
            out += limiter.update(key: "ha-birth", line: "Home Assistant is online",
                                  nowNs: UInt64(i) * 20 * Self.s / UInt64(n))
        }
        out += limiter.expire(nowNs: 30 * Self.s)
        // Two windows (0 s, 10 s): 5 lines and 1 summary each.
        #expect(out.count == 12)
        let suppressed = out.compactMap(Self.suppressedCount).reduce(0, +)
        #expect(suppressed + 10 == n)
    }

    /// Memory stays bounded when every line has its own key; an evicted key
    /// still reports what it suppressed.
    @Test func keysAreBoundedAndAnEvictedKeyReportsItsCount() {
        var limiter = LogLimiter(settings: .init(linesPerWindow: 1, windowNs: 100 * Self.s, maximumKeys: 4))
        #expect(limiter.update(key: "first", line: "x", nowNs: 0) == ["x"])
        #expect(limiter.update(key: "first", line: "y", nowNs: 1) == [])
        for i in 0..<3 { _ = limiter.update(key: "k\(i)", line: "k\(i)", nowNs: 2 + UInt64(i)) }
        #expect(limiter.update(key: "new", line: "n", nowNs: 10) == ["y (1 similar line suppressed)", "n"])
        for i in 0..<1000 { _ = limiter.update(key: "many\(i)", line: "m", nowNs: 20 + UInt64(i)) }
        #expect(limiter.state.windows.count == 4)
    }

    /// Properties over random traffic: nothing offered is lost (written +
    /// suppressed-in-summaries = offered), and no key writes more than
    /// `linesPerWindow` lines in any window it opened.
    @Test func randomTrafficLosesNoCountAndKeepsTheBound() {
        var rng = SplitMix64(seed: 16)
        for round in 0..<20 {
            let settings = LogLimiter.Settings(linesPerWindow: 1 + Int(rng.next() % 4),
                                               windowNs: (1 + rng.next() % 5) * Self.s,
                                               maximumKeys: 1 + Int(rng.next() % 10))
            var limiter = LogLimiter(settings: settings)
            var now: UInt64 = 0
            var offered = 0, written = 0, summarised = 0
            var passTimes: [String: [UInt64]] = [:]
            for i in 0..<3000 {
                now += rng.next() % (Self.s / 20)
                let key = "k\(rng.next() % 7)"
                offered += 1
                let line = "\(key) #\(i)"
                var lines = limiter.update(key: key, line: line, nowNs: now)
                if i % 97 == 0 { lines += limiter.expire(nowNs: now) }
                for l in lines {
                    if let k = Self.suppressedCount(l) { summarised += k } else {
                        written += 1; passTimes[key, default: []].append(now)
                    }
                }
            }
            for l in limiter.expire(nowNs: now + settings.windowNs) { summarised += Self.suppressedCount(l) ?? 0 }
            #expect(written + summarised == offered, "round \(round)")
            // Any interval of one window's length holds at most two windows'
            // worth of a key's lines (windows are fixed, not sliding) — when
            // every key (7) fits; an evicted key starts afresh.
            for (_, times) in passTimes where settings.maximumKeys >= 7 {
                var lo = 0
                for hi in times.indices {
                    while times[hi] - times[lo] >= settings.windowNs { lo += 1 }
                    #expect(hi - lo + 1 <= 2 * settings.linesPerWindow, "round \(round)")
                }
            }
        }
    }

    /// Handing the state over halfway gives the same lines as one run.
    @Test func stateHandOverGivesTheSameLines() {
        let settings = LogLimiter.Settings(linesPerWindow: 2, windowNs: Self.s, maximumKeys: 3)
        let traffic: [(String, UInt64)] = (0..<400).map { ("k\($0 % 5 == 0 ? 9 : $0 % 3)", UInt64($0) * Self.s / 37) }
        var whole = LogLimiter(settings: settings)
        var a: [String] = []
        for (i, (k, t)) in traffic.enumerated() { a += whole.update(key: k, line: "\(k) \(i)", nowNs: t) }
        var first = LogLimiter(settings: settings)
        var b: [String] = []
        for (i, (k, t)) in traffic.enumerated().prefix(200) { b += first.update(key: k, line: "\(k) \(i)", nowNs: t) }
        var second = LogLimiter(settings: settings, state: first.state)
        for (i, (k, t)) in traffic.enumerated().dropFirst(200) { b += second.update(key: k, line: "\(k) \(i)", nowNs: t) }
        #expect(a == b)
        #expect(whole.state == second.state)
    }

    /// "… (K similar line[s] suppressed)" → K.
    static func suppressedCount(_ line: String) -> Int? {
        guard line.hasSuffix(" suppressed)"), let open = line.lastIndex(of: "(") else { return nil }
        return Int(line[line.index(after: open)...].prefix { $0.isNumber })
    }
}
