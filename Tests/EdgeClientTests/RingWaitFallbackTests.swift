#if canImport(Glibc)
import Glibc
#endif
import Testing
import Foundation
import EdgeValues
import EdgeProtocol
import EdgeService
import CTestShims
import TestThreads
@testable import EdgeClient

// The ring reader where futex_waitv(2) is missing (Linux before 5.16:
// Raspberry Pi OS bullseye, Debian 11): it waits on one ring's word at a
// time for 2 ms and reads the other rings' words in user space. A seccomp
// filter (Tests/CTestShims) takes the call away from the client's threads
// only, so this runs on any kernel.

/// Runs `body` on a new thread that, with every thread it starts, gets
/// ENOSYS from futex_waitv; returns what the thread's futex_waitv said.
private func withoutFutexWaitv(_ body: @escaping @Sendable () -> Void) throws -> Int32 {
    let said = Locked<Int32>(-1)
    let thread = Thread {
        let r = edge_test_deny_futex_waitv()
        said.withLock { $0 = r == 0 ? edge_test_futex_waitv_errno() : -r }
        if r == 0 { body() }
    }
    thread.start()
    #expect(eventually { thread.isFinished })
    return said.withLock { $0 }
}

@Suite(.ownThread) struct RingWaitFallbackTests {
    /// Samples come through the fallback wait exactly as through lines, and
    /// rings that come and go while the reader's thread waits (each cancel
    /// lets go of a ring from another thread; each new subscription maps a
    /// new one) are unmapped only by that thread: a ring unmapped by the
    /// cancelling thread while the reader was about to read its wake word
    /// in user space crashed the process.
    @Test func ringsWorkAndComeAndGoWithoutFutexWaitv() throws {
        var configuration = ServiceConfiguration(socketPath: clientSocketPath("ringnowaitv"))
        configuration.demandRaiseLimit = 1_000   // each new subscription is a raise
        let server = try ServiceServer(configuration: configuration, devices: [imu])
        defer { server.stop() }
        let client = AgentClient(socketPath: server.socketPath, usesRings: true)
        defer { client.close() }
        let inbox = SampleInbox()
        let first = Locked<Subscription?>(nil)
        // The subscription starts the client's thread, which starts the ring
        // reader's: both inherit the filter.
        let said = try withoutFutexWaitv { first.withLock { $0 = inbox.subscribe(client, .deviceMotion) } }
        #expect(said == ENOSYS, "futex_waitv on the filtered thread: errno \(said)")
        #expect(eventually { subscribed(server, to: .deviceMotion) })
        // One thread publishes everything (the server's sample ring has one
        // producer): 300 samples, then, once told, a steady stream until told
        // to stop.
        let phase = Locked(0)   // 0: first 300; 1: they are out; 2: stream; 3: stop
        let publisher = Thread {
            for i in 0..<300 { server.publish(richMotion(i)) }
            phase.withLock { $0 = 1 }
            while phase.withLock({ $0 }) == 1 { usleep(1000) }
            var i = 300
            while phase.withLock({ $0 }) == 2 {
                server.publish(richMotion(i))
                server.publish(.accelerometer(AccelerometerSample(timestampNs: 5_000_000_000 + UInt64(i) * 10_000_000,
                                                                  acceleration: Vector3(0, 0, -1))))
                i += 1
                usleep(200)
            }
        }
        publisher.start()
        defer { phase.withLock { $0 = 3 } }
        #expect(eventually { inbox.count == 300 }, "\(inbox.count) of 300")
        #expect(inbox.samples.withLock { $0 } == (0..<300).map(richMotion))
        #expect(client.counts.ringSamples == 300 && client.counts.ringFallbacks == 0,
                "\(client.counts.ringSamples) from rings; refused: \(client.counts.lastRingFallback ?? "none")")

        // A second stream's ring stays while the first comes and goes, so the
        // reader waits on two words (the user-space read of the second).
        let other = SampleInbox()
        let keep = other.subscribe(client, .accelerometer)
        defer { keep.cancel() }
        first.withLock { $0?.cancel() }
        phase.withLock { $0 = 2 }
        var cycles = 0
        for _ in 0..<150 {
            let again = SampleInbox()
            let s = again.subscribe(client, .deviceMotion)
            let got = eventually { again.count > 0 }
            s.cancel()
            if !got { break }
            cycles += 1
        }
        phase.withLock { $0 = 3 }
        #expect(eventually { publisher.isFinished })
        #expect(cycles == 150, "a subscription got no sample after \(cycles) cycles")
        #expect(other.count > 0)
        #expect(client.counts.ringFallbacks == 0, "refused: \(client.counts.lastRingFallback ?? "none")")
    }
}

private func subscribed(_ server: ServiceServer, to s: StreamName) -> Bool {
    server.statistics().clients.contains { $0.subscriptions.contains(s) }
}
