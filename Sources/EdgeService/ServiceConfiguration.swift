import EdgeProtocol

/// Settings of the client-protocol server.
public struct ServiceConfiguration: Sendable, Hashable {
    /// Unix-domain socket path (`/run/edge-agent/agent.sock` for the system service).
    public var socketPath: String
    /// Permission bits of the socket file (0660: owner and group may connect).
    public var socketMode: UInt32 = 0o660
    /// Group that owns the socket file (name or decimal gid); nil keeps the agent's group.
    public var socketGroup: String?
    /// Messages each client's queue holds; when full the oldest is dropped and counted.
    public var queueCapacity: Int = 256
    /// Longest request line, bytes (newline excluded). Longer → `tooLarge` and disconnect.
    public var maxLineBytes: Int = 4096
    /// Bytes one client's queue may hold. Over it, its oldest samples go;
    /// when what is over is replies it has not read (a client that asks and
    /// never reads), it is disconnected with `notReading`. Default 1 MiB
    /// (a paged history reply is at most about 60 KB).
    public var maxQueuedBytesPerClient: Int = 1 << 20
    /// Bytes all clients' queues may hold together. A reply that takes the
    /// total over it disconnects its client (`notReading`) when that client
    /// already holds more than its share (this over ``maxClients``).
    /// Default 16 MiB.
    public var maxQueuedBytesTotal: Int = 16 << 20
    /// Requests a client may send per ``floodWindowNs``; more → `flood` and disconnect.
    public var floodLimit: Int = 200
    /// Flood-limit window, ns.
    public var floodWindowNs: UInt64 = 1_000_000_000
    /// Clients served at once; the next gets `tooManyClients`.
    public var maxClients: Int = 128
    /// Connections one uid may hold at once, entitled or not; the next gets
    /// `tooManyClientsForUID`. At least 1; a value above ``maxClients`` acts
    /// as ``maxClients``. Default 64: no single user holds more than half
    /// the slots of the default 128.
    public var maxClientsPerUID: Int = 64
    /// Connections every entitled uid is kept room for: a uid holding fewer
    /// is admitted while any slot is free; one holding this many or more
    /// only while more than ``reservedClientSlots`` are free. So greedy
    /// users cannot lock another entitled user out: with the defaults two
    /// uids together hold at most 96 of 128 slots, and the last 32 give
    /// four more uids 8 connections each. Default 8.
    public var guaranteedClientsPerUID: Int = 8
    /// Slots kept for uids below ``guaranteedClientsPerUID``. Default 32
    /// (a quarter of the default 128); at most a quarter of ``maxClients``
    /// take effect.
    public var reservedClientSlots: Int = 32
    /// Connections, over all uids, whose client holds no entitlement at all
    /// (such a client may only list devices and streams, ping and read its
    /// stats); the next gets `tooManyUnentitledClients`. At least 0; at most
    /// ``maxClients`` − 1 take effect, so at least one slot — by default
    /// 120 of 128 — is only ever given to entitled clients. Default 8.
    public var maxUnentitledClients: Int = 8
    /// Times one uid may raise the agent's demand per ``demandRaiseWindowNs``
    /// (a `subscribe` that starts a stream nobody subscribes to, or asks for
    /// a faster interval than anyone does: each makes the loop thread
    /// reconfigure, wake or re-rate chips). More → `tooManyDemandChanges`;
    /// the subscription is not changed and the connection stays. At least 1;
    /// default 32.
    public var demandRaiseLimit: Int = 32
    /// Window of ``demandRaiseLimit``, ns; at least 1 ms; default 10 s.
    public var demandRaiseWindowNs: UInt64 = 10_000_000_000
    /// Samples the loop can publish ahead of the service thread (rounded up to
    /// a power of two). When full, `publish` drops the sample and counts an overrun.
    public var sampleRingCapacity: Int = 1024
    /// SO_SNDBUF of client sockets, bytes; nil keeps the kernel default. Smaller
    /// values make the per-client queue, not the kernel, absorb a stalled reader.
    public var socketSendBufferBytes: Int?
    /// Time `stop()` waits for clients to take their `shutdown` line, ns.
    public var shutdownGraceNs: UInt64 = 250_000_000
    /// Longest idle poll(2) of the service thread, ms (-1: none). Every
    /// event wakes it anyway; tests set -1 so a lost wake-up hangs visibly.
    var idlePollTimeoutMs: Int32 = 1000
    /// Agent version in the version line.
    public var agentVersion: String = "0.1.0"
    /// Told to clients in the version line: the agent's north reference
    /// frame and its magnetic declination in degrees (nil: none).
    public var agentFrame: String?
    public var agentDeclinationDeg: Double?

    public init(socketPath: String = EdgeProtocolInfo.defaultSocketPath, socketGroup: String? = nil) {
        self.socketPath = socketPath
        self.socketGroup = socketGroup
    }

    /// Applies a configuration file's `service:` section over the defaults.
    public init(_ settings: ServiceSettings) {
        self.init(socketPath: settings.socketPath ?? EdgeProtocolInfo.defaultSocketPath,
                  socketGroup: settings.socketGroup)
        if let v = settings.queueCapacity { queueCapacity = v }
        if let v = settings.maxLineBytes { maxLineBytes = v }
        if let v = settings.floodLimitPerSecond { floodLimit = v }
        if let v = settings.maxClients { maxClients = v }
        if let v = settings.maxClientsPerUID { maxClientsPerUID = v }
        if let v = settings.maxUnentitledClients { maxUnentitledClients = v }
        if let v = settings.demandRaiseLimit { demandRaiseLimit = v }
        if let v = settings.demandRaiseWindowSeconds {
            // Out of range or not finite: 0, which validate() refuses.
            demandRaiseWindowNs = v.isFinite && v >= 0 && v <= 86_400 ? UInt64((v * 1e9).rounded()) : 0
        }
    }

    /// ``reservedClientSlots`` as applied: at most a quarter of ``maxClients``.
    var effectiveReservedClientSlots: Int { min(reservedClientSlots, maxClients / 4) }
    /// ``maxClientsPerUID`` as applied.
    var effectiveMaxClientsPerUID: Int { min(maxClientsPerUID, maxClients) }
    /// ``maxUnentitledClients`` as applied: one slot is always left for entitled clients.
    var effectiveMaxUnentitledClients: Int { min(maxUnentitledClients, maxClients - 1) }

    func validate() throws(ServiceError) {
        guard queueCapacity >= 1 else { throw .invalidConfiguration("queueCapacity must be ≥ 1") }
        guard maxLineBytes >= 64 else { throw .invalidConfiguration("maxLineBytes must be ≥ 64") }
        guard maxQueuedBytesPerClient >= 65_536 else { throw .invalidConfiguration("maxQueuedBytesPerClient must be ≥ 64 KiB") }
        guard maxQueuedBytesTotal >= maxQueuedBytesPerClient else {
            throw .invalidConfiguration("maxQueuedBytesTotal must be ≥ maxQueuedBytesPerClient")
        }
        guard floodLimit >= 1 else { throw .invalidConfiguration("floodLimit must be ≥ 1") }
        guard maxClients >= 1 else { throw .invalidConfiguration("maxClients must be ≥ 1") }
        guard maxClientsPerUID >= 1 else { throw .invalidConfiguration("maxClientsPerUID must be ≥ 1") }
        guard guaranteedClientsPerUID >= 1 else { throw .invalidConfiguration("guaranteedClientsPerUID must be ≥ 1") }
        guard reservedClientSlots >= 0 else { throw .invalidConfiguration("reservedClientSlots must be ≥ 0") }
        guard maxUnentitledClients >= 0 else { throw .invalidConfiguration("maxUnentitledClients must be ≥ 0") }
        guard demandRaiseLimit >= 1 else { throw .invalidConfiguration("demandRaiseLimit must be ≥ 1") }
        guard demandRaiseWindowNs >= 1_000_000 else { throw .invalidConfiguration("demandRaiseWindowNs must be ≥ 1 ms") }
        guard sampleRingCapacity >= 2 else { throw .invalidConfiguration("sampleRingCapacity must be ≥ 2") }
        guard socketMode <= 0o777 else { throw .invalidConfiguration("socketMode must be ≤ 0777") }
    }
}

/// The configuration file's `service:` section (all keys optional), e.g.
/// `service: { socketPath: "/run/edge-agent/agent.sock", socketGroup: "edge", queueCapacity: 256 }`.
/// Entitlements are a separate `clients:` list of ``EntitlementGrant``.
public struct ServiceSettings: Codable, Sendable, Hashable {
    public var socketPath: String?
    public var socketGroup: String?
    public var queueCapacity: Int?
    public var maxLineBytes: Int?
    public var floodLimitPerSecond: Int?
    public var maxClients: Int?
    public var maxClientsPerUID: Int?
    public var maxUnentitledClients: Int?
    public var demandRaiseLimit: Int?
    /// ``ServiceConfiguration/demandRaiseWindowNs`` in seconds, 0.001…86400
    /// (anything else makes the server refuse the configuration).
    public var demandRaiseWindowSeconds: Double?
    public init(socketPath: String? = nil, socketGroup: String? = nil, queueCapacity: Int? = nil,
                maxLineBytes: Int? = nil, floodLimitPerSecond: Int? = nil, maxClients: Int? = nil,
                maxClientsPerUID: Int? = nil, maxUnentitledClients: Int? = nil,
                demandRaiseLimit: Int? = nil, demandRaiseWindowSeconds: Double? = nil) {
        self.socketPath = socketPath; self.socketGroup = socketGroup; self.queueCapacity = queueCapacity
        self.maxLineBytes = maxLineBytes; self.floodLimitPerSecond = floodLimitPerSecond
        self.maxClients = maxClients; self.maxClientsPerUID = maxClientsPerUID
        self.maxUnentitledClients = maxUnentitledClients
        self.demandRaiseLimit = demandRaiseLimit; self.demandRaiseWindowSeconds = demandRaiseWindowSeconds
    }
}
