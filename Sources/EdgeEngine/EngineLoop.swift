#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EdgeValues
import CEdgeShims
import EdgeBus

/// The fixed-rate loop around a ``SensorHub``: absolute deadlines on the
/// clock (`clock_nanosleep(TIMER_ABSTIME)` on the real monotonic clock), or
/// the MPU-6050's data-ready edge when a line is given. Lateness and
/// overruns are counted in ``statistics``. Tests run it on a virtual clock.
public final class EngineLoop<Bus: I2CBus>: @unchecked Sendable {
    public let hub: SensorHub<Bus>
    public let clock: any TimeSource
    public let dataReady: (any DataReadyLine)?
    public private(set) var statistics = LoopStatistics()
    /// Current period, ns: follows the IMU rate, which follows demand.
    public private(set) var periodNanoseconds: UInt64
    private let stopFlag = Atomic<Bool>(false)
    /// Called on the loop thread after each tick (watchdog progress, say). Must not block.
    public var afterTick: (@Sendable (UInt64) -> Void)?
    /// Work handed to the loop thread (calibration reload): run between ticks.
    private let mailbox = Locked<[@Sendable (SensorHub<Bus>) -> Void]>([])
    private let mailboxGeneration = Atomic<Int>(0)
    private var seenMailbox = 0

    public init(hub: SensorHub<Bus>, clock: any TimeSource, dataReady: (any DataReadyLine)? = nil) {
        self.hub = hub
        self.clock = clock
        self.dataReady = dataReady
        periodNanoseconds = hub.loopPeriodNanoseconds
    }

    /// Asks a running loop to return after its current tick.
    public func stop() { stopFlag.store(true, ordering: .releasing) }
    public var isStopping: Bool { stopFlag.load(ordering: .acquiring) }

    /// Runs `work` on the loop thread between two ticks (never during one).
    public func enqueue(_ work: @escaping @Sendable (SensorHub<Bus>) -> Void) {
        mailbox.withLock { $0.append(work) }
        mailboxGeneration.add(1, ordering: .releasing)
    }

    /// Runs until ``stop()``, `maxTicks`, or `until` returns true (checked
    /// before each tick; a replay stops when its recording is used up).
    /// On the real clock the calling thread's timer slack is cut to 1 ns:
    /// Linux lets a SCHED_OTHER thread's `clock_nanosleep` wake up to 50 µs
    /// late by default, which edge-bench loop measured as the gap to
    /// cyclictest (it runs with 0); SCHED_FIFO threads have none anyway. It
    /// made no measurable difference to the agent's CPU (edge-bench footprint).
    public func run(maxTicks: Int = .max, until: (() -> Bool)? = nil) {
        if clock is MonotonicClock { _ = edge_set_timer_slack_ns(1) }
        var deadline = clock.nowNanoseconds &+ periodNanoseconds
        var ticks = 0
        while ticks < maxTicks && !isStopping && !(until?() ?? false) {
            let woke: UInt64
            let reference: UInt64
            if let line = dataReady {
                // Wait for the sample itself; two periods without one is a missed edge.
                let edge = (try? line.waitForEdge(timeoutNanoseconds: 2 &* periodNanoseconds)) ?? nil
                woke = clock.nowNanoseconds
                if let e = edge { reference = e } else { statistics.recordMissedEdge(); reference = woke }
            } else {
                clock.sleep(untilNanoseconds: deadline)
                woke = clock.nowNanoseconds
                reference = deadline
            }
            statistics.record(latenessNanoseconds: woke > reference ? woke - reference : 0,
                              periodNanoseconds: periodNanoseconds)
            drainMailbox()
            hub.tick(at: reference)
            afterTick?(woke)
            ticks += 1
            if hub.loopPeriodNanoseconds != periodNanoseconds {
                // The IMU rate changed: restart the deadline grid from this tick.
                periodNanoseconds = hub.loopPeriodNanoseconds
                deadline = reference
            }
            deadline &+= periodNanoseconds
            let now = clock.nowNanoseconds
            if now > deadline &+ periodNanoseconds {
                // More than a period behind: skip the missed deadlines instead of bursting.
                let behind = (now - deadline) / periodNanoseconds
                statistics.recordSkipped(Int(behind))
                deadline &+= behind &* periodNanoseconds
            }
        }
        hub.flush()
    }

    private func drainMailbox() {
        let g = mailboxGeneration.load(ordering: .acquiring)
        guard g != seenMailbox else { return }
        seenMailbox = g
        let work = mailbox.withLock { w -> [@Sendable (SensorHub<Bus>) -> Void] in defer { w.removeAll() }; return w }
        for w in work { w(hub) }
    }
}

/// A dedicated, joinable pthread for the loop (never the cooperative pool:
/// `Task.sleep` wake-ups have no bound under load).
public final class LoopThread: @unchecked Sendable {
    private var handle = pthread_t()
    private final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }

    public struct Failure: Error, CustomStringConvertible {
        public var errno: Int32
        public var description: String { "cannot start the loop thread: \(String(cString: strerror(errno)))" }
    }

    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(Failure) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let r = pthread_create(&handle, nil, { arg in
            let b = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            b.body()
            return nil
        }, box)
        if r != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            throw Failure(errno: r)
        }
        _ = name  // pthread_setname_np needs _GNU_SOURCE; the thread is named by its role in logs
    }

    public func join() { _ = pthread_join(handle, nil) }
}

/// Real-time scheduling for the calling thread, when the system permits.
public enum RealTime {
    /// Tries `SCHED_FIFO` at `priority` for the calling thread and
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)`. Returns a warning for each step
    /// that was not permitted (the loop then runs with normal scheduling).
    public static func apply(priority: Int32, lockMemory: Bool) -> [String] {
        var warnings: [String] = []
        var param = sched_param()
        param.sched_priority = priority
        let r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param)
        if r != 0 {
            warnings.append("SCHED_FIFO priority \(priority) not permitted (\(String(cString: strerror(r)))): the loop runs with normal scheduling. Grant it with LimitRTPRIO= in the systemd unit or CAP_SYS_NICE.")
        }
        if lockMemory, mlockall(Int32(MCL_CURRENT | MCL_FUTURE)) != 0 {
            let e = errno
            warnings.append("mlockall not permitted (\(String(cString: strerror(e)))): pages may be swapped out. Grant it with LimitMEMLOCK=infinity or CAP_IPC_LOCK.")
        }
        return warnings
    }
}
