/// Rate limit for repeated log lines: at most `Settings.linesPerWindow` lines
/// of one key per window of `Settings.windowNs`, then silence, then ONE line
/// saying how many were suppressed — when the next line of that key passes
/// (the window has ended) or when `expire(nowNs:)` finds the window over.
///
/// Pure: the caller passes CLOCK_MONOTONIC ns (`monotonicNowNs()`) and writes
/// the lines it gets back; the limiter reads no clock and does no I/O. The
/// key says which lines are "similar" (e.g. `"ha-birth"` for every Home
/// Assistant `online` birth, whatever it carries); lines of different keys
/// never suppress each other. At most `Settings.maximumKeys` keys are
/// tracked: a new key beyond that evicts the key whose window began first,
/// and reports what that key had suppressed, so memory stays bounded when
/// a sender varies its lines.
///
/// A window starts at the first line of a key and lasts `windowNs`; a line
/// at `start + windowNs` or later belongs to a new window.
public struct LogLimiter: Sendable {
    public struct Settings: Sendable, Equatable {
        /// Lines of one key written per window before suppression starts (≥ 1).
        public var linesPerWindow: Int
        /// Window length, ns of CLOCK_MONOTONIC (> 0).
        public var windowNs: UInt64
        /// Keys tracked at once (≥ 1); the memory bound.
        public var maximumKeys: Int

        /// 5 lines per key per 10 s, 64 keys.
        public init(linesPerWindow: Int = 5, windowNs: UInt64 = 10_000_000_000, maximumKeys: Int = 64) {
            precondition(linesPerWindow >= 1 && windowNs > 0 && maximumKeys >= 1,
                         "LogLimiter.Settings: linesPerWindow ≥ 1, windowNs > 0, maximumKeys ≥ 1")
            self.linesPerWindow = linesPerWindow
            self.windowNs = windowNs
            self.maximumKeys = maximumKeys
        }
    }

    /// One key's window.
    public struct Window: Sendable, Equatable {
        /// CLOCK_MONOTONIC ns of the window's first line.
        public var startNs: UInt64
        /// Lines written in this window.
        public var written: Int
        /// Lines suppressed in this window.
        public var suppressed: Int
        /// The last suppressed line, quoted in the summary.
        public var lastSuppressed: String
    }

    public struct State: Sendable, Equatable {
        /// Open windows by key.
        public var windows: [String: Window] = [:]
        /// Lines suppressed since the limiter began (all keys), for statistics.
        public var suppressedTotal: UInt64 = 0
        public init() {}
    }

    public let settings: Settings
    public private(set) var state: State

    public init(settings: Settings = Settings(), state: State = State()) {
        self.settings = settings
        self.state = state
    }

    /// The summary line for a window that suppressed `window.suppressed` lines.
    public static func summary(of window: Window) -> String {
        let noun = window.suppressed == 1 ? "line" : "lines"
        return "\(window.lastSuppressed) (\(window.suppressed) similar \(noun) suppressed)"
    }

    /// Offer `line` of `key` at `nowNs`. Returns the lines to write now, in
    /// order: possibly the summary of the key's previous window, then `line`
    /// itself if it passes. Empty when `line` is suppressed.
    public mutating func update(key: String, line: String, nowNs: UInt64) -> [String] {
        var out: [String] = []
        if var window = state.windows[key] {
            if nowNs &- window.startNs < settings.windowNs && nowNs >= window.startNs {
                if window.written < settings.linesPerWindow {
                    window.written += 1
                    state.windows[key] = window
                    return [line]
                }
                window.suppressed += 1
                window.lastSuppressed = line
                state.windows[key] = window
                state.suppressedTotal &+= 1
                return []
            }
            // The window has ended: report it, open a new one with this line.
            if window.suppressed > 0 { out.append(Self.summary(of: window)) }
            state.windows[key] = Window(startNs: nowNs, written: 1, suppressed: 0, lastSuppressed: "")
            out.append(line)
            return out
        }
        if state.windows.count >= settings.maximumKeys {
            // Evict the window that began first (ties: smallest key, so the
            // choice does not depend on dictionary order).
            if let oldest = state.windows.min(by: { ($0.value.startNs, $0.key) < ($1.value.startNs, $1.key) }) {
                if oldest.value.suppressed > 0 { out.append(Self.summary(of: oldest.value)) }
                state.windows[oldest.key] = nil
            }
        }
        state.windows[key] = Window(startNs: nowNs, written: 1, suppressed: 0, lastSuppressed: "")
        out.append(line)
        return out
    }

    /// Close every window that has ended by `nowNs`; returns the summaries
    /// of those that suppressed lines (sorted by window start, then key).
    /// Call it now and then (e.g. once a second, or before each write) so a
    /// burst that simply stops is still reported.
    public mutating func expire(nowNs: UInt64) -> [String] {
        let ended = state.windows.filter { nowNs < $0.value.startNs || nowNs - $0.value.startNs >= settings.windowNs }
        guard !ended.isEmpty else { return [] }
        var summaries: [(UInt64, String, String)] = []
        for (key, window) in ended {
            state.windows[key] = nil
            if window.suppressed > 0 { summaries.append((window.startNs, key, Self.summary(of: window))) }
        }
        summaries.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return summaries.map { $0.2 }
    }
}

/// A ``LogLimiter`` behind a lock, writing through `write`: for lines that
/// threads log as things happen (the agent's reload and history messages).
public final class LimitedLog: Sendable {
    private let limiter: Locked<LogLimiter>
    private let write: @Sendable (String) -> Void

    public init(settings: LogLimiter.Settings = LogLimiter.Settings(), write: @escaping @Sendable (String) -> Void) {
        limiter = Locked(LogLimiter(settings: settings))
        self.write = write
    }

    /// Writes `text` unless lines of `key` are being suppressed (then it is
    /// counted, and the count written when its window ends).
    public func line(_ key: String, _ text: String) {
        let now = monotonicNowNs()
        for l in limiter.withLock({ $0.expire(nowNs: now) + $0.update(key: key, line: text, nowNs: now) }) { write(l) }
    }

    /// Lines suppressed so far, all keys.
    public var suppressedTotal: UInt64 { limiter.withLock { $0.state.suppressedTotal } }

    /// Writes the counts of windows that have ended (`all`: of every window,
    /// before the process stops).
    public func flush(all: Bool = false) {
        let now = all ? UInt64.max : monotonicNowNs()
        for l in limiter.withLock({ $0.expire(nowNs: now) }) { write(l) }
    }
}
