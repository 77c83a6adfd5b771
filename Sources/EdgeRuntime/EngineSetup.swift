#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeActivity
import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeEngine
import EdgeFusion
import EdgeProtocol
import EdgeService
import EdgeLocations

extension ServiceServer: SampleSink {}

/// Maps the configuration files onto the engine's settings.
package enum EngineSetup {
    package static func settings(_ c: AgentConfig) -> EngineSettings {
        var fusion = AttitudeFilter.Settings()
        // AttitudeFilter.Settings.declination is in degrees, as the config's
        // declination_deg (and fuse's --declination) are.
        fusion.declination = c.fusion.declinationDeg
        fusion.magnetometerSelfCalibration = c.fusion.selfCalibration
        var altitude = AltitudeFilter.Settings()
        altitude.seaLevelPressure = c.altimeter.seaLevelPa
        altitude.seaLevelPressureUncertainty = c.altimeter.seaLevelUncertaintyPa
        let frame = ReferenceFrame(rawValue: c.fusion.frame) ?? .xMagneticNorthZVertical
        var s = EngineSettings(
            mpu6050: c.sensors.mpu6050, bmp280: c.sensors.bmp280, qmc5883l: c.sensors.qmc5883l,
            imuBatch: c.loop.imuBatch, referenceFrame: frame, fusion: fusion, altitude: altitude,
            failuresBeforeReset: c.faults.failuresBeforeReset, reprobeInterval: c.faults.reprobeIntervalS,
            alwaysOn: Set(c.alwaysOn.compactMap(StreamName.init(rawValue:))))
            .withDeliveryInterval(c.service.deliveryIntervalMs / 1000)
        s.magnetometerLearning.softIron = c.fusion.selfCalibrationSoftIron
        s.chipSettings[.hmc5883l, as: HMC5883LConfiguration.self] = c.sensors.hmc5883l
        // The engine runs a barometer in normal mode (the hub turns the
        // BMP280's forced into normal the same way; forced is for `read`).
        var bme280 = c.sensors.bme280
        if bme280.barometer.mode == .forced { bme280.barometer.mode = .normal }
        s.chipSettings[.bme280, as: BME280Configuration.self] = bme280
        s.stallPeriods = c.faults.stallPeriods
        s.verifyInterval = c.faults.verifyIntervalS
        s.busRetries = c.faults.busRetries
        s.fitness = FitnessEngineSettings(stride: StrideModel(heightMeters: c.fitness.heightMeters, scale: c.fitness.strideScale),
                                          floorHeightMeters: c.fitness.floorHeightMeters)
        if c.fitness.enabled { s.alwaysOn.formUnion([.pedometer, .pedometerEvent, .activity]) }
        let lat = c.submersion.latitudeDeg
        s.water = DepthSettings(water: c.submersion.water,
                                gravity: c.submersion.gravity == "normal" && lat != nil ? .normal(latitudeDegrees: lat!) : .standard,
                                latitudeDegrees: lat)
        return s
    }

    /// The engine for a board and a configuration: the hub (its devices
    /// from the profile, its settings from the configuration unless given)
    /// and its loop, not yet started. `run` and the in-process agent
    /// (``AgentRuntime``), `record`, `replay` and `simulate` build theirs
    /// here, so the mapping from the files to the engine is written once.
    package static func engine<B: I2CBus>(bus: B, clock: any TimeSource, profile: BoardProfile, config: AgentConfig,
                                          settings: EngineSettings? = nil, calibration: EngineCalibration = EngineCalibration(),
                                          sink: any SampleSink, dataReady: (any DataReadyLine)? = nil)
        -> (hub: SensorHub<B>, loop: EngineLoop<B>) {
        let hub = SensorHub(bus: bus, clock: clock, devices: devices(profile), settings: settings ?? Self.settings(config),
                            calibration: calibration, sink: sink)
        return (hub, EngineLoop(hub: hub, clock: clock, dataReady: dataReady))
    }

    /// The service's settings from the `service` section (the socket path is resolved by the caller).
    package static func service(_ c: AgentConfig, socketPath: String) -> ServiceConfiguration {
        var s = ServiceConfiguration(socketPath: socketPath, socketGroup: c.service.socketGroup)
        s.queueCapacity = c.service.queueCapacity
        s.maxClients = c.service.maxClients
        s.maxClientsPerUID = c.service.maxClientsPerUID
        s.maxUnentitledClients = c.service.maxUnentitledClients
        s.guaranteedClientsPerUID = c.service.guaranteedClientsPerUID
        s.reservedClientSlots = c.service.reservedClientSlots
        s.demandRaiseLimit = c.service.demandRaiseLimit
        s.demandRaiseWindowNs = UInt64((c.service.demandRaiseWindowS * 1e9).rounded())
        return s
    }

    package static func devices(_ p: BoardProfile) -> [EngineDevice] {
        p.chips.map { chip in
            EngineDevice(id: chip.id, kind: ChipKind(rawValue: chip.kind.rawValue)!, address: chip.address,
                         role: chip.role == .accessory ? .accessory : .primary,
                         boardFromChip: Matrix3(rows: chip.mounting.matrix), behind: chip.behind)
        }
    }

    /// The entitlement policy from the `clients` list (nil: the agent's own user gets motion + altitude).
    package static func policy(_ c: AgentConfig) throws -> EntitlementPolicy {
        guard let clients = c.clients else { return .defaultPolicy() }
        try c.checkClientNames()   // an unknown user or group: file, line and entry (ConfigError)
        do {
            return try EntitlementPolicy.resolving(clients.map {
                EntitlementGrant(user: $0.user, group: $0.group, uid: $0.uid, gid: $0.gid,
                                 entitlements: $0.entitlements.map { Entitlement(rawValue: $0) })
            })
        } catch {
            throw RunError("clients: \(error)")
        }
    }

    /// Resolves a path from the config file relative to its directory.
    package static func path(_ p: String, config: String?) -> String {
        guard let config else { return p }
        return BoardLocator.resolve(p, nextTo: config)
    }
}

/// What stops the agent from running (exit status 1 in `run`): a socket
/// that cannot be bound, a history that cannot be opened, the loop thread.
public struct RunError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

