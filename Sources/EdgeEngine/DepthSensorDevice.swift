import EdgeBus
import EdgeChips
import EdgeProtocol

/// The MS5837-30BA and its upkeep (``SupervisedDevice``). The loop never
/// waits for a conversion: one step per tick — start D2; once its maximum
/// conversion time has passed read it and start D1; once that has passed
/// read it and compensate. A reading starts every ``period`` (≈ 3 Hz, the
/// submersion stream's rate under water). A 0 from the ADC (the chip's "no
/// result": it was reset, or a conversion was lost) is a failed read; the
/// stall watchdog and the failure count recover it like any other device.
struct DepthSensorDevice<Bus: I2CBus>: SupervisedDevice {
    enum Phase: Equatable {
        case waiting
        case temperature(until: UInt64, started: UInt64)
        case pressure(until: UInt64, started: UInt64, d2: UInt32)
    }
    let device: EngineDevice
    var driver: MS5837<Bus>
    var health: DeviceHealth
    var isUp = false
    let policy: DevicePolicy
    var phase: Phase = .waiting
    var nextRead: UInt64 = 0
    /// Spacing of readings, ns: a third of a second.
    let period: UInt64 = 333_333_333

    init(device: EngineDevice, driver: MS5837<Bus>, policy: DevicePolicy) {
        self.device = device; self.driver = driver; self.policy = policy
        health = DeviceHealth(failuresBeforeReset: policy.failuresBeforeReset)
    }

    /// Full scale, Pa (the variant's range: 30 bar for the 30BA).
    var maximumPascals: Double { driver.variant.maximumPressurePascals }

    mutating func start(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        if let error = reinitialise(now: now) {
            down(error, now: now, events: &events)
            return "\(device.id): not started (\(error.description)); probing every \(milliseconds(policy.reprobeNanoseconds))"
        }
        health.set(.present, reason: nil, device: device, at: now, events: &events)
        return "\(device.id): \(driver.variant.part) at 3 Hz (OSR \(driver.pressureOversampling.rawValue) pressure, \(driver.temperatureOversampling.rawValue) temperature)"
    }

    // MARK: SupervisedDevice

    mutating func identifyChip() -> DriverError? {
        let d = driver
        return attempt { () throws(DriverError) in try d.identify() }
    }
    /// No configuration registers: "configured" is a PROM that was read.
    mutating func stillConfigured() -> Bool { driver.calibration != nil }
    func checkConfiguration() -> DriverError? { nil }

    /// Reset (its PROM reload wait on the clock) + PROM read with CRC.
    mutating func reinitialise(now: UInt64) -> DriverError? {
        var d = driver
        let error = attempt { () throws(DriverError) in try d.start() }
        driver = d
        if error == nil { resume(now: now) }
        return error
    }

    mutating func resume(now: UInt64) {
        isUp = true
        phase = .waiting
        nextRead = now
        health.watch(from: now)
        health.nextVerify = now &+ policy.verifyNanoseconds
    }

    mutating func halt() { isUp = false; phase = .waiting }

    // MARK: the loop

    /// One step; a compensated reading when one completes.
    mutating func read(now: UInt64, events: inout [ConnectionEvent]) -> MS5837Sample? {
        guard isUp, !health.idle else { return nil }
        let d = driver
        var error: DriverError?
        switch phase {
        case .waiting:
            guard now >= nextRead else { return nil }
            nextRead = nextRead &+ period > now ? nextRead &+ period : now &+ period
            error = attempt { () throws(DriverError) in try d.beginConversion(.temperature, d.temperatureOversampling) }
            if error == nil {
                phase = .temperature(until: now &+ nanoseconds(seconds: d.temperatureOversampling.maximumConversionMilliseconds / 1e3),
                                     started: now)
                return nil
            }
        case let .temperature(until, started):
            guard now >= until else { return nil }
            var d2: UInt32 = 0
            error = attempt { () throws(DriverError) in
                d2 = try d.readConversion(.temperature, d.temperatureOversampling)
                try d.beginConversion(.pressure, d.pressureOversampling)
            }
            if error == nil {
                phase = .pressure(until: now &+ nanoseconds(seconds: d.pressureOversampling.maximumConversionMilliseconds / 1e3),
                                  started: started, d2: d2)
                return nil
            }
            phase = .waiting
        case let .pressure(until, _, d2):
            guard now >= until else { return nil }
            phase = .waiting
            var sample: MS5837Sample?
            error = attempt { () throws(DriverError) in
                let d1 = try d.readConversion(.pressure, d.pressureOversampling)
                guard let c = d.calibration else {
                    throw .decode(.invalidCalibration(chip: .ms5837, reason: "the PROM has not been read"))
                }
                do throws(DecodeError) {
                    sample = try MS5837Compensation.compensate(MS5837RawSample(d1: d1, d2: d2, captureNanoseconds: now), c,
                                                               secondOrder: d.secondOrder)
                } catch { throw .decode(error) }
            }
            if let s = sample {
                health.sampleArrived(at: now)
                delivered(at: now, events: &events)
                return s
            }
        }
        checkSilence(now: now, error: error, samplePeriod: period, loopPeriod: 0, what: "reading", events: &events)
        return nil
    }

    mutating func service(now: UInt64, events: inout [ConnectionEvent]) -> Bool {
        isUp ? verifyIfDue(now: now, events: &events) : probeIfDue(now: now, events: &events)
    }

    mutating func setIdle(_ idle: Bool, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        phase = .waiting
        nextRead = now
        health.watch(from: now)
        return true
    }
}
