import Testing
import Foundation
import Synchronization
@testable import EdgeHistory
import TestThreads

// The recorders' flushing thread: a commit per period, and a stop that does
// not wait for the period to end (it used to nap 50 ms at a time to notice
// one). Bounded polls, no timing asserted.
@Suite(.ownThread) struct PeriodicThreadTests {
    /// Polls `done` every 5 ms for at most `seconds`.
    func eventually(_ seconds: Double, _ done: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !done() { if Date() > end { return false }; usleep(5_000) }
        return true
    }

    @Test func stopWakesTheThreadAtOnceAndWorksOnceMore() {
        let calls = Atomic<Int>(0)
        // An hour's period: a stop that waited for it would not end in the test's bound.
        let t = PeriodicThread(periodNs: 3_600_000_000_000) { calls.add(1, ordering: .relaxed) }
        #expect(t.start())
        let stopped = Atomic<Bool>(false)
        Thread { t.stop(); stopped.store(true, ordering: .releasing) }.start()
        #expect(eventually(30) { stopped.load(ordering: .acquiring) }, "stop() waited for the period")
        #expect(calls.load(ordering: .relaxed) == 1, "the last commit, on stop")
    }

    @Test func itWorksEveryPeriodUntilStopped() {
        let calls = Atomic<Int>(0)
        let t = PeriodicThread(periodNs: 10_000_000) { calls.add(1, ordering: .relaxed) }
        #expect(t.start())
        #expect(eventually(30) { calls.load(ordering: .relaxed) >= 3 })
        t.stop()
        let after = calls.load(ordering: .relaxed)
        usleep(50_000)
        #expect(calls.load(ordering: .relaxed) == after, "nothing runs after stop()")
    }
}
