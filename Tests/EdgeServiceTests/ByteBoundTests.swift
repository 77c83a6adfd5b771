// Issue 16, item 2: a client's queue was bounded in lines (256) only, and a
// reply was never dropped. 20 connections that asked for long history
// replies and never read took the agent to 3.44 GB. Now each client's queue
// and all of them together are bounded in bytes: samples are shed first,
// and a client holding more unread replies than the bound is disconnected
// with `notReading`, while every other client goes on.
import Testing
#if canImport(Glibc)
import Glibc
#endif
import EdgeValues
import EdgeProtocol
@testable import EdgeService
import TestThreads

@Suite(.ownThread) struct ByteBoundTests {
    /// Pages of 500 activities (about 75 KB a reply), whatever is asked.
    final class LongHistory: HistorySource, @unchecked Sendable {
        func history(_ stream: StreamName, fromNs: Int64, toNs: Int64, maxRows: Int) -> Result<HistoryReply, HistorySourceError> {
            .success(.activities((0..<maxRows).map {
                .init(startS: 1_767_225_600 + Double($0) * 60, flags: .walking, confidence: .high)
            }, nextFromNs: 1_767_225_600_000_000_000 + Int64(maxRows) * 60_000_000_000))
        }
    }

    @Test func aClientThatAsksAndNeverReadsIsDisconnectedAndOthersGoOn() throws {
        let server = try makeServer("bytes", policy: EntitlementPolicy(byUID: [getuid(): [.fitness, .motion]])) {
            $0.socketSendBufferBytes = 4096
        }
        defer { server.stop() }
        server.setHistorySource(LongHistory())
        let reader = try TestClient(path: server.socketPath)
        _ = try #require(reader.readMessage())

        let hog = try TestClient(path: server.socketPath, receiveBuffer: 4096)
        _ = try #require(hog.readMessage())
        // 40 requests for replies of ~75 KB: 3 MB, three times the 1 MiB
        // bound, sent in one write before the hog reads anything. (It reads
        // at once after: the agent keeps a cut-off connection open for 1 s
        // to deliver its last line, and a pause here would race that.)
        hog.send((0..<40).map { #"{"class":"history","stream":"activity","from_s":0,"to_s":2000000000,"id":\#($0)}"# + "\n" }.joined())

        // The hog reads: some replies, then notReading, then EOF. Lines
        // first, parsed after the end: parsing 75 KB lines as they come is
        // slow under a sanitizer, and the hog must drain within that 1 s.
        var lines: [String] = []
        while let line = hog.readLine(timeoutMs: 10_000) { lines.append(line) }
        var codes: [String] = [], replies = 0
        for m in lines.compactMap({ try? JSONValue.parse(Array($0.utf8)) }) {
            if m.string("class") == "history" { replies += 1 }
            if m.string("class") == "error", let code = m.string("code") { codes.append(code) }
        }
        // The agent stayed responsive for others.
        #expect(reader.barrier() != nil)
        #expect(codes == ["notReading"], "codes: \(codes)")
        #expect(replies < 40, "the bound cut it off before all 40 replies (\(replies))")
        #expect(hog.closed)

        // The hog is gone; the queue it held was given back; the agent serves on.
        #expect(reader.barrier() != nil)
        let deadline = monotonicMs() + 5000
        while server.statistics().clients.count > 1 && monotonicMs() < deadline { usleep(10_000) }
        #expect(server.statistics().clients.count == 1)
    }

    @Test func aFullQueueShedsSamplesToStayWithinItsBytes() {
        var q = MessageQueue(capacity: 1000)
        var pool = LinePool()
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 10_000)
        let line = big.withUnsafeBufferPointer { pool.line($0) }
        for _ in 0..<300 { _ = q.push(line, sample: true) }
        #expect(q.bytes == 3_000_000)
        let control = big.withUnsafeBufferPointer { pool.line($0) }
        _ = q.push(control)
        while q.bytes > 1 << 20 { let shed = q.shedOldestSample(); #expect(shed) }
        #expect(q.bytes <= 1 << 20 && q.count == 104)
        #expect(q.sampleCount == 103)
        // Popping every line gives the byte count back to 0.
        while q.popFirst() != nil {}
        #expect(q.bytes == 0 && q.sampleCount == 0)
        let none = q.shedOldestSample()
        #expect(!none)
    }

    @Test func pooledLinesGiveBackALongReplysBuffer() {
        var pool = LinePool()
        let long = [UInt8](repeating: 1, count: 200_000)
        var first: Line? = long.withUnsafeBufferPointer { pool.line($0) }
        #expect(first!.bytes.capacity >= 200_000)
        first = nil   // only the pool holds it now
        let short: [UInt8] = [1, 2, 3]
        let again = short.withUnsafeBufferPointer { pool.line($0) }
        #expect(again.bytes == short)
        #expect(again.bytes.capacity <= LinePool.maximumKeptCapacity, "capacity \(again.bytes.capacity)")
    }
}
