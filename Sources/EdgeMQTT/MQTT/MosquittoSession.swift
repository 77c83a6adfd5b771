import CMosquitto
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How to reach the broker: the `broker` section resolved (paths absolute,
/// the password read from its file).
public struct BrokerSettings: Sendable {
    public var host: String
    public var port: Int
    public var protocolVersion: MQTTProtocolVersion
    public var keepaliveS: Int
    public var clientID: String
    public var username: String?
    public var password: BrokerPassword?
    public var tls: TLSSection?
    public var connectTimeoutS: Double

    public init(host: String, port: Int, protocolVersion: MQTTProtocolVersion = .v311, keepaliveS: Int = 30,
                clientID: String, username: String? = nil, password: BrokerPassword? = nil,
                tls: TLSSection? = nil, connectTimeoutS: Double = 10) {
        self.host = host; self.port = port; self.protocolVersion = protocolVersion; self.keepaliveS = keepaliveS
        self.clientID = clientID; self.username = username; self.password = password; self.tls = tls
        self.connectTimeoutS = connectTimeoutS
    }

    /// `host:port`, for messages.
    public var address: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
}

/// A libmosquitto error code (`enum mosq_err_t`).
public struct MosquittoCode: Error, Sendable, Equatable, CustomStringConvertible {
    public var rc: Int32
    public init(_ rc: Int32) { self.rc = rc }
    public var description: String { String(cString: mosquitto_strerror(rc)) }
}

/// A message the broker delivered to us.
public struct ReceivedMQTTMessage: Sendable {
    public var topic: String
    public var payload: [UInt8]
    public var retained: Bool
    public var qos: Int32
}

/// What libmosquitto reports, delivered on the thread that drives the
/// session (inside ``MosquittoSession/service(timeoutMs:extraFD:)``).
public struct MosquittoCallbacks {
    /// CONNACK: `reason` 0 is accepted, else the refusal (MQTT 5 reason
    /// code or 3.1.1 return code).
    public var connected: (_ reason: Int32) -> Void = { _ in }
    /// The connection ended: `rc` 0 after our own disconnect.
    public var disconnected: (_ rc: Int32) -> Void = { _ in }
    /// A QoS 1/2 publish completed (PUBACK/PUBCOMP), or a QoS 0 publish was
    /// written. `reason` is the MQTT 5 reason code (≥ 0x80: refused, e.g.
    /// 0x87 not authorised); always 0 with MQTT 3.1.1, which cannot say.
    public var published: (_ mid: Int32, _ reason: Int32) -> Void = { _, _ in }
    public var message: (ReceivedMQTTMessage) -> Void = { _ in }
    /// SUBACK: the granted QoS per filter (≥ 0x80: refused).
    public var subscribed: (_ mid: Int32, _ granted: [Int32]) -> Void = { _, _ in }
    /// libmosquitto's own log lines (warnings and errors; TLS failures say why here).
    public var log: (_ level: Int32, _ text: String) -> Void = { _, _ in }
    public init() {}
}

/// One libmosquitto client, driven by its owner's thread with an external
/// poll(2) loop (no libmosquitto thread: every callback runs inside
/// ``service(timeoutMs:extraFD:)``, on the owner's thread, so the bridge's
/// state needs no lock against libmosquitto).
///
/// Not thread-safe: one thread creates, drives and destroys it.
public final class MosquittoSession {
    public let settings: BrokerSettings
    public var callbacks = MosquittoCallbacks()
    let mosq: OpaquePointer
    /// The last error line libmosquitto logged (TLS errors arrive only there).
    public private(set) var lastLoggedError: String?
    private var connectStarted = false

    private static let libraryInit: Void = { _ = mosquitto_lib_init() }()

    /// Creates the client and applies the settings (protocol, credentials,
    /// TLS, Last Will). Nothing connects yet.
    /// - Throws: ``MQTTError`` `.setup` (e.g. a CA file that cannot be read: `.tls`).
    public init(_ settings: BrokerSettings, will: (topic: String, payload: String, qos: Int32, retain: Bool)?) throws(MQTTError) {
        _ = Self.libraryInit
        self.settings = settings
        guard let m = mosquitto_new(settings.clientID, true, nil) else {
            throw MQTTError(.setup(call: "mosquitto_new", rc: code(MOSQ_ERR_NOMEM)), broker: settings.address)
        }
        mosq = m
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        // Every stored property is set, so a throw from here on runs deinit,
        // which destroys the client: destroying it here too was a double
        // free (SIGABRT for a CA file the service user cannot read).
        try configure(will: will)
        installCallbacks()
    }

    deinit {
        mosquitto_destroy(mosq)
    }

    private func check(_ rc: Int32, _ call: String) throws(MQTTError) {
        guard rc == code(MOSQ_ERR_SUCCESS) else {
            throw MQTTError(.setup(call: call, rc: rc), broker: settings.address)
        }
    }

    private func configure(will: (topic: String, payload: String, qos: Int32, retain: Bool)?) throws(MQTTError) {
        let version: Int32 = settings.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version), "mosquitto_int_option(PROTOCOL_VERSION)")
        // Small messages at 1-10 Hz: send each at once, not after Nagle's 40 ms.
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "mosquitto_int_option(TCP_NODELAY)")
        if let user = settings.username {
            let rc: Int32
            if let pw = settings.password {
                rc = pw.withCString { mosquitto_username_pw_set(mosq, user, $0) }
            } else {
                rc = mosquitto_username_pw_set(mosq, user, nil)
            }
            try check(rc, "mosquitto_username_pw_set")
        }
        if let tls = settings.tls {
            for (what, path) in [("ca_file", tls.caFile), ("cert_file", tls.certFile), ("key_file", tls.keyFile)] {
                guard let path else { continue }
                if access(path, R_OK) != 0 {
                    let e = errno
                    throw MQTTError(.tls(detail: "broker.tls.\(what) \(path): \(String(cString: strerror(e))) (errno \(e))"),
                                    broker: settings.address)
                }
            }
            if tls.caFile == nil {
                try check(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "mosquitto_int_option(TLS_USE_OS_CERTS)")
            }
            let rc = mosquitto_tls_set(mosq, tls.caFile, nil, tls.certFile, tls.keyFile, nil)
            guard rc == code(MOSQ_ERR_SUCCESS) else {
                throw MQTTError(.tls(detail: "mosquitto_tls_set: \(String(cString: mosquitto_strerror(rc)))"), broker: settings.address)
            }
            // Verify the broker's certificate and its name (the default; said so).
            try check(mosquitto_tls_insecure_set(mosq, false), "mosquitto_tls_insecure_set")
        }
        if let will {
            let bytes = Array(will.payload.utf8)
            try check(mosquitto_will_set(mosq, will.topic, Int32(bytes.count), bytes, will.qos, will.retain), "mosquitto_will_set")
        }
    }

    private func installCallbacks() {
        mosquitto_connect_v5_callback_set(mosq) { _, obj, rc, _, _ in
            MosquittoSession.from(obj).callbacks.connected(rc)
        }
        mosquitto_disconnect_v5_callback_set(mosq) { _, obj, rc, _ in
            MosquittoSession.from(obj).callbacks.disconnected(rc)
        }
        mosquitto_publish_v5_callback_set(mosq) { _, obj, mid, reason, _ in
            MosquittoSession.from(obj).callbacks.published(mid, reason)
        }
        mosquitto_message_v5_callback_set(mosq) { _, obj, message, _ in
            guard let m = message?.pointee else { return }
            let topic = m.topic.map { String(cString: $0) } ?? ""
            var payload: [UInt8] = []
            if let p = m.payload, m.payloadlen > 0 {
                payload = Array(UnsafeRawBufferPointer(start: p, count: Int(m.payloadlen)))
            }
            MosquittoSession.from(obj).callbacks.message(
                ReceivedMQTTMessage(topic: topic, payload: payload, retained: m.retain, qos: m.qos))
        }
        mosquitto_subscribe_v5_callback_set(mosq) { _, obj, mid, count, granted, _ in
            var list: [Int32] = []
            if let granted { for i in 0..<Int(count) { list.append(granted[i]) } }
            MosquittoSession.from(obj).callbacks.subscribed(mid, list)
        }
        setLogCallback(true)
    }

    private func setLogCallback(_ on: Bool) {
        guard on else {
            mosquitto_log_callback_set(mosq, nil)
            return
        }
        mosquitto_log_callback_set(mosq) { _, obj, level, text in
            let s = MosquittoSession.from(obj)
            let line = text.map { String(cString: $0) } ?? ""
            if level == Int32(MOSQ_LOG_ERR) { s.lastLoggedError = line }
            s.callbacks.log(level, line)
        }
    }

    /// Whether libmosquitto's log lines reach ``MosquittoCallbacks/log`` and
    /// ``lastLoggedError`` (on from the start). While a log callback is set,
    /// libmosquitto 2.0.11 formats every line it logs, debug ones included,
    /// before the callback can look at the level (lib/logging_mosq.c,
    /// `log__printf`: a buffer of strlen(format) + 500 bytes malloc'd and
    /// filled by vsnprintf): a "sending PUBLISH" line per message, about as
    /// much work as the publish itself. Off, no line is formatted (nor
    /// reported: errors then come from return codes alone).
    public var forwardsLog = true {
        didSet { if forwardsLog != oldValue { setLogCallback(forwardsLog) } }
    }

    private static func from(_ obj: UnsafeMutableRawPointer?) -> MosquittoSession {
        Unmanaged<MosquittoSession>.fromOpaque(obj!).takeUnretainedValue()
    }

    // MARK: - connecting

    /// Starts a connection without waiting for it (DNS resolution does
    /// block; on loopback or a numeric address it is immediate). CONNACK
    /// arrives later through ``MosquittoCallbacks/connected``.
    /// - Throws: `.connect` when the TCP connection fails at once
    ///   (ECONNREFUSED), `.tls` when the handshake cannot start.
    public func startConnect() throws(MQTTError) {
        lastLoggedError = nil
        errno = 0
        let rc: Int32
        if connectStarted {
            rc = mosquitto_reconnect_async(mosq)
        } else {
            rc = mosquitto_connect_async(mosq, settings.host, Int32(settings.port), Int32(settings.keepaliveS))
            // The host and port are stored even when the first attempt fails.
            connectStarted = true
        }
        guard rc == code(MOSQ_ERR_SUCCESS) else { throw error(for: rc, errno: errno) }
    }

    /// The error for a failed connect or loop call.
    func error(for rc: Int32, errno e: Int32) -> MQTTError {
        if rc == code(MOSQ_ERR_TLS) || rc == code(MOSQ_ERR_TLS_HANDSHAKE) {
            return MQTTError(.tls(detail: lastLoggedError ?? String(cString: mosquitto_strerror(rc))), broker: settings.address)
        }
        if let line = lastLoggedError, line.contains("OpenSSL") || line.contains("TLS") || line.contains("certificate") {
            return MQTTError(.tls(detail: line), broker: settings.address)
        }
        return MQTTError(.connect(rc: rc, errno: rc == code(MOSQ_ERR_ERRNO) ? e : 0), broker: settings.address)
    }

    /// Sends DISCONNECT (the broker then does not publish the Last Will).
    public func disconnect() { _ = mosquitto_disconnect(mosq) }

    /// Whether libmosquitto holds packets the socket has not taken yet (the
    /// bridge publishes no more until it has none, so nothing piles up
    /// inside libmosquitto where the bounded queue cannot count it).
    public var wantsWrite: Bool { mosquitto_want_write(mosq) }

    /// The connection's socket, -1 when there is none.
    public var socket: Int32 { mosquitto_socket(mosq) }

    // MARK: - the loop

    /// What one turn of ``service(timeoutMs:extraFD:)`` found.
    public struct ServiceResult {
        /// Which of the extra descriptors were readable, in order.
        public var readable = Readable()
        /// libmosquitto reported an error on the socket (the connection is gone).
        public var failure: MQTTError?
    }

    /// Which of at most 64 extra descriptors were readable (a bit each: the
    /// loop turns 50-100 times a second and allocates nothing per turn).
    public struct Readable: Equatable {
        var bits: UInt64 = 0
        public subscript(_ i: Int) -> Bool { i < 64 && bits & (1 << UInt64(i)) != 0 }
    }

    /// Waits at most `timeoutMs` for the broker's socket (and `extraFD`, at
    /// most 64), then lets libmosquitto read, write and keep the connection
    /// alive (keepalive pings, retries). Callbacks run in here.
    public func service(timeoutMs: Int32, extraFD: [Int32] = []) -> ServiceResult {
        precondition(extraFD.count <= 64, "at most 64 extra descriptors")
        var result = ServiceResult()
        let sock = mosquitto_socket(mosq)
        let count = extraFD.count + (sock >= 0 ? 1 : 0)
        if pollFDs.count < count { pollFDs = Array(repeating: pollfd(), count: count) }
        for (i, fd) in extraFD.enumerated() { pollFDs[i] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0) }
        if sock >= 0 {
            var events = Int16(POLLIN)
            if mosquitto_want_write(mosq) { events |= Int16(POLLOUT) }
            pollFDs[extraFD.count] = pollfd(fd: sock, events: events, revents: 0)
        }
        let r = pollFDs.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t(count), timeoutMs) }
        if r > 0 {
            for i in extraFD.indices where pollFDs[i].revents != 0 { result.readable.bits |= 1 << UInt64(i) }
            if sock >= 0 {
                let revents = pollFDs[extraFD.count].revents
                if revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                    errno = 0
                    let rc = mosquitto_loop_read(mosq, 1)
                    if rc != code(MOSQ_ERR_SUCCESS) { result.failure = loopFailure(rc) }
                }
                if result.failure == nil, revents & Int16(POLLOUT) != 0, mosquitto_socket(mosq) >= 0 {
                    errno = 0
                    let rc = mosquitto_loop_write(mosq, 1)
                    if rc != code(MOSQ_ERR_SUCCESS) { result.failure = loopFailure(rc) }
                }
            }
        }
        if mosquitto_socket(mosq) >= 0 {
            let rc = mosquitto_loop_misc(mosq)
            if rc != code(MOSQ_ERR_SUCCESS) && rc != code(MOSQ_ERR_NO_CONN) && result.failure == nil {
                result.failure = loopFailure(rc)
            }
        }
        return result
    }
    /// The part of ``service(timeoutMs:extraFD:)`` that needs no poll(2):
    /// libmosquitto's keepalive and retries (`mosquitto_loop_misc`), for a
    /// turn that does not look at the socket (nothing is waiting to be
    /// written, and what the broker sent can wait for the next poll).
    public func serviceWithoutPolling() -> ServiceResult {
        var result = ServiceResult()
        if mosquitto_socket(mosq) >= 0 {
            let rc = mosquitto_loop_misc(mosq)
            if rc != code(MOSQ_ERR_SUCCESS) && rc != code(MOSQ_ERR_NO_CONN) { result.failure = loopFailure(rc) }
        }
        return result
    }

    /// ``service(timeoutMs:extraFD:)``'s poll set, kept between turns.
    private var pollFDs: [pollfd] = []

    private func loopFailure(_ rc: Int32) -> MQTTError {
        if rc == code(MOSQ_ERR_CONN_LOST) || rc == code(MOSQ_ERR_KEEPALIVE) || rc == code(MOSQ_ERR_NO_CONN) {
            if let line = lastLoggedError, line.contains("OpenSSL") || line.contains("certificate") {
                return MQTTError(.tls(detail: line), broker: settings.address)
            }
            return MQTTError(.lost(rc: rc), broker: settings.address)
        }
        return error(for: rc, errno: errno)
    }

    // MARK: - publishing

    /// Queues a publish (written at once when the socket takes it). Returns
    /// the message id, or the libmosquitto error code.
    public func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) -> Result<Int32, MosquittoCode> {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { raw in
            mosquitto_publish(mosq, &mid, topic, Int32(raw.count), raw.count == 0 ? nil : raw.baseAddress, qos, retain)
        }
        return rc == code(MOSQ_ERR_SUCCESS) ? .success(mid) : .failure(MosquittoCode(rc))
    }

    // MARK: - batches

    /// Holds what is written to the broker's socket from now on in the
    /// kernel until ``uncork()``, so that a batch of publishes leaves in one
    /// TCP segment (TCP_CORK, tcp(7)) where the session's TCP_NODELAY
    /// (for messages that come alone) sends one per publish. False when
    /// there is no connection or the socket refuses (nothing to undo then).
    public func cork() -> Bool {
        let sock = mosquitto_socket(mosq)
        guard sock >= 0 else { return false }
        var on: Int32 = 1
        guard setsockopt(sock, Int32(IPPROTO_TCP), TCP_CORK, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else { return false }
        corkedSocket = sock
        return true
    }

    /// Sends what ``cork()`` held (at once: TCP_NODELAY stays set).
    public func uncork() {
        guard corkedSocket >= 0 else { return }
        defer { corkedSocket = -1 }
        // The connection may have ended (and the descriptor been closed)
        // during the batch: nothing is held then.
        guard mosquitto_socket(mosq) == corkedSocket else { return }
        var off: Int32 = 0
        _ = setsockopt(corkedSocket, Int32(IPPROTO_TCP), TCP_CORK, &off, socklen_t(MemoryLayout<Int32>.size))
    }
    private var corkedSocket: Int32 = -1

    /// Subscribes to `filter`; SUBACK arrives through ``MosquittoCallbacks/subscribed``.
    @discardableResult
    public func subscribe(_ filter: String, qos: Int32) -> Result<Int32, MosquittoCode> {
        var mid: Int32 = 0
        let rc = mosquitto_subscribe(mosq, &mid, filter, qos)
        return rc == code(MOSQ_ERR_SUCCESS) ? .success(mid) : .failure(MosquittoCode(rc))
    }
}
