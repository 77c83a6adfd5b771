import EdgeBus
import EdgeChips
import EdgeProtocol

/// A barometer (any ``BarometerDriver``: the BMP280, the BME280) in normal mode and its upkeep (``SupervisedDevice``). It has
/// no data-ready flag: reads follow a grid of the worst-case conversion
/// cycle (t_meas,max + t_sb), so on average no conversion is read twice and
/// the rate does not depend on the loop's tick. When the tick's jitter puts
/// two reads closer than one worst-case cycle, a second read whose raw
/// pressure and temperature equal the first is not published (it may be
/// the same conversion); further apart, equal values are a new conversion
/// (the IIR filter repeats values) and are published. A chip reset by a brown-out sleeps and reads the "not
/// measured" value 0x80000 (DS §3.9, Table 18 reset values): that is a chip
/// that stopped measuring, not a bus glitch, and it is re-initialised at
/// once; the periodic configuration check catches a reset that left the
/// data registers as they were. (Identical readings are no stall sign: at
/// low oversampling with the IIR filter on they repeat for seconds.)
@usableFromInline struct BarometerDevice<Driver: BarometerDriver>: SupervisedDevice {
    let device: EngineDevice
    var driver: Driver
    var configuration: Driver.Settings
    var health: DeviceHealth
    var isUp = false
    var nextRead: UInt64 = 0
    let policy: DevicePolicy
    /// Read spacing, ns (``readPeriod(_:)``).
    let period: UInt64
    /// The raw values and capture time of the last conversion published
    /// (nil: none since it came up).
    var lastRaw: (raw: BarometerRaw, at: UInt64)?
    /// The part found at the last bring-up.
    var variant: BMP280Variant?

    init(device: EngineDevice, driver: Driver, configuration: Driver.Settings, policy: DevicePolicy) {
        self.device = device; self.driver = driver; self.configuration = configuration; self.policy = policy
        period = Self.readPeriod(configuration)
        health = DeviceHealth(failuresBeforeReset: policy.failuresBeforeReset)
    }

    /// Read spacing: the worst-case normal-mode cycle, t_meas,max + t_sb
    /// (DS §3.8.1, Table 13 and §3.6.3 Table 14).
    static func readPeriod(_ c: Driver.Settings) -> UInt64 {
        nanoseconds(seconds: c.maximumCycleMilliseconds / 1e3)
    }

    var effectiveConfiguration: Driver.Settings { health.idle ? configuration.idle() : configuration }

    mutating func start(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        if let error = reinitialise(now: now) {
            down(error, now: now, events: &events)
            return "\(device.id): not started (\(error.description)); probing every \(milliseconds(policy.reprobeNanoseconds))"
        }
        health.set(.present, reason: nil, device: device, at: now, events: &events)
        return "\(device.id): \(variant?.part ?? Driver.chipKind.partName) \(configuration.summary)"
    }

    // MARK: SupervisedDevice

    mutating func identifyChip() -> DriverError? {
        var d = driver
        let error = attempt { () throws(DriverError) in try d.identify() }
        driver = d
        return error
    }

    mutating func stillConfigured() -> Bool {
        driver.configuration == effectiveConfiguration && driver.isCalibrated && checkConfiguration() == nil
    }

    func checkConfiguration() -> DriverError? {
        do { try driver.verifyConfiguration(); return nil } catch { return error }
    }

    /// Soft reset (polling its 2 ms start-up on the clock) + calibration +
    /// configure + read back. The first read is timed from the clock after
    /// all that, not from `now` (the tick's): those transfers take bus time
    /// (more on a slow bus or a loaded machine), and a read timed from the
    /// tick could come before the first conversion and find the reset
    /// value 0x80000, which says the chip was reset (BarometerReinitialiseTests).
    mutating func reinitialise(now: UInt64) -> DriverError? {
        let c = effectiveConfiguration
        var d = driver
        var v: BMP280Variant?
        let error = attempt { () throws(DriverError) in
            v = try d.start(c)
            try d.verifyConfiguration()
        }
        driver = d
        if error == nil { variant = v; resume(now: max(now, driver.clock.nowNanoseconds)) }
        return error
    }

    mutating func resume(now: UInt64) {
        isUp = true
        lastRaw = nil
        nextRead = now &+ nanoseconds(seconds: effectiveConfiguration.maximumMeasurementMilliseconds / 1e3)
        health.watch(from: now)
        health.nextVerify = now &+ policy.verifyNanoseconds
    }

    mutating func halt() { isUp = false }

    // MARK: the loop

    /// One due read: the compensated conversion, or nil.
    @inline(__always)
    mutating func read(now: UInt64, events: inout [ConnectionEvent]) -> BarometerReading? {
        guard isUp, !health.idle, now >= nextRead else { return nil }
        // On the grid (the average spacing stays one cycle whatever the
        // tick); a restart after falling more than a cycle behind.
        nextRead = nextRead &+ period > now ? nextRead &+ period : now &+ period
        var conversion: (raw: BarometerRaw, reading: BarometerReading)?
        let d = driver
        let error = attempt { () throws(DriverError) in
            guard d.isCalibrated else {
                throw .decode(.invalidCalibration(chip: Driver.chipKind, reason: "calibration has not been read"))
            }
            conversion = try d.readConversion()
        }
        if let (raw, r) = conversion, let p = r.pressurePascals, p.isFinite, r.temperatureCelsius.isFinite {
            health.sampleArrived(at: r.captureNanoseconds)
            if let last = lastRaw, last.raw == raw, r.captureNanoseconds &- last.at < period {
                // Perhaps the same conversion read twice: read again once a
                // new one is certain.
                nextRead = last.at &+ period
                return nil
            }
            lastRaw = (raw, r.captureNanoseconds)
            delivered(at: r.captureNanoseconds, events: &events)
            return r
        }
        if case .decode(.skippedMeasurement)? = error {
            health.stallCount &+= 1
            recover(now: now, reason: "it reads the 'not measured' value 0x80000: the chip was reset and sleeps",
                    stalled: true, events: &events)
        } else {
            checkSilence(now: now, error: error, samplePeriod: period, loopPeriod: 0, what: "conversion", events: &events)
        }
        return nil
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
        // From the write, as after a re-initialisation.
        let written = max(now, driver.clock.nowNanoseconds)
        nextRead = written &+ nanoseconds(seconds: c.maximumMeasurementMilliseconds / 1e3)
        health.watch(from: written)
        return true
    }
}
