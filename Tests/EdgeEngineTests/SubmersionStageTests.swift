import Testing
import EdgeBus
import EdgeChips
import EdgeProtocol
import EdgeSim
@testable import EdgeEngine

/// A dive as truth: 10 s at the surface, down to `bottom` m at 18 m/min,
/// `hold` s there, up at 9 m/min, then the surface. Salt water, ρ g h with
/// standard gravity computed here.
final class DiveTruth: TruthSource, @unchecked Sendable {
    let t0: UInt64, bottom: Double, hold: Double, surface: Double
    init(t0: UInt64, bottom: Double, hold: Double, surface: Double = 101_325) {
        self.t0 = t0; self.bottom = bottom; self.hold = hold; self.surface = surface
    }
    func depth(at t: UInt64) -> Double {
        let s = Double(t &- t0) / 1e9
        let down = bottom / 18 * 60, up = bottom / 9 * 60
        if s < 10 { return 0 }
        if s < 10 + down { return (s - 10) * 18 / 60 }
        if s < 10 + down + hold { return bottom }
        if s < 10 + down + hold + up { return bottom - (s - 10 - down - hold) * 9 / 60 }
        return 0
    }
    func truth(atNanoseconds t: UInt64, body: SimBody) -> PhysicalTruth {
        var v = PhysicalTruth.restingLevel
        v.pressure = surface + 1025 * 9.80665 * depth(at: t)
        v.temperature = 18
        return v
    }
}

@Suite struct SubmersionStageTests {
    struct DiveRig {
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let board: SimulatedBoard
        let hub: SensorHub<SimulatedBus>
        let loop: EngineLoop<SimulatedBus>
        let sink = CollectingSink(demand: [.submersion: 0])
        let truth: DiveTruth

        init(depthSensor: Bool = true, bottom: Double = 20, hold: Double = 60, faults: [ScheduledFault] = []) throws {
            truth = DiveTruth(t0: clock.nowNanoseconds, bottom: bottom, hold: hold)
            var specs = [SimulatedChipSpec(kind: "mpu6050", address: 0x68), SimulatedChipSpec(kind: "bmp280", address: 0x77)]
            var devices = [EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
                           EngineDevice(id: "bmp280@0x77", kind: .bmp280, address: 0x77)]
            if depthSensor {
                specs.append(SimulatedChipSpec(kind: "ms5837", address: 0x76))
                devices.append(EngineDevice(id: "ms5837@0x76", kind: .ms5837, address: 0x76))
            }
            board = try SimulatedBoard(chips: specs, truth: truth, clock: clock, seed: 5, faults: faults)
            hub = SensorHub(bus: board.bus, clock: clock, devices: devices, settings: EngineSettings(), sink: sink)
            loop = EngineLoop(hub: hub, clock: clock)
        }
        /// Runs until `seconds` after the truth's start (on the virtual clock).
        func run(seconds: Double) {
            let end = truth.t0 + UInt64(seconds * 1e9)
            loop.run(until: { clock.nowNanoseconds >= end })
        }
        var samples: [SubmersionSample] {
            sink.samples.compactMap { if case .submersion(let s) = $0 { return s } else { return nil } }
        }
    }

    /// The MS5837 dive end to end: submerged within 3 s of passing 0.5 m,
    /// depth within 5 cm of the truth, ≈ 3 Hz under water and 1 Hz at the
    /// surface, back to notSubmerged after the surface dwell.
    @Test func diveThroughTheEngine() throws {
        let rig = try DiveRig()
        #expect(rig.hub.start().count == 3)
        #expect(rig.hub.waterSubmersionAvailable)
        rig.run(seconds: 10 + 66.7 + 60 + 133.3 + 20)
        let s = rig.samples
        let submergedAt = try #require(s.first { $0.state == .submerged }).timestampNs
        let passedHalfMetre = rig.truth.t0 + UInt64((10 + 0.5 / 18 * 60) * 1e9)
        #expect(submergedAt > passedHalfMetre && submergedAt < passedHalfMetre + 3_000_000_000)
        var worst = 0.0
        for x in s where x.state == .submerged && x.depthState != .pastMaxDepth {
            worst = max(worst, abs(x.depth - rig.truth.depth(at: x.timestampNs)))
        }
        #expect(worst < 0.05, "worst depth error \(worst) m")
        let under = s.filter { $0.state == .submerged }
        let span = Double(under.last!.timestampNs - under.first!.timestampNs) / 1e9
        let rate = Double(under.count - 1) / span
        #expect(abs(rate - 3) < 0.1, "\(rate) Hz under water")
        #expect(s.last!.state == .notSubmerged)
        let surfaceRun = s.suffix(10).map(\.timestampNs)
        #expect(surfaceRun.count == 10)
        let gaps = zip(surfaceRun.dropFirst(), surfaceRun).map { Double($0 - $1) / 1e9 }
        #expect(gaps.allSatisfy { abs($0 - 1) < 0.35 }, "\(gaps)")
        #expect(s.contains { $0.depthState == .submergedDeep })
        // 20 m is past the shallow maximum: the shallow view withholds it.
        let bottom = try #require(s.first { abs($0.depth - 20) < 0.1 })
        #expect(bottom.shallowDepthState == .pastMaxDepth && bottom.capped(shallow: true).depth.isNaN)
        #expect(bottom.capped(shallow: false).depth == bottom.depth)
    }

    /// Only a BMP280: 1 m of water is past its 110 kPa full scale, so the
    /// state says sensorDepthError and no depth is given.
    @Test func bmp280BeyondItsRangeIsSensorDepthError() throws {
        let rig = try DiveRig(depthSensor: false, bottom: 3, hold: 20)
        rig.hub.start()
        rig.run(seconds: 10 + 10 + 10)
        let s = rig.samples
        #expect(s.contains { $0.depthState == .sensorDepthError && $0.depth.isNaN })
        #expect(!s.contains { $0.depth.isFinite && $0.depth > 0.95 })
    }

    /// The depth sensor vanishes mid-dive: a connection event says so, the
    /// devices list shows it down, and the depth resumes when it returns.
    @Test func depthSensorOutageIsReportedAndDataResume() throws {
        let rig = try DiveRig(faults: [.disappear(address: 0x76, from: 40, to: 45)])
        rig.hub.start()
        rig.run(seconds: 43)
        let down = rig.sink.events.filter { $0.deviceID == "ms5837@0x76" && !$0.connected }
        #expect(!down.isEmpty, "\(rig.sink.events)")
        #expect(rig.hub.devicesSnapshot().first { $0.id == "ms5837@0x76" }?.state != .present)
        let before = rig.samples.count
        rig.run(seconds: 53)
        let after = rig.samples.filter { $0.timestampNs > rig.truth.t0 + 46_000_000_000 }
        #expect(rig.samples.count > before && after.count > 20)
        #expect(rig.sink.events.contains { $0.deviceID == "ms5837@0x76" && $0.connected })
        #expect(after.allSatisfy { abs($0.depth - rig.truth.depth(at: $0.timestampNs)) < 0.05 })
    }

    /// The depth sensor drops out at 9 m and is back at 10.5 m: clients are
    /// told at once (a sample with no depth, state unknown,
    /// sensorDepthError) instead of keeping the last depth as if live; no
    /// sample after the descent's dwell says notSubmerged while the truth is
    /// deeper than 0.5 m;
    /// and the depth resumes, submerged from the first reading after it.
    @Test func depthSensorOutageUnderWaterNeverSaysNotSubmerged() throws {
        let rig = try DiveRig(faults: [.disappear(address: 0x76, from: 40, to: 45)])
        rig.hub.start()
        rig.run(seconds: 60)
        let s = rig.samples
        // From 20 s, when the descent's 1 s dwell (a splash guard) is long past.
        let settled = rig.truth.t0 + 20_000_000_000
        let wrong = s.filter { $0.timestampNs > settled && $0.state == .notSubmerged && rig.truth.depth(at: $0.timestampNs) > 0.5 }
        #expect(wrong.isEmpty, "notSubmerged at \(wrong.map { Double($0.timestampNs - rig.truth.t0) / 1e9 })")
        let t40 = rig.truth.t0 + 40_000_000_000
        let lost = try #require(s.first { $0.timestampNs >= t40 && $0.state != .submerged })
        #expect(lost.state == .unknown && lost.depthState == .sensorDepthError && lost.depth.isNaN && lost.pressure.isNaN)
        #expect(lost.timestampNs < t40 + 2_000_000_000, "said within 2 s of the outage")
        let back = s.filter { $0.timestampNs > lost.timestampNs }
        #expect(back.count > 20)
        #expect(back.allSatisfy { $0.state == .submerged && abs($0.depth - rig.truth.depth(at: $0.timestampNs)) < 0.05 })
        #expect(back.first!.timestampNs < rig.truth.t0 + 47_000_000_000, "data resumes")
    }

    /// restart() mid-dive (as SensorHub does when the sensor comes back):
    /// the next reading, at 10 m, is submerged — with the surface pressure
    /// measured before, not a standard one.
    @Test func restartUnderWaterIsSubmergedAtOnce() {
        var stage = SubmersionStage(settings: SubmersionSettings(sensorMaximumPascals: 3_000_000))
        let surface = 96_000.0   // a mountain lake
        let sink = CollectingSink(demand: [.submersion: 0])
        var publisher = Publisher(sink: sink)
        var t: UInt64 = 1_000_000_000
        for _ in 0..<30 { stage.reading(pressurePascals: surface, temperatureCelsius: 12, at: t, publisher: &publisher); t += 333_333_333 }
        for k in 0..<60 {
            stage.reading(pressurePascals: surface + 1025 * 9.80665 * min(10, Double(k) * 0.2), temperatureCelsius: 12, at: t, publisher: &publisher)
            t += 333_333_333
        }
        #expect(stage.state.event == .submerged)
        stage.restart()
        #expect(stage.state.event == .unknown)
        let u = SubmersionStateMachine.update(&stage.state, pressurePascals: surface + 1025 * 9.80665 * 10, temperatureCelsius: 12,
                                              seconds: Double(t) / 1e9, timestampNs: t, stage.settings)
        #expect(u.sample.state == .submerged && abs(u.sample.depth - 10) < 0.01 && u.sample.depthState == .submergedDeep)
    }
}
