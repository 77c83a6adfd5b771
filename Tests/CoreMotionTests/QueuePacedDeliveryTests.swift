// Paced handler calls made on the app's own concurrent queue (issue 22:
// the library's CPU per delivered sample; issue 21 item 9: calls at the
// update interval). Apple calls a motion handler once per update interval
// on the queue the app passed (CMMotionManager, deviceMotionUpdateInterval,
// developer.apple.com/documentation/coremotion/cmmotionmanager/devicemotionupdateinterval;
// startDeviceMotionUpdates(to:withHandler:): "An operation queue provided
// by the caller"). The virtual-clock tests never sleep; the real-queue
// test checks arrival and order only, with a generous bounded wait.
@testable import CoreMotion
import EdgeValues
import Foundation
import Synchronization
import Testing

/// A queue on a virtual clock: operations are kept until the test runs them.
final class VirtualQueue: @unchecked Sendable {
    var operations: [@Sendable () -> Void] = []
    var added = 0
    func runAll() {
        while !operations.isEmpty { operations.removeFirst()() }
    }
}

extension VirtualQueue {
    /// A delivery onto this queue, on `clock`, that never finds a wait slot
    /// free (every wait is handed to the pacing thread's wake-up).
    func handingOff(_ clock: VirtualTimer) -> QueuePacedDelivery {
        QueuePacedDelivery(now: { clock.nowNs }, enqueue: { op in self.added += 1; self.operations.append(op) },
                           wake: { clock.wakeNs = $0 }, slot: ({ false }, {}))
    }
}

@Suite struct QueuePacedDeliveryTests {
    /// 100 and 200 Hz samples on the agent's 20 ms ticks: every call in
    /// order, exactly one interval apart once the latency is set, none
    /// before its sample arrived, and one operation per delivery burst
    /// (the pacing thread's path added one per call).
    @Test(arguments: [10_000_000, 5_000_000] as [UInt64])
    func oneOperationPerBurstCallsAtTheInterval(intervalNs: UInt64) {
        let clock = VirtualTimer()
        let queue = VirtualQueue()
        let delivery = QueuePacedDelivery(now: { clock.nowNs }, enqueue: { op in queue.added += 1; queue.operations.append(op) },
                                          wake: { clock.wakeNs = $0 }, slot: ({ true }, {}),
                                          virtualWait: { t in clock.nowNs = max(clock.nowNs, t) })
        let arrivals = agentArrivals(intervalNs: intervalNs, count: 400)
        var calls: [(captureNs: UInt64, arrivalNs: UInt64, callNs: UInt64)] = []
        var i = 0
        var bursts = 0
        while i < arrivals.count {
            // one delivery: its samples submitted back to back, then the queue runs
            let tick = arrivals[i].arrivalNs
            #expect(clock.nowNs <= tick, "a wait ran past the next delivery")
            clock.nowNs = tick
            bursts += 1
            while i < arrivals.count, arrivals[i].arrivalNs == tick {
                let a = arrivals[i]
                delivery.submit(captureNs: a.captureNs) { calls.append((a.captureNs, a.arrivalNs, clock.nowNs)) }
                i += 1
            }
            queue.runAll()
        }
        #expect(calls.map(\.captureNs) == arrivals.map(\.captureNs), "every sample once, in order")
        #expect(calls.allSatisfy { $0.callNs >= $0.arrivalNs })
        let steady = Array(calls.dropFirst(Int(40_000_000 / intervalNs)))
        let g = gapsNs(steady.map(\.callNs))
        #expect(g.allSatisfy { $0 == Int64(intervalNs) }, "gaps \(g.min()!)...\(g.max()!) ns")
        #expect(queue.added == bursts, "\(queue.added) operations for \(bursts) deliveries of \(calls.count) samples")
        #expect(clock.wakeNs == nil, "the pacing thread was not needed")
    }

    /// With the process's wait slot taken (another manager's queue thread
    /// waits), an operation does not wait: it hands the next due time to
    /// the pacing thread, whose wake-up adds the next operation; the calls
    /// keep their times and order.
    @Test func aTakenWaitSlotHandsTheNextCallToThePacingThread() {
        let clock = VirtualTimer()
        let queue = VirtualQueue()
        let delivery = QueuePacedDelivery(now: { clock.nowNs }, enqueue: { op in queue.added += 1; queue.operations.append(op) },
                                          wake: { clock.wakeNs = $0 }, slot: ({ false }, {}),
                                          virtualWait: nil)
        var made: [(Int, UInt64)] = []
        clock.nowNs = 1_020_000_000
        delivery.submit(captureNs: 1_000_000_000) { made.append((0, clock.nowNs)) }
        delivery.submit(captureNs: 1_010_000_000) { made.append((1, clock.nowNs)) }
        queue.runAll()
        #expect(made.map(\.0) == [0] && clock.wakeNs == 1_030_000_000 && delivery.waiting == 1)
        clock.nowNs = 1_030_000_000
        clock.wakeNs = nil
        delivery.fire(until: clock.nowNs)
        #expect(queue.operations.count == 1, "the wake-up adds one operation")
        queue.runAll()
        #expect(made.map(\.0) == [0, 1] && made[1].1 == 1_030_000_000 && clock.wakeNs == nil)
        // a stale wake-up (nothing handed off) adds nothing
        delivery.fire(until: clock.nowNs)
        #expect(queue.operations.isEmpty)
    }

    /// Stopping drops the calls not yet made, withdraws a hand-off's
    /// wake-up, and a new start paces afresh on a new operation. Once
    /// closed (the updates stopped), a sample still on its way from the
    /// client's thread adds no operation.
    @Test func cancelDropsWaitingCallsAndWithdrawsTheWakeUp() {
        let clock = VirtualTimer()
        let queue = VirtualQueue()
        let delivery = queue.handingOff(clock)
        var made: [Int] = []
        clock.nowNs = 1_020_000_000
        delivery.submit(captureNs: 1_000_000_000) { made.append(0) }
        delivery.submit(captureNs: 1_010_000_000) { made.append(1) }
        queue.runAll()
        #expect(clock.wakeNs == 1_030_000_000)
        delivery.cancel()
        #expect(delivery.waiting == 0 && clock.wakeNs == nil)
        delivery.fire(until: 2_000_000_000)
        #expect(queue.operations.isEmpty, "no operation for a cancelled hand-off")
        clock.nowNs = 5_000_000_000
        delivery.submit(captureNs: 4_999_000_000) { made.append(2) }
        #expect(queue.operations.count == 1)
        queue.runAll()
        #expect(made == [0, 2])
        delivery.close()
        delivery.submit(captureNs: 5_009_000_000) { made.append(3) }
        delivery.submitUnpaced { made.append(4) }
        #expect(queue.operations.isEmpty && delivery.waiting == 0)
        queue.runAll()
        #expect(made == [0, 2])
    }

    /// An error goes after the samples before it.
    @Test func anErrorFollowsTheSamplesBeforeIt() {
        let clock = VirtualTimer()
        let queue = VirtualQueue()
        let delivery = QueuePacedDelivery(now: { clock.nowNs }, enqueue: { op in queue.operations.append(op) },
                                          wake: { clock.wakeNs = $0 }, slot: ({ true }, {}),
                                          virtualWait: { t in clock.nowNs = max(clock.nowNs, t) })
        var made: [String] = []
        clock.nowNs = 1_020_000_000
        delivery.submit(captureNs: 1_000_000_000) { made.append("a") }
        delivery.submit(captureNs: 1_010_000_000) { made.append("b") }
        delivery.submitUnpaced { made.append("error") }
        queue.runAll()
        #expect(made == ["a", "b", "error"] && clock.nowNs == 1_030_000_000)
    }

    /// Which queues may wait: an app's concurrent queue; not the main
    /// queue, not one running one operation at a time.
    @Test func onlyAConcurrentQueueThatIsNotMainWaits() {
        #expect(QueuePacedDelivery.canWait(on: OperationQueue()))
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        #expect(!QueuePacedDelivery.canWait(on: serial))
        #expect(!QueuePacedDelivery.canWait(on: OperationQueue.main))
    }

    final class CountingQueue: OperationQueue, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        override func addOperation(_ op: Operation) {
            lock.withLock { count += 1 }
            super.addOperation(op)
        }
        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            lock.withLock { count += 1 }
            super.addOperation(block)
        }
        var added: Int { lock.withLock { count } }
    }

    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Int] = []
        private var inside = 0
        private(set) var overlapped = false
        private(set) var offQueue = false
        func enter(_ i: Int, _ queue: OperationQueue) {
            lock.withLock {
                inside += 1
                if inside > 1 { overlapped = true }
                if OperationQueue.current !== queue { offQueue = true }
                list.append(i)
            }
        }
        func leave() { lock.withLock { inside -= 1 } }
        var all: [Int] { lock.withLock { list } }
    }

    /// On a real concurrent OperationQueue: every call made on that queue,
    /// in order, never two at once, in far fewer operations than calls.
    @Test func aRealConcurrentQueueGetsEveryCallInOrderInFewOperations() async {
        let queue = CountingQueue()
        // A wait slot of its own: the process-wide one may be held by another
        // test's delivery running at the same time (the whole suite is one
        // process), which would hand every call to the pacing thread.
        let taken = Atomic<Bool>(false)
        let delivery = QueuePacedDelivery.on(queue, slot: (take: { !taken.exchange(true, ordering: .acquiring) },
                                                          release: { taken.store(false, ordering: .releasing) }))
        let log = Log()
        let start = monotonicNowNs()
        for i in 0..<40 {
            // 100 Hz samples arriving in bursts of two, as from the agent
            delivery.submit(captureNs: start - 20_000_000 + UInt64(i / 2) * 20_000_000 + UInt64(i % 2) * 10_000_000) {
                log.enter(i, queue)
                log.leave()
            }
        }
        #expect(await PacedDeliveryThreadTests.waitFor { log.all.count == 40 }, "\(log.all.count) of 40 calls made")
        #expect(log.all == Array(0..<40))
        #expect(!log.overlapped && !log.offQueue)
        #expect(queue.added < 20, "\(queue.added) operations for 40 calls")
    }
}
