// sd_notify(3) in pure Swift over Glibc: readiness, watchdog, reload and
// stop notifications to systemd, for a `Type=notify` unit with `WatchdogSec=`.
//
// Protocol (systemd `sd_notify(3)`, "NOTIFY_SOCKET" in systemd.exec(5)):
// newline-separated VAR=VALUE assignments in one AF_UNIX SOCK_DGRAM datagram
// sent to $NOTIFY_SOCKET, which is a filesystem path ("/run/systemd/notify")
// or an abstract-namespace name written with a leading '@'. With no
// $NOTIFY_SOCKET (not started by systemd) every call is a no-op.
//
// The environment is a parameter, never read behind the caller's back, so
// tests point the notifier at their own socket and run in parallel.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed notification: what was attempted, on which address, and errno.
public struct SystemdNotifyError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// $NOTIFY_SOCKET is neither an absolute path nor an '@' abstract
        /// name, or is longer than sun_path allows (errno EINVAL / ENAMETOOLONG).
        case invalidAddress
        /// socket(AF_UNIX, SOCK_DGRAM) failed.
        case socket
        /// sendto() failed (ENOENT: no such socket; ECONNREFUSED: nobody bound;
        /// EAGAIN: the receiver's queue is full).
        case send
        /// sendto() sent fewer bytes than the datagram (should not happen for
        /// datagrams; kept so nothing is silently lost).
        case shortWrite
    }
    public var kind: Kind
    /// The $NOTIFY_SOCKET value.
    public var address: String
    /// errno of the failed call (0 for shortWrite).
    public var errno: Int32

    public init(kind: Kind, address: String, errno: Int32) {
        self.kind = kind; self.address = address; self.errno = errno
    }

    public var description: String {
        let what: String
        switch kind {
        case .invalidAddress: what = "invalid NOTIFY_SOCKET address"
        case .socket: what = "socket(AF_UNIX, SOCK_DGRAM) failed"
        case .send: what = "sendto NOTIFY_SOCKET failed"
        case .shortWrite: what = "short write to NOTIFY_SOCKET"
        }
        let reason = errno == 0 ? "" : ": \(String(cString: strerror(errno))) (errno \(errno))"
        return "sd_notify: \(what) '\(address)'\(reason)"
    }
}

/// Sends sd_notify datagrams to the socket named by NOTIFY_SOCKET.
public struct SystemdNotify: Sendable, Equatable {
    /// Where the datagrams go.
    public enum Address: Equatable, Sendable {
        /// A filesystem socket, absolute path.
        case path(String)
        /// An abstract-namespace socket: the name without the '@' (on the
        /// wire: sun_path[0] = 0, then the name, no terminator).
        case abstract(String)
    }

    /// The raw $NOTIFY_SOCKET value, nil when unset or empty (no-op).
    public let socketValue: String?

    /// Reads NOTIFY_SOCKET from `environment` (pass the process environment
    /// in production, a dictionary in tests).
    public init(environment: [String: String]) {
        let value = environment["NOTIFY_SOCKET"]
        socketValue = (value?.isEmpty ?? true) ? nil : value
    }

    /// Reads NOTIFY_SOCKET from the process environment (getenv).
    public static func fromProcessEnvironment() -> SystemdNotify {
        SystemdNotify(environment: processEnvironment(["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]))
    }

    /// The named variables of the process environment that are set.
    public static func processEnvironment(_ names: [String]) -> [String: String] {
        var env: [String: String] = [:]
        for name in names { if let v = getenv(name) { env[name] = String(cString: v) } }
        return env
    }

    /// True when NOTIFY_SOCKET is set: notifications are really sent.
    public var isEnabled: Bool { socketValue != nil }

    /// The parsed address, or nil when disabled.
    public func address() throws(SystemdNotifyError) -> Address? {
        guard let value = socketValue else { return nil }
        if value.hasPrefix("@") { return .abstract(String(value.dropFirst())) }
        if value.hasPrefix("/") { return .path(value) }
        throw SystemdNotifyError(kind: .invalidAddress, address: value, errno: EINVAL)
    }

    // MARK: - the messages

    /// "READY=1": start-up finished (the socket is listening). With `status`,
    /// "READY=1\nSTATUS=…" in the same datagram.
    public func ready(status: String? = nil) throws(SystemdNotifyError) {
        try send(status.map { "READY=1\nSTATUS=\($0)" } ?? "READY=1")
    }

    /// "WATCHDOG=1": keep-alive, at least every `watchdogInterval`.
    public func watchdog() throws(SystemdNotifyError) { try send("WATCHDOG=1") }

    /// "STOPPING=1": shutdown has begun.
    public func stopping() throws(SystemdNotifyError) { try send("STOPPING=1") }

    /// "RELOADING=1": a configuration reload has begun; send `ready()` when
    /// it is done. With `monotonicMicroseconds` (CLOCK_MONOTONIC, µs) adds
    /// "MONOTONIC_USEC=…", which `Type=notify-reload` (systemd ≥ 253) requires.
    public func reloading(monotonicMicroseconds: UInt64? = nil) throws(SystemdNotifyError) {
        try send(monotonicMicroseconds.map { "RELOADING=1\nMONOTONIC_USEC=\($0)" } ?? "RELOADING=1")
    }

    /// "STATUS=…": one line of free-form status shown by `systemctl status`.
    /// Newlines are replaced by spaces (a newline would start a new assignment).
    public func status(_ text: String) throws(SystemdNotifyError) {
        var line = ""
        for ch in text.unicodeScalars { line.unicodeScalars.append(ch == "\n" || ch == "\r" ? " " : ch) }
        try send("STATUS=\(line)")
    }

    /// Sends `message` (newline-separated assignments) as one datagram.
    /// No-op when NOTIFY_SOCKET is unset. EINTR is retried.
    public func send(_ message: String) throws(SystemdNotifyError) {
        guard let value = socketValue, let address = try address() else { return }

        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let bytes: [UInt8]
        let length: Int
        switch address {
        case .path(let p):
            bytes = Array(p.utf8)
            guard bytes.count < capacity else {        // room for the terminator
                throw SystemdNotifyError(kind: .invalidAddress, address: value, errno: ENAMETOOLONG)
            }
            length = pathOffset + bytes.count + 1
        case .abstract(let name):
            bytes = [0] + Array(name.utf8)
            guard !name.isEmpty, bytes.count <= capacity else {
                throw SystemdNotifyError(kind: .invalidAddress, address: value,
                                         errno: name.isEmpty ? EINVAL : ENAMETOOLONG)
            }
            length = pathOffset + bytes.count          // abstract: no terminator
        }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            raw.copyBytes(from: bytes)
        }

        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemdNotifyError(kind: .socket, address: value, errno: errno) }
        defer { close(fd) }

        var payload = Array(message.utf8)
        let expected = payload.count
        var sent = -1
        var failure: Int32 = 0
        repeat {
            sent = payload.withUnsafeMutableBytes { buf in
                withUnsafePointer(to: &storage) { sa in
                    sa.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPtr in
                        sendto(fd, buf.baseAddress, buf.count, Int32(MSG_NOSIGNAL),
                                     sockaddrPtr, socklen_t(length))
                    }
                }
            }
            failure = sent < 0 ? errno : 0
        } while sent < 0 && failure == EINTR
        if sent < 0 { throw SystemdNotifyError(kind: .send, address: value, errno: failure) }
        if sent != expected { throw SystemdNotifyError(kind: .shortWrite, address: value, errno: 0) }
    }

    // MARK: - watchdog

    /// The interval at which to send "WATCHDOG=1": half of WATCHDOG_USEC, as
    /// sd_watchdog_enabled(3) recommends. Nil when the watchdog is off:
    /// WATCHDOG_USEC unset, not a positive integer, or WATCHDOG_PID set to a
    /// pid other than `pid` (the watchdog is meant for another process).
    public static func watchdogInterval(environment: [String: String], pid: Int32) -> Duration? {
        guard let usecText = environment["WATCHDOG_USEC"], let usec = UInt64(usecText), usec > 0 else {
            return nil
        }
        if let pidText = environment["WATCHDOG_PID"], !pidText.isEmpty {
            guard let target = Int32(pidText), target == pid else { return nil }
        }
        return .microseconds(Int64(clamping: usec / 2))
    }

    /// `watchdogInterval` for this process's environment and pid.
    public static func watchdogIntervalFromProcessEnvironment() -> Duration? {
        watchdogInterval(environment: processEnvironment(["WATCHDOG_USEC", "WATCHDOG_PID"]), pid: getpid())
    }
}

/// When the next "WATCHDOG=1" is due, on a monotonic clock the caller reads
/// (nanoseconds). Pure: the loop or a service thread asks `isDue(now:)` and
/// pings when it says so; tests drive it with made-up times.
public struct SystemdWatchdogSchedule: Sendable, Equatable {
    /// Ping interval, ns (half of WATCHDOG_USEC).
    public let intervalNanoseconds: UInt64
    /// Next due time, ns; 0 = due now.
    public private(set) var nextDue: UInt64 = 0

    public init(interval: Duration) {
        let (s, atto) = interval.components
        intervalNanoseconds = UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto)) / 1_000_000_000
    }

    /// True when a ping is due at `now`; then schedules the next one an
    /// interval later (from `now`, so a late ping does not cause a burst).
    public mutating func isDue(now: UInt64) -> Bool {
        guard now >= nextDue else { return false }
        nextDue = now &+ intervalNanoseconds
        return true
    }
}
