import EdgeBus
import EdgeChips
import EdgeProtocol

/// The health of one device as clients see it (state, reason, counters),
/// with the bookkeeping of its stall watchdog. Pure: the device types do the
/// I/O and report what happened here; this decides what state that is and
/// which event clients get.
///
/// States (``DeviceState``): `present` while new samples arrive; `idle`
/// when asleep because nobody needs it; `degraded` when its samples stopped
/// or its reads fail, while it is re-initialised; `missing` when it does not
/// answer; `failed` when it answers but cannot be brought up. A `connection`
/// event goes to clients whenever it stops or starts delivering, and when an
/// undelivering device goes from degraded to missing or failed.
public struct DeviceHealth: Sendable, Equatable {
    public internal(set) var state: DeviceState = .missing
    /// Why it is not present (nil while it is).
    public internal(set) var reason: String? = "not started"
    /// Asleep on purpose: nobody needs it.
    public internal(set) var idle = false
    public internal(set) var consecutiveFailures = 0
    /// Failed operations (after their transfers' retries) since start.
    public internal(set) var errorCount = 0
    /// Re-initialisations (resets) since start.
    public internal(set) var resetCount = 0
    /// Times its samples stopped since start.
    public internal(set) var stallCount = 0
    public internal(set) var lastError: String?
    /// Capture time of the newest sample the chip delivered, ns.
    public internal(set) var lastSampleNanoseconds: UInt64?
    /// The watchdog counts from the later of this and the last sample
    /// (set when the device starts, wakes or changes rate).
    var watchedSince: UInt64 = 0
    /// Next probe of a device that is down, ns.
    var nextProbe: UInt64 = 0
    /// Next configuration re-check of a running device, ns.
    var nextVerify: UInt64 = 0
    /// Re-initialisations since data last flowed (bounded before `failed`).
    var recoveriesWithoutData = 0
    /// Whether any event has been announced yet: the first state (at start)
    /// is reported by `devices`, not by an event.
    var started = false

    let failuresBeforeReset: Int

    init(failuresBeforeReset: Int) { self.failuresBeforeReset = max(1, failuresBeforeReset) }

    /// Present and awake.
    @inlinable var isReading: Bool { state == .present && !idle }

    /// Whether enough consecutive failures have piled up to re-initialise.
    var needsRecovery: Bool { consecutiveFailures >= failuresBeforeReset }

    /// Runs one driver operation; counts a failure. The error, or nil on success.
    mutating func attempt(_ body: () throws(DriverError) -> Void) -> DriverError? {
        do {
            try body()
            consecutiveFailures = 0
            return nil
        } catch {
            errorCount &+= 1
            consecutiveFailures &+= 1
            lastError = error.description
            return error
        }
    }

    /// Moves to `new`, appending the event clients get, if any.
    mutating func set(_ new: DeviceState, reason r: String?, device d: EngineDevice, at t: UInt64,
                      events: inout [ConnectionEvent]) {
        let old = state
        state = new
        reason = new == .present ? nil : r
        guard started else { started = true; return }
        let tell: Bool
        if old.isHealthy != new.isHealthy {
            tell = true
        } else if !new.isHealthy && old != new {
            // Still not delivering: say when it is gone or given up on; a
            // device coming back into re-initialisation says so when it delivers.
            tell = new != .degraded
        } else {
            tell = false
        }
        if tell {
            events.append(ConnectionEvent(timestampNs: t, deviceID: d.id, kind: d.kind.rawValue,
                                          state: new, reason: new == .present ? nil : r))
        }
    }

    /// A new sample arrived (captured at `t`).
    mutating func sampleArrived(at t: UInt64) {
        lastSampleNanoseconds = t
        consecutiveFailures = 0
    }

    /// Restarts the watchdog at `t` (start, wake, new rate).
    mutating func watch(from t: UInt64) { watchedSince = t }

    /// How long no sample has arrived at `now`, ns.
    func silence(at now: UInt64) -> UInt64 {
        let since = max(watchedSince, lastSampleNanoseconds ?? 0)
        return now > since ? now - since : 0
    }

    func info(_ d: EngineDevice, bus: String, streams: [StreamName], rate: Double, retries: Int) -> DeviceInfo {
        DeviceInfo(id: d.id, kind: d.kind.rawValue, address: "\(bus)@\(hex(d.address))",
                   state: idle && state == .present ? .idle : state, streams: streams, rateHz: rate,
                   errorCount: errorCount, resetCount: resetCount, lastError: lastError,
                   reason: state == .present ? nil : reason, retryCount: retries, stallCount: stallCount)
    }
}

/// Milliseconds for messages: "40 ms", "2.5 ms".
func milliseconds(_ ns: UInt64) -> String {
    let ms = Double(ns) / 1e6
    let r = (ms * 10).rounded() / 10
    return r == r.rounded() ? "\(Int(r)) ms" : "\(r) ms"
}

/// `v` with two decimals, dropping ".00".
func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    return r == r.rounded() ? String(Int(r)) : String(r)
}

extension DriverError {
    /// Nothing acknowledged the address: the device is gone (not merely misbehaving).
    var isNoDevice: Bool { i2cError?.kind == .noDevice }
}
