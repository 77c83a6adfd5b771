import EdgeValues
import EdgeProtocol

/// The object that starts and manages motion services: accelerometer,
/// gyroscope, magnetometer and device motion, pushed to a handler on an
/// `OperationQueue` or pulled from a property.
///
/// Several managers in one process share one connection to the agent; each
/// gets its own interval (see the DocC catalog, "Where the data comes
/// from"). Handlers run on the queue given; `OperationQueue.main` needs the
/// main run loop (`RunLoop.main.run()` or `dispatchMain()` in a
/// command-line program).
open class CMMotionManager: NSObject {
    let accelerometer = UpdateChannel<CMAccelerometerData>(stream: .accelerometer, interval: 0.01)
    let gyro = UpdateChannel<CMGyroData>(stream: .gyroscope, interval: 0.01)
    let magnetometer = UpdateChannel<CMMagnetometerData>(stream: .magnetometer, interval: 0.01)
    let motion = UpdateChannel<CMDeviceMotion>(stream: .deviceMotion, interval: 0.01)
    private let frameLock = NSLock()
    private var _frame: CMAttitudeReferenceFrame = .xArbitraryZVertical
    private var _showsDeviceMovementDisplay = false

    public override init() { super.init() }

    deinit {
        accelerometer.stop(); gyro.stop(); magnetometer.stop(); motion.stop()
    }

    // MARK: accelerometer

    /// Seconds between accelerometer updates (default 0.01).
    open var accelerometerUpdateInterval: TimeInterval {
        get { accelerometer.interval }
        set { accelerometer.interval = newValue }
    }
    open var isAccelerometerAvailable: Bool { MotionService.shared.isAvailable(.accelerometer) }
    open var isAccelerometerActive: Bool { accelerometer.isActive }
    /// The latest sample since ``startAccelerometerUpdates()`` (nil before the first).
    open var accelerometerData: CMAccelerometerData? { accelerometer.data }

    open func startAccelerometerUpdates() {
        accelerometer.start(queue: nil, handler: nil, convert: Self.accelerometerConversion)
    }

    open func startAccelerometerUpdates(to queue: OperationQueue, withHandler handler: @escaping CMAccelerometerHandler) {
        accelerometer.start(queue: queue, handler: handler, convert: Self.accelerometerConversion)
    }

    open func stopAccelerometerUpdates() { accelerometer.stop() }

    static func accelerometerConversion(_ s: Sample) -> CMAccelerometerData? {
        if case .accelerometer(let a) = s { return Wire.accelerometerData(a) }
        return nil
    }

    // MARK: gyroscope

    open var gyroUpdateInterval: TimeInterval {
        get { gyro.interval }
        set { gyro.interval = newValue }
    }
    open var isGyroAvailable: Bool { MotionService.shared.isAvailable(.gyroscope) }
    open var isGyroActive: Bool { gyro.isActive }
    open var gyroData: CMGyroData? { gyro.data }

    open func startGyroUpdates() { gyro.start(queue: nil, handler: nil, convert: Self.gyroConversion) }

    open func startGyroUpdates(to queue: OperationQueue, withHandler handler: @escaping CMGyroHandler) {
        gyro.start(queue: queue, handler: handler, convert: Self.gyroConversion)
    }

    open func stopGyroUpdates() { gyro.stop() }

    static func gyroConversion(_ s: Sample) -> CMGyroData? {
        if case .gyroscope(let g) = s { return Wire.gyroData(g) }
        return nil
    }

    // MARK: magnetometer

    open var magnetometerUpdateInterval: TimeInterval {
        get { magnetometer.interval }
        set { magnetometer.interval = newValue }
    }
    open var isMagnetometerAvailable: Bool { MotionService.shared.isAvailable(.magnetometer) }
    open var isMagnetometerActive: Bool { magnetometer.isActive }
    open var magnetometerData: CMMagnetometerData? { magnetometer.data }

    open func startMagnetometerUpdates() {
        magnetometer.start(queue: nil, handler: nil, convert: Self.magnetometerConversion)
    }

    open func startMagnetometerUpdates(to queue: OperationQueue, withHandler handler: @escaping CMMagnetometerHandler) {
        magnetometer.start(queue: queue, handler: handler, convert: Self.magnetometerConversion)
    }

    open func stopMagnetometerUpdates() { magnetometer.stop() }

    static func magnetometerConversion(_ s: Sample) -> CMMagnetometerData? {
        if case .magnetometer(let m) = s { return Wire.magnetometerData(m) }
        return nil
    }

    // MARK: device motion

    open var deviceMotionUpdateInterval: TimeInterval {
        get { motion.interval }
        set { motion.interval = newValue }
    }

    /// The frames ``startDeviceMotionUpdates(using:)`` can be given: the
    /// arbitrary frame with an IMU; the corrected and magnetic-north frames
    /// with a magnetometer; true north when the agent runs in it or its
    /// configuration knows the declination.
    open class func availableAttitudeReferenceFrames() -> CMAttitudeReferenceFrame {
        MotionService.shared.availableFrames()
    }

    /// The frame of the running (or last) device-motion updates
    /// (`xArbitraryZVertical` until started with another).
    open var attitudeReferenceFrame: CMAttitudeReferenceFrame { frameLock.withLock { _frame } }
    open var isDeviceMotionAvailable: Bool { MotionService.shared.isAvailable(.deviceMotion) }
    open var isDeviceMotionActive: Bool { motion.isActive }
    open var deviceMotion: CMDeviceMotion? { motion.data }

    open func startDeviceMotionUpdates() { startDeviceMotion(frame: attitudeReferenceFrame, queue: nil, handler: nil) }

    open func startDeviceMotionUpdates(to queue: OperationQueue, withHandler handler: @escaping CMDeviceMotionHandler) {
        startDeviceMotion(frame: attitudeReferenceFrame, queue: queue, handler: handler)
    }

    open func startDeviceMotionUpdates(using referenceFrame: CMAttitudeReferenceFrame) {
        startDeviceMotion(frame: referenceFrame, queue: nil, handler: nil)
    }

    open func startDeviceMotionUpdates(using referenceFrame: CMAttitudeReferenceFrame, to queue: OperationQueue,
                                       withHandler handler: @escaping CMDeviceMotionHandler) {
        startDeviceMotion(frame: referenceFrame, queue: queue, handler: handler)
    }

    open func stopDeviceMotionUpdates() { motion.stop() }

    /// Whether Core Motion shows a device-movement (calibration) display
    /// when the device requires movement (default false). As Apple's, the
    /// handler of device motion in a north frame gets
    /// `CMErrorDeviceRequiresMovement` once per start while the
    /// magnetometer is not calibrated (the agent's field accuracy is
    /// `uncalibrated`) or gives no field yet, whatever this says, and the
    /// updates go on. A board has no display: when this is true the prompt
    /// is one line on standard error, once per start, saying what to do
    /// (turn the board through a few orientations, or `edge-agent calibrate mag`).
    open var showsDeviceMovementDisplay: Bool {
        get { frameLock.withLock { _showsDeviceMovementDisplay } }
        set { frameLock.withLock { _showsDeviceMovementDisplay = newValue } }
    }

    private func startDeviceMotion(frame: CMAttitudeReferenceFrame, queue: OperationQueue?,
                                   handler: CMDeviceMotionHandler?) {
        frameLock.withLock { _frame = frame }
        guard let requested = Wire.frame(frame) else {
            motion.stop()
            if let queue, let handler {
                deliver(queue, handler, nil, .coreMotion(CMErrorInvalidParameter, "startDeviceMotionUpdates(using:) takes one reference frame, got the set \(frame.rawValue)"))
            }
            return
        }
        let converter = MotionConversion(FrameConverter(requested: requested, declinationDeg: { MotionService.shared.declinationDeg }),
                                         stream: .deviceMotion, location: .default)
        let movement = MovementNotice(frame: requested, showsDisplay: showsDeviceMovementDisplay)
        var precheck: (@Sendable () -> NSError?)? = nil
        if requested != .xArbitraryZVertical {
            precheck = {
                let e = CMMotionManager.frameError(requested, available: MotionService.shared.availableFrames(waitMs: 5000))
                guard let e, e.code == Int(CMErrorDeviceRequiresMovement.rawValue) else { return e }
                return movement.tell(e)
            }
        }
        motion.start(queue: queue, handler: handler, precheck: precheck,
                     notice: requested.hasNorth ? movement.check : nil, convert: converter.convert)
    }

    /// Why `requested` cannot be served now (nil: it can), as Apple's
    /// errors: true north without a declination `CMErrorTrueNorthNotAvailable`;
    /// a north with a magnetometer but no current field yet
    /// `CMErrorDeviceRequiresMovement` (Apple's "calibration needed": not
    /// final, the updates go on); no
    /// magnetometer `CMErrorNotAvailable`.
    static func frameError(_ requested: ReferenceFrame, available: CMAttitudeReferenceFrame) -> NSError? {
        guard !available.contains(Wire.frame(requested)) else { return nil }
        if !available.contains(.xArbitraryCorrectedZVertical) {
            return .coreMotion(CMErrorNotAvailable, "\(requested.rawValue) needs a magnetometer, and this board has none (or no agent answers)")
        }
        if requested == .xTrueNorthZVertical, available.contains(.xMagneticNorthZVertical) {
            return .coreMotion(CMErrorTrueNorthNotAvailable, "true north needs the magnetic declination: set fusion.declination_deg (degrees east) in the agent's configuration")
        }
        if requested == .xTrueNorthZVertical, MotionService.shared.declinationDeg == nil {
            return .coreMotion(CMErrorTrueNorthNotAvailable, "true north needs the magnetic declination: set fusion.declination_deg (degrees east) in the agent's configuration")
        }
        return .coreMotion(CMErrorDeviceRequiresMovement, "\(requested.rawValue) needs a current magnetometer field, and the agent has none now (a magnetometer that is missing, stalled or not yet read: see `edge-agent watch`); the updates go on and deliver once it has one")
    }
}

/// Apple's "device requires movement", once per start of device motion in
/// a north frame (CMMotionManager.showsDeviceMovementDisplay: "When a
/// device requires movement, the block handler ... reports the
/// CMErrorDeviceRequiresMovement error once"): when the agent's field is
/// live but `uncalibrated`, or (at the start) it has none yet. With
/// `showsDisplay`, the prompt a display would show goes to standard error.
final class MovementNotice: @unchecked Sendable {
    let frame: ReferenceFrame
    let showsDisplay: Bool
    private let lock = NSLock()
    private var told = false

    init(frame: ReferenceFrame, showsDisplay: Bool) { self.frame = frame; self.showsDisplay = showsDisplay }

    /// The error for a sample that says the magnetometer needs calibrating
    /// (the first time only).
    func check(_ s: Sample) -> NSError? {
        guard frame.hasNorth, case .deviceMotion(let m) = s, m.northYawState == .live,
              m.magneticFieldAccuracy == .uncalibrated else { return nil }
        return tell(.coreMotion(CMErrorDeviceRequiresMovement, "\(frame.rawValue): the magnetometer is not calibrated (field accuracy uncalibrated), so the heading is not to be trusted yet; the updates go on. Turn the board through a few orientations (a figure eight), or calibrate it: `edge-agent calibrate mag`"))
    }

    /// `e` the first time (and the prompt, with `showsDisplay`); nil after.
    func tell(_ e: NSError) -> NSError? {
        let first = lock.withLock { () -> Bool in
            defer { told = true }
            return !told
        }
        guard first else { return nil }
        if showsDisplay {
            FileHandle.standardError.write(Data("CoreMotion: device movement required: \(e.localizedDescription)\n".utf8))
        }
        return e
    }
}

/// Device-motion samples of one stream in one frame.
final class MotionConversion: @unchecked Sendable {
    private let frames: FrameConverter
    private let stream: StreamName
    private let location: CMDeviceMotion.SensorLocation

    init(_ frames: FrameConverter, stream: StreamName, location: CMDeviceMotion.SensorLocation) {
        self.frames = frames; self.stream = stream; self.location = location
    }

    func convert(_ s: Sample) -> CMDeviceMotion? {
        let m: DeviceMotionSample
        switch s {
        case .deviceMotion(let x) where stream == .deviceMotion: m = x
        case .deviceMotionBatch(let x) where stream == .deviceMotionBatch: m = x
        case .accessoryMotion(let x) where stream == .accessoryMotion: m = x
        default: return nil
        }
        guard let (attitude, heading) = frames.convert(m) else { return nil }
        return Wire.deviceMotion(m, attitude: attitude, heading: heading, location: location)
    }
}
