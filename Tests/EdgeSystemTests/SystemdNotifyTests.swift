import Testing
@testable import EdgeSystem
#if canImport(Glibc)
import Glibc
#endif

/// A fake NOTIFY_SOCKET: a SOCK_DGRAM socket bound at a unique temporary path
/// (or abstract name) that the test reads datagrams from. sendto() on an
/// AF_UNIX datagram socket queues the datagram before it returns, so reads
/// use MSG_DONTWAIT and never wait.
final class FakeNotifySocket {
    let fd: Int32
    /// The value to put in NOTIFY_SOCKET.
    let notifyValue: String
    private let path: String?

    init(abstract: Bool = false) throws {
        let tag = "edge-notify-test-\(getpid())-\(UInt64.random(in: 0..<UInt64.max))"
        // Stored only once bound: a throw after every stored property is
        // set runs deinit, which would close it again (and unlink the path).
        let s = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw SystemdNotifyError(kind: .socket, address: tag, errno: errno) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes: [UInt8]
        if abstract {
            path = nil
            notifyValue = "@" + tag
            bytes = [0] + Array(tag.utf8)
        } else {
            // /tmp, not $TMPDIR: sun_path holds only 108 bytes.
            let p = "/tmp/" + tag + ".sock"
            path = p
            notifyValue = p
            bytes = Array(p.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let len = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) }
        }
        guard rc == 0 else {
            let e = errno
            close(s)
            throw SystemdNotifyError(kind: .socket, address: notifyValue, errno: e)
        }
        fd = s
    }

    /// The next queued datagram, or nil if none.
    func receive() -> String? {
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n], as: UTF8.self)
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }
}

@Suite struct SystemdNotifyTests {
    @Test func sendsExactDatagramsToAPathSocket() throws {
        let fake = try FakeNotifySocket()
        let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": fake.notifyValue])
        #expect(notify.isEnabled)
        #expect(try notify.address() == .path(fake.notifyValue))
        try notify.ready()
        try notify.watchdog()
        try notify.status("streaming 3 clients")
        try notify.reloading()
        try notify.ready(status: "reloaded")
        try notify.reloading(monotonicMicroseconds: 123_456_789)
        try notify.stopping()
        try notify.status("line one\nline two")
        #expect(fake.receive() == "READY=1")
        #expect(fake.receive() == "WATCHDOG=1")
        #expect(fake.receive() == "STATUS=streaming 3 clients")
        #expect(fake.receive() == "RELOADING=1")
        #expect(fake.receive() == "READY=1\nSTATUS=reloaded")
        #expect(fake.receive() == "RELOADING=1\nMONOTONIC_USEC=123456789")
        #expect(fake.receive() == "STOPPING=1")
        #expect(fake.receive() == "STATUS=line one line two")
        #expect(fake.receive() == nil)
    }

    @Test func sendsToAnAbstractSocket() throws {
        let fake = try FakeNotifySocket(abstract: true)
        #expect(fake.notifyValue.hasPrefix("@"))
        let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": fake.notifyValue])
        #expect(try notify.address() == .abstract(String(fake.notifyValue.dropFirst())))
        try notify.ready()
        try notify.watchdog()
        #expect(fake.receive() == "READY=1")
        #expect(fake.receive() == "WATCHDOG=1")
        #expect(fake.receive() == nil)
    }

    @Test func unsetOrEmptyIsANoOp() throws {
        for env in [[:], ["NOTIFY_SOCKET": ""], ["OTHER": "/tmp/x"]] as [[String: String]] {
            let notify = SystemdNotify(environment: env)
            #expect(!notify.isEnabled)
            #expect(try notify.address() == nil)
            try notify.ready()
            try notify.watchdog()
            try notify.stopping()
            try notify.reloading()
            try notify.status("x")
        }
    }

    @Test func missingSocketThrowsWithErrno() {
        let path = "/tmp/edge-notify-test-missing-\(getpid())-\(UInt64.random(in: 0..<UInt64.max)).sock"
        let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": path])
        #expect(throws: SystemdNotifyError(kind: .send, address: path, errno: ENOENT)) {
            try notify.ready()
        }
        let abstractName = "@edge-notify-test-nobody-\(UInt64.random(in: 0..<UInt64.max))"
        let abstract = SystemdNotify(environment: ["NOTIFY_SOCKET": abstractName])
        #expect(throws: SystemdNotifyError(kind: .send, address: abstractName, errno: ECONNREFUSED)) {
            try abstract.watchdog()
        }
    }

    @Test func invalidAddressesThrow() {
        for bad in ["relative/notify", "@", "/" + String(repeating: "x", count: 200)] {
            let notify = SystemdNotify(environment: ["NOTIFY_SOCKET": bad])
            do {
                try notify.ready()
                Issue.record("expected an error for \(bad)")
            } catch {
                #expect(error.kind == .invalidAddress)
                #expect(error.errno == EINVAL || error.errno == ENAMETOOLONG)
                #expect(error.description.contains("invalid NOTIFY_SOCKET"))
            }
        }
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUsec() {
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "10000000"], pid: 42) == .seconds(5))
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "3"], pid: 42) == .microseconds(1))
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "42"], pid: 42) == .seconds(5))
        // Meant for another process, off, or garbage: no watchdog.
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "41"], pid: 42) == nil)
        #expect(SystemdNotify.watchdogInterval(environment: [:], pid: 42) == nil)
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: 42) == nil)
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "-5"], pid: 42) == nil)
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "10s"], pid: 42) == nil)
        #expect(SystemdNotify.watchdogInterval(environment: ["WATCHDOG_USEC": "10", "WATCHDOG_PID": "x"], pid: 42) == nil)
    }

    @Test func watchdogScheduleOnAVirtualClock() {
        var schedule = SystemdWatchdogSchedule(interval: .seconds(5))
        #expect(schedule.intervalNanoseconds == 5_000_000_000)
        let times: [UInt64] = [1_000, 1_000, 5_000_000_999, 5_000_001_000, 20_000_000_000, 24_999_999_999]
        var due: [Bool] = []
        for t in times { due.append(schedule.isDue(now: t)) }
        // First ping at once; then every 5 s; a late ping is one ping, no burst.
        #expect(due == [true, false, false, true, true, false])
        #expect(SystemdWatchdogSchedule(interval: .microseconds(1500)).intervalNanoseconds == 1_500_000)
    }
}
