/// A bus that retries a transfer which failed transiently, a bounded number
/// of times, and counts the retries per address.
///
/// Transient: nothing acknowledged (EREMOTEIO/ENXIO - motor noise, a loose
/// wire for a moment), a timeout (ETIMEDOUT/EAGAIN - a device stretched the
/// clock too long, arbitration lost) and EIO. Not retried: a kernel driver
/// owning the address, no permission, no such bus, an unsupported transfer
/// - retrying cannot change those.
///
/// Retrying a register read or write is safe: none of the transfers the
/// drivers make has a side effect that a failed attempt could have done
/// half of, except reading a read-to-clear register (INT_STATUS) or a FIFO,
/// where a lost attempt costs a sample that the drivers already detect
/// (no DATA_RDY: the next sample; FIFO misalignment: a FIFO reset).
///
/// Wraps any bus (the engine puts it between the drivers and the Linux,
/// simulated or replayed bus, so a recording holds every attempt and a
/// replay retries the same way). Not thread-safe, like the bus it wraps.
public final class RetryingBus<Base: I2CBus>: I2CBus, @unchecked Sendable {
    public let base: Base
    /// Extra attempts after a transient failure (0: none).
    public let retries: Int
    /// Retries made, per 7-bit address (attempts beyond the first).
    public private(set) var retryCounts = [Int](repeating: 0, count: 128)
    /// Transfers that still failed after every retry, per address.
    public private(set) var exhaustedCounts = [Int](repeating: 0, count: 128)

    public init(_ base: Base, retries: Int) {
        self.base = base
        self.retries = max(0, retries)
    }

    public var name: String { base.name }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        var attempt = 0
        while true {
            do {
                try base.transfer(address: address, write: write, read: read)
                return
            } catch {
                guard error.isTransient else { throw error }
                let a = Int(address & 0x7F)
                guard attempt < retries else { exhaustedCounts[a] &+= 1; throw error }
                attempt += 1
                retryCounts[a] &+= 1
            }
        }
    }

    /// Probes once: a probe asks whether something answers now; a missing
    /// device is asked again later by whoever probes.
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        try base.probe(address: address)
    }

    /// Retries made for `address`.
    public func retryCount(forAddress address: UInt8) -> Int { retryCounts[Int(address & 0x7F)] }
}

extension I2CError {
    /// Whether trying the same transfer again may succeed: nothing answered,
    /// a timeout, or an I/O error. Configuration problems (address in use,
    /// permission, bus not found, unsupported) are not.
    @inlinable public var isTransient: Bool {
        switch kind {
        case .noDevice, .busTimeout, .io: return true
        case .addressInUse, .permissionDenied, .busNotFound, .unsupported: return false
        }
    }
}
