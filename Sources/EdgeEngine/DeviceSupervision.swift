import EdgeChips
import EdgeProtocol

/// The upkeep every device follows, whatever its chip: what to do when its
/// reads fail, when its samples stop, when its configuration no longer
/// holds, and when it does not answer. The chip-specific parts (identify,
/// read back the configuration, re-initialise) are the requirements.
///
/// * failures (after the bus's retries) reach `failuresBeforeReset`, or
///   the samples stop for a few periods (the stall watchdog), or the
///   periodic configuration check finds a register changed → ``recover(now:reason:stalled:events:)``:
///   a chip that does not answer is `missing`; one that still holds its
///   configuration after mere read failures reads on (a bus glitch);
///   anything else is `degraded` and re-initialised (reset, configure, read
///   back) - at most ``DevicePolicy/recoveriesBeforeFailed`` times without
///   a sample in between, then `failed` and tried again later.
/// * a device that is down is probed every `reprobe_interval_s`; when it
///   answers it reads on if still configured, else it is re-initialised.
/// * it is `present` again with its first new sample.
protocol SupervisedDevice {
    var device: EngineDevice { get }
    var health: DeviceHealth { get set }
    var policy: DevicePolicy { get }
    /// Configured and reading (or re-initialising across ticks, for the IMU).
    var isUp: Bool { get }
    /// Reads the identity register: nil when the expected chip answers.
    mutating func identifyChip() -> DriverError?
    /// Whether the chip holds the configuration it should run (read back).
    mutating func stillConfigured() -> Bool
    /// Re-reads the configuration table: nil when it holds.
    func checkConfiguration() -> DriverError?
    /// Starts a reset and configuration (it may complete on a later tick).
    /// nil when it started (or completed); the error when it failed at once.
    mutating func reinitialise(now: UInt64) -> DriverError?
    /// Reading goes on from `now` (watchdog restarted).
    mutating func resume(now: UInt64)
    /// Stops reading (down, or about to re-initialise).
    mutating func halt()
}

extension SupervisedDevice {
    /// Something went wrong with a running device: see the protocol.
    mutating func recover(now: UInt64, reason: String, stalled: Bool, events: inout [ConnectionEvent]) {
        halt()
        if let error = identifyChip() { down(error, now: now, events: &events); return }
        if !stalled, stillConfigured() {
            health.set(.degraded, reason: "\(reason); it still holds its configuration: reading on",
                       device: device, at: now, events: &events)
            resume(now: now)   // present again with the next sample
            return
        }
        health.set(.degraded, reason: "\(reason); re-initialising it", device: device, at: now, events: &events)
        reinitialiseBounded(now: now, events: &events)
    }

    /// Re-initialises unless it has been re-initialised too often without
    /// delivering a sample (then `failed`, tried again at the re-probe interval).
    mutating func reinitialiseBounded(now: UInt64, events: inout [ConnectionEvent]) {
        health.recoveriesWithoutData &+= 1
        if health.recoveriesWithoutData > policy.recoveriesBeforeFailed {
            health.recoveriesWithoutData = 0
            halt()
            health.nextProbe = now &+ policy.reprobeNanoseconds
            health.set(.failed, reason: "re-initialised \(policy.recoveriesBeforeFailed) times without delivering a sample (last error: \(health.lastError ?? "none")); trying again every \(milliseconds(policy.reprobeNanoseconds))",
                       device: device, at: now, events: &events)
            return
        }
        health.resetCount &+= 1
        if let error = reinitialise(now: now) { down(error, now: now, events: &events) }
    }

    /// Does not answer (missing) or is not the chip it should be (failed):
    /// probed again at the re-probe interval.
    mutating func down(_ error: DriverError, now: UInt64, events: inout [ConnectionEvent]) {
        halt()
        health.nextProbe = now &+ policy.reprobeNanoseconds
        if error.isNoDevice {
            health.set(.missing, reason: "does not answer (\(error.summary)); probing every \(milliseconds(policy.reprobeNanoseconds))",
                       device: device, at: now, events: &events)
        } else {
            health.set(.failed, reason: error.description, device: device, at: now, events: &events)
        }
    }

    /// A new sample was handed on: present (again).
    mutating func delivered(at t: UInt64, events: inout [ConnectionEvent]) {
        guard health.state != .present else { return }
        health.recoveriesWithoutData = 0
        health.set(.present, reason: nil, device: device, at: t, events: &events)
    }

    /// A read came back with nothing new (or failed): recovery when the
    /// failures or the silence have gone on too long.
    mutating func checkSilence(now: UInt64, error: DriverError?, samplePeriod: UInt64, loopPeriod: UInt64,
                               what: String, events: inout [ConnectionEvent]) {
        if let error, health.needsRecovery {
            recover(now: now, reason: "\(health.consecutiveFailures) reads failed: \(error.summary)", stalled: false,
                    events: &events)
            return
        }
        let limit = policy.stallNanoseconds(samplePeriod: samplePeriod, loopPeriod: loopPeriod)
        let quiet = health.silence(at: now)
        if quiet > limit {
            health.stallCount &+= 1
            recover(now: now, reason: "no new \(what) for \(milliseconds(quiet)) (one expected every \(milliseconds(samplePeriod)))",
                    stalled: true, events: &events)
        }
    }

    /// Upkeep of a device that is up: the periodic configuration check.
    /// True when what `devices` shows changed.
    mutating func verifyIfDue(now: UInt64, events: inout [ConnectionEvent]) -> Bool {
        // One read of `health`: through an existential device (the
        // magnetometer, the barometer) each read copies it, strings and all.
        let h = health
        guard !h.idle, h.state == .present, now >= h.nextVerify else { return false }
        health.nextVerify = now &+ policy.verifyNanoseconds
        guard let error = checkConfiguration() else { return false }
        health.errorCount &+= 1
        health.consecutiveFailures &+= 1
        health.lastError = error.description
        if case .configurationMismatch = error {
            recover(now: now, reason: "its configuration changed (\(error.summary))", stalled: true, events: &events)
            return true
        }
        if health.needsRecovery {
            recover(now: now, reason: "\(health.consecutiveFailures) operations failed: \(error.summary)",
                    stalled: false, events: &events)
            return true
        }
        return false
    }

    /// Upkeep of a device that is down: probe it when due. True when what
    /// `devices` shows changed.
    mutating func probeIfDue(now: UInt64, events: inout [ConnectionEvent]) -> Bool {
        guard now >= health.nextProbe else { return false }
        health.nextProbe = now &+ policy.reprobeNanoseconds
        if let error = identifyChip() {
            if error.isNoDevice && health.state == .missing { return false }
            down(error, now: now, events: &events)
            return true
        }
        // It answers: if it kept its configuration (a bus outage, not a
        // power loss) it reads on at once; otherwise re-initialise it.
        if stillConfigured() {
            resume(now: now)
            if health.idle { health.set(.present, reason: nil, device: device, at: now, events: &events) }
        } else {
            reinitialiseBounded(now: now, events: &events)
            if isUp, health.idle { health.set(.present, reason: nil, device: device, at: now, events: &events) }
        }
        return true
    }

    /// Runs one driver operation, counting a failure: its error or nil.
    mutating func attempt(_ body: () throws(DriverError) -> Void) -> DriverError? { health.attempt(body) }
}

/// The fault policy every device follows, in nanoseconds.
@usableFromInline struct DevicePolicy: Sendable {
    var failuresBeforeReset: Int
    var reprobeNanoseconds: UInt64
    var verifyNanoseconds: UInt64
    var stallPeriods: Double
    /// Re-initialisations without a sample before a device is `failed`.
    var recoveriesBeforeFailed = 3

    init(_ s: EngineSettings) {
        failuresBeforeReset = max(1, s.failuresBeforeReset)
        reprobeNanoseconds = max(1_000_000, s.reprobeIntervalNanoseconds)
        verifyNanoseconds = max(10_000_000, s.verifyIntervalNanoseconds)
        stallPeriods = s.stallPeriods.isFinite ? max(2, s.stallPeriods) : 4
    }

    /// How long a device may deliver nothing before it is stalled: a few
    /// expected sample periods, or loop periods if the loop is slower (a
    /// sample can only be seen on a tick).
    func stallNanoseconds(samplePeriod: UInt64, loopPeriod: UInt64) -> UInt64 {
        nanoseconds(seconds: stallPeriods * Double(max(samplePeriod, loopPeriod)) / 1e9)
    }
}
