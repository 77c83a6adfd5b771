import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// A magnetometer and its upkeep (``SupervisedDevice``), whatever its chip
/// (any ``MagnetometerDriver``: the QMC5883L, the HMC5883L): polled twice
/// per output period; a field is new only when the chip says so (DRDY,
/// RDY). A chip reset by a brown-out wakes up in standby (idle) and never
/// says so again: the stall watchdog sees that, and it is reset and
/// configured again, the configuration read back.
@usableFromInline struct MagnetometerDevice<Driver: MagnetometerDriver>: SupervisedDevice {
    let device: EngineDevice
    var driver: Driver
    var configuration: Driver.Settings
    var health: DeviceHealth
    var isUp = false
    var nextRead: UInt64 = 0
    var overflows = 0
    let policy: DevicePolicy

    init(device: EngineDevice, driver: Driver, configuration: Driver.Settings, policy: DevicePolicy) {
        self.device = device; self.driver = driver; self.configuration = configuration; self.policy = policy
        health = DeviceHealth(failuresBeforeReset: policy.failuresBeforeReset)
    }

    var periodNanoseconds: UInt64 { nanoseconds(seconds: 1 / configuration.outputRateHz) }

    /// The configuration for the chip now: continuous, or idle while no one wants it.
    var effectiveConfiguration: Driver.Settings { health.idle ? configuration.idle() : configuration }

    mutating func start(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        if let error = reinitialise(now: now) {
            down(error, now: now, events: &events)
            return "\(device.id): not started (\(error.description)); probing every \(milliseconds(policy.reprobeNanoseconds))"
        }
        health.set(.present, reason: nil, device: device, at: now, events: &events)
        return "\(device.id): \(Driver.chipKind.partName) \(configuration.summary)"
    }

    // MARK: SupervisedDevice

    mutating func identifyChip() -> DriverError? {
        let d = driver
        return attempt { () throws(DriverError) in try d.identify() }
    }

    mutating func stillConfigured() -> Bool {
        driver.configuration == effectiveConfiguration && checkConfiguration() == nil
    }

    func checkConfiguration() -> DriverError? {
        do { try driver.verifyConfiguration(); return nil } catch { return error }
    }

    /// Reset + configure + read back (a chip's short reset wait is slept on the clock).
    mutating func reinitialise(now: UInt64) -> DriverError? {
        let c = effectiveConfiguration
        var d = driver
        let error = attempt { () throws(DriverError) in
            try d.start(c)
            try d.verifyConfiguration()
        }
        driver = d
        if error == nil { resume(now: now) }
        return error
    }

    mutating func resume(now: UInt64) {
        isUp = true
        nextRead = now &+ periodNanoseconds
        health.watch(from: now)
        health.nextVerify = now &+ policy.verifyNanoseconds
    }

    mutating func halt() { isUp = false }

    // MARK: the loop

    /// One due read: the calibrated field in the board frame if a new sample
    /// was ready, with its capture time. Checks the watchdog otherwise.
    @inline(__always)
    mutating func read(now: UInt64, calibration: MagnetometerCalibration?, loopPeriod: UInt64,
                       events: inout [ConnectionEvent]) -> (field: Vector3, at: UInt64)? {
        guard isUp, !health.idle, now >= nextRead else { return nil }
        let period = periodNanoseconds
        nextRead = now &+ period / 2
        var result: (Vector3, UInt64)?
        var arrived = false
        var d = driver
        let m = device.boardFromChip
        let clock = driver.clock
        let error = attempt { () throws(DriverError) in
            switch try d.readField() {
            case .field(let field):
                let chip = calibration.map { $0.apply(field) } ?? field
                result = (m * chip, clock.nowNanoseconds)
                arrived = true
            case .overflow:
                arrived = true      // a sample, but saturated: no field to use
            case .notReady:
                break
            }
        }
        driver = d
        guard arrived else {
            checkSilence(now: now, error: error, samplePeriod: period, loopPeriod: loopPeriod, what: "field", events: &events)
            return nil
        }
        health.sampleArrived(at: now)
        guard let (f, t) = result, f.x.isFinite, f.y.isFinite, f.z.isFinite else { overflows &+= 1; return nil }
        delivered(at: t, events: &events)
        return (f, t)
    }

    /// Probe a device that is down; re-check a running one's configuration.
    mutating func service(now: UInt64, events: inout [ConnectionEvent]) -> Bool {
        isUp ? verifyIfDue(now: now, events: &events) : probeIfDue(now: now, events: &events)
    }

    mutating func setIdle(_ idle: Bool, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        guard isUp else { return true }
        let c = effectiveConfiguration
        var d = driver
        _ = attempt { () throws(DriverError) in try d.configure(c) }
        driver = d
        nextRead = now &+ periodNanoseconds
        health.watch(from: now)
        return true
    }
}
