#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import EdgeBus
import EdgeFusion
@testable import EdgeSim

@Suite struct SpecCodingTests {
    @Test func decodesPartialSpecsWithDefaults() throws {
        let json = """
        [{"kind": "mpu6050", "address": 104, "boardFromChip": [[0, -1, 0], [1, 0, 0], [0, 0, 1]],
          "imperfections": {"mpu6050": {"accel": {"bias": [0.1, 0, 0]}, "pllClockError": 0}}},
         {"kind": "bmp280", "address": 118, "identity": 96, "imperfections": "ideal"},
         {"kind": "qmc5883l", "address": 13, "behind": 104, "body": "board"}]
        """
        let specs = try JSONDecoder().decode([SimulatedChipSpec].self, from: Data(json.utf8))
        #expect(specs.count == 3)
        guard case .mpu6050(let imp) = specs[0].imperfections else { Issue.record("kind"); return }
        #expect(imp.accel.bias == [0.1, 0, 0])
        #expect(imp.accel.noiseScale == 1)                                        // default kept
        #expect(imp.gyro == MPU6050Imperfections.realistic.gyro)
        #expect(imp.pllClockError == 0)
        #expect(specs[1].imperfections == .ideal && specs[1].identity == 0x60)
        #expect(specs[2].imperfections == .realistic && specs[2].behind == 0x68)
        #expect(specs[2].boardFromChip == SimMatrix3.identity.rows)
        // Round trip through the encoder.
        let again = try JSONDecoder().decode([SimulatedChipSpec].self, from: JSONEncoder().encode(specs))
        #expect(again == specs)
        // And it builds.
        let board = try SimulatedBoard(chips: specs, truth: ConstantTruth(), clock: VirtualClock())
        #expect(try board.bus.read(0x76, 0xD0, 1) == [0x60])
    }

    @Test func rejectsUnknownPreset() {
        let json = #"{"kind": "bmp280", "address": 118, "imperfections": "perfect"}"#
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(SimulatedChipSpec.self, from: Data(json.utf8)) }
    }
}

@Suite struct MoreBehaviourTests {
    @Test func bitRateMakesTransfersTakeBusTime() throws {
        let clock = VirtualClock()
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal), truth: ConstantTruth(), clock: clock)
        board.bus.bitRateHz = 100_000
        _ = try board.bus.read(0x68, 0x3B, 14)
        // START+addr, reg, rSTART+addr, 14 data = 17 bytes × 9 clocks + 2 = 155 clocks at 100 kHz.
        #expect(clock.nowNanoseconds == 1_550_000)
    }

    @Test func fifoCountHighByteLatchesTheCount() throws {
        let clock = VirtualClock()
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal), truth: ConstantTruth(), clock: clock)
        let bus = board.bus
        try bus.write(0x68, [0x6B, 0x01])
        try bus.write(0x68, [0x19, 0x00, 0x01])
        try bus.write(0x68, [0x23, 0xF8])                       // accel+temp+gyro: 14-byte records
        try bus.write(0x68, [0x6A, 0x44])
        clock.advance(nanoseconds: 18 * ms)                     // 252 bytes = 0x00FC
        let h = try bus.read(0x68, 0x72, 1)[0]
        clock.advance(nanoseconds: 1 * ms)                      // 266 = 0x010A, but L comes from the latch
        let l = try bus.read(0x68, 0x73, 1)[0]
        #expect(h == 0x00 && l == 0xFC)
        #expect(try bus.read(0x68, 0x72, 2) == [0x01, 0x0A])
    }

    @Test func realisticBMP280MeasuringFlagLagsTheForcedWrite() throws {
        let clock = VirtualClock()
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "bmp280", address: 0x76)],
                                       truth: ConstantTruth(), clock: clock)
        clock.advance(nanoseconds: 2 * ms)
        try board.bus.write(0x76, [0xF4, 0x25])
        #expect(try board.bus.read(0x76, 0xF3, 2) == [0x00, 0x25])   // measuring still 0; mode bits say busy
        clock.advance(nanoseconds: 100_000)
        #expect(try board.bus.read(0x76, 0xF3, 1) == [0x08])
    }

    @Test func bme280StandbyCodes() throws {
        let clock = VirtualClock()
        let bme = BMP280Model(truth: ConstantTruth(), variant: .bme280, imperfections: .ideal)
        let bus = SimulatedBus(clock: clock)
        bus.attach(bme, at: 0x76)
        try bus.write(0x76, [0xF5, 0xC0])                        // t_sb 110: 10 ms on a BME280
        try bus.write(0x76, [0xF4, 0x27])                        // ×1 ×1 normal: 5.5 ms + 10 ms
        var starts = 0
        var wasMeasuring = false
        for _ in 0..<1550 {
            let m = try bus.read(0x76, 0xF3, 1)[0] & 0x08 != 0
            if m && !wasMeasuring { starts += 1 }
            wasMeasuring = m
            clock.advance(nanoseconds: 100_000)
        }
        #expect(starts == 10)                                    // 155 ms / 15.5 ms
    }

    @Test func realisticBoardReadsNearTheTruth() throws {
        let clock = VirtualClock()
        let truth = PhysicalTruth.restingLevel
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(), truth: ConstantTruth(truth),
                                       clock: clock, seed: 99)
        let bus = board.bus
        try bus.write(0x68, [0x6B, 0x01])
        try bus.write(0x68, [0x1A, 0x03])
        try bus.write(0x0D, [0x0B, 0x01])
        try bus.write(0x0D, [0x09, 0x1D])
        clock.advance(nanoseconds: 10 * ms)
        let a = try bus.read(0x68, 0x3B, 6)
        let az = Double(be16(a, 4)) / 16384 * 9.80665
        #expect(abs(az - 9.80665) < 0.6)                         // bias + scale + noise, < 60 mg
        let m = try bus.read(0x0D, 0x00, 6)
        #expect(abs(Double(le16(m, 0)) / 30 - truth.magneticField.x) < 8)   // hard iron a few µT
        let mpu = try #require(board.mpu6050(at: 0x68))
        #expect(mpu.roundTripTolerance.accel.x > 0)
        #expect(board.bmp280(at: 0x76) != nil && board.qmc5883l(at: 0x0D) != nil && board.bmp280(at: 0x68) == nil)
    }
}
