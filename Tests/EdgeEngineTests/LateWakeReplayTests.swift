import Testing
import EdgeBus
import EdgeChips
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// A clock that wakes late by a varying amount, like a loaded machine.
final class LateClock: TimeSource, @unchecked Sendable {
    private(set) var nowNanoseconds: UInt64 = 1_000_000_000
    private var n: UInt64 = 0
    func sleep(untilNanoseconds deadline: UInt64) {
        n &+= 1
        let late = (n &* 2_654_435_761) % 3_000_000   // 0 … 3 ms, scattered
        nowNanoseconds = max(nowNanoseconds, deadline &+ late)
    }
}

@Suite struct LateWakeReplayTests {
    /// What is due in a tick is decided on the tick's schedule, not its wake-up
    /// time: a recording made with late, jittery wake-ups replays through the
    /// same engine without leaving the recording, and gives the same samples.
    @Test func aJitteryLiveRecordingReplaysExactly() throws {
        let clock = LateClock()
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                                       clock: clock, seed: 3)
        let writer = TransactionLogWriter(header: TransactionLogHeader(bus: "simulated", startNanoseconds: clock.nowNanoseconds))
        let recording = RecordingBus(board.bus, log: writer, clock: clock)
        var settings = EngineSettings()
        settings.mpu6050.sampleRateHz = 200
        let devices = [EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
                       EngineDevice(id: "bmp280@0x76", kind: .bmp280, address: 0x76),
                       EngineDevice(id: "qmc5883l@0x0d", kind: .qmc5883l, address: 0x0D)]
        let live = CollectingSink()
        let hub = SensorHub(bus: recording, clock: clock, devices: devices, settings: settings, sink: live)
        hub.start()
        EngineLoop(hub: hub, clock: clock).run(maxTicks: 400)
        #expect(live.samples.count > 1000)

        let log = try TransactionLog.parse(writer.text)
        let replayClock = ReplayClock(log: log)
        let bus = ReplayBus(log: log, clock: replayClock)
        let replayed = CollectingSink()
        let hub2 = SensorHub(bus: bus, clock: replayClock, devices: devices, settings: settings, sink: replayed)
        hub2.start()
        EngineLoop(hub: hub2, clock: replayClock).run(until: { bus.isAtEnd || bus.divergence != nil })
        #expect(bus.divergence == nil, "\(String(describing: bus.divergence))")
        let a = live.samples, b = replayed.samples
        let firstDifference = (0..<min(a.count, b.count)).first { a[$0] != b[$0] }
        #expect(a.count == b.count && firstDifference == nil,
                "live \(a.count) samples, replay \(b.count); first difference at \(String(describing: firstDifference))")
    }
}
