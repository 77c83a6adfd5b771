import Testing
import EdgeValues

/// How a capture time (CLOCK_MONOTONIC) becomes a date: the offset
/// CLOCK_REALTIME − CLOCK_MONOTONIC must not take in a preemption between
/// the two readings. Scripted clocks: the wall clock is the monotonic one
/// plus exactly 1.7e18 ns; each reading advances the monotonic clock by
/// 30 ns, and a preemption of 14 ms falls between the readings of the first
/// attempt (a loaded machine: it dated a recorded 50 Hz sample 14 ms early).
@Suite struct ClockOffsetTests {
    final class ScriptedClocks {
        let trueOffset: UInt64 = 1_700_000_000_000_000_000
        var now: UInt64 = 5_000_000_000
        var readings = 0
        /// Before which readings (counted from 1) the thread is preempted.
        var preemptedBefore: [Int: UInt64] = [:]
        func tick() { readings += 1; now += 30 + (preemptedBefore[readings] ?? 0) }
        func monotonic() -> UInt64 { tick(); return now }
        func realtime() -> UInt64 { tick(); return now + trueOffset }
    }

    @Test func aPreemptionBetweenTheReadingsDoesNotShiftTheOffset() {
        for preempted in [2, 3] {   // before the realtime reading, or after it
            let c = ScriptedClocks()
            c.preemptedBefore = [preempted: 14_000_000]
            let offset = realtimeMinusMonotonicNs(monotonic: c.monotonic, realtime: c.realtime)
            #expect(abs(offset - Int64(c.trueOffset)) <= 30, "preempted before reading \(preempted): off by \(offset - Int64(c.trueOffset)) ns")
        }
    }

    @Test func withoutPreemptionOneBracketIsRead() {
        let c = ScriptedClocks()
        let offset = realtimeMinusMonotonicNs(monotonic: c.monotonic, realtime: c.realtime)
        #expect(abs(offset - Int64(c.trueOffset)) <= 30)
        #expect(c.readings == 3)
    }

    @Test func theRealClocksAgreeWithThemselves() {
        let a = realtimeMinusMonotonicNs(), b = realtimeMinusMonotonicNs()
        #expect(abs(a - b) < 1_000_000, "two offsets in a row \(a) and \(b) ns")
    }
}
