/// A bus that forwards every transfer and probe to `base` and writes each
/// one, with its answer or error, to a ``TransactionLogWriter``.
///
/// The time of a record is `clock.nowNanoseconds` read when the operation
/// completed (or failed): give it the clock the drivers use, so a replay's
/// ``ReplayClock`` hands the drivers the same capture times.
///
/// Errors from `base` are recorded and rethrown unchanged. Writing never
/// throws here; see ``TransactionLogWriter/failure``.
///
/// Generic over the base bus so the real-time loop stays specialised
/// (`MPU6050<RecordingBus<LinuxI2CBus>>`). Not thread-safe, like the bus it wraps.
public final class RecordingBus<Base: I2CBus>: I2CBus, @unchecked Sendable {
    public let base: Base
    public let log: TransactionLogWriter
    public let clock: any TimeSource

    /// Records `base` into `log`, timing records with `clock`.
    public init(_ base: Base, log: TransactionLogWriter, clock: any TimeSource) {
        self.base = base; self.log = log; self.clock = clock
    }

    /// The base bus's name: errors read the same recorded or not.
    public var name: String { base.name }

    @inlinable
    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        do {
            try base.transfer(address: address, write: write, read: read)
        } catch {
            log.recordFailedTransfer(at: clock.nowNanoseconds, address: address, write: write,
                                     readCount: read.count, error: error)
            throw error
        }
        log.recordTransfer(at: clock.nowNanoseconds, address: address, write: write,
                           read: UnsafeRawBufferPointer(read))
    }

    /// Forwards to the base's own probe (whatever transfer it uses) and
    /// records one `probe` line.
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        let present: Bool
        do {
            present = try base.probe(address: address)
        } catch {
            log.recordFailedProbe(at: clock.nowNanoseconds, address: address, error: error)
            throw error
        }
        log.recordProbe(at: clock.nowNanoseconds, address: address, present: present)
        return present
    }
}

/// A data-ready line that forwards every wait to `base` and writes it to the
/// same ``TransactionLogWriter`` as the bus, in order with the transfers:
/// `T gpio NAME edge EDGE_NS`, `T gpio NAME timeout` or `T gpio NAME ! kind
/// errno operation`, T being `clock`'s time when the wait returned. Replay
/// it with ``ReplayBus/dataReadyLine(named:)``.
public final class RecordingDataReadyLine<Base: DataReadyLine>: DataReadyLine, @unchecked Sendable {
    public let base: Base
    /// The line's name in the log (`[A-Za-z0-9._-]+`, e.g. `mpu-int`).
    public let name: String
    public let log: TransactionLogWriter
    public let clock: any TimeSource

    public init(_ base: Base, name: String, log: TransactionLogWriter, clock: any TimeSource) {
        precondition(TransactionLogHeader.isValidKey(name), "invalid data-ready line name '\(name)'")
        self.base = base; self.name = name; self.log = log; self.clock = clock
    }

    public func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64? {
        let edge: UInt64?
        do {
            edge = try base.waitForEdge(timeoutNanoseconds: timeoutNanoseconds)
        } catch {
            log.recordFailedEdgeWait(at: clock.nowNanoseconds, line: name, error: error)
            throw error
        }
        log.recordEdge(at: clock.nowNanoseconds, line: name, edge: edge)
        return edge
    }
}
