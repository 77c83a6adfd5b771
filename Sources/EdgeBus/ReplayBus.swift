/// The clock of a replay: recorded time, moved forward by the replayed
/// transfers and by the drivers' own sleeps, never backwards.
///
/// * It starts at the log's `@start-ns`.
/// * A replayed transfer or probe sets `now = max(now, its recorded time)`
///   (in a faithful replay the recorded time is never earlier: a recorded
///   transfer happened after the sleep that preceded it).
/// * `sleep(untilNanoseconds:)` sets `now = max(now, deadline)` and returns
///   at once. It may pass the next record's time; that record then keeps
///   the later time and the replayed capture times drift from the recorded
///   ones, which the golden diff shows.
///
/// With `realtime`, every move forward also sleeps that clock (normally a
/// ``MonotonicClock``) until the same offset from when the replay clock was
/// created, so a replay runs at recorded speed. Results are the same either
/// way: only the pacing changes.
///
/// Not thread-safe: one replay clock belongs to one thread of control.
public final class ReplayClock: TimeSource, @unchecked Sendable {
    public private(set) var nowNanoseconds: UInt64
    /// The recorded time the replay started at.
    public let startNanoseconds: UInt64
    /// The clock that paces a real-time replay, or nil.
    public let realtime: (any TimeSource)?
    private let realOrigin: UInt64

    /// - Parameters:
    ///   - startNanoseconds: recorded monotonic ns to start at.
    ///   - realtime: a clock to pace the replay on (a ``MonotonicClock``);
    ///     nil replays as fast as the drivers go.
    public init(startNanoseconds: UInt64, realtime: (any TimeSource)? = nil) {
        nowNanoseconds = startNanoseconds
        self.startNanoseconds = startNanoseconds
        self.realtime = realtime
        realOrigin = realtime?.nowNanoseconds ?? 0
    }

    /// A clock starting at `log`'s `@start-ns`.
    public convenience init(log: TransactionLog, realtime: (any TimeSource)? = nil) {
        self.init(startNanoseconds: log.header.startNanoseconds, realtime: realtime)
    }

    /// Moves time to `deadline` if it is later; returns at once (or, in real
    /// time, when the pacing clock reaches the same offset).
    public func sleep(untilNanoseconds deadline: UInt64) {
        advance(toNanoseconds: deadline)
    }

    /// Moves time forward to `t` (never back).
    public func advance(toNanoseconds t: UInt64) {
        guard t > nowNanoseconds else { return }
        nowNanoseconds = t
        if let realtime {
            realtime.sleep(untilNanoseconds: realOrigin &+ (t &- startNanoseconds))
        }
    }
}

/// Where a replay left the recording: the drivers asked for a transaction
/// the recording does not have next.
public struct ReplayDivergence: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// The next record is a different transaction.
        case mismatch
        /// Every record was used up.
        case endOfRecording
    }

    public var kind: Kind
    /// The log's file.
    public var file: String
    /// Index of the record the request was compared with (== record count at the end).
    public var index: Int
    /// The record expected next (nil at the end of the recording). Its
    /// `line` is where it is in the file.
    public var expected: TransactionRecord?
    /// Line of the last record, for the end-of-recording message (0 if none).
    public var lastLine: Int
    /// What the drivers asked for.
    public var actualAddress: UInt8
    public var actualRequest: TransactionRecord.Request
    /// Replay time when it happened.
    public var timeNanoseconds: UInt64

    /// The line the divergence is reported at: the expected record's, or the last one's.
    public var line: Int { expected?.line ?? lastLine }

    /// `0x68 write [3b] read 14`: what the drivers asked for.
    public var actualDescription: String {
        TransactionRecord.describe(address: actualAddress, request: actualRequest)
    }

    /// Which part differs: address, operation, written bytes or read length.
    public var difference: String {
        guard let e = expected else { return "the recording has no more transactions" }
        switch (e.request, actualRequest) {
        case (.waitForEdge(let a), .waitForEdge(let b)):
            return a == b ? "nothing" : "another data-ready line (\(b) instead of \(a))"
        case (.waitForEdge, .probe): return "a probe instead of a data-ready wait"
        case (.waitForEdge, .transfer): return "a transfer instead of a data-ready wait"
        case (_, .waitForEdge): return "a data-ready wait instead of a bus \(e.request == .probe ? "probe" : "transfer")"
        default: break
        }
        if e.address != actualAddress { return "another address" }
        switch (e.request, actualRequest) {
        case (.probe, .probe): return "nothing"
        case (.probe, .transfer): return "a transfer instead of a probe"
        case (.transfer, .probe): return "a probe instead of a transfer"
        case (.transfer(let ew, let en), .transfer(let aw, let an)):
            if ew != aw {
                if let a = aw.first, let b = ew.first, a != b { return "another register (\(hex(a)) instead of \(hex(b)))" }
                return "other bytes written"
            }
            if en != an { return "a read of \(an) bytes instead of \(en)" }
            return "nothing"
        default:
            return "another request"
        }
    }

    public var description: String {
        switch kind {
        case .endOfRecording:
            return "\(file)\(lastLine > 0 ? ":\(lastLine)" : ""): the recording ends here (\(index) transactions replayed) but the drivers asked for \(actualDescription); the recording is shorter than this replay"
        case .mismatch:
            let e = expected.map { "\($0.requestDescription)" } ?? "nothing"
            return "\(file):\(line): the drivers asked for \(actualDescription) but the recording has \(e) next (transaction #\(index + 1)): \(difference). The replay is not running the same drivers, configuration or order as the recording"
        }
    }
}

/// A bus that plays a ``TransactionLog`` back: the replay half of
/// ``RecordingBus``, so the real drivers run on a recording exactly as they
/// ran on the board.
///
/// Each transfer (or probe) must be the next recorded one: same address,
/// same kind, same bytes written, same read length. It then returns the
/// recorded bytes (or `present`), or throws the recorded error (same kind,
/// errno, register and operation; this bus's name), and moves the
/// ``ReplayClock`` to the recorded time.
///
/// A request the recording does not have next (a mismatch, or the end of
/// the log) throws an ``I2CError`` of kind ``I2CError/Kind/unsupported``,
/// errno 0, on bus `replay of FILE`, whose operation names the requested
/// and the expected transaction and the log line; the typed details stay in
/// ``divergence`` so a command can report them after the driver's own error.
/// A divergence is final: every later request throws it again (a replay
/// that left the recording means nothing after that point).
///
/// Deterministic: the same log and the same driver calls give the same
/// bytes, errors and times. No allocation on the matching path.
/// Not thread-safe.
public final class ReplayBus: I2CBus, @unchecked Sendable {
    /// The recorded bus's name unless given: replayed errors read as recorded.
    public let name: String
    public let log: TransactionLog
    public let clock: ReplayClock
    /// Index of the next record to serve.
    public private(set) var position = 0
    /// The first request the recording did not have, if any.
    public private(set) var divergence: ReplayDivergence?
    private var divergenceError: I2CError?

    public init(log: TransactionLog, clock: ReplayClock, name: String? = nil) {
        self.log = log; self.clock = clock; self.name = name ?? log.header.bus
    }

    /// Whether every record has been served.
    public var isAtEnd: Bool { position >= log.records.count }
    /// Records not served yet.
    public var remaining: Int { log.records.count - position }
    /// The record the next request must match.
    public var nextRecord: TransactionRecord? { isAtEnd ? nil : log.records[position] }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        if let divergenceError { throw divergenceError }
        guard position < log.records.count else {
            throw diverge(address, .transfer(write: Array(write), readCount: read.count))
        }
        let r = log.records[position]
        guard r.address == address, case .transfer(let w, let n) = r.request, n == read.count,
              w.elementsEqual(write) else {
            throw diverge(address, .transfer(write: Array(write), readCount: read.count))
        }
        position += 1
        clock.advance(toNanoseconds: r.timeNanoseconds)
        switch r.outcome {
        case .read(let bytes):
            if !bytes.isEmpty {
                bytes.withUnsafeBytes { read.copyMemory(from: $0) }
            }
        case .failed(let e):
            throw replayed(e, address: address)
        case .present, .edge, .gpioFailed:
            preconditionFailure("transfer record with another outcome at \(log.file):\(r.line)")
        }
    }

    public func probe(address: UInt8) throws(I2CError) -> Bool {
        if let divergenceError { throw divergenceError }
        guard position < log.records.count else { throw diverge(address, .probe) }
        let r = log.records[position]
        guard r.address == address, case .probe = r.request else { throw diverge(address, .probe) }
        position += 1
        clock.advance(toNanoseconds: r.timeNanoseconds)
        switch r.outcome {
        case .present(let p): return p
        case .failed(let e): throw replayed(e, address: address)
        case .read, .edge, .gpioFailed:
            preconditionFailure("probe record with another outcome at \(log.file):\(r.line)")
        }
    }

    /// Serves a data-ready wait on `line` (see ``dataReadyLine(named:)``).
    func waitForEdge(line: String) throws(GPIOError) -> UInt64? {
        if divergenceError != nil { throw gpioDivergence() }
        guard position < log.records.count else {
            _ = diverge(0, .waitForEdge(line: line))
            throw gpioDivergence()
        }
        let r = log.records[position]
        guard case .waitForEdge(let name) = r.request, name == line else {
            _ = diverge(0, .waitForEdge(line: line))
            throw gpioDivergence()
        }
        position += 1
        clock.advance(toNanoseconds: r.timeNanoseconds)
        switch r.outcome {
        case .edge(let t): return t
        case .gpioFailed(let e): throw e
        case .read, .present, .failed:
            preconditionFailure("data-ready record with a bus outcome at \(log.file):\(r.line)")
        }
    }

    private func gpioDivergence() -> GPIOError {
        GPIOError(kind: .io, errno: 0, chip: "replay of \(log.file)", operation: divergenceError?.operation ?? "replay")
    }

    /// The data-ready line `name` as recorded (``RecordingDataReadyLine``):
    /// its waits are served from the same ordered log as the transfers, so
    /// an engine waiting on INT replays exactly as it ran.
    public func dataReadyLine(named name: String) -> ReplayDataReadyLine {
        ReplayDataReadyLine(bus: self, name: name)
    }

    private func replayed(_ e: I2CError, address: UInt8) -> I2CError {
        var e = e
        e.bus = name
        e.address = address
        return e
    }

    private func diverge(_ address: UInt8, _ request: TransactionRecord.Request) -> I2CError {
        let atEnd = position >= log.records.count
        let d = ReplayDivergence(kind: atEnd ? .endOfRecording : .mismatch, file: log.file, index: position,
                                 expected: atEnd ? nil : log.records[position],
                                 lastLine: log.records.last?.line ?? 0,
                                 actualAddress: address, actualRequest: request,
                                 timeNanoseconds: clock.nowNanoseconds)
        let register: UInt8? = if case .transfer(let w, _) = request { w.first } else { nil }
        let address: UInt8? = if case .waitForEdge = request { nil } else { address }
        let where_ = d.line > 0 ? "\(log.file):\(d.line)" : log.file
        let op: String
        if let e = d.expected {
            op = "\(d.actualDescription) (replay: not in the recording; \(where_) has \(e.requestDescription): \(d.difference))"
        } else {
            op = "\(d.actualDescription) (replay: the recording ended at \(where_))"
        }
        let error = I2CError(kind: .unsupported, errno: 0, bus: "replay of \(log.file)", address: address,
                             register: register, operation: op)
        divergence = d
        divergenceError = error
        return error
    }
}

/// A data-ready line replayed from a ``ReplayBus``'s log: each wait must be
/// the next record (a `gpio NAME` line of the same name) and returns the
/// recorded edge time (nil for a recorded timeout) or throws the recorded
/// error, moving the ``ReplayClock`` to when the wait returned. The timeout
/// asked for is not compared (the recording says what happened). A wait the
/// recording does not have is a divergence of the bus (``ReplayBus/divergence``)
/// and throws a `GPIOError` of kind `io` whose operation says where.
public final class ReplayDataReadyLine: DataReadyLine, @unchecked Sendable {
    public let bus: ReplayBus
    public let name: String
    init(bus: ReplayBus, name: String) { self.bus = bus; self.name = name }
    public func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64? {
        try bus.waitForEdge(line: name)
    }
}
