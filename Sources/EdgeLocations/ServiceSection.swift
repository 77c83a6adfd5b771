#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The two keys of an agent configuration a client needs to find the
/// agent: `service.socket_path` and `service.socket_group`. Read without
/// the agent's configuration types (a client links no engine), and without
/// judging the rest of the file: the agent validates its own configuration
/// and says what is wrong with it; a client only needs these two.
public struct ServiceSection: Equatable, Sendable {
    /// `service.socket_path` as written (relative to the file's directory), nil when absent.
    public var socketPath: String?
    /// `service.socket_group`, nil when absent.
    public var socketGroup: String?

    /// The largest configuration read (the agent's own bound).
    public static let maximumFileBytes = 1 << 20

    /// Reads `path` (a regular file of at most ``maximumFileBytes``, JSON5).
    public static func read(_ path: String) throws(ServiceSectionError) -> ServiceSection {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, limit: maximumFileBytes)
        } catch {
            throw ServiceSectionError(file: path, keyPath: "", message: error.description, unreadable: true)
        }
        struct File: Decodable {
            struct Service: Decodable {
                var socket_path: String?
                var socket_group: String?
            }
            var service: Service?
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            // A trailing newline keeps FoundationEssentials' JSON5 scanner
            // from reading past a comment on the last line.
            let file = try decoder.decode(File.self, from: Data(bytes + [0x0A]))
            return ServiceSection(socketPath: file.service?.socket_path, socketGroup: file.service?.socket_group)
        } catch let DecodingError.typeMismatch(_, context) {
            throw ServiceSectionError(file: path, keyPath: context.codingPath.map(\.stringValue).joined(separator: "."),
                                      message: "expected a string")
        } catch {
            throw ServiceSectionError(file: path, keyPath: "", message: "not a JSON5 configuration (\(error)); `edge-agent run --config \(path)` says where")
        }
    }
}

/// Why ``ServiceSection/read(_:)`` failed: the file, the key (empty: the
/// file as a whole) and what is wrong.
public struct ServiceSectionError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var keyPath: String
    public var message: String
    /// The file could not be read at all (missing, not a regular file, too large).
    public var unreadable = false
    public var description: String { keyPath.isEmpty ? "\(file): \(message)" : "\(file): \(keyPath): \(message)" }
}
