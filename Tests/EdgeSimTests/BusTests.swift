import Testing
import EdgeBus
@testable import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

@Suite struct BusTests {
    func makeBus(faults: [ScheduledFault] = []) -> (SimulatedBus, VirtualClock) {
        let clock = VirtualClock(startNanoseconds: 1_000 * ms)
        let bus = SimulatedBus(clock: clock, faults: faults)
        bus.attach(IdentityOnlyDevice.hmc5883l(), at: 0x1E)
        bus.attach(IdentityOnlyDevice.qmc5883p(), at: 0x2C)
        return (bus, clock)
    }

    @Test func absentAddressIsNoDeviceENXIO() throws {
        let (bus, _) = makeBus()
        let e = #expect(throws: I2CError.self) { _ = try bus.read(0x50, 0x00, 1) }
        #expect(e?.kind == .noDevice)
        #expect(e?.errno == ENXIO)
        #expect(e?.address == 0x50)
        #expect(try bus.probe(address: 0x50) == false)
        #expect(try bus.probe(address: 0x1E) == true)
        #expect(bus.statistics(forAddress: 0x50).failures == 2)
    }

    @Test func identityDevicesAnswerTheirIDs() throws {
        let (bus, _) = makeBus()
        #expect(try bus.read(0x1E, 0x0A, 3) == [0x48, 0x34, 0x33])
        #expect(try bus.read(0x2C, 0x00, 1) == [0x80])
        // Identity registers are read-only.
        try bus.write(0x1E, [0x0A, 0x00])
        #expect(try bus.read(0x1E, 0x0A, 1) == [0x48])
        // A pointer-less read continues from the pointer.
        _ = try bus.read(0x1E, 0x0A, 1)
        #expect(try bus.readCurrent(0x1E, 2) == [0x34, 0x33])
        let s = bus.statistics(forAddress: 0x1E)
        #expect(s.transfers == 5 && s.failures == 0 && s.bytesRead == 7 && s.bytesWritten == 5)
    }
}
