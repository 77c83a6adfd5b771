import Testing
import EdgeBus
@testable import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

/// Every ScheduledFault kind gives the error a Linux adapter would, at the right times.
@Suite struct FaultTests {
    static let s: UInt64 = 1_000_000_000
    var s: UInt64 { Self.s }

    static func board(_ faults: [ScheduledFault]) throws -> (SimulatedBoard, VirtualClock) {
        let clock = VirtualClock(startNanoseconds: 10 * s)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal), truth: ConstantTruth(),
                                       clock: clock, seed: 5, faults: faults)
        return (board, clock)
    }

    @Test func nackOnARegisterWindow() throws {
        let (board, clock) = try Self.board([.nack(address: 0x68, register: 0x3B, from: 1, to: 2)])
        let bus = board.bus
        clock.sleep(untilNanoseconds: 10 * s + s / 2)
        _ = try bus.read(0x68, 0x3B, 14)
        clock.sleep(untilNanoseconds: 11 * s)
        let e = #expect(throws: I2CError.self) { _ = try bus.read(0x68, 0x3B, 14) }
        #expect(e?.kind == .noDevice && e?.errno == EREMOTEIO && e?.register == 0x3B && e?.address == 0x68)
        // A burst that runs over 0x3B is refused too; other registers answer.
        #expect(throws: I2CError.self) { _ = try bus.read(0x68, 0x3A, 2) }
        #expect(throws: I2CError.self) { try bus.write(0x68, [0x3B, 0x00]) }
        #expect(try bus.read(0x68, 0x75, 1) == [0x68])
        #expect(try bus.probe(address: 0x68))
        clock.sleep(untilNanoseconds: 12 * s)
        _ = try bus.read(0x68, 0x3B, 14)
        #expect(bus.statistics(forAddress: 0x68).failures == 3)
    }

    @Test func nackOnEverything() throws {
        let (board, clock) = try Self.board([.nack(address: 0x76, register: nil, from: 0, to: 1)])
        #expect(throws: I2CError.self) { _ = try board.bus.read(0x76, 0xD0, 1) }
        #expect(try board.bus.probe(address: 0x76) == false)
        clock.sleep(untilNanoseconds: 11 * s)
        #expect(try board.bus.read(0x76, 0xD0, 1) == [0x58])
    }

    @Test func errorEveryNthTransfer() throws {
        let (board, _) = try Self.board([.errorEvery(address: 0x76, every: 3, errno: EIO),
                                         .errorEvery(address: nil, every: 4, errno: EAGAIN)])
        var results: [I2CError.Kind?] = []
        for _ in 0..<6 {
            do { _ = try board.bus.read(0x76, 0xD0, 1); results.append(nil) } catch { results.append(error.kind) }
        }
        #expect(results == [nil, nil, .io, .busTimeout, nil, .io])
        let e = #expect(throws: I2CError.self) {
            for _ in 0..<2 { _ = try board.bus.read(0x0D, 0x0D, 1) }   // bus-wide counter: 7th, 8th
        }
        #expect(e?.errno == EAGAIN && e?.kind == .busTimeout && e?.address == 0x0D)
    }

    @Test func powerOnResetAtScheduledTime() throws {
        let (board, clock) = try Self.board([.reset(address: 0x68, at: 1)])
        try board.bus.write(0x68, [0x6B, 0x01])
        try board.bus.write(0x68, [0x19, 0x04])
        clock.sleep(untilNanoseconds: 11 * s - 1)
        #expect(try board.bus.read(0x68, 0x6B, 1) == [0x01])
        clock.sleep(untilNanoseconds: 11 * s)
        #expect(try board.bus.read(0x68, 0x6B, 1) == [0x40])
        #expect(try board.bus.read(0x68, 0x19, 1) == [0x00])
    }

    @Test func faultsForImpossibleAddressesAreHarmless() throws {
        let (board, clock) = try Self.board([.reset(address: 0x90, at: 0.1), .disappear(address: 0xFF, from: 0, to: 0.2)])
        clock.sleep(untilNanoseconds: 11 * s)
        #expect(try board.bus.read(0x68, 0x75, 1) == [0x68])
    }

    @Test func disappearAndComeBackReset() throws {
        let (board, clock) = try Self.board([.disappear(address: 0x0D, from: 1, to: 2)])
        try board.bus.write(0x0D, [0x0B, 0x01])
        try board.bus.write(0x0D, [0x09, 0x1D])
        clock.sleep(untilNanoseconds: 11 * s)
        let e = #expect(throws: I2CError.self) { _ = try board.bus.read(0x0D, 0x06, 1) }
        #expect(e?.kind == .noDevice && e?.errno == ENXIO)
        #expect(try board.bus.probe(address: 0x0D) == false)
        clock.sleep(untilNanoseconds: 12 * s)
        #expect(try board.bus.probe(address: 0x0D))
        #expect(try board.bus.read(0x0D, 0x09, 3) == [0, 0, 0])     // power-on values
    }

    @Test func dataReadyStopsAtReset() throws {
        let (board, clock) = try Self.board([.reset(address: 0x68, at: 0.0125)])
        try board.bus.write(0x68, [0x6B, 0x01])
        try board.bus.write(0x68, [0x19, 0x04, 0x01])                // DLPF 1: 1 kHz / 5 = 200 Hz
        try board.bus.write(0x68, [0x38, 0x01])
        let line = try #require(board.dataReadyLine(forAddress: 0x68))
        #expect(try line.waitForEdge(timeoutNanoseconds: s) == 10 * s + 5_000_000)
        #expect(try line.waitForEdge(timeoutNanoseconds: s) == 10 * s + 10_000_000)
        #expect(try line.waitForEdge(timeoutNanoseconds: 100_000_000) == nil)   // reset at 12.5 ms: asleep
        #expect(clock.nowNanoseconds == 10 * s + 110_000_000)
    }
}

@Suite struct BoardTests {
    static func script(_ bus: SimulatedBus, _ clock: VirtualClock) throws -> [UInt8] {
        try bus.write(0x68, [0x6B, 0x01])
        try bus.write(0x76, [0xF4, 0x57])
        try bus.write(0x0D, [0x0B, 0x01])
        try bus.write(0x0D, [0x09, 0x1D])
        var bytes: [UInt8] = []
        for _ in 0..<20 {
            clock.advance(nanoseconds: 40 * ms)
            bytes += try bus.read(0x68, 0x3B, 14)
            bytes += try bus.read(0x76, 0xF7, 6)
            bytes += try bus.read(0x0D, 0x00, 6)
        }
        return bytes
    }

    static func run(seed: UInt64) throws -> [UInt8] {
        let clock = VirtualClock(startNanoseconds: 1_000 * ms)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(), truth: ConstantTruth(),
                                       clock: clock, seed: seed)
        return try script(board.bus, clock)
    }

    @Test func sameSeedSameBytesDifferentSeedDifferent() throws {
        let a = try Self.run(seed: 11), b = try Self.run(seed: 11), c = try Self.run(seed: 12)
        #expect(a == b)
        #expect(a != c)
    }

    @Test func gy87MagnetometerNeedsBypass() throws {
        let clock = VirtualClock()
        let board = try SimulatedBoard(chips: SimulatedChipSpec.gy87(), truth: ConstantTruth(), clock: clock)
        #expect(try board.bus.probe(address: 0x0D) == false)
        #expect(try board.bus.probe(address: 0x77))
        try board.bus.write(0x68, [0x6B, 0x00])
        try board.bus.write(0x68, [0x6A, 0x00])
        try board.bus.write(0x68, [0x37, 0x02])
        #expect(try board.bus.read(0x0D, 0x0D, 1) == [0xFF])
    }

    @Test func identityOverridesAndLookAlikes() throws {
        let board = try SimulatedBoard(chips: [
            SimulatedChipSpec(kind: "mpu6050", address: 0x69, identity: 0x98),
            SimulatedChipSpec(kind: "bmp280", address: 0x77, identity: 0x60),
            SimulatedChipSpec(kind: "hmc5883l", address: 0x1E),
            SimulatedChipSpec(kind: "qmc5883p", address: 0x2C),
        ], truth: ConstantTruth(), clock: VirtualClock())
        #expect(try board.bus.read(0x69, 0x75, 1) == [0x98])
        #expect(try board.bus.read(0x77, 0xD0, 1) == [0x60])
        #expect(try board.bus.read(0x1E, 0x0A, 3) == [0x48, 0x34, 0x33])
        #expect(try board.bus.read(0x2C, 0x00, 1) == [0x80])
        #expect(board.bus.attachedAddresses == [0x1E, 0x2C, 0x69, 0x77])
    }

    @Test func badSpecsAreRejectedWithTheEntry() {
        let truth = ConstantTruth(), clock = VirtualClock()
        func error(_ chips: [SimulatedChipSpec]) -> SimulatedBoardError? {
            do { _ = try SimulatedBoard(chips: chips, truth: truth, clock: clock); return nil } catch { return error }
        }
        #expect(error([SimulatedChipSpec(kind: "bmp180", address: 0x77)])?.index == 0)
        #expect(error([SimulatedChipSpec(kind: "bmp280", address: 0x76), SimulatedChipSpec(kind: "bmp280", address: 0x76)])?.index == 1)
        #expect(error([SimulatedChipSpec(kind: "mpu6050", address: 0x68, boardFromChip: [[1, 0, 0], [0, 1, 0], [0, 0, -1]])]) != nil)
        #expect(error([SimulatedChipSpec(kind: "qmc5883l", address: 0x0D, behind: 0x68)]) != nil)
        #expect(error([SimulatedChipSpec(kind: "bmp280", address: 0x76, imperfections: .qmc5883l(.ideal))]) != nil)
    }
}
