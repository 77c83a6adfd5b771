/// The `code` of an `"class":"error"` message.
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    /// The line is not a JSON object, or a key has the wrong type. Connection stays.
    case malformedRequest
    /// `class` names no request this agent knows. Connection stays.
    case unknownRequest
    /// `stream` names no stream. Connection stays.
    case unknownStream
    /// The client's uid/gid lacks the stream's entitlement; no data is sent. Connection stays.
    case notEntitled
    /// `interval_s` is negative, not finite, or above the maximum. Connection stays.
    case badInterval
    /// `poll` before the stream produced any sample. Connection stays.
    case noSample
    /// A request line exceeded the line limit. The agent closes the connection.
    case tooLarge
    /// More requests per second than the flood limit. The agent closes the connection.
    case flood
    /// The agent serves its maximum number of clients. The agent closes the connection.
    case tooManyClients
    /// A `subscribe` would raise the agent's demand (start a stream nobody
    /// subscribes to, or ask for a faster interval than anyone does) and the
    /// client's uid has raised it too often lately. Nothing changes; the
    /// connection stays.
    case tooManyDemandChanges
    /// The client's uid already holds the most connections one uid may. The
    /// agent closes the connection.
    case tooManyClientsForUID
    /// The client holds no entitlement, and the small separate budget of
    /// connections without one is used up. The agent closes the connection.
    case tooManyUnentitledClients
    /// `id` is neither a string of at most ``Request/maxIDStringBytes`` bytes
    /// nor an integer literal within ±``Request/maxIDMagnitude``. The reply
    /// carries no `id` (there is none the client could match). Connection stays.
    case badRequestID
    /// A `history` request to an agent that keeps no fitness history
    /// (`fitness.history` is not configured), or whose history could not be
    /// read; a `record` or `recorded` request to an agent with no sensor
    /// recorder (`recorder` is not configured), or whose recording could not
    /// be written or read; the message says which. Connection stays.
    case noHistory
    /// The client's queue holds more bytes of replies and events it has not
    /// read than the agent keeps for one client (it sends requests and does
    /// not read the answers), or than its share when the agent's total is
    /// used up. The agent closes the connection.
    case notReading

    public var wireName: StaticString {
        switch self {
        case .malformedRequest: return "malformedRequest"
        case .unknownRequest: return "unknownRequest"
        case .unknownStream: return "unknownStream"
        case .notEntitled: return "notEntitled"
        case .badInterval: return "badInterval"
        case .noSample: return "noSample"
        case .tooLarge: return "tooLarge"
        case .flood: return "flood"
        case .tooManyClients: return "tooManyClients"
        case .tooManyDemandChanges: return "tooManyDemandChanges"
        case .tooManyClientsForUID: return "tooManyClientsForUID"
        case .tooManyUnentitledClients: return "tooManyUnentitledClients"
        case .badRequestID: return "badRequestID"
        case .noHistory: return "noHistory"
        case .notReading: return "notReading"
        }
    }

    /// Whether the agent closes the connection after sending this error.
    public var closesConnection: Bool {
        switch self {
        case .tooLarge, .flood, .tooManyClients, .tooManyClientsForUID, .tooManyUnentitledClients: return true
        default: return false
        }
    }
}
