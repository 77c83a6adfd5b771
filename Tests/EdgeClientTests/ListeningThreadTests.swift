#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import TestThreads

/// `ListeningThread` (Tests/TestThreads), the test servers' listener: a
/// serving thread that starts late must not accept on a descriptor number
/// that another socket of the process has been given since.
@Suite(.ownThread)
struct ListeningThreadTests {
    /// A listening socket bound to a fresh path.
    private func listener(_ tag: String) throws -> (fd: Int32, path: String) {
        let path = "/tmp/edge-listening-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(fd, 4) == 0)
        return (fd, path)
    }

    private func connectTo(_ path: String) -> (fd: Int32, errno: Int32) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if r != 0 { let e = errno; close(fd); return (-1, e) }
        return (fd, 0)
    }

    /// The serving thread is held back until after `stop()` and after a
    /// second listener and a client of it exist. Closing the first
    /// listener in `stop()` (as the test servers did) lets the second take
    /// its number, and the late `accept` takes the other client; here it
    /// fails with EINVAL, and the second listener still has its client.
    @Test func aLateThreadDoesNotAcceptAnotherSocketsClient() throws {
        let first = try listener("first")
        defer { unlink(first.path) }
        let go = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let result = AcceptResult()
        let serving = ListeningThread(listener: first.fd) { l in
            go.wait()
            let c = accept(l, nil, nil)
            result.set(c, c < 0 ? errno : 0)
            if c >= 0 { close(c) }
            done.signal()
        }
        serving.stop()
        #expect(serving.isStopped)
        // The path refuses at once, though the thread has not run yet.
        #expect(connectTo(first.path).errno == ECONNREFUSED)

        let second = try listener("second")
        defer { close(second.fd); unlink(second.path) }
        #expect(second.fd != first.fd, "the first listener's number is still held, so nobody else gets it")
        let client = connectTo(second.path)
        try #require(client.fd >= 0)
        defer { close(client.fd) }

        go.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        let (c, e) = result.get()
        #expect(c < 0 && e == EINVAL, "accept after stop: \(c), errno \(e)")
        // The second listener's client is still waiting for it.
        var p = pollfd(fd: second.fd, events: Int16(POLLIN), revents: 0)
        let waiting = poll(&p, 1, 0) == 1
        #expect(waiting, "the second listener's client was taken")
        if waiting {
            let taken = accept(second.fd, nil, nil)
            #expect(taken >= 0)
            if taken >= 0 { close(taken) }
        }
    }

    /// A thread blocked in `accept` wakes at `stop()` and the listener is
    /// closed once it returns; `stop()` twice is harmless.
    @Test func stopWakesABlockedAccept() throws {
        let l = try listener("blocked")
        defer { unlink(l.path) }
        let entered = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let serving = ListeningThread(listener: l.fd) { fd in
            entered.signal()
            _ = accept(fd, nil, nil)
            done.signal()
        }
        #expect(entered.wait(timeout: .now() + 30) == .success)
        serving.stop()
        #expect(done.wait(timeout: .now() + 30) == .success)
        serving.stop()
        #expect(connectTo(l.path).errno == ECONNREFUSED)
    }
}

/// A descriptor and an errno, set on one thread and read on another.
private final class AcceptResult: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (Int32, Int32) = (-2, 0)
    func set(_ c: Int32, _ e: Int32) { lock.withLock { value = (c, e) } }
    func get() -> (Int32, Int32) { lock.withLock { value } }
}
