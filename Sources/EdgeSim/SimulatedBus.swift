// The simulated I2C adapter: devices at addresses, a clock, scheduled faults.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import EdgeBus

/// Per-address transfer counts (successful and failed), for tests and for
/// benchmarks that want to know how busy the bus was.
public struct TransferStatistics: Sendable, Equatable {
    /// Transfers addressed to this address, including failed ones and probes.
    public var transfers = 0
    /// Transfers that failed (absent, NACK, injected error, device fault).
    public var failures = 0
    /// Data bytes written (register pointer included) by successful transfers.
    public var bytesWritten = 0
    /// Data bytes read by successful transfers.
    public var bytesRead = 0
    public init() {}
}

/// A simulated I2C bus: `transfer` goes to the device attached at the address,
/// at the time the `TimeSource` says, after the scheduled faults have had
/// their say. Works with a ``VirtualClock`` (tests, replays: nothing sleeps)
/// and with ``MonotonicClock`` (the agent running live on simulated chips).
///
/// Error behaviour follows a Linux adapter: nothing at the address (or a
/// device hidden behind a closed MPU-6050 bypass, or one that has
/// "disappeared") → ``I2CError/Kind/noDevice`` with ``absentErrno`` (ENXIO by
/// default; the Pi's `i2c-bcm2835` reports EREMOTEIO, set it if you want
/// that); a NACK window → EREMOTEIO (kind `noDevice`); `errorEvery` → the
/// fault's errno mapped to its kind.
///
/// Not thread-safe: one bus belongs to one thread of control at a time (the
/// agent's loop thread), like the real file descriptor.
public final class SimulatedBus: I2CBus, @unchecked Sendable {
    public let name: String
    public let clock: any TimeSource
    /// Time zero of the fault schedule (monotonic ns).
    public let startNanoseconds: UInt64
    /// errno for an address nobody answers.
    public var absentErrno: Int32 = ENXIO
    /// If set, every transfer takes bus time at this SCL rate (9 bits a byte
    /// plus start/address/stop), by sleeping the clock. Nil: transfers are instant.
    public var bitRateHz: Double?

    struct Slot {
        var device: any SimulatedDevice
        var behind: UInt8?
    }
    struct FaultState {
        var fault: ScheduledFault
        var counter = 0
    }
    enum EventKind { case powerOnReset, vanish }
    struct Event { var time: UInt64; var address: UInt8; var kind: EventKind }

    var slots: [Slot?] = Array(repeating: nil, count: 128)
    var stats: [TransferStatistics] = Array(repeating: TransferStatistics(), count: 128)
    var faults: [FaultState] = []
    /// Pending timed events, sorted by time.
    var events: [Event] = []

    public init(name: String = "simulated", clock: any TimeSource, startNanoseconds: UInt64? = nil,
                faults: [ScheduledFault] = []) {
        self.name = name
        self.clock = clock
        self.startNanoseconds = startNanoseconds ?? clock.nowNanoseconds
        for f in faults { schedule(f) }
    }

    /// Attaches `device` at 7-bit `address`. With `behind`, the device sits on
    /// the auxiliary bus of the gate device at that address (which must be an
    /// ``AuxiliaryBusGate``, e.g. the MPU-6050) and answers only while the
    /// gate connects it.
    public func attach(_ device: any SimulatedDevice, at address: UInt8, behind gate: UInt8? = nil) {
        precondition(address < 0x80, "7-bit address expected")
        slots[Int(address)] = Slot(device: device, behind: gate)
    }

    /// The device attached at `address`, if any.
    public func device(at address: UInt8) -> (any SimulatedDevice)? {
        address < 0x80 ? slots[Int(address)]?.device : nil
    }

    /// Addresses with a device attached (visible or not).
    public var attachedAddresses: [UInt8] { (0..<128).compactMap { slots[$0] == nil ? nil : UInt8($0) } }

    public func statistics(forAddress address: UInt8) -> TransferStatistics { stats[Int(address & 0x7F)] }

    /// Adds a fault to the schedule (times relative to ``startNanoseconds``).
    public func schedule(_ fault: ScheduledFault) {
        faults.append(FaultState(fault: fault))
        switch fault {
        case let .reset(address, at):
            addEvent(Event(time: absolute(at), address: address, kind: .powerOnReset))
        case let .disappear(address, from, to):
            addEvent(Event(time: absolute(from), address: address, kind: .vanish))
            addEvent(Event(time: absolute(to), address: address, kind: .powerOnReset))
        case .nack, .errorEvery:
            break
        }
    }

    func addEvent(_ e: Event) {
        let i = events.firstIndex { $0.time > e.time } ?? events.count
        events.insert(e, at: i)
    }

    /// Seconds since start → monotonic ns.
    public func absolute(_ seconds: Double) -> UInt64 {
        guard seconds > 0 else { return startNanoseconds }   // also NaN
        let ns = (seconds * 1e9).rounded()
        return startNanoseconds &+ (ns >= 1.8e19 ? UInt64.max / 2 : UInt64(ns))
    }

    /// Applies every scheduled reset due at or before `t`, in time order.
    func applyEvents(upTo t: UInt64) {
        while let e = events.first, e.time <= t {
            events.removeFirst()
            if e.kind == .powerOnReset, e.address < 0x80, let d = slots[Int(e.address)]?.device {
                d.powerOnReset(atNanoseconds: e.time)
            }
        }
    }

    /// The next scheduled event for `address` strictly after `t`.
    func nextEvent(forAddress address: UInt8, after t: UInt64) -> UInt64? {
        events.first { $0.address == address && $0.time > t }?.time
    }

    /// Whether `address` is inside a `disappear` window at `t`.
    func isVanished(_ address: UInt8, at t: UInt64) -> Bool {
        for f in faults {
            if case let .disappear(a, from, to) = f.fault, a == address,
               t >= absolute(from), t < absolute(to) { return true }
        }
        return false
    }

    /// Whether a device answers at `address` at time `t` (attached, not
    /// vanished, and its bypass gate, if any, connected).
    public func isVisible(_ address: UInt8, atNanoseconds t: UInt64) -> Bool {
        guard address < 0x80, let slot = slots[Int(address)] else { return false }
        if isVanished(address, at: t) { return false }
        if let g = slot.behind {
            guard let gate = slots[Int(g)]?.device as? AuxiliaryBusGate, !isVanished(g, at: t),
                  gate.auxiliaryBusConnected(atNanoseconds: t) else { return false }
        }
        return true
    }

    func fail(_ address: UInt8, errno e: Int32, register: UInt8?, operation: String) -> I2CError {
        stats[Int(address & 0x7F)].failures += 1
        return I2CError(errno: e, bus: name, address: address, register: register, operation: operation)
    }

    static func describe(write: Int, read: Int) -> String {
        if read > 0 && write > 0 { return "write \(write) + read \(read) bytes" }
        if read > 0 { return "read \(read) bytes" }
        return "write \(write) bytes"
    }

    /// Checks faults and presence for a transfer; throws what the adapter would.
    func gate(_ address: UInt8, at t: UInt64, firstRegister: UInt8?, writeCount: Int,
              readCount: Int) throws(I2CError) {
        let a = Int(address & 0x7F)
        stats[a].transfers += 1
        if !isVisible(address, atNanoseconds: t) {
            throw fail(address, errno: absentErrno, register: firstRegister,
                       operation: Self.describe(write: writeCount, read: readCount))
        }
        for f in faults {
            guard case let .nack(fa, reg, from, to) = f.fault, fa == address,
                  t >= absolute(from), t < absolute(to) else { continue }
            if let reg {
                guard let first = firstRegister else { continue }
                let span = max(1, readCount, writeCount - 1)
                let offset = Int(reg) - Int(first)
                guard offset >= 0, offset < span else { continue }
            }
            throw fail(address, errno: EREMOTEIO, register: firstRegister,
                       operation: Self.describe(write: writeCount, read: readCount))
        }
        // Every errorEvery counter counts every transfer it covers; the first that fires wins.
        var injected: Int32?
        for i in faults.indices {
            guard case let .errorEvery(fa, every, e) = faults[i].fault, fa == nil || fa == address, every > 0 else { continue }
            faults[i].counter += 1
            if faults[i].counter % every == 0, injected == nil { injected = e }
        }
        if let e = injected {
            throw fail(address, errno: e, register: firstRegister,
                       operation: Self.describe(write: writeCount, read: readCount))
        }
    }

    public func transfer(address: UInt8, write: UnsafeRawBufferPointer,
                         read: UnsafeMutableRawBufferPointer) throws(I2CError) {
        let t = clock.nowNanoseconds
        applyEvents(upTo: t)
        let first: UInt8? = write.count > 0 ? write[0] : nil
        try gate(address, at: t, firstRegister: first, writeCount: write.count, readCount: read.count)
        guard let device = slots[Int(address)]?.device else { return }
        do {
            try device.transfer(write: write, read: read, atNanoseconds: t)
        } catch {
            throw fail(address, errno: error.errno, register: first, operation: error.operation)
        }
        let a = Int(address)
        stats[a].bytesWritten += write.count
        stats[a].bytesRead += read.count
        if let rate = bitRateHz, rate > 0 {
            // START + address byte + (repeated START + address) + data bytes, 9 clocks each, + STOP.
            let bytes = 1 + write.count + (read.count > 0 ? 1 + read.count : 0)
            let ns = Double(bytes * 9 + 2) / rate * 1e9
            clock.sleep(untilNanoseconds: t &+ UInt64(ns))
        }
    }

    /// Address-only acknowledge check (an SMBus quick write, what `i2cdetect`
    /// does by default): no register pointer moves and no device state
    /// changes. Counts as a transfer; faults apply (a NACK window or an
    /// absent device gives `false`, an injected non-NACK errno throws).
    public func probe(address: UInt8) throws(I2CError) -> Bool {
        let t = clock.nowNanoseconds
        applyEvents(upTo: t)
        do {
            try gate(address, at: t, firstRegister: nil, writeCount: 0, readCount: 0)
            return true
        } catch where error.kind == .noDevice {
            return false
        }
    }

    /// The data-ready (INT / DRDY) pin of the device at `address`, as a GPIO
    /// line; nil if that device has no such pin.
    public func dataReadyLine(forAddress address: UInt8) -> SimulatedDataReadyLine? {
        guard address < 0x80, slots[Int(address)]?.device is DataReadySource else { return nil }
        return SimulatedDataReadyLine(bus: self, address: address)
    }
}

/// A chip's interrupt pin seen through the ``DataReadyLine`` seam. On a
/// ``VirtualClock`` `waitForEdge` advances the clock to the next edge (or the
/// timeout) and returns at once; on a real clock it sleeps until then. The
/// reported time is the edge's own time, as libgpiod's kernel timestamp is.
/// The line reports the pin's *active* edge whatever INT_LEVEL says (a real
/// line is requested with the matching edge).
public final class SimulatedDataReadyLine: DataReadyLine, @unchecked Sendable {
    public let bus: SimulatedBus
    public let address: UInt8

    init(bus: SimulatedBus, address: UInt8) { self.bus = bus; self.address = address }

    public func waitForEdge(timeoutNanoseconds: UInt64) throws(GPIOError) -> UInt64? {
        let clock = bus.clock
        let now = clock.nowNanoseconds
        let deadline = now &+ min(timeoutNanoseconds, UInt64.max - now)
        var from = now
        while true {
            bus.applyEvents(upTo: from)
            guard let source = bus.slots[Int(address)]?.device as? DataReadySource else {
                clock.sleep(untilNanoseconds: deadline); return nil
            }
            let edge = bus.isVanished(address, at: from) ? nil : source.nextDataReadyEdge(after: from)
            let limit = min(edge ?? UInt64.max, deadline)
            if let ev = bus.nextEvent(forAddress: address, after: from), ev <= limit {
                clock.sleep(untilNanoseconds: ev)
                source.advance(toNanoseconds: ev)
                from = ev
                continue
            }
            if let e = edge, e <= deadline {
                clock.sleep(untilNanoseconds: e)
                source.advance(toNanoseconds: e)
                return e
            }
            clock.sleep(untilNanoseconds: deadline)
            return nil
        }
    }
}
