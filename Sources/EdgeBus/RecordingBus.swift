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
