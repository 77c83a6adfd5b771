#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == EINTR || errno == EAGAIN { return .timeout }
            if errno == ECONNRESET { closed = true; return .closed }
            return .failed(errno)
        }
        if n == 0 { closed = true; return .closed }
        buffer.append(contentsOf: chunk[0..<n])
        if buffer.count > Self.maximumLine && !buffer.contains(UInt8(ascii: "\n")) { return .tooLong }
        return .data
    }
}
