import Testing
import EdgeConfig
import EdgeEngine
import EdgeService
@testable import EdgeAgentCLI

/// Every `faults` and `service` key reaches the engine or the server it
/// configures (a key that is parsed but never handed on is silently ignored).
@Suite struct ConfigWiringTests {
    @Test func faultAndServiceKeysReachTheEngineAndTheServer() throws {
        let text = """
        { faults: { failures_before_reset: 5, reprobe_interval_s: 0.2, stall_periods: 7, verify_interval_s: 3, bus_retries: 4 },
          service: { queue_capacity: 99, delivery_interval_ms: 40, max_clients: 50, max_clients_per_uid: 9,
                     max_unentitled_clients: 3, demand_raise_limit: 11, demand_raise_window_s: 2.5 } }
        """
        let c = try ConfigLoader.decode(AgentConfig.self, from: text, file: "wiring.json5")
        let e = EngineSetup.settings(c)
        #expect(e.failuresBeforeReset == 5)
        #expect(e.reprobeInterval == 0.2)
        #expect(e.stallPeriods == 7)
        #expect(e.verifyInterval == 3)
        #expect(e.busRetries == 4)
        #expect(e.deliveryInterval == 0.04)
        let s = EngineSetup.service(c, socketPath: "/tmp/x.sock")
        #expect(s.queueCapacity == 99)
        #expect(s.maxClients == 50)
        #expect(s.maxClientsPerUID == 9)
        #expect(s.maxUnentitledClients == 3)
        #expect(s.demandRaiseLimit == 11)
        #expect(s.demandRaiseWindowNs == 2_500_000_000)
    }

    @Test func defaultsAreTheDocumentedOnes() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: "{}", file: "empty.json5")
        let e = EngineSetup.settings(c)
        // config/README.md: faults defaults.
        #expect(e.failuresBeforeReset == 3 && e.reprobeInterval == 0.05 && e.stallPeriods == 4
                && e.verifyInterval == 1 && e.busRetries == 2)
        let s = EngineSetup.service(c, socketPath: "/tmp/x.sock")
        #expect(s.maxClients == 128 && s.maxClientsPerUID == 64 && s.maxUnentitledClients == 8
                && s.demandRaiseLimit == 32 && s.demandRaiseWindowNs == 10_000_000_000)
    }
}

import EdgeBus
import EdgeFusion
import EdgeSim
import EdgeRuntime

/// `fusion.declination_deg` reaches the filter in degrees, as `fuse
/// --declination` hands it: the daemon once converted it to radians first,
/// so 10° became 0.17° and xTrueNorthZVertical disagreed with `fuse`.
@Suite struct DeclinationWiringTests {
    /// `fusion.self_calibration` (issue 19's continuous magnetometer
    /// calibration) reaches the filter: on unless the file says false, and
    /// a wrong type is an error naming the key.
    @Test func selfCalibrationIsOnUnlessTheFileTurnsItOff() throws {
        let on = try ConfigLoader.decode(AgentConfig.self, from: "{}", file: "empty.json5")
        #expect(EngineSetup.settings(on).fusion.magnetometerSelfCalibration)
        let off = try ConfigLoader.decode(AgentConfig.self, from: "{ fusion: { self_calibration: false } }", file: "off.json5")
        #expect(!EngineSetup.settings(off).fusion.magnetometerSelfCalibration)
        #expect { try ConfigLoader.decode(AgentConfig.self, from: "{ fusion: { self_calibration: 'no' } }", file: "bad.json5") }
            throws: { "\($0)".contains("self_calibration") }
    }

    /// `fusion.self_calibration_soft_iron` reaches the continuous
    /// calibration's settings: on unless the file says false (the agent
    /// used to run the learner's defaults, soft iron off, whatever `fuse` did).
    @Test func softIronLearningIsOnUnlessTheFileTurnsItOff() throws {
        let on = try ConfigLoader.decode(AgentConfig.self, from: "{}", file: "empty.json5")
        #expect(EngineSetup.settings(on).magnetometerLearning.softIron)
        let off = try ConfigLoader.decode(AgentConfig.self, from: "{ fusion: { self_calibration_soft_iron: false } }", file: "off.json5")
        #expect(!EngineSetup.settings(off).magnetometerLearning.softIron)
        #expect(EngineSetup.settings(off).fusion.magnetometerSelfCalibration, "the hard iron is still learned")
        #expect { try ConfigLoader.decode(AgentConfig.self, from: "{ fusion: { self_calibration_soft_iron: 1 } }", file: "bad.json5") }
            throws: { "\($0)".contains("self_calibration_soft_iron") }
    }

    @Test func theAgentsTrueNorthIsTheMagneticHeadingPlusTheDeclination() throws {
        let c = try ConfigLoader.decode(AgentConfig.self, from: "{ fusion: { frame: 'xTrueNorthZVertical', declination_deg: 10 } }",
                                        file: "decl.json5")
        let s = EngineSetup.settings(c)
        #expect(s.fusion.declination == 10, "degrees, as AttitudeFilter.Settings documents")
        // The engine on ideal simulated chips: board level, X to magnetic north
        // (ConstantTruth), so its top edge (+Y) faces magnetic west, 270°; with
        // the declination 10° east, true north is 10° west of magnetic north:
        // the top edge faces 280° true.
        let clock = VirtualClock(startNanoseconds: 1_000_000_000)
        let board = try SimulatedBoard(chips: SimulatedChipSpec.referenceBoard(.ideal), truth: ConstantTruth(), clock: clock, seed: 1)
        let sink = CollectingSink(demand: [.deviceMotion: 0.01])
        let hub = SensorHub(bus: board.bus, clock: clock, devices: [
            EngineDevice(id: "mpu6050@0x68", kind: .mpu6050, address: 0x68),
            EngineDevice(id: "qmc5883l@0x0d", kind: .qmc5883l, address: 0x0D),
        ], settings: s, sink: sink)
        hub.start()
        EngineLoop(hub: hub, clock: clock).run(maxTicks: 2000)
        guard case .deviceMotion(let m)? = sink.samples.last(where: { $0.stream == .deviceMotion }) else {
            Issue.record("no device motion"); return
        }
        #expect(m.referenceFrame == .xTrueNorthZVertical)
        let heading = try #require(m.headingDeg)
        #expect(abs(heading - 280) < 2, "heading \(heading)°")
    }
}
