import EdgeBus
import EdgeChips
import EdgeProtocol

/// The BMP280 in normal mode and its upkeep (``SupervisedDevice``). It has
/// no data-ready flag: reads are spaced by the worst-case cycle (t_max +
/// t_sb) so no conversion is read twice. A chip reset by a brown-out sleeps
/// and reads the "not measured" value 0x80000 (DS §3.9, Table 18 reset
/// values): that is a chip that stopped measuring, not a bus glitch, and it
/// is re-initialised at once; the periodic configuration check catches a
/// reset that left the data registers as they were.
@usableFromInline struct BarometerDevice<Bus: I2CBus>: SupervisedDevice {
    let device: EngineDevice
    var driver: BMP280<Bus>
    var configuration: BMP280Configuration
    var health: DeviceHealth
    var isUp = false
    var nextRead: UInt64 = 0
    let policy: DevicePolicy
    /// Read spacing, ns (``readPeriod(_:)``).
    let period: UInt64
    /// The part found at the last bring-up.
    var variant: BMP280Variant?

    init(device: EngineDevice, driver: BMP280<Bus>, configuration: BMP280Configuration, policy: DevicePolicy) {
        self.device = device; self.driver = driver; self.configuration = configuration; self.policy = policy
        period = Self.readPeriod(configuration)
        health = DeviceHealth(failuresBeforeReset: policy.failuresBeforeReset)
    }

    /// Reads are spaced by the worst-case normal-mode cycle (t_max + t_sb):
    /// with the IIR filter on, two conversions can give identical bytes, so
    /// spacing - not comparing values - is what guarantees that no
    /// conversion is published twice.
    static func readPeriod(_ c: BMP280Configuration) -> UInt64 {
        nanoseconds(seconds: (c.measurementTime.maximum + c.standby.milliseconds) / 1e3)
    }

    var effectiveConfiguration: BMP280Configuration {
        var c = configuration
        if health.idle { c.mode = .sleep }
        return c
    }

    mutating func start(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        if let error = reinitialise(now: now) {
            down(error, now: now, events: &events)
            return "\(device.id): not started (\(error.description)); probing every \(milliseconds(policy.reprobeNanoseconds))"
        }
        health.set(.present, reason: nil, device: device, at: now, events: &events)
        let c = configuration
        return "\(device.id): \(variant?.part ?? "BMP280") at \(format2(c.normalModeRateHz)) Hz (×\(c.pressureOversampling.factor) pressure, ×\(c.temperatureOversampling.factor) temperature, IIR \(c.filter.coefficient))"
    }

    // MARK: SupervisedDevice

    mutating func identifyChip() -> DriverError? {
        var d = driver
        let error = attempt { () throws(DriverError) in try d.identify() }
        driver = d
        return error
    }

    mutating func stillConfigured() -> Bool {
        driver.configuration == effectiveConfiguration && driver.calibration != nil && checkConfiguration() == nil
    }

    func checkConfiguration() -> DriverError? {
        do { try driver.verifyConfiguration(); return nil } catch { return error }
    }

    /// Soft reset (polling its 2 ms start-up on the clock) + calibration +
    /// configure + read back.
    mutating func reinitialise(now: UInt64) -> DriverError? {
        let c = effectiveConfiguration
        var d = driver
        var v: BMP280Variant?
        let error = attempt { () throws(DriverError) in
            v = try d.start(c)
            try d.verifyConfiguration()
        }
        driver = d
        if error == nil { variant = v; resume(now: now) }
        return error
    }

    mutating func resume(now: UInt64) {
        isUp = true
        nextRead = now &+ nanoseconds(seconds: effectiveConfiguration.measurementTime.maximum / 1e3)
        health.watch(from: now)
        health.nextVerify = now &+ policy.verifyNanoseconds
    }

    mutating func halt() { isUp = false }

    // MARK: the loop

    /// One due read: the compensated conversion, or nil.
    @inline(__always)
    mutating func read(now: UInt64, events: inout [ConnectionEvent]) -> BMP280Sample? {
        guard isUp, !health.idle, now >= nextRead else { return nil }
        nextRead = now &+ period
        var reading: BMP280Sample?
        let d = driver
        let error = attempt { () throws(DriverError) in reading = try d.read() }
        if let r = reading, let p = r.pressurePascals, p.isFinite, r.temperatureCelsius.isFinite {
            health.sampleArrived(at: r.captureNanoseconds)
            delivered(at: r.captureNanoseconds, events: &events)
            return r
        }
        if case .skippedMeasurement? = error {
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
        nextRead = now &+ nanoseconds(seconds: c.measurementTime.maximum / 1e3)
        health.watch(from: now)
        return true
    }
}
