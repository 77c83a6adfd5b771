import Testing
import Foundation
import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// A simulated reference board (plus an accessory IMU at 0x69) on a virtual clock.
struct Rig {
    let clock = VirtualClock(startNanoseconds: 1_000_000_000)
    let board: SimulatedBoard
    let hub: SensorHub<SimulatedBus>
    let loop: EngineLoop<SimulatedBus>
    let sink = CollectingSink()

    init(settings: EngineSettings = EngineSettings(), truth: (any TruthSource)? = nil,
         faults: [ScheduledFault] = [], accessory: Bool = false, scenario: String? = nil,
         scenarioText: String? = nil, calibration: EngineCalibration = EngineCalibration(),
         imperfections: ChipImperfections = .realistic, imuImperfections: ChipImperfections? = nil,
         otherChips: Bool = false) throws {
        // `otherChips`: the HMC5883L (0x1E) and BME280 (0x76) in place of
        // the QMC5883L and BMP280 (boards/simulated-hmc5883l-bme280.json5).
        var specs = otherChips
            ? [SimulatedChipSpec(kind: "mpu6050", address: 0x68, imperfections: imperfections),
               SimulatedChipSpec(kind: "bme280", address: 0x76, imperfections: imperfections),
               SimulatedChipSpec(kind: "hmc5883l", address: 0x1E, imperfections: imperfections)]
            : SimulatedChipSpec.referenceBoard(imperfections)
        if let imuImperfections, let i = specs.firstIndex(where: { $0.address == 0x68 }) {
            specs[i].imperfections = imuImperfections
        }
        if accessory { specs.append(SimulatedChipSpec(kind: "mpu6050", address: 0x69, body: .accessory, imperfections: imperfections)) }
        var world: any TruthSource = truth ?? ConstantTruth()
        var allFaults = faults
        if scenario != nil || scenarioText != nil {
            let d = JSONDecoder(); d.allowsJSON5 = true
            let text = try scenarioText.map { Data($0.utf8) }
                ?? Data(contentsOf: URL(fileURLWithPath: repositoryRoot + "/scenarios/\(scenario!).json5"))
            let s = try d.decode(Scenario.self, from: text)
            let w = try ScenarioWorld(s, startNanoseconds: clock.nowNanoseconds)
            world = w
            allFaults += w.faults
        }
        board = try SimulatedBoard(chips: specs, truth: world, clock: clock, seed: 7, faults: allFaults)
        var devices = otherChips ? [
            EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
            EngineDevice(id: "bme280@0x76", kind: .bme280, address: 0x76),
            EngineDevice(id: "hmc5883l@0x1e", kind: .hmc5883l, address: 0x1E),
        ] : [
            EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
            EngineDevice(id: "bmp280@0x76", kind: .bmp280, address: 0x76),
            EngineDevice(id: "qmc5883l@0x0d", kind: .qmc5883l, address: 0x0D),
        ]
        if accessory { devices.append(EngineDevice(id: "mpu6050@0x69", kind: .mpu6050, address: 0x69, role: .accessory)) }
        hub = SensorHub(bus: board.bus, clock: clock, devices: devices, settings: settings, calibration: calibration, sink: sink)
        loop = EngineLoop(hub: hub, clock: clock)
    }

    func run(seconds: Double) {
        loop.run(maxTicks: Int((seconds * 1e9 / Double(loop.periodNanoseconds)).rounded()))
    }

    func samples(_ stream: StreamName) -> [Sample] { sink.samples.filter { $0.stream == stream } }
}

@Suite struct SensorHubTests {
    @Test func ratesFollowCaptureTimestamps() throws {
        var s = EngineSettings()
        s.mpu6050.sampleRateHz = 200
        let rig = try Rig(settings: s)
        let report = rig.hub.start()
        #expect(report.count == 3)
        rig.run(seconds: 0.2)   // past the gyro's 60 ms settling
        rig.sink.removeAll()
        rig.run(seconds: 2)
        let motion = rig.samples(.deviceMotion).map(\.timestampNs)
        // One per IMU sample: 200 Hz for 2 s, give or take the edges.
        #expect(abs(motion.count - 400) <= 2, "\(motion.count)")
        let gaps = zip(motion.dropFirst(), motion).map { Double($0 - $1) / 1e6 }
        #expect(gaps.allSatisfy { abs($0 - 5.0) < 0.01 }, "IMU samples 5 ms apart: \(Set(gaps))")
        let mag = rig.samples(.magnetometer).map(\.timestampNs)
        #expect(abs(mag.count - 200) <= 3, "QMC5883L at 100 Hz: \(mag.count)")
        let alt = rig.samples(.altitude)
        // Reads on a grid of the worst-case cycle (t_max 43.2 ms + t_sb 0.5
        // ms, DS Table 13), on 5 ms ticks: 45.8 per 2 s, 40 or 45 ms apart
        // (a read closer than a cycle that repeats the raw values is dropped).
        #expect(alt.count <= 46 && alt.count >= 44, "BMP280 reads: \(alt.count), \(alt.map(\.timestampNs))")
        let altGaps = zip(alt.dropFirst(), alt).map { $0.timestampNs - $1.timestampNs }
        #expect(altGaps.allSatisfy { $0 % 5_000_000 == 0 && $0 >= 40_000_000 }, "\(altGaps)")
        #expect(rig.loop.statistics.overruns == 0)
        #expect(rig.loop.statistics.count == 440)
    }

    @Test func noStaleSampleAndNoNaN() throws {
        let rig = try Rig()
        rig.hub.start()
        rig.run(seconds: 1)
        for stream in StreamName.allCases where stream.carriesSamples {
            let t = rig.samples(stream).map(\.timestampNs)
            #expect(zip(t.dropFirst(), t).allSatisfy { $0 > $1 }, "\(stream) timestamps strictly increase")
        }
        for case .deviceMotion(let m) in rig.sink.samples {
            let values = [m.attitude.w, m.attitude.x, m.attitude.y, m.attitude.z, m.gravity.x, m.gravity.z,
                          m.userAcceleration.x, m.rotationRate.z]
            #expect(values.allSatisfy { $0.isFinite })
        }
    }

    @Test func levelBoardConvergesToItsAttitudeWithGravityUpOnTheWire() throws {
        // Ideal chips: uncalibrated hard/soft iron would tilt the heading.
        let rig = try Rig(imperfections: .ideal)
        rig.hub.start()
        rig.run(seconds: 20)
        guard case .deviceMotion(let m)? = rig.samples(.deviceMotion).last else { Issue.record("no sample"); return }
        // ConstantTruth: board X to magnetic north, level -> the NWU attitude is identity.
        let q = Quaternion(w: m.attitude.w, x: m.attitude.x, y: m.attitude.y, z: m.attitude.z)
        #expect(q.angle(to: .identity) * 180 / .pi < 3, "attitude \(q)")
        // The wire's convention (docs/protocol.md, protocol 2): gravity's
        // share of the specific force, +9.81 on the up axis of a level,
        // face-up board (Core Motion's (0, 0, -1) g is the client's conversion).
        #expect(abs(m.gravity.z - 9.80665) < 0.3)
        #expect(abs(m.gravity.x) < 0.3 && abs(m.gravity.y) < 0.3)
        #expect(m.referenceFrame == .xMagneticNorthZVertical)
        #expect(m.headingDeg != nil)
    }

    /// Issue 17, item 3 (one wire convention): on every device-motion
    /// sample gravity plus user acceleration is the accelerometer's reading
    /// of the same instant, in the same sign and unit, while the board
    /// turns and accelerates. On protocol 1 gravity and user acceleration
    /// were in Core Motion's sign, so their sum was minus the reading.
    @Test func gravityPlusUserAccelerationIsTheAccelerometersReading() throws {
        // Picked up (tipped 25° while lifted), held, then walking.
        let rig = try Rig(scenario: "pickup-walk")
        rig.sink.setDemand([.deviceMotion: 0.01, .accelerometer: 0.01])
        rig.hub.start()
        rig.run(seconds: 9)
        var accel: [UInt64: Vector3] = [:]
        for case .accelerometer(let a) in rig.samples(.accelerometer) { accel[a.timestampNs] = a.acceleration }
        var checked = 0
        for case .deviceMotion(let m) in rig.samples(.deviceMotion) {
            guard let a = accel[m.timestampNs] else { continue }
            #expect((m.gravity + m.userAcceleration - a).norm < 1e-9, "at \(m.timestampNs): \(m.gravity) + \(m.userAcceleration) vs \(a)")
            #expect(abs(m.gravity.norm - 9.80665) < 1e-9)
            checked += 1
        }
        #expect(checked > 100, "device motion and accelerometer samples of the same instants: \(checked)")
    }

    @Test func fifoBatchesAtOneKilohertz() throws {
        var s = EngineSettings()
        s.mpu6050.sampleRateHz = 1000
        s.mpu6050.dlpf = .hz184
        s.imuBatch = 5
        let rig = try Rig(settings: s)
        rig.hub.start()
        #expect(rig.loop.periodNanoseconds == 5_000_000)
        rig.run(seconds: 0.2)
        rig.sink.removeAll()
        rig.run(seconds: 1)
        let t = rig.samples(.accelerometerBatch).map(\.timestampNs)
        #expect(abs(t.count - 1000) <= 10, "\(t.count)")
        let gaps = zip(t.dropFirst(), t).map { $0 - $1 }
        // Stamped on the chip's sample clock (SampleClock): 1 ms apart, within
        // what the filter makes of the count's ±1 sample at the tick's edge.
        #expect(gaps.allSatisfy { abs(Int64($0) - 1_000_000) < 100_000 }, "1 ms apart: \(gaps)")
        #expect(rig.hub.health(of: "mpu6050@0x68")?.errorCount == 0)
    }

    @Test func idleDevicesNobodyNeeds() throws {
        let rig = try Rig()
        rig.hub.start()
        rig.sink.setDemand([.deviceMotion: 0.01])
        rig.run(seconds: 0.5)
        let baro = try #require(rig.sink.devices.first { $0.kind == "bmp280" })
        #expect(baro.state == .idle)
        #expect(rig.samples(.altitude).isEmpty)
        #expect(!rig.samples(.deviceMotion).isEmpty)
        rig.sink.setDemand([.altitude: 0.1])
        rig.sink.removeAll()
        rig.run(seconds: 0.5)
        #expect(rig.sink.devices.first { $0.kind == "bmp280" }?.state == .present)
        #expect(!rig.samples(.altitude).isEmpty)
        #expect(rig.samples(.deviceMotion).isEmpty)
    }

    @Test func alwaysOnKeepsAStreamRunning() throws {
        var s = EngineSettings()
        s.alwaysOn = [.altitude]
        let rig = try Rig(settings: s)
        rig.hub.start()
        rig.sink.setDemand([:])
        rig.run(seconds: 0.5)
        #expect(!rig.samples(.altitude).isEmpty)
        #expect(rig.samples(.deviceMotion).isEmpty)
    }
}

@Suite struct FaultTests {
    @Test func magnetometerLossDropsTo6DAndComesBack() throws {
        // The QMC5883L vanishes from 1 s to 3 s (scenario-style schedule).
        let rig = try Rig(faults: [.disappear(address: 0x0D, from: 1, to: 3)])
        rig.hub.start()
        rig.run(seconds: 6)
        let events = rig.sink.events.filter { $0.deviceID == "qmc5883l@0x0d" }
        #expect(events.map(\.connected) == [false, true], "\(events.map { "\($0.state) \($0.reason ?? "")" })")
        let lost = try #require(events.first).timestampNs
        let back = try #require(events.last).timestampNs
        #expect(Double(lost - rig.board.bus.absolute(1)) / 1e9 < 0.2, "noticed within a few reads")
        #expect(back >= rig.board.bus.absolute(3))
        #expect(Double(back - rig.board.bus.absolute(3)) / 1e9 <= 1.1, "re-probed within the 1 s interval")
        // While it is gone: 6D frame, no heading, and no magnetometer samples.
        let during = rig.sink.samples.filter { $0.timestampNs > lost + 50_000_000 && $0.timestampNs < back }
        #expect(!during.isEmpty)
        for case .deviceMotion(let m) in during {
            #expect(m.referenceFrame == .xArbitraryZVertical)
            #expect(m.headingDeg == nil)
        }
        #expect(!during.contains { $0.stream == .magnetometer })
        // Afterwards the magnetic frame is back.
        guard case .deviceMotion(let last)? = rig.samples(.deviceMotion).last else { Issue.record("no motion"); return }
        #expect(last.referenceFrame == .xMagneticNorthZVertical)
        // The rest kept running throughout.
        #expect(rig.samples(.altitude).contains { $0.timestampNs > lost && $0.timestampNs < back })
        let info = try #require(rig.sink.devices.first { $0.kind == "qmc5883l" })
        #expect(info.state == .present)
        #expect(info.errorCount >= 3)
    }

    @Test func accessoryLossLeavesThePrimaryRunning() throws {
        let rig = try Rig(faults: [.disappear(address: 0x69, from: 1, to: 2)], accessory: true)
        rig.hub.start()
        rig.run(seconds: 4)
        let events = rig.sink.events.filter { $0.deviceID == "mpu6050@0x69" }
        #expect(events.map(\.connected) == [false, true])
        // The primary IMU never missed a deadline or a sample (100 Hz by default).
        let t = rig.samples(.deviceMotion).map(\.timestampNs)
        let gaps = zip(t.dropFirst(), t).map { $0 - $1 }
        #expect(gaps.max() ?? 0 <= 10_000_000)
        #expect(rig.loop.statistics.overruns == 0)
        #expect(!rig.samples(.accessoryMotion).filter { $0.timestampNs > rig.board.bus.absolute(2.5) }.isEmpty)
    }

    @Test func nackWindowOnTheBarometerIsCountedAndRecovered() throws {
        let rig = try Rig(faults: [.nack(address: 0x76, register: 0xF7, from: 1, to: 1.5)])
        rig.hub.start()
        rig.run(seconds: 3)
        let info = try #require(rig.sink.devices.first { $0.kind == "bmp280" })
        #expect(info.errorCount > 0)
        #expect(info.state == .present)
        #expect(info.lastError?.contains("0x76") == true)
        let alt = rig.samples(.altitude).map(\.timestampNs)
        #expect(alt.contains { $0 > rig.board.bus.absolute(2) })
        #expect(!alt.contains { $0 > rig.board.bus.absolute(1.05) && $0 < rig.board.bus.absolute(1.5) },
                "no sample published while the chip did not answer")
    }

    /// A NACK window on INT_STATUS: the reads fail, the chip still answers
    /// its identity and still holds its configuration (nothing reset it), so
    /// reading goes on without a reset as soon as the bus lets it - and the
    /// 200 ms without data are reported, not hidden.
    @Test func primaryIMUReadFailuresReadOnWhenTheChipKeptItsConfiguration() throws {
        let rig = try Rig(faults: [.nack(address: 0x68, register: 0x3A, from: 1, to: 1.2)])
        rig.hub.start()
        rig.run(seconds: 3)
        let h = try #require(rig.hub.health(of: "mpu6050@0x68"))
        #expect(h.resetCount == 0, "no reset needed: the configuration held")
        #expect(h.state == .present)
        #expect(h.errorCount >= 3)
        #expect(rig.loop.statistics.overruns == 0)
        let events = rig.sink.events.filter { $0.deviceID == "mpu6050@0x68" }
        #expect(events.map(\.state) == [.degraded, .present], "\(events)")
        #expect(events.first?.reason?.contains("reads failed") == true)
        let motion = rig.samples(.deviceMotion).map(\.timestampNs)
        let end = rig.board.bus.absolute(1.2)
        let resumed = try #require(motion.first { $0 >= end })
        #expect(resumed - end <= 30_000_000, "reads on within a few ticks of the bus answering")
        #expect(!motion.contains { $0 > rig.board.bus.absolute(1.01) && $0 < end }, "nothing while it failed")
    }
}

@Suite struct CalibrationApplicationTests {
    /// Calibration is in the chip frame: applied before the mounting.
    @Test func accelBiasIsRemovedInTheChipFrameThenMounted() throws {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let turned: [[Double]] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]   // board X = chip -Y, board Y = chip X
        let board = try SimulatedBoard(chips: [SimulatedChipSpec(kind: "mpu6050", address: 0x68, boardFromChip: turned,
                                                                 imperfections: .ideal)],
                                       truth: ConstantTruth(), clock: clock, seed: 1)
        let sink = CollectingSink()
        let cal = EngineCalibration(imu: ["mpu6050@0x68": .init(gyroBias: SIMD3(0.01, 0, 0), accelBias: SIMD3(0.5, 0, 0),
                                                                 accelScale: SIMD3(1, 1, 2))])
        let hub = SensorHub(bus: board.bus, clock: clock,
                            devices: [EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68,
                                                   boardFromChip: Matrix3(rows: turned))],
                            settings: EngineSettings(), calibration: cal, sink: sink)
        hub.start()
        let loop = EngineLoop(hub: hub, clock: clock)
        loop.run(maxTicks: 50)
        guard case .accelerometer(let a)? = sink.samples.last(where: { $0.stream == .accelerometer }) else {
            Issue.record("no accelerometer sample"); return
        }
        // Truth (0, 0, 9.80665) board = chip. Chip x: 0 - 0.5 -> board y = -0.5; chip z scaled ×2.
        #expect(abs(a.acceleration.x) < 0.01)
        #expect(abs(a.acceleration.y + 0.5) < 0.01)
        #expect(abs(a.acceleration.z - 2 * 9.80665) < 0.02)

        #expect(sink.devices.first { $0.id == "mpu6050@0x68" }?.calibration == .calibrated)

        // A reload between ticks (SIGHUP) takes effect on the next samples.
        loop.enqueue { $0.apply(calibration: EngineCalibration()) }
        sink.removeAll()
        loop.run(maxTicks: 5)
        guard case .accelerometer(let b)? = sink.samples.last(where: { $0.stream == .accelerometer }) else {
            Issue.record("no accelerometer sample"); return
        }
        #expect(abs(b.acceleration.y) < 0.01)
        #expect(abs(b.acceleration.z - 9.80665) < 0.02)
        // ... and on the devices report clients read (watch's uncalibrated=).
        // Main: the report was only re-sent when a device's health changed, so
        // it said "calibrated" after the reload (seen under systemd: issue 20).
        #expect(sink.devices.first { $0.id == "mpu6050@0x68" }?.calibration == .uncalibrated,
                "\(sink.devices.map { "\($0.id) \($0.calibration)" })")
    }
}

@Suite struct DemandDrivenRateTests {
    @Test func imuRunsAtTheFastestRequestedRateWithinItsLimits() throws {
        var s = EngineSettings()
        s.mpu6050.sampleRateHz = 200
        let rig = try Rig(settings: s)
        rig.hub.start()
        // One client wants device motion at 10 Hz: the IMU drops to 50 Hz (the floor; 0.1 s = 5 periods).
        rig.sink.setDemand([.deviceMotion: 0.1])
        rig.run(seconds: 0.5)
        rig.sink.removeAll()
        rig.run(seconds: 1)
        var t = rig.samples(.deviceMotion).map(\.timestampNs)
        #expect(abs(t.count - 50) <= 1, "\(t.count)")
        #expect(zip(t.dropFirst(), t).allSatisfy { $0 - $1 == 20_000_000 }, "50 Hz: 20 ms apart")
        #expect(rig.sink.devices.first { $0.id == "mpu6050@0x68" }?.rateHz == 50)
        // Another asks for 100 Hz: the IMU follows; every sample (0 s) means the configured 200 Hz.
        rig.sink.setDemand([.deviceMotion: 0.01])
        rig.run(seconds: 0.5)
        rig.sink.removeAll()
        rig.run(seconds: 1)
        t = rig.samples(.deviceMotion).map(\.timestampNs)
        #expect(zip(t.dropFirst(), t).allSatisfy { $0 - $1 == 10_000_000 }, "100 Hz")
        rig.sink.setDemand([.accelerometer: 0])
        rig.run(seconds: 0.5)
        rig.sink.removeAll()
        rig.run(seconds: 1)
        t = rig.samples(.accelerometer).map(\.timestampNs)
        #expect(zip(t.dropFirst(), t).allSatisfy { $0 - $1 == 5_000_000 }, "200 Hz, the configured maximum")
        #expect(rig.loop.statistics.overruns == 0)
    }

    @Test func rateChoice() {
        let c = MPU6050Configuration(sampleRateHz: 200)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [:], alwaysOn: [], configured: c) == 50)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [.deviceMotion: 0.002], alwaysOn: [], configured: c) == 200)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [.gyroscope: 0.01, .deviceMotion: 0.05], alwaysOn: [], configured: c) == 100)
        // 0.05 s is not a whole number of 20 ms periods: 100 Hz, not 50.
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [.deviceMotion: 0.05], alwaysOn: [], configured: c) == 100)
        // 0.03 s: 66.7 Hz (15 ms) divides it.
        #expect(abs(SensorHub<SimulatedBus>.imuRate(demand: [.deviceMotion: 0.03], alwaysOn: [], configured: c) - 1000.0 / 15) < 1e-9)
        // 0.007 s: nothing the divider makes from 200 Hz divides it -> the configured rate.
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [.deviceMotion: 0.007], alwaysOn: [], configured: c) == 200)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [.altitude: 1], alwaysOn: [], configured: c) == 50)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [:], alwaysOn: [.deviceMotion], configured: c) == 200)
        #expect(SensorHub<SimulatedBus>.imuRate(demand: [:], alwaysOn: [], configured: MPU6050Configuration(sampleRateHz: 20)) == 20)
    }
}

@Suite struct DeliveryIntervalTests {
    @Test func serviceIsWokenAtMostOncePerDeliveryInterval() throws {
        var s = EngineSettings()                 // 100 Hz IMU
        s.deliveryInterval = 0.02
        let rig = try Rig(settings: s)
        rig.hub.start()
        rig.run(seconds: 1)
        // 100 ticks, 20 ms interval: every second tick.
        #expect(abs(rig.sink.wakes - 50) <= 1, "\(rig.sink.wakes)")
        var every = EngineSettings()
        every.deliveryInterval = 0
        let rig2 = try Rig(settings: every)
        rig2.hub.start()
        rig2.run(seconds: 1)
        #expect(abs(rig2.sink.wakes - 100) <= 1, "every tick that published: \(rig2.sink.wakes)")
        // Nothing is lost by batching: both published the same streams at the same times.
        #expect(rig.samples(.deviceMotion).map(\.timestampNs) == rig2.samples(.deviceMotion).map(\.timestampNs))
    }
}

/// `loop.imu_batch: 0`: the loop ticks about once per delivery interval and
/// drains the FIFO, so the agent wakes half as often at 100 Hz - with every
/// sample still delivered, and the barometer and magnetometer at their rates.
@Suite struct AutomaticBatchTests {
    @Test func batchPolicy() {
        // 100 Hz IMU, 20 ms delivery: 2 samples a tick.
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 100, deliveryInterval: 0.02, demand: [.deviceMotion: 0.01],
                                      magnetometerPeriod: 0.01, dataReady: false) == 2)
        // 200 Hz: 4; the magnetometer stream at 100 Hz needs a tick every 10 ms: 2.
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 200, deliveryInterval: 0.02, demand: [.deviceMotion: 0],
                                      magnetometerPeriod: 0.01, dataReady: false) == 4)
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 200, deliveryInterval: 0.02, demand: [.magnetometer: 0],
                                      magnetometerPeriod: 0.01, dataReady: false) == 2)
        // Asking for fields faster than the chip makes them (50 Hz) does not speed the loop up.
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 100, deliveryInterval: 0.02, demand: [.magnetometer: 0.01],
                                      magnetometerPeriod: 0.02, dataReady: false) == 2)
        // Every tick delivers (interval 0), the data-ready edge, or a fixed batch.
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 100, deliveryInterval: 0, demand: [:], magnetometerPeriod: 0.01,
                                      dataReady: false) == 1)
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 100, deliveryInterval: 0.02, demand: [:], magnetometerPeriod: 0.01,
                                      dataReady: true) == 1)
        #expect(EngineDemand.imuBatch(fixed: 3, rateHz: 100, deliveryInterval: 0.02, demand: [:], magnetometerPeriod: 0.01,
                                      dataReady: true) == 3)
        // Never more than the FIFO holds safely.
        #expect(EngineDemand.imuBatch(fixed: 0, rateHz: 1000, deliveryInterval: 1, demand: [:], magnetometerPeriod: 0.01,
                                      dataReady: false) == EngineDemand.maximumAutomaticBatch)
    }

    @Test func everySampleAtHalfTheWakeUps() throws {
        var s = EngineSettings(imuBatch: 0)
        s.mpu6050.sampleRateHz = 200
        s.deliveryInterval = 0.02
        s.bmp280.filter = .off   // as config/edge-agent.json5 runs it (with the IIR on, equal conversions are common)
        let rig = try Rig(settings: s)
        rig.hub.start()
        rig.sink.setDemand([.deviceMotion: 0.01, .altitude: 0.05])   // 100 Hz, as Core Motion apps ask
        rig.run(seconds: 0.5)
        #expect(rig.hub.batch == 2 && rig.loop.periodNanoseconds == 20_000_000, "\(rig.hub.batch), \(rig.loop.periodNanoseconds)")
        rig.sink.removeAll()
        let ticksBefore = rig.hub.ticks
        rig.run(seconds: 2)
        #expect(rig.hub.ticks - ticksBefore == 100, "50 ticks a second")
        let t = rig.samples(.deviceMotion).map(\.timestampNs)
        #expect(abs(t.count - 200) <= 2, "every 100 Hz sample: \(t.count)")
        #expect(zip(t.dropFirst(), t).allSatisfy { $0 - $1 == 10_000_000 }, "10 ms apart")
        // The barometer keeps its rate on 20 ms ticks: reads on a grid of
        // t_max + t_sb (43.7 ms with the driver's defaults, DS Table 13), not one cycle + a tick.
        let alt = rig.samples(.altitude).count
        #expect(alt >= 44 && alt <= 46, "\(alt) conversions in 2 s: \(rig.samples(.altitude).map(\.timestampNs))")
        // A client wanting the magnetometer at 100 Hz gets a 10 ms tick.
        rig.sink.setDemand([.deviceMotion: 0.01, .magnetometer: 0.01])
        rig.run(seconds: 0.2)
        #expect(rig.hub.batch == 1 && rig.loop.periodNanoseconds == 10_000_000)
        rig.sink.removeAll()
        rig.run(seconds: 1)
        #expect(abs(rig.samples(.magnetometer).count - 100) <= 2)
        #expect(rig.loop.statistics.overruns == 0)
    }
}

/// The settings of chips the fixed fields do not name: kept by kind, of
/// their own type, compared by value.
@Suite struct ChipSettingsTableTests {
    @Test func keepsEachKindsSettingsAndComparesThem() {
        var a = ChipSettingsTable(), b = ChipSettingsTable()
        #expect(a == b)
        a[.hmc5883l, as: HMC5883LConfiguration.self] = .default
        #expect(a[.hmc5883l, as: HMC5883LConfiguration.self] == .default)
        #expect(a[.hmc5883l, as: QMC5883LConfiguration.self] == nil, "another type is not this kind's settings")
        #expect(a != b)
        b[.hmc5883l, as: HMC5883LConfiguration.self] = .default
        #expect(a == b)
        var other = HMC5883LConfiguration.default
        other.mode = .idle
        b[.hmc5883l, as: HMC5883LConfiguration.self] = other
        #expect(a != b)
    }
}
