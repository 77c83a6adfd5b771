// Round trips truth → HMC5883LModel registers → real HMC5883L driver → µT:
// every gain × output rate, noise on, deterministic errors off; overflow,
// idle, the first measurement after a gain change, the data lock a mode
// register read sets, and a power-on reset caught by the configuration check.
import Testing
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeSim

@Suite struct DriverRoundTripHMC5883LTests {
    static let noisy = HMC5883LImperfections(field: AxisImperfections(noiseScale: 1), clockError: 0)
    /// An asymmetric field well inside ±0.88 G: (23.4, −11.2, −41.7) µT.
    static let field = SIMD3<Double>(23.4, -11.2, -41.7)

    struct Rig {
        var clock: VirtualClock
        var board: SimulatedBoard
        var mag: HMC5883L<SimulatedBus>
        var model: HMC5883LModel
        var truth: ConstantTruth
    }

    static func start(_ config: HMC5883LConfiguration, field: SIMD3<Double> = field,
                      mounting: [[Double]] = TestMounting.identity, seed: UInt64 = 3) throws -> Rig {
        let clock = VirtualClock(startNanoseconds: 5_000_000_000)
        var t = PhysicalTruth.restingLevel
        t.magneticField = field
        let truth = ConstantTruth(t)
        let board = try SimulatedBoard(
            chips: [SimulatedChipSpec(kind: "hmc5883l", address: 0x1E, boardFromChip: mounting, imperfections: .hmc5883l(noisy))],
            truth: truth, clock: clock, seed: seed)
        var mag = HMC5883L(bus: board.bus, address: 0x1E, clock: clock)
        try mag.start(config)
        let model = try #require(board.hmc5883l(at: 0x1E))
        return Rig(clock: clock, board: board, mag: mag, model: model, truth: truth)
    }

    /// Reads `n` fields, one output period apart; gives up (an issue, not a
    /// hang) after 10·n + 10 periods without them: a chip whose output froze.
    static func fields(_ rig: inout Rig, _ n: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> [SIMD3<Double>] {
        var out: [SIMD3<Double>] = []
        let period = UInt64(1e9 / rig.mag.configuration.outputRate.hertz) + 1
        var polls = 0
        while out.count < n && polls < 10 * n + 10 {
            rig.clock.advance(nanoseconds: period)
            polls += 1
            if case .field(let f) = try rig.mag.readField() { out.append(f) }
        }
        #expect(out.count == n, "only \(out.count) of \(n) fields in \(polls) output periods: the output froze", sourceLocation: sourceLocation)
        return out
    }

    static let cases: [(HMC5883LGain, HMC5883LOutputRate)] = HMC5883LGain.allCases.flatMap { g in
        [HMC5883LOutputRate.hz75, .hz15, .hz0_75].map { (g, $0) }
    }

    @Test(arguments: cases)
    func aKnownFieldReadsBackWithinTheChipsResolution(gain: HMC5883LGain, rate: HMC5883LOutputRate) throws {
        var rig = try Self.start(HMC5883LConfiguration(mode: .continuous, outputRate: rate, gain: gain, averaging: .x8))
        let tol = rig.model.roundTripTolerance.magneticField
        for f in try Self.fields(&rig, 5) {
            for i in 0..<3 {
                #expect(abs(f[i] - Self.field[i]) <= tol[i], "axis \(i): \(f[i]) vs \(Self.field[i]) ± \(tol[i]) µT")
            }
        }
        // The resolution is the gain's: 1 LSB ≤ 0.435 µT at ±8.1 G.
        #expect(tol.x <= 1 / (gain.lsbPerGauss / 100) + 3 * 0.2 / 8.0.squareRoot() + 1e-12)
    }

    @Test func mountingIsAppliedByTheModelAndUndoneByNobody() throws {
        // The driver reports chip axes: a yaw-90 mounting turns board X into chip −Y.
        var rig = try Self.start(.default, mounting: TestMounting.yaw90)
        let f = try #require(try Self.fields(&rig, 1).first)
        let tol = rig.model.roundTripTolerance.magneticField.max()
        #expect(abs(f.x - Self.field.y) <= tol && abs(f.y + Self.field.x) <= tol && abs(f.z - Self.field.z) <= tol, "\(f)")
    }

    @Test func aFieldBeyondTheRangeIsOverflowNotANumber() throws {
        // 120 µT on X at ±0.88 G: 1644 counts fits; 200 µT = 2740 counts > 2047: -4096.
        // (The first sample after start is dropped: it was measured with the power-on gain.)
        var rig = try Self.start(HMC5883LConfiguration(gain: .gauss0_88), field: SIMD3(200, 0, 10))
        var reading = MagneticFieldReading.notReady
        for _ in 0..<4 where reading == .notReady {
            rig.clock.advance(nanoseconds: 14_000_000)
            reading = try rig.mag.readField()
        }
        #expect(reading == .overflow)
        #expect(rig.mag.overflowCount >= 1)
    }

    @Test func idleMeasuresNothing() throws {
        var rig = try Self.start(.default)
        try rig.mag.configure(HMC5883LConfiguration.default.idle())
        rig.clock.advance(nanoseconds: 1_000_000_000)
        #expect(try rig.mag.readField() == .notReady)
    }

    @Test func theFirstSampleAfterAGainChangeIsDropped() throws {
        var rig = try Self.start(HMC5883LConfiguration(gain: .gauss1_3))
        _ = try Self.fields(&rig, 1)
        try rig.mag.configure(HMC5883LConfiguration(gain: .gauss4_0))
        rig.clock.advance(nanoseconds: 14_000_000)
        #expect(try rig.mag.readField() == .notReady, "measured with the old gain (DS Configuration Register B)")
        let f = try #require(try Self.fields(&rig, 1).first)
        let tol = rig.model.roundTripTolerance.magneticField
        #expect(abs(f.z - Self.field.z) <= tol.z, "\(f.z) vs \(Self.field.z)")
    }

    @Test func theConfigurationCheckDoesNotFreezeTheOutput() throws {
        // Reading the mode register sets LOCK: without the driver releasing it
        // no measurement would land again.
        var rig = try Self.start(.default)
        _ = try Self.fields(&rig, 1)
        for _ in 0..<3 {
            try rig.mag.verifyConfiguration()
            _ = try Self.fields(&rig, 2)
        }
        #expect(rig.mag.lockReleaseCount >= 1)
    }

    @Test func aPowerOnResetIsCaughtByTheConfigurationCheck() throws {
        var rig = try Self.start(.default)
        rig.model.powerOnReset(atNanoseconds: rig.clock.nowNanoseconds)
        #expect(throws: DriverError.configurationMismatch(chip: .hmc5883l, address: 0x1E, register: 0x00,
                                                          expected: 0x78, mask: 0xFF, found: 0x10)) {
            try rig.mag.verifyConfiguration()
        }
        // and start() brings it back
        try rig.mag.start(.default)
        #expect(!(try Self.fields(&rig, 1)).isEmpty)
    }

    @Test func probeCallsItSupported() throws {
        let rig = try Self.start(.default)
        let id = try identifyChip(on: rig.board.bus, at: 0x1E)
        #expect(id.chip == .hmc5883l)
    }
}
