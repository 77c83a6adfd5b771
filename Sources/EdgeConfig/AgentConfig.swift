#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeChips

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

    public init(board: String = "simulated", sensors: SensorSettings = SensorSettings()) {
        self.board = board; self.sensors = sensors
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case board, sensors }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        board = try c.decodeIfPresent(String.self, forKey: .board) ?? "simulated"
        sensors = try c.decodeIfPresent(SensorSettings.self, forKey: .sensors) ?? SensorSettings()
    }
}

/// Per-chip-kind settings. Each key is optional; missing keys take the
/// driver's defaults (documented in docs/drivers.md).
public struct SensorSettings: Decodable, Sendable, Equatable {
    public var mpu6050: MPU6050Configuration
    public var bmp280: BMP280Configuration
    public var qmc5883l: QMC5883LConfiguration

    public init(mpu6050: MPU6050Configuration = .default, bmp280: BMP280Configuration = .default,
                qmc5883l: QMC5883LConfiguration = .default) {
        self.mpu6050 = mpu6050; self.bmp280 = bmp280; self.qmc5883l = qmc5883l
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case mpu6050, bmp280, qmc5883l }

    /// Keys each chip's settings accept (unknown keys are errors).
    static let allowedKeys: [CodingKeys: [String]] = [
        .mpu6050: ["gyro_range_dps", "accel_range_g", "dlpf_bandwidth_hz", "sample_rate_hz", "clock_source",
                   "fifo", "data_ready_interrupt", "i2c_bypass"],
        .bmp280: ["mode", "pressure_oversampling", "temperature_oversampling", "iir_filter", "standby_ms"],
        .qmc5883l: ["mode", "output_rate_hz", "range_gauss", "oversampling"],
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
    }
}

/// Finds configuration and board files.
public enum BoardLocator {
    /// Where the agent looks for its configuration when none is given:
    /// `$EDGE_AGENT_CONFIG`, then `/etc/edge-agent/edge-agent.json5` when
    /// installed, then `config/edge-agent.json5` in the working directory.
    public static func defaultConfigPath(environment: [String: String]) -> String? {
        if let p = environment["EDGE_AGENT_CONFIG"], !p.isEmpty { return p }
        for p in ["/etc/edge-agent/edge-agent.json5", "config/edge-agent.json5"]
        where FileManager.default.fileExists(atPath: p) {
            return p
        }
        return nil
    }

    /// Resolves a board reference from a config file: a path (contains `/`
    /// or ends in `.json5`) is relative to the config file's directory; a
    /// bare name is looked up as `NAME.json5` in `<config dir>/../boards`,
    /// `<config dir>/boards`, `/usr/share/edge-agent/boards` and `./boards`.
    public static func resolveBoard(_ reference: String, relativeTo configPath: String?) -> (path: String?, searched: [String]) {
        let configDir = configPath.map { directory(of: $0) } ?? "."
        if reference.contains("/") || reference.hasSuffix(".json5") {
            let p = reference.hasPrefix("/") ? reference : configDir + "/" + reference
            return (FileManager.default.fileExists(atPath: p) ? p : nil, [p])
        }
        let candidates = [configDir + "/../boards", configDir + "/boards", "/usr/share/edge-agent/boards", "boards"]
            .map { $0 + "/" + reference + ".json5" }
        return (candidates.first { FileManager.default.fileExists(atPath: $0) }, candidates)
    }

    /// The directory part of a path (`.` for a bare file name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Resolves `relative` against the directory of `file`.
    public static func resolve(_ relative: String, nextTo file: String) -> String {
        relative.hasPrefix("/") ? relative : directory(of: file) + "/" + relative
    }
}
