import EdgeProtocol

// The seam between the bridge and the agent's socket.
//
// The bridge is a client of the agent like any app, through the project's
// one client library: `edge-mqtt run` uses ``PolledAgentFeed`` (over
// EdgeClient's `AgentConnection`, driven by the broker thread: one wake-up
// per batch), `edge-mqtt check` ``AgentClientFeed`` (over `AgentClient`,
// with a thread of its own). The protocol stays so the bridge's logic can
// be driven by a scripted feed in tests.

/// A stream the bridge wants, and how often (capture time between samples).
public struct FeedSubscription: Sendable, Hashable {
    public var stream: StreamName
    /// 0: every sample.
    public var intervalNs: UInt64
    public init(stream: StreamName, intervalNs: UInt64) { self.stream = stream; self.intervalNs = intervalNs }
}

/// What the feed reports, on its own thread, in order.
public enum FeedEvent: Sendable {
    /// Connected (again) to the agent: its version line. Every subscription
    /// has been requested again.
    case connected(ServerMessage.VersionInfo)
    /// A connection attempt failed (the agent is not running, or refused
    /// us); the feed tries again after a delay that doubles up to 2 s.
    case connectFailed(String)
    /// The connection ended (the agent stopped or restarted); the feed reconnects.
    case disconnected(String)
    /// The agent accepted a subscription and its first sample arrived (on
    /// every connection).
    case subscribed(StreamName, intervalS: Double)
    /// The agent refused a subscription (`notEntitled`, `tooManyDemandChanges`…).
    case refused(StreamName, code: ErrorCode?, message: String)
    /// A sample, exactly as the agent published it.
    case sample(Sample)
    /// Samples of a stream the bridge never saw: its shared-memory ring
    /// overwrote them before they were read (the bridge fell more than a
    /// ring, 1024 samples, behind).
    case lost(StreamName, count: Int)
    /// The agent's devices (a `devices` reply).
    case devices([DeviceInfo])
    /// A device's health changed.
    case device(ConnectionEvent)
    /// The agent said it is stopping.
    case shutdown(reason: String)
}

/// A source of samples and connection events from the agent.
public protocol SampleFeed: AnyObject, Sendable {
    /// Starts connecting (and reconnecting) on the feed's own thread;
    /// `handler` gets every event there and must not block.
    func start(subscriptions: [FeedSubscription], handler: @escaping @Sendable (FeedEvent) -> Void)
    /// Asks the agent for its device list again (answered by `.devices`).
    func requestDevices()
    /// Stops; no event follows once it returns.
    func stop()
    /// Counts the feed thread's loop turns (a stuck thread stops counting).
    var heartbeat: UInt64 { get }
}
