import Testing
import EdgeBus
import EdgeChips
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// The rate bounds that tests of real agents used to assert on a real loop
/// thread (which a loaded machine or a sanitizer wakes late, so there they
/// measured the machine), asserted here on a virtual clock that wakes every
/// tick late by a scattered 0-3 ms (``LateClock``): the capture timestamps
/// follow the chip's sample clock, not the wake-ups.
@Suite struct JitteryWakeRateTests {
    /// The default configuration (config/edge-agent.json5: MPU-6050 at 200
    /// Hz, automatic batch, 20 ms delivery interval, QMC5883L at 50 Hz) with
    /// one client asking for device motion every 10 ms, as
    /// EdgeAgentCLITests/EmbeddedAgentTests does: the IMU follows demand to
    /// 100 Hz, read from the FIFO in batches, and every gap is 10 ± 0.5 ms.
    @Test func deviceMotionOfTheDefaultConfigurationIsTenMillisecondsApart() throws {
        var s = EngineSettings(imuBatch: 0)
        s.mpu6050.sampleRateHz = 200
        s.qmc5883l.outputRate = .hz50
        let (hub, loop, sink) = try Self.engine(settings: s, demand: [.deviceMotion: 0.01])
        hub.start()
        loop.run(maxTicks: 50)          // past start-up and the demand's re-rate
        sink.removeAll()
        loop.run(maxTicks: 200)
        #expect(hub.batch > 1, "FIFO batches, as the agent runs it: batch \(hub.batch)")
        let t = sink.samples.filter { $0.stream == .deviceMotion }.map(\.timestampNs)
        #expect(t.count > 300, "\(t.count) samples")
        let gaps = zip(t.dropFirst(), t).map { Int64($0) - Int64($1) }
        #expect(gaps.allSatisfy { abs($0 - 10_000_000) < 500_000 }, "gaps \(gaps.min() ?? 0)...\(gaps.max() ?? 0) ns")
    }

    /// What the Core Motion app tests ask the agent for (their intervals,
    /// the agent's default configuration), through the ``Decimator`` the
    /// agent and the client apply, asserted with CoreMotionAppTests'
    /// `atInterval` rule as it stood for a real agent before it was found to
    /// measure the machine. On a punctual clock: every gap within 5 % of the
    /// interval (the rule asked it of a quarter of them), the mean within
    /// 0.9-1.5 intervals, and the altimeter's samples 1 ± 0.1 s apart
    /// (AltimeterAppTests, ExampleAppTests' altitude log). On a clock that
    /// wakes 0-3 ms late every tick, the mean rule and the altimeter's still
    /// hold; single gaps of a polled chip do not (its samples are stamped
    /// when the loop reads them, and a tick that finds no new sample loses
    /// one), which is why the app tests no longer bound them.
    /// `wire`: the interval on the wire (the fastest manager of the
    /// process), `interval`: the one manager's.
    @Test(arguments: [(StreamName.accelerometer, 0.02, 0.02), (.accelerometer, 0.01, 0.01), (.accelerometer, 0.01, 0.05),
                      (.gyroscope, 0.1, 0.1), (.deviceMotion, 0.05, 0.05), (.altitude, 1.0, 1.0)])
    func theAppTestsIntervalsOnTheCaptureClock(_ stream: StreamName, _ wire: Double, _ interval: Double) throws {
        for late in [false, true] {
            var s = EngineSettings(imuBatch: 0)
            s.mpu6050.sampleRateHz = 200
            s.qmc5883l.outputRate = .hz50
            let (hub, loop, sink) = try Self.engine(settings: s, demand: [stream: wire], late: late)
            hub.start()
            let clock = hub.clock
            let settle = clock.nowNanoseconds + 500_000_000
            loop.run(until: { clock.nowNanoseconds >= settle })
            sink.removeAll()
            let end = clock.nowNanoseconds + UInt64(max(2, 12 * interval) * 1e9)
            loop.run(until: { clock.nowNanoseconds >= end })
            var onWire = Decimator(intervalNs: UInt64(wire * 1e9)), manager = Decimator(intervalNs: UInt64(interval * 1e9))
            let t = sink.samples.filter { $0.stream == stream }.map(\.timestampNs).filter { onWire.admit($0) && manager.admit($0) }
            let gaps = zip(t.dropFirst(), t).map { (Double($0) - Double($1)) / 1e9 }
            #expect(gaps.count >= 10, "\(stream): \(t.count) samples")
            let mean = gaps.reduce(0, +) / Double(max(1, gaps.count))
            let what = "\(stream) at \(interval) s\(late ? ", waking late" : ""): gaps \(gaps.min() ?? 0)...\(gaps.max() ?? 0) s, mean \(mean) s"
            if stream == .altitude {
                #expect(gaps.allSatisfy { abs($0 - 1) < 0.1 }, "\(what)")
            } else {
                #expect(mean > 0.9 * interval && mean < 1.5 * interval, "\(what)")
                if !late { #expect(gaps.allSatisfy { abs($0 - interval) < interval / 20 }, "\(what)") }
            }
        }
    }

    /// An engine on the reference board, on a virtual clock that wakes
    /// punctually or (`late`) 0-3 ms late every tick.
    static func engine(settings: EngineSettings, demand: [StreamName: Double], late: Bool = true) throws
        -> (SensorHub<SimulatedBus>, EngineLoop<SimulatedBus>, CollectingSink) {
        let clock: any TimeSource = late ? LateClock() : VirtualClock(startNanoseconds: 1_000_000_000)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.realistic), truth: ConstantTruth(),
                                       clock: clock, seed: 5)
        let devices = [EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
                       EngineDevice(id: "bmp280@0x76", kind: .bmp280, address: 0x76),
                       EngineDevice(id: "qmc5883l@0x0d", kind: .qmc5883l, address: 0x0D)]
        let sink = CollectingSink(demand: demand)
        let hub = SensorHub(bus: board.bus, clock: clock, devices: devices, settings: settings, sink: sink)
        return (hub, EngineLoop(hub: hub, clock: clock), sink)
    }
}
