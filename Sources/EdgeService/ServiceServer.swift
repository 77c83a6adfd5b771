#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
import EdgeValues
import CEdgeShims
import EdgeProtocol

/// Counters of one connected client.
public struct ClientStatistics: Sendable, Hashable {
    public var id: Int
    public var identity: ClientIdentity
    /// Sample lines waiting in the client's queue.
    public var queued: Int
    /// Lines written completely to the client's socket.
    public var delivered: Int
    /// Lines dropped from the queue because the client read too slowly.
    public var dropped: Int
    /// Streams the client subscribes to.
    public var subscriptions: [StreamName]
}

/// Counters of the whole server (for benchmarks and the `status` tool).
public struct ServiceStatistics: Sendable, Hashable {
    /// Samples the loop handed over with `publish`.
    public var published: Int
    /// Samples `publish` dropped because the service thread was behind (ring full).
    public var overruns: Int
    /// Sample lines encoded (once per sample with at least one due subscriber).
    public var encoded: Int
    /// Non-finite values encoded as `null` (a fusion bug upstream).
    public var nonFiniteValues: Int
    /// Clients connected since start (refused ones included).
    public var acceptedClients: Int
    /// Connections refused by a connection limit since start
    /// (`tooManyClients`, `tooManyClientsForUID`, `tooManyUnentitledClients`).
    public var refusedClients: Int
    /// The clients connected now.
    public var clients: [ClientStatistics]
    /// Lines dropped from client queues since start, over every connection
    /// — the connected ones (their ``ClientStatistics/dropped``) and all
    /// that have disconnected since.
    public var droppedTotal: Int
    /// Lines written completely to client sockets since start, over every
    /// connection, connected or not.
    public var deliveredTotal: Int
    /// Rings the kernel would not make (out of descriptors or memory); those
    /// subscriptions were served as lines.
    public var ringFailures: Int = 0
    /// Why the last ring could not be made (nil: none failed).
    public var lastRingFailure: String? = nil
}

/// Server-wide counters that outlive the connections that add to them.
final class ServiceTotals: Sendable {
    let dropped = Atomic<Int>(0)
    let delivered = Atomic<Int>(0)
}

/// Counters of one client, written by the service thread, read by anyone.
/// Every delivered or dropped line is also added to the server's totals, so
/// they keep counting after the client disconnects.
final class ClientCounters: Sendable {
    let id: Int
    let identity: ClientIdentity
    let totals: ServiceTotals
    let queued = Atomic<Int>(0)
    let delivered = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
    /// Bit `StreamName.index` set while subscribed.
    let subscriptionMask = Atomic<Int>(0)
    init(id: Int, identity: ClientIdentity, totals: ServiceTotals) {
        self.id = id; self.identity = identity; self.totals = totals
    }

    @inline(__always)
    func addDropped(_ n: Int) {
        dropped.wrappingAdd(n, ordering: .relaxed)
        totals.dropped.wrappingAdd(n, ordering: .relaxed)
    }

    @inline(__always)
    func addDelivered(_ n: Int) {
        delivered.wrappingAdd(n, ordering: .relaxed)
        totals.delivered.wrappingAdd(n, ordering: .relaxed)
    }

    var snapshot: ClientStatistics {
        let mask = subscriptionMask.load(ordering: .relaxed)
        return ClientStatistics(id: id, identity: identity,
                                queued: queued.load(ordering: .relaxed),
                                delivered: delivered.load(ordering: .relaxed),
                                dropped: dropped.load(ordering: .relaxed),
                                subscriptions: StreamName.allCases.filter { mask & (1 << $0.index) != 0 })
    }
}

/// State shared between the engine's threads and the service thread.
final class ServiceCore: Sendable {
    let configuration: ServiceConfiguration
    let policy: EntitlementPolicy
    let ring: SampleRing
    let wakeReadFD: Int32
    let wakeWriteFD: Int32
    let wakePending = Atomic<Bool>(false)
    /// Delivers on the calling (loop) thread when the service thread is not
    /// busy; set once before the service thread starts.
    nonisolated(unsafe) var deliverInline: (() -> Bool)?
    /// Answers `history` requests; nil: the agent keeps no history.
    let historySource = Locked<(any HistorySource)?>(nil)
    /// Answers `record` and `recorded`; nil: the agent keeps no recorder.
    let recorderSource = Locked<(any RecorderSource)?>(nil)
    let stopRequested = Atomic<Bool>(false)
    /// Whether the service thread accepts connections (until then they wait
    /// in the listen backlog): see ``ServiceServer/startAcceptingClients()``.
    let acceptingClients = Atomic<Bool>(true)
    let demandGeneration = Atomic<Int>(0)
    let encodedCount = Atomic<Int>(0)
    let nonFiniteCount = Atomic<Int>(0)
    let ringFailures = Atomic<Int>(0)
    let acceptedCount = Atomic<Int>(0)
    let refusedCount = Atomic<Int>(0)
    let totals = ServiceTotals()
    /// Who is at the other end of an accepted socket: SO_PEERCRED, or a
    /// stand-in in tests (one process cannot connect as several users).
    let peerCredentials: PeerCredentials

    struct Shared {
        var devices: [DeviceInfo] = []
        /// Why the last shared-memory ring could not be made.
        var lastRingFailure: String?
        var pendingEvents: [ConnectionEvent] = []
        var stopReason = "agent stopping"
        /// Fastest requested interval per stream, ns (nil: nobody subscribes).
        var demandNs: [UInt64?] = Array(repeating: nil, count: StreamName.count)
        var clients: [ClientCounters] = []
        var onDemandChange: (@Sendable ([StreamName: Double]) -> Void)?
    }
    let shared: Locked<Shared>

    /// The peer's pid, uid and gid; nil when the kernel cannot tell (the socket is then closed).
    typealias PeerCredentials = @Sendable (_ fd: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)?

    static let socketPeerCredentials: PeerCredentials = { fd in
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        guard edge_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        return (pid, uid, gid)
    }

    init(configuration: ServiceConfiguration, policy: EntitlementPolicy, devices: [DeviceInfo],
         onDemandChange: (@Sendable ([StreamName: Double]) -> Void)?,
         peerCredentials: @escaping PeerCredentials = ServiceCore.socketPeerCredentials) throws(ServiceError) {
        self.configuration = configuration
        self.policy = policy
        self.peerCredentials = peerCredentials
        self.ring = SampleRing(minimumCapacity: configuration.sampleRingCapacity)
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            throw .system(PosixError(errno: errno, call: "socketpair"))
        }
        wakeReadFD = fds[0]
        wakeWriteFD = fds[1]
        shared = Locked(Shared(devices: devices, onDemandChange: onDemandChange))
    }

    deinit {
        Posix.close(wakeReadFD)
        Posix.close(wakeWriteFD)
    }

    /// Wakes the service thread; at most one wake-up byte per drain cycle.
    @inline(__always)
    func wake() {
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var b: UInt8 = 1
            _ = Glibc.write(wakeWriteFD, &b, 1) // non-blocking; a full pipe already means "wake".
        }
    }

    #if DEBUG
    /// The first thread that published (debug builds trap on a second producer:
    /// the ring is single-producer).
    let producer = Atomic<UInt>(0)

    func checkSingleProducer() {
        let me = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        let (exchanged, original) = producer.compareExchange(expected: 0, desired: me, ordering: .relaxed)
        precondition(exchanged || original == me,
                     "ServiceServer.publish called from two threads; the sample ring is single-producer")
    }
    #endif

    static func demandDictionary(_ ns: [UInt64?]) -> [StreamName: Double] {
        var d: [StreamName: Double] = [:]
        for s in StreamName.allCases { if let v = ns[s.index] { d[s] = Double(v) / 1e9 } }
        return d
    }
}

/// The client-protocol server: a Unix-domain socket speaking line-delimited
/// JSON, served by one dedicated service thread (poll(2), non-blocking
/// sockets), fed by the loop thread through a lock-free ring.
///
/// ```swift
/// let server = try ServiceServer(
///     configuration: ServiceConfiguration(socketPath: "/run/edge-agent/agent.sock", socketGroup: "edge"),
///     policy: try EntitlementPolicy.resolving(config.clients),
///     devices: hub.deviceInfos,
///     onDemandChange: { demand in hub.setRates(demand) })   // called on the service thread
/// // loop thread, every tick:
/// server.publish(.deviceMotion(sample))                     // never blocks, never allocates
/// // on SIGTERM:
/// server.stop(reason: "SIGTERM")
/// ```
public final class ServiceServer: Sendable {
    let core: ServiceCore
    private let thread: Locked<ServiceThread?>

    /// Where `history` requests are answered from (nil: every one gets
    /// `noHistory`, saying the agent keeps none). Set it before clients are
    /// accepted (`acceptingClients: false`, then ``startAcceptingClients()``):
    /// a client accepted earlier may be told the agent keeps none.
    public func setHistorySource(_ source: (any HistorySource)?) {
        core.historySource.withLock { $0 = source }
    }

    /// Where `record` and `recorded` requests are answered from (nil:
    /// every one gets `noHistory`, saying the agent keeps no recorder). As
    /// with the history, set it before clients are accepted: the version
    /// line says whether there is one.
    public func setRecorderSource(_ source: (any RecorderSource)?) {
        core.recorderSource.withLock { $0 = source }
    }

    /// The socket path actually bound.
    public var socketPath: String { core.configuration.socketPath }
    public var configuration: ServiceConfiguration { core.configuration }

    /// Binds the socket (replacing a stale socket file nothing listens on),
    /// sets its mode and group, and starts the service thread.
    ///
    /// - Parameters:
    ///   - configuration: socket path, mode, group and limits.
    ///   - policy: who may receive which streams.
    ///   - devices: the first devices snapshot (update with ``setDevices(_:)``).
    ///   - onDemandChange: called on the service thread whenever the fastest
    ///     requested interval of any stream changes, with the full map
    ///     (stream → seconds; absent: nobody subscribes). Must not block.
    ///   - acceptingClients: false to bind the socket now but accept no
    ///     connection until ``startAcceptingClients()``: a client that
    ///     connects meanwhile waits for its version line in the listen
    ///     backlog, instead of being answered by an agent that has not yet
    ///     set its history and recorder sources or its devices. (A server
    ///     stopped before it opened accepts them then, so they read why.)
    public init(configuration: ServiceConfiguration,
                policy: EntitlementPolicy = .defaultPolicy(),
                devices: [DeviceInfo] = [],
                acceptingClients: Bool = true,
                onDemandChange: (@Sendable ([StreamName: Double]) -> Void)? = nil) throws(ServiceError) {
        let (core, t) = try Self.start(configuration, policy, devices, onDemandChange, ServiceCore.socketPeerCredentials,
                                       acceptingClients: acceptingClients)
        self.core = core
        thread = Locked(t)
    }

    /// As the public initializer, with the peer credentials taken from `peerCredentials` (tests).
    init(configuration: ServiceConfiguration, policy: EntitlementPolicy, devices: [DeviceInfo],
         onDemandChange: (@Sendable ([StreamName: Double]) -> Void)?,
         peerCredentials: @escaping ServiceCore.PeerCredentials) throws(ServiceError) {
        let (core, t) = try Self.start(configuration, policy, devices, onDemandChange, peerCredentials)
        self.core = core
        thread = Locked(t)
    }

    private static func start(_ configuration: ServiceConfiguration, _ policy: EntitlementPolicy,
                              _ devices: [DeviceInfo],
                              _ onDemandChange: (@Sendable ([StreamName: Double]) -> Void)?,
                              _ peerCredentials: @escaping ServiceCore.PeerCredentials,
                              acceptingClients: Bool = true)
        throws(ServiceError) -> (ServiceCore, ServiceThread) {
        try configuration.validate()
        let core = try ServiceCore(configuration: configuration, policy: policy, devices: devices,
                                   onDemandChange: onDemandChange, peerCredentials: peerCredentials)
        core.acceptingClients.store(acceptingClients, ordering: .releasing)
        let listener = try ListeningSocket.bind(configuration)
        let loop = ServiceLoop(core: core, listener: listener)
        core.deliverInline = { [unowned loop] in loop.deliverInline() }
        do throws(ServiceError) {
            return (core, try ServiceThread.start(name: "edge-service") { loop.run() })
        } catch {
            listener.closeAndUnlink()
            throw error
        }
    }

    deinit {
        stop()
    }

    // MARK: loop-thread API

    /// Hands a sample to the service thread. Call from one thread only (the
    /// loop thread). Never blocks, never allocates, takes no lock: the sample
    /// is copied into a ring slot. Returns false when the ring is full (the
    /// service thread is stalled); the sample is dropped and counted in
    /// ``ServiceStatistics/overruns``.
    ///
    /// With `wake: true` the service thread is woken by one non-blocking
    /// one-byte write, at most once per service cycle. A loop that publishes
    /// several samples per tick can pass `wake: false` and call
    /// ``wakeService()`` once after the last, so the tick costs one wake-up
    /// and each client one socket write.
    @discardableResult
    public func publish(_ sample: Sample, wake: Bool = true) -> Bool {
        #if DEBUG
        core.checkSingleProducer()
        #endif
        let ok = core.ring.push(sample)
        if wake { core.wake() }
        return ok
    }

    /// Wakes the service thread to take what was published with `wake: false`.
    /// Non-blocking; a no-op when a wake-up is already pending.
    public func wakeService() {
        if let d = core.deliverInline, d() { return }
        core.wake()
    }

    // MARK: engine API (any thread, rare)

    /// Starts accepting the connections of a server made with
    /// `acceptingClients: false` (those waiting in the backlog first). The
    /// agent calls it once its engine has probed the board and published
    /// the first devices snapshot. Does nothing the second time.
    public func startAcceptingClients() {
        guard !core.acceptingClients.exchange(true, ordering: .acquiringAndReleasing) else { return }
        core.wake()
    }

    /// Broadcasts a device connection change to every client (and should be
    /// followed by a ``setDevices(_:)`` with the new state).
    public func publishConnection(_ event: ConnectionEvent) {
        core.shared.withLock { $0.pendingEvents.append(event) }
        core.wake()
    }

    /// Replaces the devices snapshot that `devices` requests return.
    public func setDevices(_ devices: [DeviceInfo]) {
        core.shared.withLock { $0.devices = devices }
    }

    /// Fastest interval any client requested per stream, seconds (0: every
    /// sample). A stream nobody subscribes to is absent: the engine may idle
    /// it unless the configuration keeps it always on.
    public func demand() -> [StreamName: Double] {
        ServiceCore.demandDictionary(core.shared.withLock { $0.demandNs })
    }

    /// Incremented on every demand change: the loop can compare it each tick
    /// (one atomic load) and call ``demand()`` only when it moved.
    public var demandGeneration: Int { core.demandGeneration.load(ordering: .acquiring) }

    /// A snapshot of all counters. The totals are kept after ``stop()``
    /// (which disconnects every client).
    public func statistics() -> ServiceStatistics {
        let clients = core.shared.withLock { $0.clients }
        return ServiceStatistics(published: core.ring.published.load(ordering: .relaxed),
                                 overruns: core.ring.overruns.load(ordering: .relaxed),
                                 encoded: core.encodedCount.load(ordering: .relaxed),
                                 nonFiniteValues: core.nonFiniteCount.load(ordering: .relaxed),
                                 acceptedClients: core.acceptedCount.load(ordering: .relaxed),
                                 refusedClients: core.refusedCount.load(ordering: .relaxed),
                                 clients: clients.map(\.snapshot),
                                 droppedTotal: core.totals.dropped.load(ordering: .relaxed),
                                 deliveredTotal: core.totals.delivered.load(ordering: .relaxed),
                                 ringFailures: core.ringFailures.load(ordering: .relaxed),
                                 lastRingFailure: core.shared.withLock { $0.lastRingFailure })
    }

    /// Stops the server: every client gets `{"class":"shutdown","reason":…}`
    /// (waiting at most ``ServiceConfiguration/shutdownGraceNs`` for slow
    /// readers), all sockets close and the socket file is removed. Blocks
    /// until the service thread has exited. Idempotent.
    public func stop(reason: String = "agent stopping") {
        guard let t = thread.withLock({ t -> ServiceThread? in defer { t = nil }; return t }) else { return }
        core.shared.withLock { $0.stopReason = reason }
        core.stopRequested.store(true, ordering: .releasing)
        core.wake()
        t.join()
    }
}
