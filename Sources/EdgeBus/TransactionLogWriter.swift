import EdgeValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A log file that could not be written.
public struct TransactionLogWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    public var path: String
    public var errno: Int32
    /// `create`, `write` or `close`.
    public var operation: String
    public init(path: String, errno: Int32, operation: String) {
        self.path = path; self.errno = errno; self.operation = operation
    }
    public var description: String {
        "cannot \(operation) the transaction log \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Writes a transaction log (format: ``TransactionLog``) as it happens.
///
/// Streaming and buffered: records are formatted straight into one byte
/// buffer (no `String` per record, no allocation beyond the buffer's
/// amortised growth) and written to the file with one `write(2)` whenever
/// the buffer passes ``flushThreshold`` (64 KiB: a page-cache copy every few
/// hundred transfers), on ``flush()`` and on ``close()``.
///
/// A record call cannot throw (``RecordingBus`` calls it inside
/// `transfer`, which throws only `I2CError`): the first write failure is
/// kept in ``failure``, later records are counted in ``droppedRecords``
/// instead of written, and ``flush()`` / ``close()`` throw it. Check
/// ``failure`` now and then (each tick is fine) to stop a recording whose
/// disk filled up.
///
/// Not thread-safe: one writer belongs to the thread that owns the bus.
public final class TransactionLogWriter: @unchecked Sendable {
    /// The header written at creation (metadata added later is appended to it).
    public private(set) var header: TransactionLogHeader
    /// Where it goes: a path, or `(memory)`.
    public let path: String
    /// Buffered bytes that trigger a write to the file.
    public let flushThreshold: Int
    /// Records written (or buffered) so far.
    public private(set) var recordCount = 0
    /// Records not written because an earlier write failed.
    public private(set) var droppedRecords = 0
    /// The first write failure, if any.
    public private(set) var failure: TransactionLogWriteError?

    private var buffer: [UInt8] = []
    /// Everything written, when in memory.
    private let inMemory: Bool
    private var fd: Int32
    private let ownsDescriptor: Bool
    private var closed = false

    /// A writer that keeps the log in memory (tests, small captures); read it with ``text``.
    public init(header: TransactionLogHeader) {
        self.header = TransactionLogHeader(bus: header.bus, startNanoseconds: header.startNanoseconds,
                                           startUTC: header.startUTC)
        path = "(memory)"
        flushThreshold = .max
        inMemory = true
        fd = -1
        ownsDescriptor = false
        buffer.reserveCapacity(1 << 12)
        writeHeader(header)
    }

    /// A writer to a new file at `path` (created or truncated, mode 0644).
    public init(header: TransactionLogHeader, path: String, flushThreshold: Int = 1 << 16) throws(TransactionLogWriteError) {
        var f: Int32
        repeat { f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) } while f < 0 && errno == EINTR
        if f < 0 { throw TransactionLogWriteError(path: path, errno: errno, operation: "create") }
        self.header = TransactionLogHeader(bus: header.bus, startNanoseconds: header.startNanoseconds,
                                           startUTC: header.startUTC)
        self.path = path
        self.flushThreshold = max(1, flushThreshold)
        inMemory = false
        fd = f
        ownsDescriptor = true
        buffer.reserveCapacity(min(self.flushThreshold, 1 << 20) + 256)
        writeHeader(header)
    }

    /// A writer to an open file descriptor (standard output, a pipe). It is
    /// not closed by ``close()``.
    public init(header: TransactionLogHeader, fileDescriptor: Int32, name: String = "(fd)",
                flushThreshold: Int = 1 << 16) {
        self.header = TransactionLogHeader(bus: header.bus, startNanoseconds: header.startNanoseconds,
                                           startUTC: header.startUTC)
        path = name
        self.flushThreshold = max(1, flushThreshold)
        inMemory = false
        fd = fileDescriptor
        ownsDescriptor = false
        buffer.reserveCapacity(min(self.flushThreshold, 1 << 20) + 256)
        writeHeader(header)
    }

    deinit {
        if !closed && !inMemory {
            try? flush()
            if ownsDescriptor && fd >= 0 { _ = Glibc.close(fd) }
        }
    }

    private func writeHeader(_ h: TransactionLogHeader) {
        append(TransactionLog.magic); newline()
        metadataLine(TransactionLogHeader.Key.bus, h.bus)
        append("@"); append(TransactionLogHeader.Key.startNanoseconds); space(); decimal(h.startNanoseconds); newline()
        if let u = h.startUTC { metadataLine(TransactionLogHeader.Key.startUTC, u) }
        for e in h.metadata { addMetadata(e.key, e.value) }
    }

    // MARK: header and comments

    /// Adds an `@key value` line. Only before the first record (a
    /// programmer error otherwise: the header is what a replay reads to
    /// rebuild the drivers). `key`: `[A-Za-z0-9._-]+`, not `bus`/`start-ns`/`start-utc`.
    public func addMetadata(_ key: String, _ value: String) {
        precondition(recordCount == 0, "transaction log metadata must precede the first record")
        precondition(TransactionLogHeader.isValidKey(key), "invalid transaction log metadata key '\(key)'")
        precondition(key != TransactionLogHeader.Key.bus && key != TransactionLogHeader.Key.startNanoseconds
                     && key != TransactionLogHeader.Key.startUTC, "'\(key)' is set through the header")
        header.metadata.append(.init(key: key, value: value))
        metadataLine(key, value)
    }

    private func metadataLine(_ key: String, _ value: String) {
        append("@"); append(key); space()
        for c in value.utf8 {
            switch c {
            case 0x5C: buffer.append(0x5C); buffer.append(0x5C)          // \ → \\
            case 0x0A: buffer.append(0x5C); buffer.append(0x6E)          // newline → \n
            case 0x0D: buffer.append(0x5C); buffer.append(0x72)          // CR → \r
            default: buffer.append(c)
            }
        }
        newline()
    }

    /// Adds `# text` (one line per line of `text`); comments may go anywhere.
    public func comment(_ text: String) {
        guard failure == nil, !closed else { return }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            append("# ")
            for c in line.utf8 where c != 0x0D { buffer.append(c) }
            newline()
        }
        flushIfNeeded()
    }

    // MARK: records

    /// Records a completed transfer: `T 0xAA w HEX r N HEX`.
    public func recordTransfer(at time: UInt64, address: UInt8, write: UnsafeRawBufferPointer,
                               read: UnsafeRawBufferPointer) {
        guard begin() else { return }
        prefix(time, address)
        transferFields(write: write, readCount: read.count)
        if read.count > 0 { space(); hexBytes(read) }
        newline()
        flushIfNeeded()
    }

    /// Records a failed transfer: `T 0xAA w HEX r N ! kind errno reg operation`.
    public func recordFailedTransfer(at time: UInt64, address: UInt8, write: UnsafeRawBufferPointer,
                                     readCount: Int, error: I2CError) {
        guard begin() else { return }
        prefix(time, address)
        transferFields(write: write, readCount: readCount)
        errorFields(error)
        newline()
        flushIfNeeded()
    }

    /// Records a probe's answer: `T 0xAA probe yes|no`.
    public func recordProbe(at time: UInt64, address: UInt8, present: Bool) {
        guard begin() else { return }
        prefix(time, address)
        append(present ? "probe yes" : "probe no")
        newline()
        flushIfNeeded()
    }

    /// Records a probe that threw: `T 0xAA probe ! kind errno reg operation`.
    public func recordFailedProbe(at time: UInt64, address: UInt8, error: I2CError) {
        guard begin() else { return }
        prefix(time, address)
        append("probe")
        errorFields(error)
        newline()
        flushIfNeeded()
    }

    /// Records a data-ready wait that returned: `T gpio NAME edge EDGE_NS`,
    /// or `T gpio NAME timeout` when `edge` is nil. `line` names the line
    /// (`[A-Za-z0-9._-]+`, e.g. `mpu-int`).
    public func recordEdge(at time: UInt64, line: String, edge: UInt64?) {
        precondition(TransactionLogHeader.isValidKey(line), "invalid data-ready line name '\(line)'")
        guard begin() else { return }
        gpioPrefix(time, line)
        if let edge { append("edge "); decimal(edge) } else { append("timeout") }
        newline()
        flushIfNeeded()
    }

    /// Records a data-ready wait that threw: `T gpio NAME ! kind errno operation`.
    public func recordFailedEdgeWait(at time: UInt64, line: String, error: GPIOError) {
        precondition(TransactionLogHeader.isValidKey(line), "invalid data-ready line name '\(line)'")
        guard begin() else { return }
        gpioPrefix(time, line)
        append("! "); append(error.kind.rawValue); space()
        if error.errno < 0 { buffer.append(0x2D) }
        decimal(UInt64(error.errno.magnitude))
        if !error.operation.isEmpty {
            space()
            for c in error.operation.utf8 { buffer.append(c == 0x0A || c == 0x0D ? 0x20 : c) }
        }
        newline()
        flushIfNeeded()
    }

    private func gpioPrefix(_ time: UInt64, _ line: String) {
        decimal(time); append(" gpio "); append(line); space()
    }

    /// Records a record (re-writing a parsed log, building test logs).
    public func append(_ r: TransactionRecord) {
        switch (r.request, r.outcome) {
        case (.transfer(let w, _), .read(let bytes)):
            w.withUnsafeBytes { wb in bytes.withUnsafeBytes { rb in
                recordTransfer(at: r.timeNanoseconds, address: r.address, write: wb, read: rb)
            } }
        case (.transfer(let w, let n), .failed(let e)):
            w.withUnsafeBytes { wb in
                recordFailedTransfer(at: r.timeNanoseconds, address: r.address, write: wb, readCount: n, error: e)
            }
        case (.probe, .present(let p)):
            recordProbe(at: r.timeNanoseconds, address: r.address, present: p)
        case (.probe, .failed(let e)):
            recordFailedProbe(at: r.timeNanoseconds, address: r.address, error: e)
        case (.waitForEdge(let line), .edge(let edge)):
            recordEdge(at: r.timeNanoseconds, line: line, edge: edge)
        case (.waitForEdge(let line), .gpioFailed(let e)):
            recordFailedEdgeWait(at: r.timeNanoseconds, line: line, error: e)
        default:
            preconditionFailure("inconsistent transaction record: \(r)")
        }
    }

    private func begin() -> Bool {
        precondition(!closed, "transaction log \(path) used after close()")
        if failure != nil { droppedRecords += 1; return false }
        recordCount += 1
        return true
    }

    private func prefix(_ time: UInt64, _ address: UInt8) {
        decimal(time); space()
        buffer.append(0x30); buffer.append(0x78)      // "0x"
        hexByte(address); space()
    }

    private func transferFields(write: UnsafeRawBufferPointer, readCount: Int) {
        buffer.append(0x77); space()                  // "w "
        if write.isEmpty { buffer.append(0x2D) } else { hexBytes(write) }
        space(); buffer.append(0x72); space()         // " r "
        decimal(UInt64(readCount))
    }

    private func errorFields(_ e: I2CError) {
        append(" ! "); append(e.kind.rawValue); space()
        if e.errno < 0 { buffer.append(0x2D) }
        decimal(UInt64(e.errno.magnitude)); space()
        if let reg = e.register {
            buffer.append(0x30); buffer.append(0x78); hexByte(reg)
        } else {
            buffer.append(0x2D)
        }
        if !e.operation.isEmpty {
            space()
            for c in e.operation.utf8 { buffer.append(c == 0x0A || c == 0x0D ? 0x20 : c) }
        }
    }

    // MARK: formatting (no allocation beyond the buffer)

    private static let digits: StaticString = "0123456789abcdef"

    @inline(__always) private func space() { buffer.append(0x20) }
    @inline(__always) private func newline() { buffer.append(0x0A) }
    private func append(_ s: String) { buffer.append(contentsOf: s.utf8) }

    @inline(__always) private func hexByte(_ b: UInt8) {
        let d = Self.digits.utf8Start
        buffer.append(d[Int(b >> 4)]); buffer.append(d[Int(b & 0xF)])
    }

    private func hexBytes(_ bytes: UnsafeRawBufferPointer) {
        for b in bytes { hexByte(b) }
    }

    private func decimal(_ v: UInt64) {
        let start = buffer.count
        var n = v
        repeat { buffer.append(0x30 &+ UInt8(truncatingIfNeeded: n % 10)); n /= 10 } while n > 0
        var i = start, j = buffer.count - 1
        while i < j { buffer.swapAt(i, j); i += 1; j -= 1 }
    }

    // MARK: output

    /// Everything written so far, for an in-memory writer (tests). For a
    /// file writer: the bytes not yet flushed.
    public var text: String { String(decoding: buffer, as: UTF8.self) }

    private func flushIfNeeded() {
        if buffer.count >= flushThreshold { try? flush() }
    }

    /// Writes the buffered bytes to the file. Throws the first write failure
    /// (also on later calls). No-op in memory.
    public func flush() throws(TransactionLogWriteError) {
        if let failure { throw failure }
        guard !inMemory, !buffer.isEmpty else { return }
        var failed: Int32 = 0
        buffer.withUnsafeBytes { b in
            var off = 0
            while off < b.count {
                let n = Glibc.write(fd, b.baseAddress! + off, b.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    failed = errno
                    return
                }
                off += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
        if failed != 0 {
            let e = TransactionLogWriteError(path: path, errno: failed, operation: "write")
            failure = e
            throw e
        }
    }

    /// Flushes and closes the file (a descriptor passed in is left open).
    /// Further records are a programmer error.
    public func close() throws(TransactionLogWriteError) {
        guard !closed else { return }
        defer { closed = true }
        var first: TransactionLogWriteError?
        do { try flush() } catch { first = error }
        if ownsDescriptor && fd >= 0 {
            if Glibc.close(fd) != 0, first == nil {
                first = TransactionLogWriteError(path: path, errno: errno, operation: "close")
            }
            fd = -1
        }
        if let first { throw first }
    }

    // MARK: wall clock

    /// The current wall-clock time as ISO 8601 UTC (`2026-11-29T16:32:38Z`),
    /// for ``TransactionLogHeader/startUTC``.
    public static func currentUTC() -> String {
        UTCTime.format(unixSeconds: Int64(realtimeNowNs() / 1_000_000_000))
    }
}
