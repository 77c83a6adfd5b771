// Handler calls paced at the samples' spacing (issue 21, item 9), on a
// virtual clock: no test here sleeps or reads the real one.
//
// Apple calls a motion handler once per update interval: CMMotionManager,
// deviceMotionUpdateInterval
// (developer.apple.com/documentation/coremotion/cmmotionmanager/devicemotionupdateinterval):
// "The interval, in seconds, for providing device-motion updates to the
// block handler". The agent's service thread hands samples to its clients
// on 20 ms delivery ticks (`service.delivery_interval_ms`), so at 100 Hz two
// samples and at 200 Hz four arrive back to back; before pacing each went
// to the handler's queue on arrival.
@testable import CoreMotion
import EdgeValues
import Foundation
import Testing

/// A virtual CLOCK_MONOTONIC and the one wake-up a ``PacedDelivery`` asks for.
final class VirtualTimer: @unchecked Sendable {
    var nowNs: UInt64 = 1_000_000_000
    var wakeNs: UInt64?
}

/// The agent's delivery: samples captured every `intervalNs` from `startNs`,
/// each handed over at the first delivery tick (every `tickNs`) at or after
/// its capture plus 0.1 ms of processing; tick k is `late(k)` ns late.
func agentArrivals(intervalNs: UInt64, count: Int, tickNs: UInt64 = 20_000_000, startNs: UInt64 = 1_000_000_000,
                   late: (Int) -> UInt64 = { _ in 0 }) -> [(captureNs: UInt64, arrivalNs: UInt64)] {
    (0..<count).map { i in
        let capture = startNs + UInt64(i) * intervalNs
        let ready = capture + 100_000
        let tick = Int((ready + tickNs - 1) / tickNs)
        return (capture, UInt64(tick) * tickNs + late(tick))
    }
}

/// Runs a ``PacedDelivery`` on the virtual clock over `arrivals` (in
/// arrival order): the virtual time of each handler call, with its sample.
func paced(_ arrivals: [(captureNs: UInt64, arrivalNs: UInt64)],
           settings: DeliveryPacing.Settings = .init()) -> [(captureNs: UInt64, arrivalNs: UInt64, callNs: UInt64)] {
    let clock = VirtualTimer()
    let delivery = PacedDelivery(settings: settings, now: { clock.nowNs }, wake: { clock.wakeNs = $0 })
    var calls: [(UInt64, UInt64, UInt64)] = []
    var i = 0
    while i < arrivals.count || clock.wakeNs != nil {
        let nextArrival = i < arrivals.count ? arrivals[i].arrivalNs : .max
        if let w = clock.wakeNs, w <= nextArrival {
            clock.nowNs = max(clock.nowNs, w)
            delivery.fire()
        } else {
            clock.nowNs = max(clock.nowNs, nextArrival)
            let a = arrivals[i]
            delivery.submit(captureNs: a.captureNs) { calls.append((a.captureNs, a.arrivalNs, clock.nowNs)) }
            i += 1
        }
    }
    return calls
}

func gapsNs(_ t: [UInt64]) -> [Int64] { zip(t.dropFirst(), t).map { Int64($0) - Int64($1) } }

@Suite struct DeliveryPacingTests {
    /// At 100 and 200 Hz on punctual 20 ms ticks: the arrivals come in
    /// bursts (gaps of 0), the handler calls exactly one interval apart
    /// once the first tick has set the latency, every sample once, in
    /// order, none before it arrived, each one tick (20 ms) and a bit
    /// after its capture.
    @Test(arguments: [10_000_000, 5_000_000] as [UInt64])
    func burstsOnDeliveryTicksComeOutAtTheInterval(intervalNs: UInt64) {
        let arrivals = agentArrivals(intervalNs: intervalNs, count: 400)
        #expect(gapsNs(arrivals.map(\.arrivalNs)).contains(0), "the scenario delivers in bursts")
        let calls = paced(arrivals)
        #expect(calls.map(\.captureNs) == arrivals.map(\.captureNs), "every sample once, in order")
        #expect(calls.allSatisfy { $0.callNs >= $0.arrivalNs })
        let steady = Array(calls.dropFirst(Int(40_000_000 / intervalNs)))
        let g = gapsNs(steady.map(\.callNs))
        #expect(g.allSatisfy { $0 == Int64(intervalNs) }, "gaps \(g.min()!)...\(g.max()!) ns")
        #expect(steady.allSatisfy { $0.callNs - $0.captureNs <= 21_000_000 }, "latency \(steady.map { $0.callNs - $0.captureNs }.max()!) ns")
    }

    /// Ticks woken 0-3 ms late, as on a loaded machine (EdgeEngineTests'
    /// LateClock): no two calls within a quarter of the interval, none
    /// more than the lateness (3 ms) and an eighth beyond it, and the
    /// calls keep the samples' rate.
    @Test(arguments: [10_000_000, 5_000_000] as [UInt64])
    func lateTicksStillComeOutPaced(intervalNs: UInt64) {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        var lateness: [Int: UInt64] = [:]
        let arrivals = agentArrivals(intervalNs: intervalNs, count: 1000) { tick in
            if let l = lateness[tick] { return l }
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let l = (seed >> 33) % 3_000_001
            lateness[tick] = l
            return l
        }
        let calls = paced(arrivals)
        #expect(calls.count == arrivals.count)
        #expect(calls.allSatisfy { $0.callNs >= $0.arrivalNs })
        let g = gapsNs(calls.map(\.callNs)).dropFirst(Int(40_000_000 / intervalNs))
        #expect(g.allSatisfy { $0 >= Int64(intervalNs / 4) }, "closest calls \(g.min()!) ns apart")
        #expect(g.allSatisfy { $0 <= Int64(intervalNs + intervalNs / 8 + 3_000_000) }, "widest gap \(g.max()!) ns")
        let mean = Double(g.reduce(0, +)) / Double(g.count)
        #expect(abs(mean - Double(intervalNs)) < Double(intervalNs) / 100, "mean gap \(mean) ns")
    }

    /// A 500 ms stall of the agent's delivery at 100 Hz: its backlog comes
    /// at once; the calls catch up at four times the rate (never two within
    /// a quarter interval, the backlog done within a quarter of the stall
    /// beyond the 100 ms bound of the latency), and within 1.5 s the
    /// latency is back to one tick.
    @Test func aStallIsCaughtUpPacedAndTheLatencyComesBack() {
        let interval: UInt64 = 10_000_000
        let stallFrom: UInt64 = 2_000_000_000, stallTo: UInt64 = 2_500_000_000
        let arrivals = agentArrivals(intervalNs: interval, count: 800).map { a in
            (a.captureNs, a.arrivalNs >= stallFrom && a.arrivalNs < stallTo ? stallTo : a.arrivalNs)
        }
        let calls = paced(arrivals)
        #expect(calls.count == arrivals.count)
        #expect(gapsNs(calls.map(\.callNs)).allSatisfy { $0 >= Int64(interval / 4) })
        let worst = calls.map { $0.callNs - $0.arrivalNs }.max()!
        #expect(worst <= 100_000_000 + (stallTo - stallFrom) / 4, "a call \(worst) ns after its sample arrived")
        let after = calls.filter { $0.captureNs >= stallTo + 1_500_000_000 }
        #expect(!after.isEmpty && after.allSatisfy { $0.callNs - $0.captureNs <= 21_000_000 },
                "latency 1.5 s after the stall: \(after.map { $0.callNs - $0.captureNs }.max() ?? 0) ns")
    }

    /// Stopping drops the calls not yet made; a new start paces afresh
    /// (its first sample is not held back by the old latency). Once closed
    /// (the updates stopped), a sample still on its way from the client's
    /// thread is dropped, due or not.
    @Test func cancelDropsWaitingCallsAndStartsAfresh() {
        let clock = VirtualTimer()
        let delivery = PacedDelivery(now: { clock.nowNs }, wake: { clock.wakeNs = $0 })
        var made: [Int] = []
        clock.nowNs = 1_020_000_000
        // due on arrival with nothing waiting: made at once, no wake-up asked for
        delivery.submit(captureNs: 1_000_000_000) { made.append(0) }
        #expect(made == [0] && clock.wakeNs == nil)
        delivery.submit(captureNs: 1_010_000_000) { made.append(1) }
        // the second is due one interval later (the window's latency: the first's lag)
        #expect(made == [0] && delivery.waiting == 1 && clock.wakeNs == 1_030_000_000)
        delivery.cancel()
        #expect(delivery.waiting == 0 && clock.wakeNs == nil)
        clock.nowNs = 5_000_000_000
        delivery.submit(captureNs: 4_999_000_000) { made.append(2) }
        #expect(made == [0, 2], "a fresh start: due on arrival, made at once")
        delivery.close()
        delivery.submit(captureNs: 4_999_500_000) { made.append(3) }
        delivery.submit(captureNs: 5_009_000_000) { made.append(4) }
        delivery.submitUnpaced { made.append(5) }
        clock.nowNs = 6_000_000_000
        delivery.fire()
        #expect(made == [0, 2] && delivery.waiting == 0 && clock.wakeNs == nil)
    }

    /// A cancel while the pacing thread is making a burst of due calls: the
    /// burst stops before its next call, and the cancel returns only after
    /// the call being made, so once the updates have stopped no call is made.
    /// (A Core Motion app test under load saw 12 handler calls after stop:
    /// the pacing thread had taken a late burst out before the cancel and
    /// went on making it.) Threads meet on semaphores; nothing sleeps.
    @Test func aCancelStopsABurstBeingMadeAndWaitsForItsCall() {
        let clock = VirtualTimer()
        let delivery = PacedDelivery(now: { clock.nowNs }, wake: { clock.wakeNs = $0 })
        let made = Locked<[String]>([])
        let inFirst = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        clock.nowNs = 1_000_000_000
        // three calls waiting (the first sample's lag paces the others)
        delivery.submit(captureNs: 900_000_000) { made.withLock { $0.append("call 0") } }
        for i in 1...3 {
            delivery.submit(captureNs: 900_000_000 + UInt64(i) * 10_000_000) {
                made.withLock { $0.append("call \(i)") }
                if i == 1 { inFirst.signal(); release.wait() }
            }
        }
        #expect(delivery.waiting == 3)
        clock.nowNs = 2_000_000_000   // all three due: one burst
        let firing = Thread { delivery.fire() }
        firing.start()
        inFirst.wait()
        let cancelled = DispatchSemaphore(value: 0)
        let cancelling = Thread {
            delivery.cancel()
            made.withLock { $0.append("cancel returned") }
            cancelled.signal()
        }
        cancelling.start()
        // the cancel has begun (it counts itself before it waits) ...
        for _ in 0..<60_000 where delivery.cancelCount == 0 { usleep(1000) }   // bounded: 60 s
        #expect(delivery.cancelCount == 1)
        // ... and waits for the call being made
        release.signal()
        cancelled.wait()
        #expect(made.withLock { $0 } == ["call 0", "call 1", "cancel returned"])
        #expect(delivery.waiting == 0 && clock.wakeNs == nil)
    }

    /// An error goes after the samples before it, and is not held back
    /// otherwise.
    @Test func anErrorFollowsTheSamplesBeforeIt() {
        let clock = VirtualTimer()
        let delivery = PacedDelivery(now: { clock.nowNs }, wake: { clock.wakeNs = $0 })
        var made: [String] = []
        clock.nowNs = 1_020_000_000
        delivery.submit(captureNs: 1_000_000_000) { made.append("a") }
        delivery.submit(captureNs: 1_010_000_000) { made.append("b") }
        delivery.submitUnpaced { made.append("error") }
        delivery.fire()
        clock.nowNs = 1_030_000_000
        delivery.fire()
        #expect(made == ["a", "b", "error"])
    }
}

/// The real pacing thread (`PacedDelivery.onPacingThread()`): every call is made, in order,
/// across a cancel and a restart. Only arrival is checked, with a generous
/// bounded wait; no time is measured (Tests/README.md).
@Suite struct PacedDeliveryThreadTests {
    final class Made: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Int] = []
        func add(_ i: Int) { lock.withLock { list.append(i) } }
        var all: [Int] { lock.withLock { list } }
    }

    static func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return condition()
    }

    @Test func everyCallIsMadeInOrderAcrossACancel() async {
        let delivery = PacedDelivery.onPacingThread()
        let made = Made()
        // 100 Hz samples that arrive in bursts of two, as from the agent
        let start = monotonicNowNs()
        for i in 0..<40 {
            delivery.submit(captureNs: start - 20_000_000 + UInt64(i / 2) * 20_000_000 + UInt64(i % 2) * 10_000_000) { made.add(i) }
        }
        #expect(await Self.waitFor { made.all.count == 40 }, "\(made.all.count) of 40 calls made")
        #expect(made.all == Array(0..<40))
        // a call not yet made at the cancel is dropped; this one may be due
        // at once (its lag is about 0) and made before the cancel, then it
        // comes before the restart's calls
        delivery.submit(captureNs: monotonicNowNs()) { made.add(100) }
        delivery.cancel()
        let now = monotonicNowNs()
        for i in 0..<5 { delivery.submit(captureNs: now + UInt64(i) * 10_000_000) { made.add(200 + i) } }
        #expect(await Self.waitFor { made.all.contains(204) }, "\(made.all)")
        #expect(Array(made.all.dropFirst(40).filter { $0 != 100 }) == [200, 201, 202, 203, 204], "\(made.all)")
        #expect(made.all.firstIndex(of: 100).map { $0 == 40 } ?? true, "\(made.all)")
    }
}
