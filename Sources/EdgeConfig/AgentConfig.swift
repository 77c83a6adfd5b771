import EdgeFusion
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import EdgeChipsCore

/// The agent's configuration file (`config/edge-agent.json5`): which board
/// profile, and how each chip is configured. The agent issue extends this
/// file with the loop, fusion, altimeter, socket, clients and recording.
/// The schema is documented in `config/README.md`.
public struct AgentConfig: Decodable, Sendable, Equatable {
    /// Board profile: a file name or path, relative to this config file's
    /// directory, or a bare profile name (`"simulated"`) looked up in the
    /// profile directories (see ``BoardLocator``).
    public var board: String
    public var sensors: SensorSettings
    public var loop: LoopSettings
    public var fusion: FusionSettings
    public var altimeter: AltimeterSettings
    /// `submersion`: the depth model of the submersion stream.
    public var submersion = SubmersionSection()
    public var service: ServiceSection
    /// Who may receive what; nil: the user running the agent gets `motion`
    /// and `altitude`, nobody else anything.
    public var clients: [ClientGrant]?
    /// Streams kept running with no subscriber (wire names, e.g. "altitude").
    public var alwaysOn: [String]
    /// Calibration results (`edge-agent calibrate` writes, the loop reads at
    /// start and on SIGHUP), relative to this file's directory.
    public var calibrationFile: String?
    /// `calibration_required`: refuse to start when a chip that can be
    /// calibrated (MPU-6050, QMC5883L) has no calibration measured on it.
    /// Default false: such a chip runs uncalibrated, and the agent says so.
    public var calibrationRequired = false
    /// Where `edge-agent record` puts recordings, relative to this file's directory.
    public var recordingDirectory: String?
    public var faults: FaultSettings
    /// The pedometer, floors, activity and their history.
    public var fitness: FitnessConfig = FitnessConfig()
    /// The sensor recorder (CMSensorRecorder); nil: none.
    public var recorder: RecorderConfig?

    public init(board: String = "simulated", sensors: SensorSettings = SensorSettings()) {
        self.board = board; self.sensors = sensors
        loop = LoopSettings(); fusion = FusionSettings(); altimeter = AltimeterSettings()
        service = ServiceSection(); clients = nil; alwaysOn = []
        calibrationFile = nil; recordingDirectory = nil; faults = FaultSettings()
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case board, sensors, loop, fusion, altimeter, service, clients, faults, fitness, submersion, recorder
        case alwaysOn = "always_on", calibrationFile = "calibration_file", recordingDirectory = "recording_directory"
        case calibrationRequired = "calibration_required"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        board = try c.decodePathIfPresent(.board, what: "a board profile name or a path") ?? "simulated"
        sensors = try c.decodeIfPresent(SensorSettings.self, forKey: .sensors) ?? SensorSettings()
        loop = try c.decodeIfPresent(LoopSettings.self, forKey: .loop) ?? LoopSettings()
        fusion = try c.decodeIfPresent(FusionSettings.self, forKey: .fusion) ?? FusionSettings()
        altimeter = try c.decodeIfPresent(AltimeterSettings.self, forKey: .altimeter) ?? AltimeterSettings()
        submersion = try c.decodeIfPresent(SubmersionSection.self, forKey: .submersion) ?? SubmersionSection()
        service = try c.decodeIfPresent(ServiceSection.self, forKey: .service) ?? ServiceSection()
        clients = try c.decodeIfPresent([ClientGrant].self, forKey: .clients)
        alwaysOn = try c.decodeIfPresent([String].self, forKey: .alwaysOn) ?? []
        let streams = ["accelerometer", "gyroscope", "magnetometer", "deviceMotion", "accelerometerBatch",
                       "deviceMotionBatch", "accessoryMotion", "accessoryConnection", "altitude", "absoluteAltitude",
                       "submersion", "pedometer", "pedometerEvent", "activity"]
        for (i, name) in alwaysOn.enumerated() where !streams.contains(name) {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: c.codingPath + [CodingKeys.alwaysOn, AnyKey(stringValue: "Index \(i)")],
                debugDescription: "unknown stream '\(name)'; streams: \(streams.joined(separator: ", "))"))
        }
        calibrationFile = try c.decodePathIfPresent(.calibrationFile, what: "a file path")
        calibrationRequired = try c.decodeIfPresent(Bool.self, forKey: .calibrationRequired) ?? false
        recordingDirectory = try c.decodePathIfPresent(.recordingDirectory, what: "a directory path")
        faults = try c.decodeIfPresent(FaultSettings.self, forKey: .faults) ?? FaultSettings()
        fitness = try c.decodeIfPresent(FitnessConfig.self, forKey: .fitness) ?? FitnessConfig()
        recorder = try c.decodeIfPresent(RecorderConfig.self, forKey: .recorder)
    }
}

/// `loop`: how the fixed-rate loop runs.
public struct LoopSettings: Decodable, Sendable, Equatable {
    /// IMU samples per loop tick; > 1 reads the MPU-6050 FIFO in batches
    /// (use it above ~250 Hz). Default 1.
    public var imuBatch: Int = 0
    /// Wake on the MPU-6050's data-ready edge (the profile's `data_ready`
    /// line) instead of a timer. Default false.
    public var dataReady: Bool = false
    /// Ask for SCHED_FIFO at `priority` (falls back with a warning). Default false.
    public var realtime: Bool = false
    /// SCHED_FIFO priority 1-99. Default 50.
    public var priority: Int = 50
    /// mlockall when `realtime`. Default true.
    public var lockMemory: Bool = true
    public init() {}
    /// 64 records of 14 bytes fit the MPU-6050's 1024-byte FIFO (73 would).
    static let imuBatchRange = 0...64
    static let priorityRange = 1...99
    enum CodingKeys: String, CodingKey, CaseIterable {
        case imuBatch = "imu_batch", dataReady = "data_ready", realtime, priority, lockMemory = "lock_memory"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        imuBatch = try c.decodeWholeNumber(.imuBatch, default: 0, in: Self.imuBatchRange, unit: "IMU samples per tick; 0: automatic")
        dataReady = try c.decodeIfPresent(Bool.self, forKey: .dataReady) ?? false
        realtime = try c.decodeIfPresent(Bool.self, forKey: .realtime) ?? false
        priority = try c.decodeWholeNumber(.priority, default: 50, in: Self.priorityRange, unit: "SCHED_FIFO priority")
        lockMemory = try c.decodeIfPresent(Bool.self, forKey: .lockMemory) ?? true
    }
}

/// `fusion`: the reference frame of device motion and the declination.
public struct FusionSettings: Decodable, Sendable, Equatable {
    /// Core Motion's frame name. Default xMagneticNorthZVertical.
    public var frame: String = "xMagneticNorthZVertical"
    /// Magnetic declination, degrees east of true north (needed for
    /// xTrueNorthZVertical). Default none.
    public var declinationDeg: Double?
    /// Learn the magnetometer's hard iron continuously as the board turns
    /// (docs/fusion.md). Default true; false: the field as the guided
    /// calibration leaves it (VQF sample for sample).
    public var selfCalibration = true
    /// With `selfCalibration`, learn the soft iron too (docs/fusion.md).
    /// Default true; false: the hard iron alone.
    public var selfCalibrationSoftIron = true
    public init() {}
    static let frames = ["xArbitraryZVertical", "xArbitraryCorrectedZVertical", "xMagneticNorthZVertical", "xTrueNorthZVertical"]
    enum CodingKeys: String, CodingKey, CaseIterable {
        case frame, declinationDeg = "declination_deg", selfCalibration = "self_calibration"
        case selfCalibrationSoftIron = "self_calibration_soft_iron"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        frame = try c.decodeIfPresent(String.self, forKey: .frame) ?? "xMagneticNorthZVertical"
        guard Self.frames.contains(frame) else {
            throw DecodingError.dataCorruptedError(forKey: .frame, in: c, debugDescription: "unknown frame '\(frame)'; expected one of \(Self.frames.joined(separator: ", "))")
        }
        declinationDeg = try c.decodeNumberIfPresent(.declinationDeg, in: -180...180, unit: "degrees east of true north")
        selfCalibration = try c.decodeIfPresent(Bool.self, forKey: .selfCalibration) ?? true
        selfCalibrationSoftIron = try c.decodeIfPresent(Bool.self, forKey: .selfCalibrationSoftIron) ?? true
        if frame == "xTrueNorthZVertical" && declinationDeg == nil {
            throw DecodingError.dataCorruptedError(forKey: .frame, in: c, debugDescription: "xTrueNorthZVertical needs declination_deg (the local magnetic declination, degrees east)")
        }
    }
}

/// `altimeter`: the reference for absolute altitude.
public struct AltimeterSettings: Decodable, Sendable, Equatable {
    /// Sea-level pressure (QNH), Pa. Default 101325.
    public var seaLevelPa: Double = 101_325
    /// 1σ uncertainty of `sea_level_pa`, Pa (sets the absolute accuracy). Default 1000.
    public var seaLevelUncertaintyPa: Double = 1000
    public init() {}
    enum CodingKeys: String, CodingKey, CaseIterable { case seaLevelPa = "sea_level_pa", seaLevelUncertaintyPa = "sea_level_uncertainty_pa" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seaLevelPa = try c.decodeNumber(.seaLevelPa, default: 101_325, in: 80_000...110_000, unit: "Pa")
        seaLevelUncertaintyPa = try c.decodeNumber(.seaLevelUncertaintyPa, default: 1000, in: 0...30_000, unit: "Pa, 1σ")
    }
}

/// `submersion`: the water the depth is computed for.
///
/// ```json5
/// submersion: { water: "salt", gravity: "standard" }     // fresh | en13319 | salt | teos10 | kg/m³
/// submersion: { water: "teos10", latitude_deg: 43.3 }    // teos10 needs the latitude
/// ```
public struct SubmersionSection: Decodable, Sendable, Equatable {
    public var water: WaterType = .salt
    /// `standard` (9.80665 m/s²) or `normal` (WGS 84 normal gravity at `latitude_deg`).
    public var gravity: String = "standard"
    public var latitudeDeg: Double?
    public init() {}
    enum CodingKeys: String, CodingKey, CaseIterable { case water, gravity, latitudeDeg = "latitude_deg" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let w = try? c.decode(Double.self, forKey: .water) {
            guard let t = WaterType(name: String(w)) else {
                throw DecodingError.dataCorruptedError(forKey: .water, in: c, debugDescription: "a water density must be 500…2000 kg/m³, got \(w)")
            }
            water = t
        } else if let name = try c.decodeIfPresent(String.self, forKey: .water) {
            guard let t = WaterType(name: name) else {
                throw DecodingError.dataCorruptedError(forKey: .water, in: c, debugDescription: "expected fresh, en13319, salt, teos10 or a density in kg/m³, got \"\(name)\"")
            }
            water = t
        }
        gravity = try c.decodeIfPresent(String.self, forKey: .gravity) ?? "standard"
        guard gravity == "standard" || gravity == "normal" else {
            throw DecodingError.dataCorruptedError(forKey: .gravity, in: c, debugDescription: "expected standard or normal, got \"\(gravity)\"")
        }
        latitudeDeg = try c.decodeNumberIfPresent(.latitudeDeg, in: -90...90, unit: "degrees north")
        if (water == .teos10 || gravity == "normal") && latitudeDeg == nil {
            throw DecodingError.dataCorruptedError(forKey: .latitudeDeg, in: c, debugDescription: "water teos10 and gravity normal need latitude_deg (degrees north)")
        }
    }
}

/// `service`: the client socket.
public struct ServiceSection: Decodable, Sendable, Equatable {
    /// Unix socket path, relative to this file's directory or absolute.
    /// Default /run/edge-agent/agent.sock.
    public var socketPath: String = "/run/edge-agent/agent.sock"
    /// Group that owns the socket (mode 0660). Default: the agent's group.
    public var socketGroup: String?
    /// Samples queued per client before the oldest are dropped. Default 256.
    public var queueCapacity: Int = 256
    /// The service thread is woken to deliver at most this often, ms
    /// (0: every tick). Default 20: at 100 Hz every other tick, which halves
    /// its wake-ups for at most one tick of extra latency.
    public var deliveryIntervalMs: Double = 20
    /// Clients served at once. Default 128.
    public var maxClients: Int = 128
    /// Connections one uid may hold at once. Default 64.
    public var maxClientsPerUID: Int = 64
    /// Connections holding no entitlement, together (at most
    /// `max_clients` − 1 take effect, so they never take every slot). Default 8.
    public var maxUnentitledClients: Int = 8
    /// Connections every entitled uid is kept room for (a uid holding this
    /// many may not take the last `reserved_client_slots`). Default 8.
    public var guaranteedClientsPerUID: Int = 8
    /// Slots kept for uids holding fewer than `guaranteed_clients_per_uid`
    /// (at most a quarter of `max_clients` take effect). Default 32.
    public var reservedClientSlots: Int = 32
    /// Subscriptions one uid may make per window that start a stream or
    /// speed one up (each changes the sensors' configuration). Default 32.
    public var demandRaiseLimit: Int = 32
    /// The window of `demand_raise_limit`, seconds. Default 10.
    public var demandRaiseWindowS: Double = 10
    public init() {}
    enum CodingKeys: String, CodingKey, CaseIterable {
        case socketPath = "socket_path", socketGroup = "socket_group", queueCapacity = "queue_capacity"
        case deliveryIntervalMs = "delivery_interval_ms", maxClients = "max_clients"
        case maxClientsPerUID = "max_clients_per_uid", maxUnentitledClients = "max_unentitled_clients"
        case guaranteedClientsPerUID = "guaranteed_clients_per_uid", reservedClientSlots = "reserved_client_slots"
        case demandRaiseLimit = "demand_raise_limit", demandRaiseWindowS = "demand_raise_window_s"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        socketPath = try c.decodePathIfPresent(.socketPath, what: "a socket path") ?? "/run/edge-agent/agent.sock"
        // sockaddr_un.sun_path holds 107 bytes and a NUL (a relative path is
        // resolved against this file's directory by the agent, and checked again there).
        if socketPath.hasSuffix("/") || socketPath.utf8.count > 107 {
            throw DecodingError.dataCorruptedError(forKey: .socketPath, in: c, debugDescription:
                "socket_path must be a file path of at most 107 bytes (the limit of a Unix socket address), got \(socketPath.hasSuffix("/") ? "a directory" : "\(socketPath.utf8.count) bytes"): \"\(socketPath)\"")
        }
        socketGroup = try c.decodePathIfPresent(.socketGroup, what: "a group name")
        queueCapacity = try c.decodeWholeNumber(.queueCapacity, default: 256, in: 1...65_536, unit: "samples per client")
        deliveryIntervalMs = try c.decodeNumber(.deliveryIntervalMs, default: 20, in: 0...1000, unit: "ms; 0: every tick")
        maxClients = try c.decodeWholeNumber(.maxClients, default: 128, in: 1...4096, unit: "clients")
        maxClientsPerUID = try c.decodeWholeNumber(.maxClientsPerUID, default: 64, in: 1...4096, unit: "connections per uid")
        maxUnentitledClients = try c.decodeWholeNumber(.maxUnentitledClients, default: 8, in: 0...4096,
                                                       unit: "connections without an entitlement")
        guaranteedClientsPerUID = try c.decodeWholeNumber(.guaranteedClientsPerUID, default: 8, in: 1...4096,
                                                          unit: "connections kept for every uid")
        reservedClientSlots = try c.decodeWholeNumber(.reservedClientSlots, default: 32, in: 0...4096,
                                                      unit: "slots kept for uids below their guaranteed connections")
        demandRaiseLimit = try c.decodeWholeNumber(.demandRaiseLimit, default: 32, in: 1...100_000, unit: "subscriptions per window")
        demandRaiseWindowS = try c.decodeNumber(.demandRaiseWindowS, default: 10, in: 0.001...86400, unit: "seconds")
    }
}

/// One entry of `clients`: a user or group (by name or id) and its entitlements.
public struct ClientGrant: Decodable, Sendable, Equatable {
    public var user: String?
    public var group: String?
    public var uid: UInt32?
    public var gid: UInt32?
    public var entitlements: [String]
    /// Where the entry's user, group, uid or gid was written (set when the
    /// entry was read by ``ConfigLoader``; not part of equality).
    public var location: ConfigLocation?
    static let known = ["motion", "altitude", "submersion.shallow", "submersion.full", "fitness", "recorder"]
    enum CodingKeys: String, CodingKey, CaseIterable { case user, group, uid, gid, entitlements }
    public init(user: String? = nil, group: String? = nil, uid: UInt32? = nil, gid: UInt32? = nil, entitlements: [String]) {
        self.user = user; self.group = group; self.uid = uid; self.gid = gid; self.entitlements = entitlements
    }

    /// The key that names the entry's subject: "user", "group", "uid" or "gid".
    public var subjectKey: String { user != nil ? "user" : group != nil ? "group" : uid != nil ? "uid" : "gid" }

    public static func == (a: ClientGrant, b: ClientGrant) -> Bool {
        a.user == b.user && a.group == b.group && a.uid == b.uid && a.gid == b.gid && a.entitlements == b.entitlements
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decodeIfPresent(String.self, forKey: .user)
        group = try c.decodeIfPresent(String.self, forKey: .group)
        // 4294967295 is (uid_t)-1, "no user" to the kernel.
        uid = try c.decodeWholeNumberIfPresent(.uid, in: 0...4_294_967_294, unit: "a user id").map { UInt32($0) }
        gid = try c.decodeWholeNumberIfPresent(.gid, in: 0...4_294_967_294, unit: "a group id").map { UInt32($0) }
        if [user != nil, group != nil, uid != nil, gid != nil].filter({ $0 }).count != 1 {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: c.codingPath,
                debugDescription: "each client entry names exactly one of user, group, uid or gid"))
        }
        entitlements = try c.decode([String].self, forKey: .entitlements)
        for (i, e) in entitlements.enumerated() where !Self.known.contains(e) {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: c.codingPath + [CodingKeys.entitlements, AnyKey(stringValue: "Index \(i)")],
                debugDescription: "unknown entitlement '\(e)'; known: \(Self.known.joined(separator: ", "))"))
        }
    }
}

extension AgentConfig: ConfigSourceAttaching {
    package mutating func attachSource(_ source: ConfigSource) {
        guard let list = clients else { return }
        for i in list.indices {
            clients![i].location = source.location(of: [.key("clients"), .index(i), .key(list[i].subjectKey)])
        }
    }

    /// Checks that every user and group named in `clients` exists on this
    /// system (the agent resolves them at start), and throws an error naming
    /// the file, the line and the entry of the first that does not.
    public func checkClientNames(userExists: (String) -> Bool = SystemAccounts.userExists,
                                 groupExists: (String) -> Bool = SystemAccounts.groupExists) throws(ConfigError) {
        for (i, grant) in (clients ?? []).enumerated() {
            let message: String
            if let u = grant.user, !userExists(u) {
                message = "no user named '\(u)' on this system (the passwd database has none); create the user, correct the name, or grant by uid"
            } else if let g = grant.group, !groupExists(g) {
                message = "no group named '\(g)' on this system (the group database has none); create the group (e.g. `groupadd \(g)`), correct the name, or grant by gid"
            } else {
                continue
            }
            let location = grant.location
                ?? ConfigLocation(file: "(configuration)", keyPath: "clients[\(i)].\(grant.subjectKey)")
            throw ConfigError(kind: .invalidValue, at: location, message: message)
        }
    }
}

/// Look-ups in the system's user and group databases.
public enum SystemAccounts {
    /// Whether `getpwnam_r` knows `name`.
    public static func userExists(_ name: String) -> Bool {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        while getpwnam_r(name, &pw, &buffer, buffer.count, &result) == ERANGE, buffer.count < 1 << 20 {
            buffer = [CChar](repeating: 0, count: buffer.count * 4)
        }
        return result != nil
    }

    /// Whether `getgrnam_r` knows `name`.
    public static func groupExists(_ name: String) -> Bool {
        var gr = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        while getgrnam_r(name, &gr, &buffer, buffer.count, &result) == ERANGE, buffer.count < 1 << 20 {
            buffer = [CChar](repeating: 0, count: buffer.count * 4)
        }
        return result != nil
    }
}

/// `faults`: when to reset and re-probe devices.
public struct FaultSettings: Decodable, Sendable, Equatable {
    /// Consecutive failed operations (each after its transfers' retries)
    /// before a device is re-initialised. Default 3.
    public var failuresBeforeReset: Int = 3
    /// Seconds between probes of a device that does not answer. Default
    /// 0.05: data resume within a few hundred ms of a chip answering again.
    public var reprobeIntervalS: Double = 0.05
    /// A device whose samples stop for this many expected periods is
    /// reported degraded and re-initialised. Default 4.
    public var stallPeriods: Double = 4
    /// Seconds between re-checks of a running device's configuration
    /// registers (a brown-out can reset a chip without a bus error). Default 1.
    public var verifyIntervalS: Double = 1
    /// Extra attempts for a transfer that failed transiently (no
    /// acknowledge, timeout, EIO). Default 2.
    public var busRetries: Int = 2
    public init() {}
    enum CodingKeys: String, CodingKey, CaseIterable {
        case failuresBeforeReset = "failures_before_reset", reprobeIntervalS = "reprobe_interval_s"
        case stallPeriods = "stall_periods", verifyIntervalS = "verify_interval_s", busRetries = "bus_retries"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        failuresBeforeReset = try c.decodeWholeNumber(.failuresBeforeReset, default: 3, in: 1...1000,
                                                      unit: "consecutive failed operations")
        // The engine keeps the interval in UInt64 nanoseconds: an hour is far
        // inside it (1.8e10 s would trap), 10 ms is a re-probe every tick or two.
        reprobeIntervalS = try c.decodeNumber(.reprobeIntervalS, default: 0.05, in: 0.01...3600, unit: "seconds")
        stallPeriods = try c.decodeNumber(.stallPeriods, default: 4, in: 2...100, unit: "expected sample periods")
        verifyIntervalS = try c.decodeNumber(.verifyIntervalS, default: 1, in: 0.05...3600, unit: "seconds")
        busRetries = try c.decodeWholeNumber(.busRetries, default: 2, in: 0...10, unit: "extra attempts per transfer")
    }
}

/// Per-chip-kind settings. Each key is optional; missing keys take the
/// driver's defaults (documented in docs/drivers.md).
public struct SensorSettings: Decodable, Sendable, Equatable {
    public var mpu6050: MPU6050Configuration
    public var bmp280: BMP280Configuration
    public var qmc5883l: QMC5883LConfiguration
    /// `sensors.hmc5883l`: a Honeywell HMC5883L magnetometer (GY-271 at 0x1E).
    public var hmc5883l: HMC5883LConfiguration
    /// `sensors.bme280`: its own section, not keys in `sensors.bmp280`: its
    /// standby codes 110/111 mean 10/20 ms (not 2000/4000) and it adds
    /// `humidity_oversampling`; a board's bmp280 and bme280 chips each read
    /// their own section.
    public var bme280: BME280Configuration

    public init(mpu6050: MPU6050Configuration = .default, bmp280: BMP280Configuration = .default,
                qmc5883l: QMC5883LConfiguration = .default, hmc5883l: HMC5883LConfiguration = .default,
                bme280: BME280Configuration = .default) {
        self.mpu6050 = mpu6050; self.bmp280 = bmp280; self.qmc5883l = qmc5883l
        self.hmc5883l = hmc5883l; self.bme280 = bme280
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case mpu6050, bmp280, qmc5883l, hmc5883l, bme280 }

    /// Keys each chip's settings accept (unknown keys are errors).
    static let allowedKeys: [CodingKeys: [String]] = [
        .mpu6050: ["gyro_range_dps", "accel_range_g", "dlpf_bandwidth_hz", "sample_rate_hz", "clock_source",
                   "fifo", "data_ready_interrupt", "i2c_bypass"],
        .bmp280: ["mode", "pressure_oversampling", "temperature_oversampling", "iir_filter", "standby_ms"],
        .qmc5883l: ["mode", "output_rate_hz", "range_gauss", "oversampling"],
        .hmc5883l: ["mode", "output_rate_hz", "range_gauss", "averaging"],
        .bme280: ["mode", "pressure_oversampling", "temperature_oversampling", "humidity_oversampling", "iir_filter",
                  "standby_ms"],
    ]

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        for key in CodingKeys.allCases where c.contains(key) {
            try c.superDecoder(forKey: key).rejectUnknownKeys(allowed: Self.allowedKeys[key]!)
        }
        mpu6050 = try c.decodeIfPresent(MPU6050Configuration.self, forKey: .mpu6050) ?? .default
        bmp280 = try c.decodeIfPresent(BMP280Configuration.self, forKey: .bmp280) ?? .default
        qmc5883l = try c.decodeIfPresent(QMC5883LConfiguration.self, forKey: .qmc5883l) ?? .default
        hmc5883l = try c.decodeIfPresent(HMC5883LConfiguration.self, forKey: .hmc5883l) ?? .default
        bme280 = try c.decodeIfPresent(BME280Configuration.self, forKey: .bme280) ?? .default
    }
}
