import Testing
import EdgeBus
import EdgeChips
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// After the barometer is re-initialised, its first read waits for the
/// first conversion *from when the configuration was written*, not from the
/// tick that began the re-initialisation. The re-initialisation (soft reset,
/// its start-up wait, 24 bytes of trimming, configure, read back) takes bus
/// time; when that time is longer than one conversion (a slow bus, or a
/// loaded machine descheduling the loop between transfers), a read timed
/// from the tick comes before the conversion and reads the reset value
/// 0x80000, which says "the chip was reset": a second outage reported, and
/// a second re-initialisation, for a chip that is fine. Seen through a real
/// agent under ThreadSanitizer on a loaded machine (FaultMatrixDaemonTests,
/// the flaky-bus run); here the bus time is the simulated bus's, at a slow
/// SCL rate, on a virtual clock.
@Suite struct BarometerReinitialiseTests {
    @Test(arguments: [100_000.0, 20_000.0, 5_000.0])
    func oneResetIsOneOutage(sclHz: Double) throws {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76, imperfections: .realistic)],
                                       truth: ConstantTruth(), clock: clock, seed: 7,
                                       faults: [.reset(address: 0x76, at: 1.0)])
        board.bus.bitRateHz = sclHz
        let sink = CollectingSink()
        let hub = SensorHub(bus: board.bus, clock: clock, devices: [EngineDevice(id: "bmp280@0x76", kind: .bmp280, address: 0x76)],
                            settings: EngineSettings(), sink: sink)
        hub.start()
        let loop = EngineLoop(hub: hub, clock: clock)
        let end = board.bus.absolute(3.0)
        loop.run(until: { clock.nowNanoseconds >= end })

        let events = sink.events.filter { $0.deviceID == "bmp280@0x76" }
        let off = events.filter { !$0.connected }
        #expect(off.count == 1, "at \(sclHz) Hz SCL: \(events.map { "\($0.connected ? "on" : "off") \($0.reason ?? "")" })")
        #expect(events.last?.connected == true)
        let after = sink.samples.filter { $0.stream == .altitude && $0.timestampNs > board.bus.absolute(1.0) }
        #expect(after.count > 10, "altitude resumed after the reset: \(after.count) samples")
    }
}
