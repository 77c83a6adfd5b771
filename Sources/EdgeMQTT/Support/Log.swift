#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeValues

/// The bridge's log: one line per event on standard error (journald under
/// systemd), `edge-mqtt: ` first. Lines come from several threads; each is
/// one write(2). Nothing logged ever contains the broker password (the
/// bridge never has it as a String).
public final class BridgeLog: Sendable {
    private let sink: @Sendable (String) -> Void
    private let verboseFlag: Bool
    private let lines = Locked<[String]>([])
    private let keep: Bool
    /// Repeated lines of one key: at most 5 per 10 s, then a count.
    private let limited: LimitedLog

    /// `sink` gets each line with its newline; `keepLines` also keeps them
    /// (for tests and for `check`'s report).
    public init(verbose: Bool = false, keepLines: Bool = false, limits: LogLimiter.Settings = LogLimiter.Settings(),
                sink: @escaping @Sendable (String) -> Void = BridgeLog.standardError) {
        self.sink = sink; verboseFlag = verbose; keep = keepLines
        let lines = self.lines, keep = keepLines
        limited = LimitedLog(settings: limits) { message in
            let line = "edge-mqtt: " + message
            if keep { lines.withLock { $0.append(line) } }
            sink(line + "\n")
        }
    }

    public static let standardError: @Sendable (String) -> Void = { text in
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            off += n
        }
    }

    public var isVerbose: Bool { verboseFlag }

    public func info(_ message: String) {
        flushSuppressed()
        emit(message)
    }

    private func emit(_ message: String) {
        let line = "edge-mqtt: " + message
        if keep { lines.withLock { $0.append(line) } }
        sink(line + "\n")
    }

    /// A line that a sender outside the bridge can repeat at will (Home
    /// Assistant's birth): lines of one `key` are rate limited (EdgeValues'
    /// ``LogLimiter``), and the suppressed ones are counted in one line.
    public func limited(_ key: String, _ message: String) {
        limited.line(key, message)
    }

    /// Writes the count of every window of suppressed lines that has ended
    /// (the main loop calls it every 0.5 s, so a burst that stopped is reported).
    public func flushSuppressed() { limited.flush() }

    /// Lines suppressed so far.
    public var suppressedLines: UInt64 { limited.suppressedTotal }

    /// Only with `--verbose` (libmosquitto's own lines, every retry).
    public func debug(_ message: String) {
        if verboseFlag { info(message) }
    }

    /// The lines logged so far (with `keepLines`).
    public var kept: [String] { lines.withLock { $0 } }
}
