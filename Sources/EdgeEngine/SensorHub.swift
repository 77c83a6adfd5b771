import EdgeBus
import EdgeChips
import EdgeFusion
import EdgeProtocol

/// The engine for one board: its devices, its stages and the order a tick
/// runs them in. Each part is a small type with one job:
///
/// | part | job |
/// |---|---|
/// | ``EngineDemand`` | what clients want → which devices wake, the IMU rate (pure) |
/// | `IMUDevice`, `MagnetometerDevice`, `BarometerDevice` | device upkeep: start, reads, stall watchdog, configuration checks, recovery |
/// | `RetryingBus` | bounded, counted retries of transient transfer failures |
/// | `DepthSensorDevice` | the MS5837-30BA: one conversion step per tick, never waiting |
/// | `ChipTable` | chip kind → its device (driver, settings) and the streams it feeds |
/// | the `EngineStage`s `StageTable` gives the board | inputs → streams: attitude and motion, accessory motion, altitude, submersion, fitness, humidity, the magnetometer stream |
/// | `Publisher` | samples, events and the devices snapshot to the sink; service wake-ups |
///
/// ``tick(at:)`` is one loop iteration: demand, device upkeep, the reads
/// that are due, each reading handed to the stages that consume its input
/// (in table order), publishing. The hub names no stage: which run is the
/// table's answer for the board's devices and the configuration. It holds
/// no lock, never blocks on a client and, in steady state, allocates
/// nothing. A device whose data stop
/// (a stall, a reset chip, failing reads, a lost configuration) is reported
/// `degraded` with a `connection` event and re-initialised without
/// stalling the loop; nothing it measured before is presented as fresh.
///
/// Confinement: after `start()`, only the loop thread touches a hub (other
/// threads hand work over with `EngineLoop.enqueue`); hence `@unchecked Sendable`.
public final class SensorHub<Bus: I2CBus>: @unchecked Sendable {
    public let bus: Bus
    public let clock: any TimeSource
    public private(set) var settings: EngineSettings
    public private(set) var calibration: EngineCalibration
    /// The drivers' bus: `bus` with bounded retries of transient failures.
    public let retryingBus: RetryingBus<Bus>

    // The board's devices by role, as ``ChipTable`` made them for its chips.
    var imu: IMUDevice<RetryingBus<Bus>>?
    var accessory: IMUDevice<RetryingBus<Bus>>?
    var magnetometer: (any MagnetometerUnit)?
    var barometer: (any BarometerUnit)?
    var depthSensor: DepthSensorDevice<RetryingBus<Bus>>?

    /// The stages ``StageTable`` gave this board, in the order they are fed.
    var stages: [any EngineStage]
    /// Indices into ``stages`` of the consumers of each input, in order.
    var motionStages: [Int] = [], accessoryStages: [Int] = [], fieldStages: [Int] = [],
        pressureStages: [Int] = [], depthStages: [Int] = []
    /// Of those, the ones that run under the current demand (their
    /// ``EngineStage/runs(_:)``, asked when demand changes, not per sample).
    var motionRunning: [Int] = [], accessoryRunning: [Int] = [], fieldRunning: [Int] = [],
        pressureRunning: [Int] = [], depthRunning: [Int] = []
    @usableFromInline var publisher: Publisher
    var demand: EngineDemand
    var seenDemandGeneration = -1
    /// Raw samples of this tick, reused (capacity reserved once).
    var raw: [MPU6050RawSample] = {
        var a = [MPU6050RawSample]()
        a.reserveCapacity(128)
        return a
    }()

    /// Where samples go. Weak: the sink owns the engine's lifetime, not the reverse.
    public var sink: (any SampleSink)? {
        get { publisher.sink }
        set { publisher.sink = newValue }
    }
    /// Samples handed to the sink, per stream index.
    public var publishedCounts: [Int] { publisher.publishedCounts }
    /// Samples the sink refused (its ring was full).
    public var sinkDrops: Int { publisher.sinkDrops }
    /// Ticks run.
    public private(set) var ticks = 0
    /// The loop period for the IMU's current rate, ns (the loop follows it).
    public private(set) var loopPeriodNanoseconds: UInt64
    /// IMU samples per tick now (fixed, or following demand; see
    /// ``EngineDemand/imuBatch(fixed:rateHz:deliveryInterval:demand:magnetometerPeriod:dataReady:)``).
    public private(set) var batch: Int

    public init(bus: Bus, clock: any TimeSource, devices: [EngineDevice],
                settings: EngineSettings, calibration: EngineCalibration = EngineCalibration(),
                sink: (any SampleSink)?) {
        self.bus = bus
        self.clock = clock
        var s = settings
        if s.bmp280.mode == .forced { s.bmp280.mode = .normal }
        if devices.contains(where: { d in d.behind != nil && devices.contains { $0.kind == .mpu6050 && $0.role == .primary && $0.address == d.behind } }) {
            s.mpu6050.i2cBypass = true
        }
        self.calibration = calibration
        let rb = RetryingBus(bus, retries: s.busRetries)
        retryingBus = rb
        publisher = Publisher(sink: sink)
        let policy = DevicePolicy(s)
        // The devices first (the first chip of each role; ChipTable names
        // the device of each chip), then the loop's period, which follows
        // the IMU's rate and the magnetometer's.
        for d in devices {
            switch ChipTable.unit(for: d, bus: rb, clock: clock, settings: s, calibration: calibration, policy: policy) {
            case .imu(let u) where d.role == .primary && imu == nil:
                imu = u
            case .imu(var u) where accessory == nil:
                u.configuration.fifo = false
                u.configuration.i2cBypass = false
                accessory = u
            case .magnetometer(let u) where magnetometer == nil:
                magnetometer = u
            case .barometer(let u) where barometer == nil:
                barometer = u
            case .depth(let u) where depthSensor == nil:
                depthSensor = u
            default:
                continue
            }
        }
        let magPeriodS = Self.magnetometerPeriod(magnetometer)
        demand = EngineDemand(demand: [:], alwaysOn: s.alwaysOn, configured: s.mpu6050)
        batch = EngineDemand.imuBatch(fixed: s.imuBatch, rateHz: s.imuRateHz, deliveryInterval: s.deliveryInterval, demand: [:],
                                      magnetometerPeriod: magPeriodS, dataReady: s.mpu6050.dataReadyInterrupt)
        s.mpu6050.fifo = batch > 1
        imu?.configuration.fifo = batch > 1
        loopPeriodNanoseconds = s.mpu6050.loopPeriodNanoseconds(batch: batch)
        self.settings = s
        let board = BoardInputs(imu: imu != nil, accessory: accessory != nil, magnetometer: magnetometer != nil,
                                barometer: barometer != nil, depthSensor: depthSensor != nil,
                                barometerMeasuresHumidity: barometer?.measuresHumidity ?? false)
        stages = StageTable.stages(for: board, settings: s, calibration: calibration, timing: StageTiming(
            imuRateHz: s.imuRateHz,
            fieldLifetimeNanoseconds: policy.stallNanoseconds(samplePeriod: nanoseconds(seconds: magPeriodS),
                                                              loopPeriod: loopPeriodNanoseconds)))
        for (i, stage) in stages.enumerated() {
            let c = stage.consumes
            if c.contains(.motion) { motionStages.append(i) }
            if c.contains(.accessoryMotion) { accessoryStages.append(i) }
            if c.contains(.field) { fieldStages.append(i) }
            if c.contains(.pressure) { pressureStages.append(i) }
            if c.contains(.depthPressure) { depthStages.append(i) }
        }
        publisher.wakeEveryTicks = wakeEveryTicks
        refreshRunning()
    }

    /// Which stages run now: after a change of demand (in place: the lists
    /// keep their capacity, so a change allocates nothing after the first).
    func refreshRunning() {
        func keep(_ all: [Int], _ out: inout [Int]) {
            out.removeAll(keepingCapacity: true)
            for i in all where stages[i].runs(publisher) { out.append(i) }
        }
        keep(motionStages, &motionRunning)
        keep(accessoryStages, &accessoryRunning)
        keep(fieldStages, &fieldRunning)
        keep(pressureStages, &pressureRunning)
        keep(depthStages, &depthRunning)
    }

    /// Hands `input`'s loss to its consumers.
    func lost(_ input: StageInputs, consumers: [Int], now: UInt64) {
        for i in consumers { stages[i].inputLost(input, at: now, publisher: &publisher) }
    }

    /// The loop's timing changed: every stage hears it.
    func timingChanged(_ t: StageTiming) {
        for i in stages.indices { stages[i].timingChanged(t) }
    }

    // MARK: start

    /// Probes and starts every device (blocking: call before the loop
    /// starts). A device that does not answer is marked missing and probed
    /// from the loop; nothing here throws. Returns one line per device.
    @discardableResult
    public func start() -> [String] {
        var report: [String] = []
        if var u = imu { report.append(u.startBlocking(now: clock.nowNanoseconds)); imu = u }
        if var u = accessory { report.append(u.startBlocking(now: clock.nowNanoseconds)); accessory = u }
        if var u = magnetometer { report.append(u.start(now: clock.nowNanoseconds)); magnetometer = u }
        if var u = barometer { report.append(u.start(now: clock.nowNanoseconds)); barometer = u }
        if var u = depthSensor { report.append(u.start(now: clock.nowNanoseconds)); depthSensor = u }
        publisher.devicesChanged = true
        publisher.sendDevices(devicesSnapshot)
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
        upkeep(now: now)
        let before = publisher.publishedTotal
        // Slow sensors first, so a fresh field joins this tick's last IMU sample.
        if magnetometer != nil { readMagnetometer(now: now) }
        if barometer != nil { readBarometer(now: now) }
        if depthSensor != nil { readDepthSensor(now: now) }
        if imu != nil { readPrimaryIMU(now: now) }
        if accessory != nil { readAccessoryIMU(now: now) }
        publisher.endTick(published: publisher.publishedTotal != before)
        publisher.sendDevices(devicesSnapshot)
    }

    /// Wakes the service for samples still waiting on the delivery interval
    /// (the loop calls this when it stops, so the last tick is delivered too).
    public func flush() { publisher.flush() }

    // MARK: demand

    func refreshDemand(now: UInt64) {
        guard let sink = publisher.sink else { return }
        let g = sink.demandGeneration
        guard g != seenDemandGeneration else { return }
        seenDemandGeneration = g
        let requested = sink.demand()
        demand = EngineDemand(demand: requested, alwaysOn: settings.alwaysOn, configured: settings.mpu6050)
        publisher.wanted = demand.wanted
        refreshRunning()
        var changed = false
        if imu != nil {
            let rate = demand.imuRateHz
            let k = EngineDemand.imuBatch(fixed: settings.imuBatch, rateHz: imu!.configuration.withRate(rate).achievedSampleRateHz,
                                          deliveryInterval: settings.deliveryInterval, demand: requested,
                                          magnetometerPeriod: Self.magnetometerPeriod(magnetometer),
                                          dataReady: settings.mpu6050.dataReadyInterrupt)
            if imu!.setRate(rate, fifo: k > 1, now: now) || k != batch {
                changed = true
                batch = k
                loopPeriodNanoseconds = imu!.configuration.loopPeriodNanoseconds(batch: k)
                publisher.wakeEveryTicks = wakeEveryTicks
            }
            if imu!.setIdle(!demand.devices.contains(.imu), now: now) { changed = true }
            let magPeriod = nanoseconds(seconds: Self.magnetometerPeriod(magnetometer))
            timingChanged(StageTiming(imuRateHz: imu!.configuration.achievedSampleRateHz,
                                      fieldLifetimeNanoseconds: DevicePolicy(settings).stallNanoseconds(
                                          samplePeriod: magPeriod, loopPeriod: loopPeriodNanoseconds)))
        }
        if accessory?.setIdle(!demand.devices.contains(.accessory), now: now) == true { changed = true }
        if magnetometer?.setIdle(!demand.devices.contains(.magnetometer), now: now) == true {
            changed = true
            lost(.field, consumers: fieldStages, now: now)
        }
        if barometer?.setIdle(!demand.devices.contains(.barometer), now: now) == true { changed = true }
        // The depth sensor runs while the submersion stream is wanted.
        if depthSensor?.setIdle(!publisher.wants(.submersion), now: now) == true { changed = true }
        if changed { publisher.devicesChanged = true }
    }

    /// The magnetometer's output period, s (the QMC5883L's default rate's
    /// without one: the loop then never waits for a field).
    static func magnetometerPeriod(_ m: (any MagnetometerUnit)?) -> Double {
        m.map { Double($0.periodNanoseconds) / 1e9 } ?? 1 / Double(QMC5883LConfiguration.default.outputRate.hertz)
    }

    /// Ticks per service wake-up: the delivery interval in loop periods.
    var wakeEveryTicks: Int {
        guard settings.deliveryInterval > 0, settings.deliveryInterval.isFinite, loopPeriodNanoseconds > 0 else { return 1 }
        return max(1, min(1000, Int(settings.deliveryInterval * 1e9 / Double(loopPeriodNanoseconds) + 1e-9)))
    }

    // MARK: device upkeep

    /// Recovery steps, probes of devices that are down, configuration checks.
    func upkeep(now: UInt64) {
        // In place (optional chaining), never copying a device: this runs every tick.
        if imu?.service(now: now, events: &publisher.events) == true { publisher.devicesChanged = true }
        if accessory?.service(now: now, events: &publisher.events) == true { publisher.devicesChanged = true }
        if magnetometer?.service(now: now, events: &publisher.events) == true { publisher.devicesChanged = true }
        if barometer != nil, !Self.isUp(&barometer!) { lost(.pressure, consumers: pressureStages, now: now) }
        if barometer?.service(now: now, events: &publisher.events) == true { publisher.devicesChanged = true }
        if let up = depthSensor?.isUp, !up { lost(.depthPressure, consumers: depthStages, now: now) }
        if depthSensor?.service(now: now, events: &publisher.events) == true { publisher.devicesChanged = true }
    }
    /// Whether a device held as an existential is up, asked in place: a
    /// plain read (`barometer?.isUp`) copies the whole device out of the
    /// hub first, every tick.
    @inline(__always) static func isUp<U: EngineUnit>(_ unit: inout U) -> Bool { unit.isUp }
    /// Whether it is `present`, asked in place (see ``isUp(_:)``).
    @inline(__always) static func isPresent<U: EngineUnit>(_ unit: inout U) -> Bool { unit.health.state == .present }

    // MARK: reads and stages

    func readPrimaryIMU(now: UInt64) {
        let eventsBefore = publisher.events.count
        imu!.read(into: &raw, now: now, loopPeriod: loopPeriodNanoseconds, events: &publisher.events)
        let n = raw.count
        var delivered: UInt64?
        for i in 0..<n {
            guard let (acc, gyr, dt) = imu!.prepare(raw[i]) else { continue }   // in place: no copy of the device
            let t = raw[i].captureNanoseconds
            if delivered == nil { delivered = t }
            var m = MotionInput(accel: acc, gyro: gyr, dt: dt, t: t, last: i == n - 1)
            for k in motionRunning { stages[k].motion(&m, publisher: &publisher) }
        }
        if let t = delivered { imu!.delivered(at: t, events: &publisher.events) }
        if publisher.events.count != eventsBefore { publisher.devicesChanged = true }
    }

    func readAccessoryIMU(now: UInt64) {
        let eventsBefore = publisher.events.count
        accessory!.read(into: &raw, now: now, loopPeriod: loopPeriodNanoseconds, events: &publisher.events)
        var delivered: UInt64?
        for i in 0..<raw.count {
            guard let (acc, gyr, dt) = accessory!.prepare(raw[i]) else { continue }
            let t = raw[i].captureNanoseconds
            if delivered == nil { delivered = t }
            var m = MotionInput(accel: acc, gyro: gyr, dt: dt, t: t, last: i == raw.count - 1)
            for k in accessoryRunning { stages[k].accessoryMotion(&m, publisher: &publisher) }
        }
        if let t = delivered { accessory!.delivered(at: t, events: &publisher.events) }
        if publisher.events.count != eventsBefore { publisher.devicesChanged = true }
    }

    func readMagnetometer(now: UInt64) {
        let eventsBefore = publisher.events.count
        let got = magnetometer!.read(now: now, calibration: calibration.magnetometer, loopPeriod: loopPeriodNanoseconds,
                                     events: &publisher.events)
        if publisher.events.count != eventsBefore { publisher.devicesChanged = true }
        if !Self.isPresent(&magnetometer!) { lost(.field, consumers: fieldStages, now: now) }
        guard let (f, t) = got else { return }
        for k in fieldRunning { stages[k].field(f, at: t, publisher: &publisher) }
    }

    func readBarometer(now: UInt64) {
        let eventsBefore = publisher.events.count
        let reading = barometer!.read(now: now, events: &publisher.events)
        if publisher.events.count != eventsBefore { publisher.devicesChanged = true }
        guard let r = reading else { return }
        for k in pressureRunning { stages[k].pressure(r, publisher: &publisher) }
    }

    func readDepthSensor(now: UInt64) {
        let eventsBefore = publisher.events.count
        let reading = depthSensor!.read(now: now, events: &publisher.events)
        if publisher.events.count != eventsBefore { publisher.devicesChanged = true }
        guard let r = reading else { return }
        for k in depthRunning { stages[k].depthPressure(r, publisher: &publisher) }
    }

    /// Whether a submersion source is configured (CMWaterSubmersionManager's
    /// `waterSubmersionAvailable`).
    public var waterSubmersionAvailable: Bool { depthSensor != nil || barometer != nil }

    // MARK: what clients see

    /// The streams a device feeds: what this board's stages that consume its
    /// input produce with it, in table order.
    func streams(fedBy input: StageInputs) -> [StreamName] {
        var out: [StreamName] = []
        for st in stages where st.consumes.contains(input) {
            for p in type(of: st).produces where p.needs.contains(input) && !out.contains(p.stream) { out.append(p.stream) }
        }
        return out
    }

    /// The devices as a `devices` request lists them.
    public func devicesSnapshot() -> [DeviceInfo] {
        var out: [DeviceInfo] = []
        let name = bus.name
        if let u = imu {
            out.append(u.health.info(u.device, bus: name, streams: streams(fedBy: .motion),
                                     rate: u.health.isReading ? u.configuration.achievedSampleRateHz : 0,
                                     retries: retryingBus.retryCount(forAddress: u.device.address)))
        }
        if let u = accessory {
            out.append(u.health.info(u.device, bus: name, streams: streams(fedBy: .accessoryMotion),
                                     rate: u.health.isReading ? u.configuration.achievedSampleRateHz : 0,
                                     retries: retryingBus.retryCount(forAddress: u.device.address)))
        }
        if let u = magnetometer {
            out.append(u.health.info(u.device, bus: name, streams: streams(fedBy: .field), rate: u.rateHz,
                                     retries: retryingBus.retryCount(forAddress: u.device.address)))
        }
        if let u = barometer {
            out.append(u.health.info(u.device, bus: name, streams: streams(fedBy: .pressure),
                                     rate: u.rateHz, retries: retryingBus.retryCount(forAddress: u.device.address)))
        }
        if let u = depthSensor {
            out.append(u.health.info(u.device, bus: name, streams: streams(fedBy: .depthPressure),
                                     rate: u.health.isReading ? 1e9 / Double(u.period) : 0,
                                     retries: retryingBus.retryCount(forAddress: u.device.address)))
        }
        // By role: the IMUs and the magnetometer can be calibrated.
        let imus = Set([imu?.device.id, accessory?.device.id].compactMap { $0 })
        for i in out.indices {
            let id = out[i].id
            if imus.contains(id) {
                out[i].calibration = calibration.imu[id] != nil ? .calibrated : .uncalibrated
            } else if id == magnetometer?.device.id {
                out[i].calibration = calibration.magnetometer != nil ? .calibrated : .uncalibrated
            } else {
                continue
            }
            if out[i].calibration == .uncalibrated {
                out[i].calibrationNote = calibration.uncalibrated[id] ?? "no calibration for it"
            }
        }
        return out
    }

    /// Whether each stage can do its whole job now (and why not), in table order.
    public func stageStatuses() -> [StageStatus] {
        let now = clock.nowNanoseconds
        let sources = StageSources(motion: imu?.health, pressure: barometer?.health, depthPressure: depthSensor?.health)
        return stages.compactMap { $0.status(at: now, sources: sources, publisher: publisher) }
    }

    // MARK: reload

    /// New calibration (SIGHUP): takes effect from the next sample. The
    /// attitude filters keep their state.
    public func apply(calibration c: EngineCalibration) {
        calibration = c
        // The devices report says which chips run calibrated: clients see the reload.
        publisher.devicesChanged = true
        for i in stages.indices { stages[i].calibrationChanged(c) }
        if let id = imu?.device.id { imu!.calibration = c.imu[id] ?? .init() }
        if let id = accessory?.device.id { accessory!.calibration = c.imu[id] ?? .init() }
    }

    // MARK: for tests and tools

    public func health(of id: String) -> DeviceHealth? {
        if imu?.device.id == id { return imu?.health }
        if accessory?.device.id == id { return accessory?.health }
        if magnetometer?.device.id == id { return magnetometer?.health }
        if barometer?.device.id == id { return barometer?.health }
        if depthSensor?.device.id == id { return depthSensor?.health }
        return nil
    }

    /// See ``EngineDemand/imuRate(demand:alwaysOn:configured:)``.
    static func imuRate(demand: [StreamName: Double], alwaysOn: Set<StreamName>, configured: MPU6050Configuration) -> Double {
        EngineDemand.imuRate(demand: demand, alwaysOn: alwaysOn, configured: configured)
    }
    /// See ``EngineDemand/minimumIMURateHz``.
    public static var minimumIMURateHz: Double { EngineDemand.minimumIMURateHz }
}

extension MPU6050Configuration {
    /// The same configuration at another rate.
    func withRate(_ hz: Double) -> MPU6050Configuration {
        var c = self
        c.sampleRateHz = hz
        return c
    }

    /// The loop period for this rate with `batch` samples per tick, ns.
    func loopPeriodNanoseconds(batch: Int) -> UInt64 {
        var s = EngineSettings()
        s.mpu6050 = self
        s.imuBatch = max(1, batch)
        return s.loopPeriodNanoseconds
    }
}
