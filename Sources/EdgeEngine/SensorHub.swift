import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// Everything between the bus and the publisher for one board: the drivers
/// (specialised on the concrete bus type), calibration, attitude and
/// altitude filters, multi-rate scheduling, fault counting and recovery.
///
/// ``tick()`` is one loop iteration. It reads what is due, fuses, and
/// publishes to the sink; it holds no lock, never blocks on a client and,
/// in steady state, allocates nothing. Missing devices are re-probed at
/// ``EngineSettings/reprobeInterval``; an MPU-6050 reset is split across
/// ticks (the 100 ms wait never stalls the loop).
/// Confinement: after `start()`, only the loop thread touches a hub (other
/// threads hand work over with `EngineLoop.enqueue`); hence `@unchecked Sendable`.
public final class SensorHub<Bus: I2CBus>: @unchecked Sendable {
    public let bus: Bus
    public let clock: any TimeSource
    public private(set) var settings: EngineSettings
    public private(set) var calibration: EngineCalibration
    public weak var sink: (any SampleSink)?

    // Devices, by role.
    @usableFromInline var imu: IMUUnit<Bus>?
    @usableFromInline var accessory: IMUUnit<Bus>?
    @usableFromInline var magnetometer: MagUnit<Bus>?
    @usableFromInline var barometer: BaroUnit<Bus>?

    var altitude: AltitudeFilter
    var pendingMag: SIMD3<Double>?
    var wanted = [Bool](repeating: true, count: StreamName.allCases.count)
    var seenDemandGeneration = -1
    var devicesChanged = true

    /// Samples handed to the sink, per stream index.
    public private(set) var publishedCounts = [Int](repeating: 0, count: StreamName.allCases.count)
    /// Samples the sink refused (its ring was full).
    public private(set) var sinkDrops = 0
    /// Ticks run.
    public private(set) var ticks = 0

    public init(bus: Bus, clock: any TimeSource, devices: [EngineDevice],
                settings: EngineSettings, calibration: EngineCalibration = EngineCalibration(),
                sink: (any SampleSink)?) {
        self.bus = bus
        self.clock = clock
        var s = settings
        if s.imuBatch > 1 { s.mpu6050.fifo = true }
        if s.bmp280.mode == .forced { s.bmp280.mode = .normal }
        self.settings = s
        self.calibration = calibration
        self.sink = sink
        altitude = AltitudeFilter(settings: s.altitude)
        loopPeriodNanoseconds = s.loopPeriodNanoseconds
        for d in devices {
            switch (d.kind, d.role) {
            case (.mpu6050, .primary) where imu == nil:
                imu = IMUUnit(device: d, driver: MPU6050(bus: bus, address: d.address, clock: clock),
                              settings: s, calibration: calibration.imu[d.id] ?? .init())
            case (.mpu6050, _) where accessory == nil:
                var acc = s
                acc.mpu6050.fifo = false
                acc.mpu6050.i2cBypass = false
                var fusion = s.fusion
                fusion.magnetometerCalibration = nil
                acc.fusion = fusion
                accessory = IMUUnit(device: d, driver: MPU6050(bus: bus, address: d.address, clock: clock),
                                    settings: acc, calibration: calibration.imu[d.id] ?? .init())
            case (.qmc5883l, _) where magnetometer == nil:
                magnetometer = MagUnit(device: d, driver: QMC5883L(bus: bus, address: d.address, clock: clock),
                                       failuresBeforeReset: s.failuresBeforeReset)
            case (.bmp280, _) where barometer == nil:
                barometer = BaroUnit(device: d, driver: BMP280(bus: bus, address: d.address, clock: clock),
                                     failuresBeforeReset: s.failuresBeforeReset)
            default:
                continue
            }
        }
        if imu?.device.address != nil, devices.contains(where: { $0.behind == imu!.device.address }) {
            imu!.settings.mpu6050.i2cBypass = true
        }
    }

    // MARK: start

    /// Probes and starts every device (blocking: call before the loop
    /// starts). A device that does not answer is marked missing and re-probed
    /// from the loop; nothing here throws. Returns one line per device.
    @discardableResult
    public func start() -> [String] {
        let now = clock.nowNanoseconds
        var report: [String] = []
        if var u = imu { report.append(u.startBlocking(now: now)); imu = u }
        if var u = accessory { report.append(u.startBlocking(now: now)); accessory = u }
        let reprobe = UInt64(settings.reprobeInterval * 1e9)
        if var u = magnetometer { report.append(u.start(settings.qmc5883l, now: clock.nowNanoseconds, reprobe: reprobe)); magnetometer = u }
        if var u = barometer { report.append(u.start(settings.bmp280, now: clock.nowNanoseconds, reprobe: reprobe)); barometer = u }
        devicesChanged = true
        publishDevicesIfChanged()
        return report
    }

    // MARK: the loop body

    /// One loop iteration. `scheduled` is the tick's place on the loop's
    /// schedule (its deadline; the clock's time when nil): what is due is
    /// decided on it, not on the wake-up time, so a recording replays with
    /// the same decisions however late the live wake-ups were.
    public func tick(at scheduled: UInt64? = nil) {
        ticks &+= 1
        let now = scheduled ?? clock.nowNanoseconds
        refreshDemand(now: now)
        serviceDevices(now: now)
        let publishedBefore = publishedTotal

        // Slow sensors first, so a fresh magnetometer sample joins this
        // tick's last IMU sample.
        if magnetometer != nil { readMagnetometer(now: now) }
        if barometer != nil { readBarometer(now: now) }
        if imu != nil { readPrimaryIMU() }
        if accessory != nil { readAccessoryIMU() }
        // Wake the service when this tick published something - at most once
        // per delivery interval (``EngineSettings/deliveryInterval``).
        if publishedTotal != publishedBefore { pendingWake = true }
        ticksSinceWake &+= 1
        if pendingWake && ticksSinceWake >= wakeEveryTicks {
            sink?.wakeService()
            pendingWake = false
            ticksSinceWake = 0
        }
        publishDevicesIfChanged()
    }

    // MARK: demand

    func refreshDemand(now: UInt64) {
        guard let sink else { return }
        let g = sink.demandGeneration
        guard g != seenDemandGeneration else { return }
        seenDemandGeneration = g
        let d = sink.demand()
        for s in StreamName.allCases { wanted[s.index] = d[s] != nil || settings.alwaysOn.contains(s) }
        let motion = [StreamName.accelerometer, .gyroscope, .magnetometer, .deviceMotion, .accelerometerBatch,
                      .deviceMotionBatch].contains { wanted[$0.index] }
            // the altitude filter uses the IMU's vertical acceleration
            || wanted[StreamName.altitude.index] || wanted[StreamName.absoluteAltitude.index]
        let accessoryWanted = wanted[StreamName.accessoryMotion.index] || wanted[StreamName.accessoryConnection.index]
        let baroWanted = wanted[StreamName.altitude.index] || wanted[StreamName.absoluteAltitude.index]
            || wanted[StreamName.submersion.index]
        let magWanted = [StreamName.magnetometer, .deviceMotion, .deviceMotionBatch].contains { wanted[$0.index] }
        // Run the IMU at the fastest rate anyone asked for (within the
        // configured maximum; never below the fusion's floor while needed).
        if var u = imu {
            let rate = Self.imuRate(demand: d, alwaysOn: settings.alwaysOn, configured: settings.mpu6050)
            if u.setRate(rate, now: now) { devicesChanged = true; loopPeriodNanoseconds = Self.period(u.settings) }
            imu = u
        }
        if var u = imu { if u.setIdle(!motion, now: now) { devicesChanged = true }; imu = u }
        if var u = accessory { if u.setIdle(!accessoryWanted, now: now) { devicesChanged = true }; accessory = u }
        if var u = magnetometer {
            if u.setIdle(!magWanted, settings: settings.qmc5883l, now: now) { devicesChanged = true }
            magnetometer = u
        }
        if var u = barometer {
            if u.setIdle(!baroWanted, settings: settings.bmp280, now: now) { devicesChanged = true }
            barometer = u
        }
    }

    /// Below this the attitude filter's gyro integration and the altitude
    /// filter's acceleration input degrade, Hz.
    public static var minimumIMURateHz: Double { 50 }

    /// The IMU rate for a demand: the lowest rate the divider can make from
    /// the configured one (configured/k) that is at least the fastest
    /// requested rate and ``minimumIMURateHz``, and of which every requested
    /// interval is a whole number of periods - so decimation by capture time
    /// delivers exactly the requested interval. Interval 0, an always-on
    /// stream, or no such rate: the configured rate.
    static func imuRate(demand: [StreamName: Double], alwaysOn: Set<StreamName>, configured: MPU6050Configuration) -> Double {
        let maxRate = configured.achievedSampleRateHz
        let streams: [StreamName] = [.accelerometer, .gyroscope, .deviceMotion, .accelerometerBatch, .deviceMotionBatch,
                                     .altitude, .absoluteAltitude]
        var intervals: [Double] = []
        var need = min(minimumIMURateHz, maxRate)
        for s in streams {
            if alwaysOn.contains(s) { return maxRate }
            guard let interval = demand[s] else { continue }
            if s == .altitude || s == .absoluteAltitude { continue }   // needs only the floor
            if interval <= 0 { return maxRate }
            intervals.append(interval)
            need = max(need, 1 / interval)
        }
        let base = configured.dlpf.gyroOutputRateHz
        let d0 = Int(configured.sampleRateDivider) + 1
        var k = 256 / d0
        while k >= 1 {
            let rate = base / Double(d0 * k)
            k -= 1
            guard rate >= need * (1 - 1e-9) else { continue }
            let whole = intervals.allSatisfy { i in
                let n = i * rate
                return n.rounded() >= 1 && abs(n - n.rounded()) <= 1e-6 * n
            }
            if whole { return rate }
        }
        return maxRate
    }

    static func period(_ s: EngineSettings) -> UInt64 { s.loopPeriodNanoseconds }

    /// The loop period for the IMU's current rate, ns (the loop follows it).
    public private(set) var loopPeriodNanoseconds: UInt64 = 0

    // MARK: device upkeep: reprobe, split resets

    func serviceDevices(now: UInt64) {
        let reprobe = UInt64(settings.reprobeInterval * 1e9)
        // In place (optional chaining), never copying a unit: this runs every tick.
        if imu?.service(now: now, reprobe: reprobe, events: &pendingEvents) == true { devicesChanged = true }
        if accessory?.service(now: now, reprobe: reprobe, events: &pendingEvents) == true { devicesChanged = true }
        if magnetometer?.service(now: now, reprobe: reprobe, settings: settings.qmc5883l, events: &pendingEvents) == true {
            devicesChanged = true
        }
        if barometer?.service(now: now, reprobe: reprobe, settings: settings.bmp280, events: &pendingEvents) == true {
            devicesChanged = true
            altitude = AltitudeFilter(settings: settings.altitude)   // new reference after a gap
        }
    }
    var pendingEvents: [ConnectionEvent] = []

    // MARK: primary IMU

    func readPrimaryIMU() {
        guard imu?.health.isReading == true else { return }
        if imu?.readBatch(fifo: settings.imuBatch > 1) == false { devicesChanged = true }
        let n = imu!.batch.count
        for i in 0..<n {
            let raw = imu!.batch[i]
            processPrimary(raw, unit: &imu!, last: i == n - 1)   // in place: no copy of the unit
        }
    }

    /// Calibrates, mounts, fuses and publishes one primary-IMU sample.
    @inline(__always)
    func processPrimary(_ raw: MPU6050RawSample, unit u: inout IMUUnit<Bus>, last: Bool) {
        guard let (acc, gyr, dt) = u.prepare(raw) else { return }
        var mag: SIMD3<Double>? = nil
        if last, let m = pendingMag { mag = m; pendingMag = nil }
        u.filter.update(gyro: gyr, accel: acc, mag: mag, dt: dt)
        if barometer != nil {
            altitude.updateAccel(verticalAcceleration: AltitudeFilter.verticalAcceleration(
                attitude: u.filter.quaternion6D, specificForce: acc), dt: dt)
        }
        let t = raw.captureNanoseconds
        if wanted[StreamName.accelerometer.index] { publish(.accelerometer(AccelerometerSample(timestampNs: t, acceleration: acc))) }
        if wanted[StreamName.accelerometerBatch.index] { publish(.accelerometerBatch(AccelerometerSample(timestampNs: t, acceleration: acc))) }
        if wanted[StreamName.gyroscope.index] {
            publish(.gyroscope(GyroscopeSample(timestampNs: t, rotationRate: gyr - u.filter.gyroBias)))
        }
        let dm = wanted[StreamName.deviceMotion.index], dmb = wanted[StreamName.deviceMotionBatch.index]
        if dm || dmb {
            let sample = deviceMotionSample(u.filter, timestamp: t, frame: effectiveFrame)
            if dm { publish(.deviceMotion(sample)) }
            if dmb { publish(.deviceMotionBatch(sample)) }
        }
    }

    /// The configured frame, or a 6D one while the magnetometer is absent,
    /// idle, or has not yet delivered a sample since it (re)started - the
    /// heading is only claimed once a field has actually been fused.
    @usableFromInline var effectiveFrame: ReferenceFrame {
        let f = settings.referenceFrame
        guard f.needsMagnetometer else { return f }
        return magnetometerLive ? f : .xArbitraryZVertical
    }

    /// The magnetometer is present, awake, and has fed the filter since it
    /// last (re)started.
    var magnetometerLive: Bool {
        guard let m = magnetometer else { return false }
        return m.health.isReading && m.fedSinceStart
    }

    // MARK: accessory IMU

    func readAccessoryIMU() {
        guard accessory?.health.isReading == true else { return }
        if accessory?.readBatch(fifo: false) == false { devicesChanged = true }
        let n = accessory!.batch.count
        for i in 0..<n {
            let raw = accessory!.batch[i]
            processAccessory(raw, unit: &accessory!)
        }
    }

    @inline(__always)
    func processAccessory(_ raw: MPU6050RawSample, unit u: inout IMUUnit<Bus>) {
        guard let (acc, gyr, dt) = u.prepare(raw) else { return }
        u.filter.update(gyro: gyr, accel: acc, mag: nil, dt: dt)
        if wanted[StreamName.accessoryMotion.index] {
            publish(.accessoryMotion(deviceMotionSample(u.filter, timestamp: raw.captureNanoseconds,
                                                         frame: .xArbitraryZVertical)))
        }
    }

    // MARK: magnetometer

    func readMagnetometer(now: UInt64) {
        guard magnetometer?.health.isReading == true, now >= magnetometer!.nextRead else { return }
        let (field, ok) = magnetometer!.readField(now: now, settings: settings.qmc5883l, calibration: calibration.magnetometer,
                                                  reprobe: UInt64(settings.reprobeInterval * 1e9), events: &pendingEvents)
        if !ok { devicesChanged = true }
        guard let f = field, f.x.isFinite, f.y.isFinite, f.z.isFinite else { return }
        magnetometer!.fedSinceStart = true
        pendingMag = f
        if wanted[StreamName.magnetometer.index] {
            publish(.magnetometer(MagnetometerSample(timestampNs: now, magneticField: f)))
        }
    }

    // MARK: barometer

    func readBarometer(now: UInt64) {
        guard barometer?.health.isReading == true, now >= barometer!.nextRead else { return }
        let (reading, ok) = barometer!.readSample(now: now, settings: settings.bmp280,
                                                  reprobe: UInt64(settings.reprobeInterval * 1e9), events: &pendingEvents)
        if !ok { devicesChanged = true }
        guard let r = reading, let p = r.pressurePascals, p.isFinite, r.temperatureCelsius.isFinite else { return }
        altitude.updateBarometer(pressure: p)
        let out = altitude.output
        guard out.relativeAltitude.isFinite, out.absoluteAltitude.isFinite else { return }
        if wanted[StreamName.altitude.index] {
            publish(.altitude(AltitudeSample(timestampNs: r.captureNanoseconds, relativeAltitude: out.relativeAltitude,
                                             pressure: p, temperature: r.temperatureCelsius)))
        }
        if wanted[StreamName.absoluteAltitude.index] {
            let precision = PressureAltitude.altitudePerPascal(pressure: p, seaLevelPressure: settings.altitude.seaLevelPressure)
            publish(.absoluteAltitude(AbsoluteAltitudeSample(
                timestampNs: r.captureNanoseconds, altitude: out.absoluteAltitude,
                accuracy: out.absoluteAltitudeAccuracy.isFinite ? out.absoluteAltitudeAccuracy : 1e6,
                precision: abs(precision) * 0.16)))   // 0.16 Pa: UHR resolution (DS Table 3)
        }
    }

    // MARK: publishing

    /// Wakes the service for samples still waiting on the delivery interval
    /// (the loop calls this when it stops, so the last tick is delivered too).
    public func flush() {
        if pendingWake { sink?.wakeService(); pendingWake = false; ticksSinceWake = 0 }
    }

    /// Samples published since start (all streams).
    var publishedTotal = 0
    var pendingWake = false
    var ticksSinceWake = 0
    /// Ticks per service wake-up: the delivery interval in loop periods.
    var wakeEveryTicks: Int {
        guard settings.deliveryInterval > 0, loopPeriodNanoseconds > 0 else { return 1 }
        return max(1, Int(settings.deliveryInterval * 1e9 / Double(loopPeriodNanoseconds) + 1e-9))
    }

    @inline(__always)
    func publish(_ s: Sample) {
        guard let sink else { return }
        publishedTotal &+= 1
        publishedCounts[s.stream.index] &+= 1
        if !sink.publish(s, wake: false) { sinkDrops &+= 1 }
    }

    func publishDevicesIfChanged() {
        if !pendingEvents.isEmpty {
            for e in pendingEvents { sink?.publishConnection(e) }
            pendingEvents.removeAll(keepingCapacity: true)
            devicesChanged = true
        }
        guard devicesChanged else { return }
        devicesChanged = false
        sink?.setDevices(devicesSnapshot())
    }

    /// The devices as a `devices` request lists them.
    public func devicesSnapshot() -> [DeviceInfo] {
        var out: [DeviceInfo] = []
        let name = bus.name
        if let u = imu {
            out.append(u.health.info(u.device, bus: name, streams: [.accelerometer, .gyroscope, .deviceMotion, .accelerometerBatch, .deviceMotionBatch],
                                     rate: u.health.isReading ? u.settings.imuRateHz : 0))
        }
        if let u = accessory {
            out.append(u.health.info(u.device, bus: name, streams: [.accessoryMotion, .accessoryConnection],
                                     rate: u.health.isReading ? u.settings.imuRateHz : 0))
        }
        if let u = magnetometer {
            out.append(u.health.info(u.device, bus: name, streams: [.magnetometer, .deviceMotion],
                                     rate: u.health.isReading ? Double(settings.qmc5883l.outputRate.hertz) : 0))
        }
        if let u = barometer {
            out.append(u.health.info(u.device, bus: name, streams: [.altitude, .absoluteAltitude],
                                     rate: u.health.isReading ? 1e9 / Double(u.period) : 0))
        }
        return out
    }

    // MARK: reload

    /// New calibration (SIGHUP): takes effect from the next sample. The
    /// attitude filters keep their state.
    public func apply(calibration c: EngineCalibration) {
        calibration = c
        if var u = imu { u.calibration = c.imu[u.device.id] ?? .init(); imu = u }
        if var u = accessory { u.calibration = c.imu[u.device.id] ?? .init(); accessory = u }
    }

    /// The primary attitude filter (for tests and tools).
    public var primaryFilter: AttitudeFilter? { imu?.filter }
    public var accessoryFilter: AttitudeFilter? { accessory?.filter }
    public var altitudeOutput: AltitudeFilter.Output { altitude.output }
    public func health(of id: String) -> DeviceHealth? {
        [imu?.device.id == id ? imu?.health : nil, accessory?.device.id == id ? accessory?.health : nil,
         magnetometer?.device.id == id ? magnetometer?.health : nil,
         barometer?.device.id == id ? barometer?.health : nil].compactMap { $0 }.first
    }

    func deviceMotionSample(_ f: AttitudeFilter, timestamp: UInt64, frame: ReferenceFrame) -> DeviceMotionSample {
        let m = f.deviceMotion(in: frame)
        let q = m.attitude.quaternion
        let g = standardGravity
        let accuracy = m.magneticField.accuracy
        let hasNorth = frame == .xMagneticNorthZVertical || frame == .xTrueNorthZVertical
        // No magnetometer now: no field (never the last one seen as if fresh).
        let liveField = frame != .xArbitraryZVertical && magnetometerLive
        return DeviceMotionSample(
            timestampNs: timestamp, attitude: q,
            gravity: m.gravity * g, userAcceleration: m.userAcceleration * g,
            rotationRate: m.rotationRate, magneticField: liveField ? m.magneticField.field : Vector3.zero,
            magneticFieldAccuracy: liveField ? accuracy : .uncalibrated, headingDeg: hasNorth ? m.heading : nil,
            referenceFrame: frame)
    }
}

