#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CEdgeShims

/// Splits what a socket delivers into lines (without their `\n`). Reads at
/// most once per call, waiting with poll(2) at most `timeoutMs`.
struct LineReader {
    /// The longest line accepted from the agent: a longer one means the peer
    /// is not an agent (the agent's own lines are far shorter).
    static let maximumLine = 1 << 20

    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 65536)
    /// The peer closed the connection (EOF or reset).
    private(set) var closed = false
    /// Descriptors the agent passed (SCM_RIGHTS: shared-memory rings), in
    /// the order they came; each belongs to the next reply that offers one.
    private(set) var descriptors: [Int32] = []
    /// The kernel dropped passed descriptors (this process ran out of them).
    private(set) var descriptorsTruncated = false

    init() { buffer.reserveCapacity(65536) }

    /// The next complete line already received, if any.
    mutating func takeLine() -> ArraySlice<UInt8>? {
        guard start < buffer.count, let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) else {
            if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
            return nil
        }
        let line = buffer[start..<nl]
        start = nl + 1
        return line
    }

    /// The first descriptor passed and not yet taken.
    mutating func takeDescriptor() -> Int32? {
        descriptors.isEmpty ? nil : descriptors.removeFirst()
    }

    /// Closes the descriptors nobody took (the connection ended).
    mutating func closeDescriptors() {
        for fd in descriptors { Glibc.close(fd) }
        descriptors.removeAll()
    }

    /// Puts `bytes` (whole lines) in front of what is buffered.
    mutating func prepend(_ bytes: [UInt8]) {
        buffer.replaceSubrange(0..<start, with: bytes)
        start = 0
    }

    enum ReadResult { case data, timeout, closed, tooLong, failed(Int32) }

    /// Reads what is available (waiting up to `timeoutMs`, -1: no limit).
    mutating func read(_ fd: Int32, timeoutMs: Int32) -> ReadResult {
        if closed { return .closed }
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&p, 1, timeoutMs)
        if r < 0 { return errno == EINTR ? .timeout : .failed(errno) }
        if r == 0 { return .timeout }
        var passed = (Int32(-1), Int32(-1), Int32(-1), Int32(-1))
        var count: Int32 = 0, truncated: Int32 = 0
        let n = chunk.withUnsafeMutableBytes { buf in
            withUnsafeMutablePointer(to: &passed) {
                $0.withMemoryRebound(to: Int32.self, capacity: 4) {
                    edge_recv_with_fds(fd, buf.baseAddress, buf.count, $0, 4, &count, &truncated)
                }
            }
        }
        if count > 0 {
            withUnsafeBytes(of: passed) { raw in
                for i in 0..<Int(count) { descriptors.append(raw.load(fromByteOffset: i * 4, as: Int32.self)) }
            }
        }
        if truncated != 0 { descriptorsTruncated = true }
        if n < 0 {
            let e = Int32(-n)
            if e == EINTR || e == EAGAIN { return .timeout }
            if e == ECONNRESET { closed = true; return .closed }
            return .failed(e)
        }
        if n == 0 { closed = true; return .closed }
        buffer.append(contentsOf: chunk[0..<n])
        if buffer.count > Self.maximumLine && !buffer.contains(UInt8(ascii: "\n")) { return .tooLong }
        return .data
    }
}
