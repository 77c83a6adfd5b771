#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `fitness`: the pedometer, floors, activity and their history
/// (docs/fitness.md). Example:
///
///     fitness: { enabled: true, height_m: 1.80, stride_scale: 1.04, floor_height_m: 3,
///                history: { path: "/var/lib/edge-agent/fitness.sqlite3", retention_days: 7 } }
public struct FitnessConfig: Decodable, Sendable, Equatable {
    /// Run the pedometer, floor counter and activity classifier all the time
    /// (keeps the IMU and barometer awake). Default: true with a `history`,
    /// else false (they run while a client subscribes to one of their streams).
    public var enabled = false
    /// The wearer's height, m (the stride model). Default 1.70.
    public var heightMeters = 1.70
    /// Per-user stride calibration factor (walk a known distance: docs/fitness.md). Default 1.
    public var strideScale = 1.0
    /// Height of one floor, m. Default 3.
    public var floorHeightMeters = 3.0
    /// The history database; nil: no history.
    public var history: FitnessHistoryConfig?
    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled, history
        case heightMeters = "height_m", strideScale = "stride_scale", floorHeightMeters = "floor_height_m"
    }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let enabledKey = try c.decodeIfPresent(Bool.self, forKey: .enabled)
        heightMeters = try c.decodeNumber(.heightMeters, default: 1.70, in: 0.5...2.5, unit: "m, the wearer's height")
        strideScale = try c.decodeNumber(.strideScale, default: 1, in: 0.2...5, unit: "times the population stride model")
        floorHeightMeters = try c.decodeNumber(.floorHeightMeters, default: 3, in: 1...10, unit: "m per floor")
        history = try c.decodeIfPresent(FitnessHistoryConfig.self, forKey: .history)
        if history != nil && enabledKey == false {
            throw DecodingError.dataCorruptedError(forKey: .enabled, in: c, debugDescription:
                "a history needs the pedometer running all the time: leave fitness.enabled out (or true), or remove fitness.history")
        }
        enabled = enabledKey ?? (history != nil)
    }
}

/// `fitness.history`: where the SQLite history lives and how long it keeps.
public struct FitnessHistoryConfig: Decodable, Sendable, Equatable {
    /// The database file (created mode 0600), relative to the config file's
    /// directory or absolute.
    public var path: String
    /// Records older than this are deleted, days. Default 7 (Apple keeps 7).
    public var retentionDays: Double = 7
    public init(path: String, retentionDays: Double = 7) { self.path = path; self.retentionDays = retentionDays }

    enum CodingKeys: String, CodingKey, CaseIterable { case path, retentionDays = "retention_days" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let p = try c.decodePathIfPresent(.path, what: "a database file path") else {
            throw DecodingError.keyNotFound(CodingKeys.path, DecodingError.Context(codingPath: c.codingPath,
                debugDescription: "fitness.history needs path: the SQLite file, e.g. \"/var/lib/edge-agent/fitness.sqlite3\""))
        }
        path = p
        retentionDays = try c.decodeNumber(.retentionDays, default: 7, in: 0.01...3650, unit: "days")
    }
}
