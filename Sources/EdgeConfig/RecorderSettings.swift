#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `recorder`: the sensor recorder (Core Motion's `CMSensorRecorder`):
/// where the agent keeps the accelerometer it records for clients with the
/// `recorder` entitlement, and how much disk it may use. Example:
///
///     recorder: { path: "/var/lib/edge-agent/recorder.sqlite3", max_mb: 128 }
///
/// Samples are kept three days (Apple's retention); 50 Hz for three days
/// takes about 125 MB (8 bytes a sample and the rows' overhead: 1.7 MB an
/// hour, measured).
public struct RecorderConfig: Decodable, Sendable, Equatable {
    /// The database file (created mode 0600), relative to the config file's
    /// directory or absolute.
    public var path: String
    /// Most megabytes (10^6 bytes) of database pages in use; beyond it the
    /// oldest samples are deleted. Default 128.
    public var maxMegabytes: Double = 128
    public init(path: String, maxMegabytes: Double = 128) { self.path = path; self.maxMegabytes = maxMegabytes }

    public var maxBytes: Int { Int(maxMegabytes * 1_000_000) }

    enum CodingKeys: String, CodingKey, CaseIterable { case path, maxMegabytes = "max_mb" }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(allowed: CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let p = try c.decodePathIfPresent(.path, what: "a database file path") else {
            throw DecodingError.keyNotFound(CodingKeys.path, DecodingError.Context(codingPath: c.codingPath,
                debugDescription: "recorder needs path: the SQLite file, e.g. \"/var/lib/edge-agent/recorder.sqlite3\""))
        }
        path = p
        maxMegabytes = try c.decodeNumber(.maxMegabytes, default: 128, in: 1...100_000, unit: "MB of disk for recorded samples")
    }
}
