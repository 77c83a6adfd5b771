import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// Health and counters of one device.
public struct DeviceHealth: Sendable, Equatable {
    public internal(set) var state: DeviceState = .missing
    /// Present but put to sleep because nobody needs it.
    public internal(set) var idle = false
    public internal(set) var consecutiveFailures = 0
    public internal(set) var errorCount = 0
    public internal(set) var resetCount = 0
    public internal(set) var lastError: String?
    var failuresBeforeReset: Int
    var nextReprobe: UInt64 = 0

    init(failuresBeforeReset: Int) { self.failuresBeforeReset = failuresBeforeReset }

    /// Present, awake, not in the middle of a reset.
    @inlinable var isReading: Bool { state == .present && !idle }

    /// Runs one driver operation; counts a failure. True on success.
    mutating func attempt(_ body: () throws(DriverError) -> Void) -> Bool {
        do {
            try body()
            consecutiveFailures = 0
            return true
        } catch {
            errorCount &+= 1
            consecutiveFailures &+= 1
            lastError = error.description
            return false
        }
    }

    /// Whether enough consecutive failures have piled up to reset the device.
    var needsReset: Bool { consecutiveFailures >= failuresBeforeReset }

    func info(_ d: EngineDevice, bus: String, streams: [StreamName], rate: Double) -> DeviceInfo {
        DeviceInfo(id: d.id, kind: d.kind.rawValue, address: "\(bus)@\(hex(d.address))",
                   state: idle && state == .present ? .idle : state, streams: streams, rateHz: rate,
                   errorCount: errorCount, resetCount: resetCount, lastError: lastError)
    }

    mutating func markMissing(_ d: EngineDevice, now: UInt64, reprobe: UInt64, events: inout [ConnectionEvent]) {
        if state == .present {
            events.append(ConnectionEvent(timestampNs: now, deviceID: d.id, kind: d.kind.rawValue, connected: false))
        }
        state = .missing
        nextReprobe = now &+ reprobe
    }

    mutating func markPresent(_ d: EngineDevice, now: UInt64, events: inout [ConnectionEvent]) {
        if state != .present {
            events.append(ConnectionEvent(timestampNs: now, deviceID: d.id, kind: d.kind.rawValue, connected: true))
        }
        state = .present
        consecutiveFailures = 0
    }
}

/// An MPU-6050 with its attitude filter.
@usableFromInline struct IMUUnit<Bus: I2CBus> {
    enum Phase: Equatable { case running, resetting(readyAt: UInt64), down }

    let device: EngineDevice
    var driver: MPU6050<Bus>
    var settings: EngineSettings
    var calibration: EngineCalibration.IMU
    var filter: AttitudeFilter
    var health: DeviceHealth
    var phase: Phase = .down
    /// Capture time of the last fused sample.
    var lastProcessed: UInt64?
    /// Samples before this time are discarded (gyro settling after wake/reset).
    var settleUntil: UInt64 = 0
    var nominalDt: Double

    init(device: EngineDevice, driver: MPU6050<Bus>, settings: EngineSettings, calibration: EngineCalibration.IMU) {
        self.device = device; self.driver = driver; self.settings = settings; self.calibration = calibration
        nominalDt = 1 / settings.imuRateHz
        filter = AttitudeFilter(settings: settings.fusion, sampleInterval: nominalDt)
        health = DeviceHealth(failuresBeforeReset: settings.failuresBeforeReset)
    }

    /// Settling time after waking the gyro (the kernel driver's 60 ms).
    static var settleNanoseconds: UInt64 { 60_000_000 }

    /// Full blocking start (before the loop runs).
    mutating func startBlocking(now: UInt64) -> String {
        var events: [ConnectionEvent] = []
        var variant: MPU6050Variant?
        let ok = health.attempt { () throws(DriverError) in variant = try driver.start(settings.mpu6050) }
        if ok {
            health.markPresent(device, now: now, events: &events)
            phase = .running
            settleUntil = driver.clock.nowNanoseconds &+ Self.settleNanoseconds
            let warn = variant?.warning.map { " - warning: \($0)" } ?? ""
            return "\(device.id): \(variant?.description ?? "MPU-6050") at \(String(format2(settings.imuRateHz))) Hz\(warn)"
        }
        health.markMissing(device, now: now, reprobe: UInt64(settings.reprobeInterval * 1e9), events: &events)
        phase = .down
        return "\(device.id): not started (\(health.lastError ?? "no answer")); will keep probing"
    }

    /// Raw samples read this tick, oldest first (capacity reserved once:
    /// no allocation in steady state).
    var batch: [MPU6050RawSample] = {
        var a = [MPU6050RawSample]()
        a.reserveCapacity(128)
        return a
    }()
    var fifoOverflows = 0

    /// Reads this tick's samples into ``batch``: one register burst with the
    /// data-ready flag (nothing when no new sample arrived), or, with
    /// `fifo`, every whole record in the FIFO. False when the read failed.
    @inline(__always)
    mutating func readBatch(fifo: Bool) -> Bool {
        // Take the buffer out (swap keeps it uniquely referenced, so appends
        // never copy), fill it, put it back.
        var b = [MPU6050RawSample]()
        swap(&b, &batch)
        b.removeAll(keepingCapacity: true)
        var d = driver
        var overflow = false
        let ok = health.attempt { () throws(DriverError) in
            if fifo {
                do throws(DriverError) {
                    _ = try d.drainFIFO(maxRecords: 64) { b.append($0) }
                } catch {
                    if case .fifoOverflow = error { overflow = true }
                    throw error
                }
            } else if let r = try d.readRawIfReady() {
                b.append(r)
            }
        }
        driver = d
        swap(&b, &batch)
        if !ok {
            if overflow {
                // The driver already reset the FIFO: count it, but it is no reason to reset the chip.
                fifoOverflows += 1
                health.consecutiveFailures = 0
            }
            handleFailure(now: driver.clock.nowNanoseconds)
        }
        return ok
    }

    /// Decode, mount, calibrate; the sample's dt from capture times. nil for
    /// samples to skip (settling, non-finite, out of order).
    @inline(__always)
    mutating func prepare(_ raw: MPU6050RawSample) -> (accel: SIMD3<Double>, gyro: SIMD3<Double>, dt: Double)? {
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

    mutating func handleFailure(now: UInt64) {
        guard health.needsReset else { return }
        // Reset in two halves so the 100 ms wait never stalls the loop.
        var events: [ConnectionEvent] = []
        let ok = health.attempt { () throws(DriverError) in try driver.beginReset() }
        health.resetCount &+= 1
        if ok {
            phase = .resetting(readyAt: now &+ MPU6050<Bus>.resetDelayNanoseconds)
            health.state = .failed   // not reading until the reset completes
        } else {
            health.markMissing(device, now: now, reprobe: UInt64(settings.reprobeInterval * 1e9), events: &events)
            phase = .down
        }
        pendingEvents.append(contentsOf: events)
    }
    var pendingEvents: [ConnectionEvent] = []

    /// Reprobe / finish a reset. True when the device's state changed.
    mutating func service(now: UInt64, reprobe: UInt64, events: inout [ConnectionEvent]) -> Bool {
        events.append(contentsOf: pendingEvents)
        var changed = !pendingEvents.isEmpty
        pendingEvents.removeAll()
        switch phase {
        case .running:
            return changed
        case .resetting(let readyAt):
            guard now >= readyAt else { return changed }
            let s = settings.mpu6050
            let ok = health.attempt { () throws(DriverError) in
                try driver.identify()
                try driver.finishReset()
                try driver.configure(s)
            }
            if ok {
                health.markPresent(device, now: now, events: &events)
                phase = .running
                if health.idle { _ = health.attempt { () throws(DriverError) in try driver.setSleep(true) } }
                settleUntil = now &+ Self.settleNanoseconds
                lastProcessed = nil
            } else {
                health.markMissing(device, now: now, reprobe: reprobe, events: &events)
                phase = .down
            }
            return true
        case .down:
            guard now >= health.nextReprobe else { return changed }
            health.nextReprobe = now &+ reprobe
            var identified = false
            _ = health.attempt { () throws(DriverError) in
                try driver.identify()
                identified = true
                try driver.beginReset()
            }
            if identified {
                phase = .resetting(readyAt: now &+ MPU6050<Bus>.resetDelayNanoseconds)
                changed = true
            }
            return changed
        }
    }

    /// Runs the chip at `rateHz` (the divider's nearest rate at or above it):
    /// rewrites the configuration table. True when the rate changed.
    mutating func setRate(_ rateHz: Double, now: UInt64) -> Bool {
        var c = settings.mpu6050
        c.sampleRateHz = rateHz
        guard c.sampleRateDivider != settings.mpu6050.sampleRateDivider else { return false }
        settings.mpu6050 = c
        nominalDt = 1 / c.achievedSampleRateHz
        guard health.state == .present else { return true }
        _ = health.attempt { () throws(DriverError) in try driver.configure(c) }
        if health.idle { _ = health.attempt { () throws(DriverError) in try driver.setSleep(true) } }
        return true
    }

    /// Puts the chip to sleep or wakes it. True when that changed.
    mutating func setIdle(_ idle: Bool, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        guard health.state == .present else { return true }
        let d = driver
        _ = health.attempt { () throws(DriverError) in try d.setSleep(idle) }
        if !idle { settleUntil = now &+ Self.settleNanoseconds; lastProcessed = nil }
        return true
    }
}

/// The QMC5883L.
@usableFromInline struct MagUnit<Bus: I2CBus> {
    let device: EngineDevice
    var driver: QMC5883L<Bus>
    var health: DeviceHealth
    var nextRead: UInt64 = 0
    var overflows = 0
    /// A field has reached the filter since the chip last (re)started or woke.
    var fedSinceStart = false

    init(device: EngineDevice, driver: QMC5883L<Bus>, failuresBeforeReset: Int) {
        self.device = device; self.driver = driver
        health = DeviceHealth(failuresBeforeReset: failuresBeforeReset)
    }

    func period(_ c: QMC5883LConfiguration) -> UInt64 { UInt64(1e9 / Double(c.outputRate.hertz)) }

    /// One due read (polled twice per output period): the calibrated field
    /// in the board frame if a new sample was ready, and whether the read worked.
    @inline(__always)
    mutating func readField(now: UInt64, settings c: QMC5883LConfiguration, calibration: MagnetometerCalibration?,
                            reprobe: UInt64, events: inout [ConnectionEvent]) -> (SIMD3<Double>?, Bool) {
        nextRead = now + period(c) / 2
        var field: SIMD3<Double>?
        var overflow = false
        var d = driver
        let m = device.boardFromChip
        let ok = health.attempt { () throws(DriverError) in
            switch try d.read() {
            case .field(let s):
                let chip = calibration.map { $0.apply(s.magneticField) } ?? s.magneticField
                field = m * chip
            case .overflow:
                overflow = true
            case .notReady:
                break
            }
        }
        driver = d
        if !ok { handleFailure(now: now, settings: c, reprobe: reprobe, events: &events) }
        if overflow { overflows += 1 }
        return (field, ok)
    }

    mutating func start(_ c: QMC5883LConfiguration, now: UInt64, reprobe: UInt64) -> String {
        var events: [ConnectionEvent] = []
        fedSinceStart = false
        if health.attempt({ () throws(DriverError) in try driver.start(c) }) {
            health.markPresent(device, now: now, events: &events)
            return "\(device.id): QMC5883L at \(c.outputRate.hertz) Hz, ±\(c.range.gauss) G"
        }
        health.markMissing(device, now: now, reprobe: reprobe, events: &events)
        return "\(device.id): not started (\(health.lastError ?? "no answer")); will keep probing"
    }

    mutating func handleFailure(now: UInt64, settings c: QMC5883LConfiguration, reprobe: UInt64,
                                events: inout [ConnectionEvent]) {
        guard health.needsReset else { return }
        health.resetCount &+= 1
        if !health.attempt({ () throws(DriverError) in try driver.start(c) }) {
            health.markMissing(device, now: now, reprobe: reprobe, events: &events)
        }
    }

    mutating func service(now: UInt64, reprobe: UInt64, settings c: QMC5883LConfiguration,
                          events: inout [ConnectionEvent]) -> Bool {
        guard health.state != .present, now >= health.nextReprobe else { return false }
        health.nextReprobe = now &+ reprobe
        var cfg = c
        if health.idle { cfg.mode = .standby }
        fedSinceStart = false
        if health.attempt({ () throws(DriverError) in try driver.start(cfg) }) {
            health.markPresent(device, now: now, events: &events)
            nextRead = now &+ period(c)
            return true
        }
        return false
    }

    mutating func setIdle(_ idle: Bool, settings c: QMC5883LConfiguration, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        guard health.state == .present else { return true }
        var cfg = c
        cfg.mode = idle ? .standby : .continuous
        fedSinceStart = false
        _ = health.attempt { () throws(DriverError) in try driver.configure(cfg) }
        nextRead = now &+ period(c)
        return true
    }
}

/// The BMP280 in normal mode.
@usableFromInline struct BaroUnit<Bus: I2CBus> {
    let device: EngineDevice
    var driver: BMP280<Bus>
    var health: DeviceHealth
    var nextRead: UInt64 = 0
    var period: UInt64 = 40_000_000

    init(device: EngineDevice, driver: BMP280<Bus>, failuresBeforeReset: Int) {
        self.device = device; self.driver = driver
        health = DeviceHealth(failuresBeforeReset: failuresBeforeReset)
    }

    /// One due read: the compensated conversion, and whether the read worked.
    @inline(__always)
    mutating func readSample(now: UInt64, settings c: BMP280Configuration, reprobe: UInt64,
                             events: inout [ConnectionEvent]) -> (BMP280Sample?, Bool) {
        nextRead = now + period
        var reading: BMP280Sample?
        let d = driver
        let ok = health.attempt { () throws(DriverError) in reading = try d.read() }
        if !ok { handleFailure(now: now, settings: c, reprobe: reprobe, events: &events) }
        return (reading, ok)
    }

    /// Reads are spaced by the worst-case normal-mode cycle (t_max + t_sb):
    /// the BMP280 has no data-ready flag, and with the IIR filter on two
    /// conversions can give identical bytes, so spacing - not comparing
    /// values - is what guarantees that no conversion is published twice.
    static func readPeriod(_ c: BMP280Configuration) -> UInt64 {
        UInt64(((c.measurementTime.maximum + c.standby.milliseconds) * 1e6).rounded(.up))
    }

    mutating func start(_ c: BMP280Configuration, now: UInt64, reprobe: UInt64) -> String {
        var events: [ConnectionEvent] = []
        period = Self.readPeriod(c)
        var variant: BMP280Variant?
        if health.attempt({ () throws(DriverError) in variant = try driver.start(c) }) {
            health.markPresent(device, now: now, events: &events)
            nextRead = now &+ UInt64(c.measurementTime.maximum * 1e6)
            return "\(device.id): \(variant?.part ?? "BMP280") at \(format2(c.normalModeRateHz)) Hz (×\(c.pressureOversampling.factor) pressure, ×\(c.temperatureOversampling.factor) temperature, IIR \(c.filter.coefficient))"
        }
        health.markMissing(device, now: now, reprobe: reprobe, events: &events)
        return "\(device.id): not started (\(health.lastError ?? "no answer")); will keep probing"
    }

    mutating func handleFailure(now: UInt64, settings c: BMP280Configuration, reprobe: UInt64,
                                events: inout [ConnectionEvent]) {
        guard health.needsReset else { return }
        health.resetCount &+= 1
        if !health.attempt({ () throws(DriverError) in _ = try driver.start(c) }) {
            health.markMissing(device, now: now, reprobe: reprobe, events: &events)
        }
    }

    mutating func service(now: UInt64, reprobe: UInt64, settings c: BMP280Configuration,
                          events: inout [ConnectionEvent]) -> Bool {
        guard health.state != .present, now >= health.nextReprobe else { return false }
        health.nextReprobe = now &+ reprobe
        var cfg = c
        if health.idle { cfg.mode = .sleep }
        if health.attempt({ () throws(DriverError) in _ = try driver.start(cfg) }) {
            health.markPresent(device, now: now, events: &events)
            nextRead = now &+ UInt64(c.measurementTime.maximum * 1e6)
            return true
        }
        return false
    }

    mutating func setIdle(_ idle: Bool, settings c: BMP280Configuration, now: UInt64) -> Bool {
        guard idle != health.idle else { return false }
        health.idle = idle
        guard health.state == .present else { return true }
        var cfg = c
        cfg.mode = idle ? .sleep : .normal
        _ = health.attempt { () throws(DriverError) in try driver.configure(cfg) }
        nextRead = now &+ UInt64(c.measurementTime.maximum * 1e6)
        return true
    }
}

/// `v` with two decimals, dropping ".00".
func format2(_ v: Double) -> String {
    let r = (v * 100).rounded() / 100
    return r == r.rounded() ? String(Int(r)) : String(r)
}
