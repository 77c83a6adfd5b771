// Every ScheduledFault kind reaches the real drivers as the typed error a
// Linux adapter would give, at the scheduled times on the virtual clock,
// and the drivers recover the way docs/drivers.md says.
//
// What a real bus gives (LinuxI2CBus turns the ioctl's errno into
// I2CError(errno:)): a NACK is EREMOTEIO on the Pi's i2c-bcm2835 (ENXIO on
// some other adapters) → kind .noDevice; an absent device ENXIO (or
// EREMOTEIO on the Pi) → .noDevice; EIO → .io; EAGAIN / ETIMEDOUT →
// .busTimeout. The simulator's errors are checked against that same
// errno → kind mapping.
import Testing
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeSim
#if canImport(Glibc)
import Glibc
#endif

@Suite struct DriverFaultTests {
    static let s = nsPerSecond
    /// The board is built (fault time zero) at 20 s on the virtual clock.
    static let t0: UInt64 = 20 * nsPerSecond

    static var truth: PhysicalTruth {
        var t = PhysicalTruth.restingLevel
        t.specificForce = SIMD3(1.3, -2.7, 9.1)
        t.angularRate = SIMD3(0.21, -0.43, 0.65)
        t.magneticField = SIMD3(23.4, -11.2, -41.7)
        t.pressure = 95_000
        t.temperature = 12.3
        return t
    }

    /// All three chips, deterministic errors and noise off (exact values),
    /// and the three drivers started (MPU at 1 kHz, BMP280 normal, QMC 100 Hz).
    struct Rig {
        var clock: VirtualClock
        var board: SimulatedBoard
        var mpu: MPU6050<SimulatedBus>
        var bmp: BMP280<SimulatedBus>
        var mag: QMC5883L<SimulatedBus>
        var bus: SimulatedBus { board.bus }

        func at(_ seconds: Double) { clock.sleep(untilNanoseconds: t0 + UInt64((seconds * 1e9).rounded())) }
    }

    static let mpuConfig = MPU6050Configuration(gyroRange: .dps500, accelRange: .g4, dlpf: .hz184, sampleRateHz: 1000)
    static let bmpConfig = BMP280Configuration.default
    static let magConfig = QMC5883LConfiguration(mode: .continuous, outputRate: .hz100, range: .gauss8, oversampling: .x512)

    static func start(_ faults: [ScheduledFault], absentErrno: Int32? = nil) throws -> Rig {
        let clock = VirtualClock(startNanoseconds: t0)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal), truth: ConstantTruth(truth),
                                       clock: clock, seed: 3, faults: faults)
        if let e = absentErrno { board.bus.absentErrno = e }
        var mpu = MPU6050(bus: board.bus, address: 0x68, clock: clock)
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        var mag = QMC5883L(bus: board.bus, address: 0x0D, clock: clock)
        try mpu.start(mpuConfig)
        try bmp.start(bmpConfig)
        try mag.start(magConfig)
        return Rig(clock: clock, board: board, mpu: mpu, bmp: bmp, mag: mag)
    }

    /// Runs `body`, expects `DriverError.bus`, and checks the I2C error's
    /// kind, errno, address and (if given) register; returns it.
    @discardableResult
    static func expectBusError(_ kind: I2CError.Kind, errno: Int32, address: UInt8, register: UInt8? = nil,
                               _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
                               _ body: () throws -> Void) -> I2CError? {
        let e = #expect(throws: DriverError.self, "\(what)", sourceLocation: sourceLocation) { try body() }
        guard let e else { return nil }
        guard let bus = e.i2cError else {
            Issue.record("\(what): expected DriverError.bus, got \(e)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(bus.kind == kind && bus.errno == errno && bus.address == address,
                "\(what): \(bus.kind) errno \(bus.errno) at \(bus.address.map(hex) ?? "-")", sourceLocation: sourceLocation)
        if let register { #expect(bus.register == register, "\(what): register \(bus.register.map(hex) ?? "-")", sourceLocation: sourceLocation) }
        // The same errno → kind mapping as errors from the real adapter.
        #expect(bus.kind == I2CError(errno: bus.errno, bus: "/dev/i2c-1", operation: "x").kind, sourceLocation: sourceLocation)
        #expect(bus.bus == "simulated", sourceLocation: sourceLocation)
        return bus
    }

    static func expectTruth(_ s: MPU6050Sample, sourceLocation: SourceLocation = #_sourceLocation) {
        let a = 9.80665 / 8192, g = Double.pi / 180 / 65.5
        for i in 0..<3 {
            #expect(abs(s.acceleration[i] - truth.specificForce[i]) <= a, "accel \(s.acceleration)", sourceLocation: sourceLocation)
            #expect(abs(s.rotationRate[i] - truth.angularRate[i]) <= g, "gyro \(s.rotationRate)", sourceLocation: sourceLocation)
        }
    }

    // MARK: nack

    @Test func errnoValuesAreTheLinuxOnes() {
        #expect(EREMOTEIO == 121 && EIO == 5 && ENXIO == 6)
    }

    /// A NACK window on the MPU-6050's data register: reads that touch 0x3B
    /// fail with EREMOTEIO (.noDevice) exactly inside [1 s, 2 s); other
    /// registers still answer; afterwards the data is right again.
    @Test func nackOnTheMPUDataRegister() throws {
        var rig = try Self.start([.nack(address: 0x68, register: 0x3B, from: 1, to: 2)])
        rig.at(1 - 1e-9)
        Self.expectTruth(try rig.mpu.read())
        rig.at(1)
        let e = Self.expectBusError(.noDevice, errno: 121, address: 0x68, register: 0x3B, "read() at 1 s") { _ = try rig.mpu.read() }
        #expect(e?.operation == "write 1 + read 14 bytes")
        // INT_STATUS + sample (0x3A, 15 bytes) spans 0x3B: refused too.
        Self.expectBusError(.noDevice, errno: 121, address: 0x68, register: 0x3A, "readRawIfReady() at 1.5 s") {
            rig.at(1.5); _ = try rig.mpu.readRawIfReady()
        }
        // Registers outside the window answer.
        #expect(try rig.mpu.identify().isGenuine)
        try rig.mpu.verifyConfiguration()
        rig.at(2 - 1e-9)
        Self.expectBusError(.noDevice, errno: 121, address: 0x68, register: 0x3B, "read() just before 2 s") { _ = try rig.mpu.read() }
        rig.at(2)
        Self.expectTruth(try rig.mpu.read())
        // Other chips were never affected.
        #expect(try rig.bmp.read().pressurePascals != nil)
        #expect(rig.bus.statistics(forAddress: 0x68).failures == 3)
        #expect(rig.bus.statistics(forAddress: 0x76).failures == 0)
    }

    /// A NACK on the QMC5883L's data burst: STATUS answers (DRDY), the burst
    /// fails. The failed burst never reached the chip: after the window, with
    /// no new sample landed, DRDY is still set and the same sample reads.
    @Test func nackOnTheMagnetometerDataBurst() throws {
        var rig = try Self.start([])
        let anchor = rig.clock.nowNanoseconds            // CTRL1 written: samples at anchor + k·10 ms
        let rel = Double(anchor - Self.t0) / 1e9
        rig.bus.schedule(.nack(address: 0x0D, register: 0x00, from: rel + 0.044, to: rel + 0.046))
        rig.clock.sleep(untilNanoseconds: anchor + 35_000_000)
        #expect(try rig.mag.read().sample != nil)                    // sample 3 read
        rig.clock.sleep(untilNanoseconds: anchor + 45_000_000)       // sample 4 landed, inside the window
        Self.expectBusError(.noDevice, errno: EREMOTEIO, address: 0x0D, register: 0x00, "QMC read() in the window") {
            _ = try rig.mag.read()
        }
        rig.clock.sleep(untilNanoseconds: anchor + 46_000_000)       // window over, sample 5 not yet due
        let s = try #require(try rig.mag.read().sample, "DRDY was cleared by a burst that failed")
        #expect(abs(s.magneticField.x - 23.4) < 0.05 && abs(s.magneticField.y + 11.2) < 0.05 && abs(s.magneticField.z + 41.7) < 0.05)
        #expect(!s.dataSkipped)
        #expect(try rig.mag.read() == .notReady)
    }

    /// NACK on every register of the BMP280: identify, read and a forced
    /// measure() all fail with EREMOTEIO; probe says absent.
    @Test func nackOnEveryBMP280Register() throws {
        var rig = try Self.start([.nack(address: 0x76, register: nil, from: 0.5, to: 0.75)])
        rig.at(0.5)
        Self.expectBusError(.noDevice, errno: EREMOTEIO, address: 0x76, register: 0xD0, "identify") { try rig.bmp.identify() }
        Self.expectBusError(.noDevice, errno: EREMOTEIO, address: 0x76, register: 0xF7, "read") { _ = try rig.bmp.read() }
        Self.expectBusError(.noDevice, errno: EREMOTEIO, address: 0x76, register: 0xF5, "verifyConfiguration") {
            try rig.bmp.verifyConfiguration()
        }
        #expect(try rig.bus.probe(address: 0x76) == false)
        rig.at(0.75)
        #expect(try rig.bus.probe(address: 0x76))
        let p = try #require(try rig.bmp.read().pressurePascals)
        #expect(abs(p - 95_000) < 2)
        try rig.bmp.verifyConfiguration()
    }

    // MARK: errorEvery

    /// Every n-th transfer fails with the scheduled errno, mapped to its
    /// kind; the failed transfer does not reach the chip.
    @Test(arguments: [(EIO, I2CError.Kind.io), (EAGAIN, .busTimeout), (ETIMEDOUT, .busTimeout)])
    func errorEveryThirdTransfer(_ errno: Int32, _ kind: I2CError.Kind) throws {
        var rig = try Self.start([])
        rig.bus.schedule(.errorEvery(address: 0x68, every: 3, errno: errno))
        var outcome: [Bool] = []
        for k in 0..<6 {
            rig.at(0.2 + Double(k) * 0.0105)
            do { Self.expectTruth(try rig.mpu.read()); outcome.append(true) } catch {
                outcome.append(false)
                guard let e = error.i2cError else { Issue.record("expected a bus error, got \(error)"); continue }
                #expect(e.kind == kind && e.errno == errno && e.address == 0x68 && e.register == 0x3B)
            }
        }
        #expect(outcome == [true, true, false, true, true, false])
        // Transfers 7, 8 succeed, 9 fails: a failed readRawIfReady leaves
        // DATA_RDY set (INT_STATUS was never read), so the next one still
        // sees the sample.
        rig.at(0.3)
        #expect(try rig.mpu.readRawIfReady() != nil)                       // 7
        rig.at(0.3015)
        #expect(try rig.mpu.readRawIfReady() != nil)                       // 8
        rig.at(0.3035)
        Self.expectBusError(kind, errno: errno, address: 0x68, register: 0x3A, "9th transfer") {
            _ = try rig.mpu.readRawIfReady()                                 // 9: fails
        }
        let s = try #require(try rig.mpu.readRawIfReady(), "DATA_RDY was cleared by a transfer that failed")   // 10
        Self.expectTruth(MPU6050Decoder.decode(s, scales: rig.mpu.scales))
        // Other addresses are not counted by an address-bound schedule.
        for _ in 0..<5 { _ = try rig.mag.read() }
    }

    /// EIO on every 4th transfer to any address (EIO = 5 → .io): one
    /// counter for the whole bus, whichever driver makes the transfer.
    @Test func errorEveryOnTheWholeBus() throws {
        var rig = try Self.start([])
        try rig.bmp.configure(BMP280Configuration(mode: .forced, filter: .off))
        rig.bus.schedule(.errorEvery(address: nil, every: 4, errno: EIO))
        rig.at(0.3)
        _ = try rig.mpu.read()                                        // 1
        try rig.mag.identify()                                        // 2
        _ = try rig.bmp.readRaw()                                     // 3
        Self.expectBusError(.io, errno: 5, address: 0x68, register: 0x3B, "4th: MPU read") { _ = try rig.mpu.read() }
        _ = try rig.bmp.measure()                                     // 5 write, 6 status, 7 burst
        Self.expectBusError(.io, errno: 5, address: 0x76, register: 0xF4, "8th: BMP forced-mode write") {
            _ = try rig.bmp.measure()
        }
        let m = try rig.bmp.measure()                                 // 9, 10, 11
        #expect(abs(try #require(m.pressurePascals) - 95_000) < 2)
        Self.expectBusError(.io, errno: 5, address: 0x0D, register: 0x0D, "12th: QMC identify") { try rig.mag.identify() }
        #expect(rig.bus.statistics(forAddress: 0x68).failures == 1)
        #expect(rig.bus.statistics(forAddress: 0x76).failures == 1)
        #expect(rig.bus.statistics(forAddress: 0x0D).failures == 1)
    }

    // MARK: reset

    /// A power-on reset at 1 s: verifyConfiguration() passes just before and
    /// reports configurationMismatch from 1 s on; the MPU-6050 is asleep
    /// (data zeros), the BMP280's data are 0x80000 (skipped), the QMC5883L
    /// is in standby (not ready). reset/start + configure recovers each.
    @Test func resetAtOneSecond() throws {
        var rig = try Self.start([.reset(address: 0x68, at: 1), .reset(address: 0x76, at: 1), .reset(address: 0x0D, at: 1)])
        rig.at(1 - 1e-9)
        try rig.mpu.verifyConfiguration()
        try rig.bmp.verifyConfiguration()
        try rig.mag.verifyConfiguration()
        Self.expectTruth(try rig.mpu.read())
        _ = try rig.mag.read()
        rig.at(1)
        let e1 = #expect(throws: DriverError.self) { try rig.mpu.verifyConfiguration() }
        #expect(e1 == .configurationMismatch(chip: .mpu6050, address: 0x68, register: 0x6B, expected: 0x01, mask: 0xFF, found: 0x40))
        let e2 = #expect(throws: DriverError.self) { try rig.bmp.verifyConfiguration() }
        #expect(e2 == .configurationMismatch(chip: .bmp280, address: 0x76, register: 0xF5,
                                              expected: Self.bmpConfig.configValue, mask: 0xFF, found: 0x00))
        let e3 = #expect(throws: DriverError.self) { try rig.mag.verifyConfiguration() }
        #expect(e3 == .configurationMismatch(chip: .qmc5883l, address: 0x0D, register: 0x0B, expected: 0x01, mask: 0xFF, found: 0x00))

        // MPU asleep: the data registers read zeros, i.e. 0 m/s², 0 rad/s and 36.53 °C.
        rig.at(1.5)
        let z = try rig.mpu.read()
        #expect(z.acceleration == .zero && z.rotationRate == .zero && z.temperatureCelsius == 36.53)
        #expect(try rig.mpu.readRawIfReady() == nil)   // no samples while asleep
        // BMP280: back to the skipped value.
        let eb = #expect(throws: DriverError.self) { _ = try rig.bmp.read() }
        #expect(eb == .decode(.skippedMeasurement(chip: .bmp280, channel: "temperature")))
        // QMC5883L: standby, no data ready.
        #expect(try rig.mag.read() == .notReady)

        // Recovery as the error message says: reset and configure again.
        try rig.mpu.reset()
        try rig.mpu.configure(Self.mpuConfig)
        try rig.bmp.start(Self.bmpConfig)
        try rig.mag.start(Self.magConfig)
        try rig.mpu.verifyConfiguration()
        try rig.bmp.verifyConfiguration()
        try rig.mag.verifyConfiguration()
        rig.at(2)
        Self.expectTruth(try rig.mpu.read())
        #expect(abs(try #require(try rig.bmp.read().pressurePascals) - 95_000) < 2)
        #expect(try rig.mag.read().sample != nil)
    }

    // MARK: disappear

    /// Gone from 1 s to 2 s: every access to the chip is noDevice with the
    /// bus's absent errno (ENXIO by default, EREMOTEIO like the Pi's
    /// adapter); back at 2 s as a power-on-reset chip that identify()
    /// accepts, that reads zeros until reset+configure, and then the truth.
    @Test(arguments: [ENXIO, EREMOTEIO])
    func mpuDisappearsAndComesBackReset(_ absent: Int32) throws {
        var rig = try Self.start([.disappear(address: 0x68, from: 1, to: 2)], absentErrno: absent)
        rig.at(1 - 1e-9)
        Self.expectTruth(try rig.mpu.read())
        for (k, t) in [1.0, 1.25, 1.5, 2 - 1e-9].enumerated() {
            rig.at(t)
            Self.expectBusError(.noDevice, errno: absent, address: 0x68, register: 0x3B, "read #\(k) at \(t) s") { _ = try rig.mpu.read() }
            Self.expectBusError(.noDevice, errno: absent, address: 0x68, register: 0x75, "identify at \(t) s") { try rig.mpu.identify() }
            Self.expectBusError(.noDevice, errno: absent, address: 0x68, register: 0x6B, "verify at \(t) s") { try rig.mpu.verifyConfiguration() }
            #expect(try rig.bus.probe(address: 0x68) == false)
        }
        // Other chips kept working.
        #expect(try rig.bmp.read().pressurePascals != nil)
        rig.at(2)
        #expect(try rig.bus.probe(address: 0x68))
        #expect(try rig.mpu.identify().isGenuine)
        let z = try rig.mpu.read()
        #expect(z.acceleration == .zero && z.rotationRate == .zero)
        let e = #expect(throws: DriverError.self) { try rig.mpu.verifyConfiguration() }
        guard case .configurationMismatch(.mpu6050, 0x68, 0x6B, 0x01, 0xFF, 0x40)? = e else {
            Issue.record("expected configurationMismatch on PWR_MGMT_1, got \(String(describing: e))"); return
        }
        try rig.mpu.start(Self.mpuConfig)
        rig.at(2.2)
        Self.expectTruth(try rig.mpu.read())
    }

    @Test func bmpAndMagnetometerDisappearAndComeBackReset() throws {
        var rig = try Self.start([.disappear(address: 0x76, from: 0.5, to: 0.7), .disappear(address: 0x0D, from: 0.5, to: 0.7)])
        rig.at(0.6)
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x76, register: 0xF7, "BMP read") { _ = try rig.bmp.read() }
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x76, register: 0xF4, "BMP configure") {
            var forced = rig.bmp
            try forced.configure(BMP280Configuration(mode: .forced))
        }
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x0D, register: 0x06, "QMC read") { _ = try rig.mag.read() }
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x0D, register: 0x0D, "QMC identify") { try rig.mag.identify() }
        rig.at(0.7)
        #expect(try rig.bmp.identify().chipID == 0x58)
        let eb = #expect(throws: DriverError.self) { _ = try rig.bmp.read() }
        #expect(eb == .decode(.skippedMeasurement(chip: .bmp280, channel: "temperature")))
        try rig.mag.identify()
        #expect(try rig.mag.read() == .notReady)
        try rig.bmp.start(Self.bmpConfig)
        try rig.mag.start(Self.magConfig)
        rig.at(0.8)
        #expect(abs(try #require(try rig.bmp.read().pressurePascals) - 95_000) < 2)
        #expect(try rig.mag.read().sample != nil)
    }

    // MARK: GY-87: a chip behind the MPU-6050's bypass

    /// On a GY-87 the QMC5883L answers only while the MPU-6050's I2C bypass
    /// is on. A power-on reset of the MPU closes the bypass: from that
    /// instant the magnetometer driver gets noDevice (as if absent), the MPU
    /// reports configurationMismatch; reset + configure (bypass on) brings
    /// the magnetometer back with its own configuration intact.
    @Test func gy87MagnetometerVanishesWhenTheMPUResets() throws {
        let clock = VirtualClock(startNanoseconds: Self.t0)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.gy87(.ideal), truth: ConstantTruth(Self.truth),
                                       clock: clock, seed: 4, faults: [.reset(address: 0x68, at: 1)])
        var mpu = MPU6050(bus: board.bus, address: 0x68, clock: clock)
        var mag = QMC5883L(bus: board.bus, address: 0x0D, clock: clock)
        // Without the bypass the magnetometer is not on the bus.
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x0D, register: 0x0D, "QMC before bypass") { try mag.identify() }
        let config = MPU6050Configuration(gyroRange: .dps500, accelRange: .g4, dlpf: .hz184, sampleRateHz: 1000, i2cBypass: true)
        try mpu.start(config)
        try mag.start(Self.magConfig)
        clock.sleep(untilNanoseconds: Self.t0 + 500_000_000)
        let before = try #require(try mag.read().sample)
        #expect(abs(before.magneticField.z + 41.7) < 0.05)

        clock.sleep(untilNanoseconds: Self.t0 + nsPerSecond)
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x0D, register: 0x06, "QMC read after the MPU reset") { _ = try mag.read() }
        #expect(try board.bus.probe(address: 0x0D) == false)
        let e = #expect(throws: DriverError.self) { try mpu.verifyConfiguration() }
        guard case .configurationMismatch(.mpu6050, 0x68, 0x6B, _, _, _)? = e else {
            Issue.record("expected configurationMismatch, got \(String(describing: e))"); return
        }
        try mpu.reset()
        try mpu.configure(config)
        try mag.verifyConfiguration()          // the magnetometer itself was never reset
        clock.sleep(untilNanoseconds: Self.t0 + 1_200_000_000)
        let after = try #require(try mag.read().sample)
        #expect(abs(after.magneticField.x - 23.4) < 0.05 && abs(after.magneticField.y + 11.2) < 0.05)
    }

    // MARK: wrong or missing identity

    /// Something else answering at the address is wrongChip (never a
    /// reading): an MPU-6050 slot whose WHO_AM_I reads 0x00, a magnetometer
    /// slot holding an HMC5883L-style register file (0x0D reads 0x00).
    @Test func wrongIdentityIsWrongChip() throws {
        let clock = VirtualClock(startNanoseconds: Self.t0)
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "mpu6050", address: 0x68, identity: 0x00),
                                               SimulatedChipSpec(kind: "hmc5883l", address: 0x0D)],
                                       truth: ConstantTruth(), clock: clock)
        var mpu = MPU6050(bus: board.bus, address: 0x68, clock: clock)
        let e1 = #expect(throws: DriverError.self) { try mpu.start() }
        #expect(e1 == .wrongChip(expected: .mpu6050, address: 0x68, register: 0x75, found: 0x00, identifiedAs: nil))
        var mag = QMC5883L(bus: board.bus, address: 0x0D, clock: clock)
        let e2 = #expect(throws: DriverError.self) { try mag.start() }
        #expect(e2 == .wrongChip(expected: .qmc5883l, address: 0x0D, register: 0x0D, found: 0x00, identifiedAs: nil))
        // Nothing at all at an address: a bus error, not wrongChip.
        var bmp = BMP280(bus: board.bus, address: 0x76, clock: clock)
        Self.expectBusError(.noDevice, errno: ENXIO, address: 0x76, register: 0xD0, "absent BMP280") { try bmp.start() }
    }
}
