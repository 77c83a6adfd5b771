import EdgeProtocol

/// Where the engine's samples go: the service (Unix-socket server), a
/// recorder, or a test collector. Called from the loop thread: `publish`
/// must never block or allocate; the others are rare (device changes).
public protocol SampleSink: AnyObject {
    /// Hands one sample over; false when it had to be dropped.
    @discardableResult func publish(_ sample: Sample, wake: Bool) -> Bool
    /// Signals that a tick's samples are all published.
    func wakeService()
    /// A device connected or disconnected.
    func publishConnection(_ event: ConnectionEvent)
    /// The devices snapshot changed.
    func setDevices(_ devices: [DeviceInfo])
    /// Bumped whenever ``demand()`` changes (one atomic load per tick).
    var demandGeneration: Int { get }
    /// Fastest requested interval per stream, seconds; absent = nobody asked.
    func demand() -> [StreamName: Double]
}

extension StreamName {
    /// Every stream at every sample (interval 0): what a recorder or a
    /// benchmark sink asks for.
    public static let demandEverything: [StreamName: Double] =
        Dictionary(uniqueKeysWithValues: StreamName.allCases.map { ($0, 0) })
}

/// Takes every sample and throws it away: drives an engine whose bus
/// traffic, not its samples, is wanted (recording, benchmarks).
public final class DiscardingSink: SampleSink, @unchecked Sendable {
    public let wanted: [StreamName: Double]
    public init(_ wanted: [StreamName: Double] = StreamName.demandEverything) { self.wanted = wanted }
    public func publish(_ sample: Sample, wake: Bool) -> Bool { true }
    public func wakeService() {}
    public func publishConnection(_ event: ConnectionEvent) {}
    public func setDevices(_ devices: [DeviceInfo]) {}
    public var demandGeneration: Int { 0 }
    public func demand() -> [StreamName: Double] { wanted }
}

/// Collects everything, for tests and the replay tool. Wants every stream.
public final class CollectingSink: SampleSink, @unchecked Sendable {
    public private(set) var samples: [Sample] = []
    public private(set) var events: [ConnectionEvent] = []
    public private(set) var devices: [DeviceInfo] = []
    public var demanded: [StreamName: Double]
    public var demandGeneration: Int = 0
    /// How many times the engine woke the "service".
    public private(set) var wakes = 0

    public init(demand: [StreamName: Double] = StreamName.demandEverything) {
        demanded = demand
    }
    public func publish(_ sample: Sample, wake: Bool) -> Bool { samples.append(sample); return true }
    public func wakeService() { wakes += 1 }
    public func publishConnection(_ event: ConnectionEvent) { events.append(event) }
    public func setDevices(_ devices: [DeviceInfo]) { self.devices = devices }
    public func demand() -> [StreamName: Double] { demanded }
    /// Changes what is demanded (as a client subscribing would).
    public func setDemand(_ d: [StreamName: Double]) { demanded = d; demandGeneration += 1 }
    public func removeAll() { samples.removeAll(keepingCapacity: true); events.removeAll() }
}
