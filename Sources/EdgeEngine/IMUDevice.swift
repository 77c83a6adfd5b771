import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// An MPU-6050 (primary or accessory) and its upkeep: start, the reads of
/// one tick, the stall watchdog, periodic configuration checks, and
/// recovery without ever stalling the loop (the 100 ms DEVICE_RESET wait is
/// split across ticks).
///
/// Recovery: after repeated failed reads the chip is identified and its
/// configuration re-read - if it still holds, reading simply goes on (a bus
/// glitch); if not, or when its samples stopped (a chip reset by a
/// brown-out wakes up asleep and never raises DATA_RDY), it is reset and
/// configured again, and the configuration is read back before it counts as
/// running. It is `present` again with its first sample after the gyro has
/// settled.
@usableFromInline struct IMUDevice<Bus: I2CBus>: SupervisedDevice {
    enum Phase: Equatable {
        /// Not answering (or not brought up): probed at `health.nextProbe`.
        case down
        /// DEVICE_RESET written; configure once `readyAt` has passed.
        case resetting(readyAt: UInt64)
        /// Configured; reading.
        case running
    }

    let device: EngineDevice
    var driver: MPU6050<Bus>
    /// The configuration to run (rate from demand).
    var configuration: MPU6050Configuration
    var calibration: EngineCalibration.IMU
    var health: DeviceHealth
    var phase: Phase = .down
    /// Read through the FIFO (batches), or one register burst a tick.
    var fifo: Bool { configuration.fifo }
    /// Samples captured before this are discarded (gyro settling after a wake or reset).
    var settleUntil: UInt64 = 0
    /// Capture time of the last sample handed on (for dt).
    var lastProcessed: UInt64?
    var nominalDt: Double
    var fifoOverflows = 0
    /// Capture times of FIFO batches, following the chip's sample clock.
    var sampleClock = SampleClock()
    let policy: DevicePolicy

    init(device: EngineDevice, driver: MPU6050<Bus>, configuration: MPU6050Configuration,
         calibration: EngineCalibration.IMU, policy: DevicePolicy) {
        self.device = device; self.driver = driver; self.configuration = configuration
        self.calibration = calibration; self.policy = policy
        nominalDt = 1 / configuration.achievedSampleRateHz
        health = DeviceHealth(failuresBeforeReset: policy.failuresBeforeReset)
    }

    /// Gyro settling after a wake or reset (the kernel driver's 60 ms; DS: ZRO settles in ~30 ms typ).
    static var settleNanoseconds: UInt64 { 60_000_000 }
    /// The DEVICE_RESET wait (RM §4.28; the kernel waits 100 ms), counted
    /// from when the write completed, plus a margin for clock granularity.
    static var resetWaitNanoseconds: UInt64 { MPU6050<Bus>.resetDelayNanoseconds + 2_000_000 }

    var samplePeriodNanoseconds: UInt64 { nanoseconds(seconds: 1 / configuration.achievedSampleRateHz) }

    // MARK: start

    /// Full blocking start (before the loop runs): identify, reset (sleeping
    /// the 100 ms), configure, verify. Returns one line for the start report.
    mutating func startBlocking(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        var variant: MPU6050Variant?
        let c = configuration
        var d = driver
        let error = health.attempt { () throws(DriverError) in
            variant = try d.identify()
            try d.reset()
            try d.configure(c)
            try d.verifyConfiguration()
        }
        driver = d
        if let error {
            down(error, now: now, events: &events)
            return "\(device.id): not started (\(error.description)); probing every \(milliseconds(policy.reprobeNanoseconds))"
        }
        resume(now: driver.clock.nowNanoseconds)
        health.set(.present, reason: nil, device: device, at: now, events: &events)
        let warn = variant?.warning.map { " - warning: \($0)" } ?? ""
        return "\(device.id): \(variant?.description ?? "MPU-6050") at \(format2(configuration.achievedSampleRateHz)) Hz\(warn)"
    }

    // MARK: reading

    /// Reads this tick's samples into `batch`: one register burst with the
    /// data-ready flag (nothing when no new sample arrived), or, with the
    /// FIFO, every whole record in it. Checks the watchdog when nothing came.
    @inline(__always)
    mutating func read(into batch: inout [MPU6050RawSample], now: UInt64, loopPeriod: UInt64,
                       events: inout [ConnectionEvent]) {
        batch.removeAll(keepingCapacity: true)
        guard phase == .running, !health.idle else { return }
        var d = driver
        var overflow = false
        let fifo = self.fifo
        let error = attempt { () throws(DriverError) in
            if fifo {
                do throws(DriverError) {
                    _ = try d.drainFIFO(maxRecords: 64) { batch.append($0) }
                } catch {
                    if case .fifoOverflow = error { overflow = true }
                    throw error
                }
            } else if let r = try d.readRawIfReady() {
                batch.append(r)
            }
        }
        driver = d
        if fifo, let last = batch.last {
            let n = batch.count
            let (newest, period) = sampleClock.stamp(count: n, readAt: last.captureNanoseconds,
                                                     nominalPeriod: samplePeriodNanoseconds)
            for i in 0..<n {
                let back = UInt64((Double(n - 1 - i) * period).rounded())
                batch[i].captureNanoseconds = newest > back ? newest - back : 0
            }
        }
        if let last = batch.last {
            health.sampleArrived(at: last.captureNanoseconds)
        } else if overflow {
            // The driver already reset the FIFO: count it; no reason to reset the chip.
            sampleClock.restart()
            fifoOverflows += 1
            health.consecutiveFailures = 0
            health.sampleArrived(at: now)
        } else {
            checkSilence(now: now, error: error, samplePeriod: samplePeriodNanoseconds, loopPeriod: loopPeriod,
                         what: "sample", events: &events)
        }
    }

    /// Decode, calibrate (chip frame), mount; the sample's dt from capture
    /// times. nil for samples to skip (settling, non-finite, out of order).
    @inline(__always)
    mutating func prepare(_ raw: MPU6050RawSample) -> (accel: Vector3, gyro: Vector3, dt: Double)? {
        let t = raw.captureNanoseconds
        guard t >= settleUntil else { return nil }
        let s = MPU6050Decoder.decode(raw, scales: driver.scales)
        let m = device.boardFromChip
        let acc = m * (calibration.accelScale * (s.acceleration - calibration.accelBias))
        let gyr = m * (s.rotationRate - calibration.gyroBias)
        guard acc.x.isFinite, acc.y.isFinite, acc.z.isFinite, gyr.x.isFinite, gyr.y.isFinite, gyr.z.isFinite else {
            return nil
        }
        var dt = nominalDt
        if let last = lastProcessed {
            guard t > last else { return nil }
            let measured = Double(t - last) * 1e-9
            // A gap (a reset, a stall) is bridged with one nominal step.
            dt = measured < 0.25 ? measured : nominalDt
        }
        lastProcessed = t
        return (acc, gyr, dt)
    }

    // MARK: SupervisedDevice

    var isUp: Bool { phase != .down }

    mutating func identifyChip() -> DriverError? {
        var d = driver
        let error = attempt { () throws(DriverError) in try d.identify() }
        driver = d
        return error
    }

    mutating func stillConfigured() -> Bool {
        driver.configuration == configuration && checkConfiguration() == nil
    }

    func checkConfiguration() -> DriverError? {
        do { try driver.verifyConfiguration(); return nil } catch { return error }
    }

    /// Writes DEVICE_RESET; ``service(now:events:)`` configures the chip
    /// once the reset's wait has passed (the loop never sleeps for it).
    mutating func reinitialise(now: UInt64) -> DriverError? {
        var d = driver
        let error = attempt { () throws(DriverError) in try d.beginReset() }
        driver = d
        if let error { return error }
        // Counted from when the write completed (the tick may have started late).
        let written = max(now, driver.clock.nowNanoseconds)
        phase = .resetting(readyAt: written &+ Self.resetWaitNanoseconds)
        return nil
    }

    mutating func resume(now: UInt64) {
        phase = .running
        lastProcessed = nil
        sampleClock.restart()
        health.watch(from: now)
        health.nextVerify = now &+ policy.verifyNanoseconds
    }

    mutating func halt() { phase = .down }

    // MARK: upkeep

    /// Between reads: finishes a reset, probes a device that is down,
    /// re-checks the configuration of a running one. True when what
    /// `devices` shows changed.
    mutating func service(now: UInt64, events: inout [ConnectionEvent]) -> Bool {
        switch phase {
        case .running:
            return verifyIfDue(now: now, events: &events)
        case .down:
            return probeIfDue(now: now, events: &events)
        case .resetting(let readyAt):
            guard now >= readyAt else { return false }
            let c = configuration, asleep = health.idle
            var d = driver
            let error = attempt { () throws(DriverError) in
                try d.identify()
                try d.finishReset()
                try d.configure(c)
                try d.verifyConfiguration()
                if asleep { try d.setSleep(true) }
            }
            driver = d
            if let error {
                // Gone, or the writes did not take: reset again (bounded).
                if error.isNoDevice { down(error, now: now, events: &events) } else { reinitialiseBounded(now: now, events: &events) }
                return true
            }
            resume(now: now)
            settleUntil = now &+ Self.settleNanoseconds
            if asleep { health.set(.present, reason: nil, device: device, at: now, events: &events) }
            return true
        }
    }

    // MARK: demand

    /// Runs the chip at `rateHz` (the divider's nearest rate at or above
    /// it), through the FIFO or not: rewrites the configuration table (which
    /// empties the FIFO). True when anything changed.
    mutating func setRate(_ rateHz: Double, fifo: Bool, now: UInt64) -> Bool {
        var c = configuration
        c.sampleRateHz = rateHz
        c.fifo = fifo
        guard c.sampleRateDivider != configuration.sampleRateDivider || c.fifo != configuration.fifo else { return false }
        configuration = c
        nominalDt = 1 / c.achievedSampleRateHz
        sampleClock.restart()
        health.watch(from: now)
        guard phase == .running else { return true }
        var d = driver
        let asleep = health.idle
        _ = attempt { () throws(DriverError) in
            try d.configure(c)
            if asleep { try d.setSleep(true) }
        }
        driver = d
        return true
    }

    /// Puts the chip to sleep or wakes it. True when that changed.
    mutating func setIdle(_ idle: Bool, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        guard phase == .running else { return true }
        let d = driver
        _ = attempt { () throws(DriverError) in try d.setSleep(idle) }
        if !idle {
            settleUntil = now &+ Self.settleNanoseconds
            lastProcessed = nil
            sampleClock.restart()
            health.watch(from: now)
            health.nextVerify = now &+ policy.verifyNanoseconds
        }
        return true
    }
}


