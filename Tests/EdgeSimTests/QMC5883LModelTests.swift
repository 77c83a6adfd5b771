import Testing
import EdgeBus
import EdgeFusion
@testable import EdgeSim

/// QMC5883L behaviour against the QST data sheet rev 1.0 (registers re-declared here).
@Suite struct QMC5883LModelTests {
    static let addr: UInt8 = 0x0D
    static let STATUS: UInt8 = 0x06, CTRL1: UInt8 = 0x09, CTRL2: UInt8 = 0x0A, SET_RESET: UInt8 = 0x0B

    static func field(_ b: Vector3) -> PhysicalTruth {
        var t = PhysicalTruth.restingLevel
        t.magneticField = b
        return t
    }
    static let asymmetric = field(Vector3(20, -5, -40))

    struct Rig { let bus: SimulatedBus; let clock: VirtualClock; let qmc: QMC5883LModel }

    static func rig(_ truth: any TruthSource = ConstantTruth(asymmetric), imperfections: QMC5883LImperfections = .ideal,
                    mounting: Mounting = .identity) -> Rig {
        let clock = VirtualClock(startNanoseconds: 3_000 * ms)
        let qmc = QMC5883LModel(truth: truth, mounting: mounting, imperfections: imperfections, seed: 9,
                                powerOnAtNanoseconds: clock.nowNanoseconds)
        let bus = SimulatedBus(clock: clock)
        bus.attach(qmc, at: addr)
        return Rig(bus: bus, clock: clock, qmc: qmc)
    }

    func start(_ r: Rig, ctrl1: UInt8 = 0x1D) throws {
        try r.bus.write(Self.addr, [Self.SET_RESET, 0x01])
        try r.bus.write(Self.addr, [Self.CTRL1, ctrl1])
    }
    func xyz(_ r: Rig) throws -> [Int] {
        let b = try r.bus.read(Self.addr, 0x00, 6)
        return [le16(b, 0), le16(b, 2), le16(b, 4)]
    }
    func status(_ r: Rig) throws -> UInt8 { try r.bus.read(Self.addr, Self.STATUS, 1)[0] }

    @Test func powerOnIsStandbyWithID0xFF() throws {
        let r = Self.rig()
        #expect(try r.bus.read(Self.addr, 0x0D, 1) == [0xFF])
        #expect(try r.bus.read(Self.addr, Self.CTRL1, 3) == [0, 0, 0])
        r.clock.advance(nanoseconds: 500 * ms)
        #expect(try status(r) == 0)
        #expect(try xyz(r) == [0, 0, 0])
    }

    @Test func rangesGiveExactLittleEndianCounts() throws {
        for (ctrl1, perMicrotesla) in [(UInt8(0x1D), 30), (0x0D, 120)] {   // ±8 G: 3000 LSB/G; ±2 G: 12000 LSB/G
            let r = Self.rig()
            try start(r, ctrl1: ctrl1)
            r.clock.advance(nanoseconds: 4_999_999)
            #expect(try status(r) & 1 == 0)
            r.clock.advance(nanoseconds: 1)                 // 200 Hz: first sample at 5 ms
            #expect(try status(r) & 1 == 1)
            #expect(try xyz(r) == [20 * perMicrotesla, -5 * perMicrotesla, -40 * perMicrotesla])
            #expect(try status(r) & 1 == 0)                 // DRDY cleared by reading data
            #expect(try r.bus.read(Self.addr, 0x07, 2) == [0xD0, 0x07])   // 100 LSB/°C · 20 °C = 2000
        }
    }

    @Test func mountingRotatesIntoChipFrame() throws {
        // Chip upside down (rotated 180° about board X): chip Y = -board Y, chip Z = -board Z.
        let r = Self.rig(mounting: Mounting(boardFromChip: SimMatrix3([[1, 0, 0], [0, -1, 0], [0, 0, -1]])!))
        try start(r)
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try xyz(r) == [600, 150, 1200])
    }

    @Test(arguments: [(UInt8(0x01), 10), (0x05, 50), (0x09, 100), (0x0D, 200)])
    func outputDataRate(ctrl1: UInt8, hz: Int) throws {
        let r = Self.rig()
        try start(r, ctrl1: ctrl1)
        var samples = 0
        for _ in 0..<1000 {
            r.clock.advance(nanoseconds: 1 * ms)
            if try status(r) & 1 != 0 { samples += 1; _ = try xyz(r) }
        }
        #expect(samples == hz)
    }

    @Test func partialReadLocksOutputUntilZMSBIsRead() throws {
        let step = StepTruth(before: Self.asymmetric, after: Self.field(Vector3(-10, 30, 5)), stepAt: 3_050 * ms)
        let r = Self.rig(step)
        try start(r)
        r.clock.advance(nanoseconds: 5 * ms)
        let first = try r.bus.read(Self.addr, 0x00, 4)            // stops before Z: locked
        r.clock.advance(nanoseconds: 200 * ms)                     // truth stepped, 40 samples due
        #expect(try status(r) & 1 == 0)                            // DRDY stays 0 while locked
        #expect(try r.bus.read(Self.addr, 0x00, 4) == first)       // still the old sample
        #expect(try status(r) & 1 == 0)
        _ = try r.bus.read(Self.addr, 0x05, 1)                     // reading Z MSB releases the lock
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try status(r) & 1 == 1)
        #expect(try xyz(r) == [-300, 900, 150])
    }

    @Test func dataOverrunWhenASampleIsSkipped() throws {
        let r = Self.rig()
        try start(r)
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try status(r) == 0x01)
        r.clock.advance(nanoseconds: 5 * ms)                       // second sample, first unread
        #expect(try status(r) == 0x05)                             // DRDY + DOR
        _ = try xyz(r)                                             // data read after the status read
        #expect(try status(r) == 0x00)
    }

    @Test func overflowSaturatesAndSetsOVL() throws {
        let r = Self.rig(ConstantTruth(Self.field(Vector3(300, -300, 10))))   // 3 G
        try start(r, ctrl1: 0x0D)                                  // ±2 G
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try status(r) == 0x03)
        #expect(try xyz(r) == [32767, -32768, 1200])
        try r.bus.write(Self.addr, [Self.CTRL1, 0x1D])             // ±8 G: in range
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try status(r) == 0x01)
        #expect(try xyz(r) == [9000, -9000, 300])
    }

    @Test func withoutSetResetPeriodOutputIsZero() throws {
        let r = Self.rig()
        try r.bus.write(Self.addr, [Self.CTRL1, 0x1D])
        r.clock.advance(nanoseconds: 5 * ms)
        #expect(try status(r) & 1 == 1)
        #expect(try xyz(r) == [0, 0, 0])
    }

    @Test func softResetReturnsToStandby() throws {
        let r = Self.rig()
        try start(r)
        try r.bus.write(Self.addr, [Self.CTRL2, 0x41])
        r.clock.advance(nanoseconds: 5 * ms)
        try r.bus.write(Self.addr, [Self.CTRL2, 0x80])
        #expect(try r.bus.read(Self.addr, Self.CTRL1, 3) == [0, 0, 0])
        r.clock.advance(nanoseconds: 100 * ms)
        #expect(try status(r) == 0)
    }

    @Test func pointerRollOver() throws {
        let r = Self.rig()
        try start(r)
        try r.bus.write(Self.addr, [Self.CTRL2, 0x40])             // ROL_PNT
        r.clock.advance(nanoseconds: 5 * ms)
        let b = try r.bus.read(Self.addr, 0x00, 9)
        #expect(Array(b[7...]) == Array(b[0..<2]))
        try r.bus.write(Self.addr, [Self.CTRL2, 0x00])
        #expect(try r.bus.read(Self.addr, 0x05, 4)[3] == 0x07)      // no roll-over: 0x05..0x08 (TOUT MSB)
    }

    @Test func noiseAndToleranceFollowOSR() throws {
        for (osrBits, osr) in [(UInt8(0), 512.0), (3, 64.0)] {
            var imp = QMC5883LImperfections.ideal
            imp.field.noiseScale = 1
            let r = Self.rig(imperfections: imp)
            try start(r, ctrl1: osrBits << 6 | 0x0D)                // ±2 G, 200 Hz
            var xs: [Double] = []
            var outside = 0
            let tol = r.qmc.roundTripTolerance.magneticField
            for _ in 0..<600 {
                r.clock.advance(nanoseconds: 5 * ms)
                let v = try xyz(r)
                xs.append(Double(v[0]) / 120)
                for i in 0..<3 where abs(Double(v[i]) / 120 - Self.asymmetric.magneticField[i]) > tol[i] { outside += 1 }
            }
            let mean = xs.reduce(0, +) / Double(xs.count)
            let sd = (xs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(xs.count)).squareRoot()
            let expected = 0.2 * (512 / osr).squareRoot()              // 2 mG at OSR 512
            #expect(abs(sd - expected) < 0.1 * expected)
            #expect(outside < 10)
        }
    }

    @Test func dataReadyPin() throws {
        let r = Self.rig()
        try start(r)                                                // 200 Hz
        let t0 = r.clock.nowNanoseconds
        let line = try #require(r.bus.dataReadyLine(forAddress: Self.addr))
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == t0 + 5 * ms)
        #expect(try line.waitForEdge(timeoutNanoseconds: 20 * ms) == nil)   // DRDY high until read
        _ = try xyz(r)
        #expect(try line.waitForEdge(timeoutNanoseconds: 100 * ms) == t0 + 30 * ms)
    }
}
