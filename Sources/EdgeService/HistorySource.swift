import EdgeProtocol

/// Answers `history` requests: the agent's fitness history (the agent sets
/// one with ``ServiceServer/setHistorySource(_:)`` when `fitness.history` is
/// configured, before it accepts clients). Called on the service thread,
/// one request at a time; a query must be short (an indexed read of a local
/// database).
public protocol HistorySource: AnyObject, Sendable {
    /// What the history holds for `stream` (`pedometer` or `activity`)
    /// between `fromNs` and `toNs` (ns since 1970, UTC; the request decoder
    /// has checked both are within 0 ... ``Request/maxHistoryNs``), at most
    /// `maxRows` activities (the reply's `nextFromNs` says where the rest
    /// begins), or why it cannot say (the message reaches the client as a
    /// `noHistory` error).
    func history(_ stream: StreamName, fromNs: Int64, toNs: Int64, maxRows: Int) -> Result<HistoryReply, HistorySourceError>
}

/// Why a ``HistorySource`` could not answer, in words for the client.
public struct HistorySourceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Answers `record` and `recorded` requests: the agent's sensor recorder
/// (set with ``ServiceServer/setRecorderSource(_:)`` when `recorder` is
/// configured, before the agent accepts clients). Called on the service
/// thread, one request at a time.
public protocol RecorderSource: AnyObject, Sendable {
    /// Opens or extends `uid`'s recording window for `durationS` seconds from now.
    func record(uid: UInt32, durationS: Double) -> Result<RecordingWindow, HistorySourceError>
    /// The samples recorded in `uid`'s windows between `fromNs` and `toNs`
    /// (ns since 1970), at most `maxSamples`.
    func recorded(uid: UInt32, fromNs: Int64, toNs: Int64, maxSamples: Int) -> Result<RecordedPage, HistorySourceError>
}
