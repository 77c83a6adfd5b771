// App code against the CoreMotion module, the way an iOS app uses it: only
// `import CoreMotion` and its public API (Foundation comes with it). The
// same file is compiled in the Swift 6 language mode (CoreMotionAppTests)
// and the Swift 5 mode (CoreMotionAppTestsSwift5, a symbolic link), so the
// module works for app code written either way.
//
// The agents are real `edge-agent run` processes on a simulated board at
// rest, lying flat, face up (CoreMotionTestSupport). Rates are checked on
// the samples' capture timestamps; waits are bounded polls of a condition.
import CoreMotion
import CoreMotionTestSupport
import Testing
import TestThreads

/// What a handler was given, and where it ran.
final class Inbox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _items: [T] = []
    private var _errors: [NSError] = []
    private var _wrongQueue = 0
    let queue: OperationQueue?

    init(queue: OperationQueue? = nil) { self.queue = queue }

    func take(_ item: T?, _ error: Error?) {
        lock.lock(); defer { lock.unlock() }
        if let queue, OperationQueue.current !== queue { _wrongQueue += 1 }
        if let item { _items.append(item) }
        if let error { _errors.append(error as NSError) }
    }

    var items: [T] { lock.lock(); defer { lock.unlock() }; return _items }
    var errors: [NSError] { lock.lock(); defer { lock.unlock() }; return _errors }
    var count: Int { items.count }
    var ranOnOtherQueues: Int { lock.lock(); defer { lock.unlock() }; return _wrongQueue }
}

/// The queue these tests hand the library: a plain `OperationQueue()` as an
/// app makes one, set to `.userInitiated`. At the default QoS it would share
/// its threads with Swift Testing's tests, some of which compute for tens
/// of seconds under a sanitizer: CI saw such a queue go without a thread
/// for a whole 30 s wait (CoreMotion's BehaviourWhereAppleIsSilent.md,
/// "Threads and queues").
func appQueue() -> OperationQueue {
    let q = OperationQueue()
    q.qualityOfService = .userInitiated
    return q
}

/// ``appQueue()`` running one operation at a time.
func serialQueue(_ name: String) -> OperationQueue {
    let q = appQueue()
    q.name = name
    q.maxConcurrentOperationCount = 1
    return q
}

/// Returns once everything already on the serial `queue` has run.
func drained(_ queue: OperationQueue) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queue.addOperation { c.resume() } }
}

/// Gaps between consecutive timestamps, seconds.
func gaps(_ t: [TimeInterval]) -> [TimeInterval] { zip(t.dropFirst(), t).map { $0 - $1 } }

/// Samples no faster than `interval` by capture time, as an app asking for
/// that interval gets them: in capture order, and the mean gap at least 0.75
/// intervals (a stream the interval did not reach shows the chip's own
/// rate, half the interval or less). A load cannot break this: the
/// decimation (Decimator, applied by the agent and again in the client)
/// moves each due time on by the interval from the earlier of the sample
/// and its due time, so n samples from the first one span at least
/// n·interval·15/16 − interval/16 whenever they were stamped; starting in
/// mid-stream only one sample's lateness (less than a tenth of a second
/// even under a sanitizer) comes off the span.
///
/// Nothing more is checked of the gaps, because on a real agent they
/// measure the machine: a polled chip's sample is stamped when the loop
/// reads it, so a loop thread woken late (the full suite runs many agents on
/// two cores; a sanitizer slows them 5-15x) stamps one sample late and the
/// next tick may find no new one, and the agent's rates follow demand, so a
/// sample may be lost while it re-rates the chip for another client. That
/// data keep coming is what the bounded waits for a count of samples check.
///
/// That the gaps are the interval itself (the mean within 0.9-1.5
/// intervals, a quarter of them within 5 %, every gap of an altitude
/// stream 1 ± 0.1 s) is asserted where the clock is virtual and wakes late
/// like a loaded machine: EdgeEngineTests JitteryWakeRateTests (the
/// engine's capture stamps through the Decimator at the intervals these
/// tests ask for), with SensorHubTests ratesFollowCaptureTimestamps,
/// EdgeServiceTests DecimationTests and EdgeClientTests
/// subscribersInOneProcessShareOneConnectionAndOneWireSubscription (one
/// wire subscription decimated per manager).
func atInterval(_ t: [TimeInterval], _ interval: TimeInterval, minimumGaps: Int = 4) -> Bool {
    let g = gaps(t)
    guard g.count >= minimumGaps, !g.isEmpty else { return false }
    return g.allSatisfy { $0 > 0 } && g.reduce(0, +) / Double(g.count) >= interval * 0.75
}

func degrees(_ r: Double) -> Double { r * 180 / .pi }

/// App code, the same whichever agent serves it (a running one, or the
/// in-process fallback).
enum AtRestApp {
    /// Apple: a device lying face up reads z ≈ −1 g (gravity's direction),
    /// though the chip measures +1 g of specific force (the wire's sign).
    static func accelerometer() async {
        do {
            let manager = CMMotionManager()
            let startedUptime = ProcessInfo.processInfo.systemUptime
            #expect(manager.isAccelerometerAvailable)
            manager.accelerometerUpdateInterval = 0.02
            let queue = serialQueue("accelerometer")
            let inbox = Inbox<CMAccelerometerData>(queue: queue)
            manager.startAccelerometerUpdates(to: queue) { data, error in inbox.take(data, error) }
            #expect(manager.isAccelerometerActive)
            #expect(await eventually { inbox.count >= 26 }, "\(inbox.count) samples, errors \(inbox.errors)")
            manager.stopAccelerometerUpdates()
            #expect(!manager.isAccelerometerActive)
            let samples = inbox.items
            #expect(inbox.errors.isEmpty)
            #expect(inbox.ranOnOtherQueues == 0)
            for s in samples {
                #expect(abs(s.acceleration.z + 1) < 0.02, "\(s)")
                #expect(abs(s.acceleration.x) < 0.02 && abs(s.acceleration.y) < 0.02, "\(s)")
            }
            // The requested interval, on the capture clock.
            #expect(atInterval(samples.map(\.timestamp), 0.02), "\(gaps(samples.map(\.timestamp)))")
            // Seconds of CLOCK_MONOTONIC, as the system uptime: captured after
            // the updates were asked for and not in the future. (Not "within
            // 10 s of now": a loaded machine stretches the delivery, as CI once
            // saw for a submersion measurement's date.)
            let uptime = ProcessInfo.processInfo.systemUptime
            #expect(samples.last.map { $0.timestamp <= uptime } == true, "\(String(describing: samples.last)) vs uptime \(uptime)")
            #expect(samples.first.map { $0.timestamp >= startedUptime - 1 } == true,
                    "\(String(describing: samples.first)) vs uptime \(startedUptime) when the updates were asked for")
        }
    }

    static func deviceMotion() async throws {
        do {
            let manager = CMMotionManager()
            #expect(manager.isDeviceMotionAvailable)
            manager.deviceMotionUpdateInterval = 0.05
            let queue = serialQueue("motion")
            let inbox = Inbox<CMDeviceMotion>(queue: queue)
            manager.startDeviceMotionUpdates(to: queue) { motion, error in inbox.take(motion, error) }
            #expect(manager.attitudeReferenceFrame == .xArbitraryZVertical)
            #expect(await eventually { inbox.count >= 10 }, "\(inbox.count), errors \(inbox.errors)")
            manager.stopDeviceMotionUpdates()
            #expect(inbox.errors.isEmpty)
            for m in inbox.items.dropFirst(5) { // after the filter's first samples
                #expect(abs(m.gravity.z + 1) < 0.01 && abs(m.gravity.x) < 0.01 && abs(m.gravity.y) < 0.01, "\(m)")
                let u = m.userAcceleration
                #expect((u.x * u.x + u.y * u.y + u.z * u.z).squareRoot() < 0.02, "\(m)")
                #expect(abs(degrees(m.attitude.roll)) < 1 && abs(degrees(m.attitude.pitch)) < 1, "\(m.attitude)")
                #expect(abs(m.rotationRate.x) < 0.01 && abs(m.rotationRate.z) < 0.01)
                // The arbitrary frame has no heading.
                #expect(m.heading < 0)
                #expect(m.sensorLocation == .default)
                // One rotation, three forms: the matrix's third column is −gravity.
                let r = m.attitude.rotationMatrix
                #expect(abs(r.m13 + m.gravity.x) < 1e-6 && abs(r.m23 + m.gravity.y) < 1e-6 && abs(r.m33 + m.gravity.z) < 1e-6)
                let q = m.attitude.quaternion
                #expect(abs(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w - 1) < 1e-9)
            }
            // userAcceleration + gravity is what the accelerometer reads.
            #expect(inbox.items.last.map { abs($0.gravity.z + $0.userAcceleration.z + 1) < 0.02 } == true)
        }
    }

}

@Suite(.ownThread) struct MotionManagerAppTests {
    @Test func accelerometerAtRestFaceUpReadsMinusOneGOnTheGivenQueueAtTheInterval() async throws {
        try await withSharedAgent(alone: true) { _ in await AtRestApp.accelerometer() }
    }

    @Test func deviceMotionAtRestFaceUp() async throws {
        try await withSharedAgent { _ in try await AtRestApp.deviceMotion() }
    }

    @Test func magneticNorthFrameHasAHeadingAndACopyableAttitude() async throws {
        try await withSharedAgent { _ in
            // Magnetic north is offered while a current field backs it
            // (MotionService.availableFrames): not before the shared agent
            // has fused one, nor while a loaded machine holds its
            // magnetometer past the stall limit (seen once, beside a
            // sanitizer pass: the first answer had only the other two). So
            // wait for it, as NonBlockingAppTests does.
            #expect(await eventually {
                CMMotionManager.availableAttitudeReferenceFrames().contains(.xMagneticNorthZVertical)
            }, "\(CMMotionManager.availableAttitudeReferenceFrames().rawValue)")
            let frames = CMMotionManager.availableAttitudeReferenceFrames()
            #expect(frames.contains(.xArbitraryZVertical))
            #expect(frames.contains(.xArbitraryCorrectedZVertical))
            #expect(!frames.contains(.xTrueNorthZVertical)) // no declination configured
            let manager = CMMotionManager()
            manager.deviceMotionUpdateInterval = 0.05
            let inbox = Inbox<CMDeviceMotion>()
            manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical, to: appQueue()) { m, e in inbox.take(m, e) }
            #expect(manager.attitudeReferenceFrame == .xMagneticNorthZVertical)
            #expect(await eventually { inbox.count >= 5 })
            manager.stopDeviceMotionUpdates()
            let last = try #require(inbox.items.last)
            // X points north at rest: the top edge (+Y) faces west.
            #expect(last.heading >= 0 && last.heading < 360)
            #expect(abs(last.heading - 270) < 5, "heading \(last.heading)")
            #expect(abs(degrees(last.attitude.yaw)) < 5)
            // Relative to a copy of itself the attitude is the identity.
            let reference = try #require(last.attitude.copy() as? CMAttitude)
            let attitude = try #require(last.attitude.copy() as? CMAttitude)
            attitude.multiply(byInverseOf: reference)
            #expect(abs(attitude.roll) < 1e-9 && abs(attitude.pitch) < 1e-9 && abs(attitude.yaw) < 1e-9)
            #expect(abs(last.attitude.yaw - reference.yaw) < 1e-12) // the copy left the original alone
        }
    }

    /// The magnetic field's accuracy follows the agent's calibration: an
    /// app waiting for `.medium` or better starts once `calibrate mag` has
    /// written a good fit and the agent loaded it; without one it is
    /// `.uncalibrated` (Apple's raw value −1), and the device requires
    /// movement: Apple, CMMotionManager.showsDeviceMovementDisplay
    /// (developer.apple.com/documentation/coremotion/cmmotionmanager/showsdevicemovementdisplay):
    /// "When a device requires movement, the block handler of type
    /// CMDeviceMotionHandler reports the CMErrorDeviceRequiresMovement
    /// error once" - once, whatever the property says, and the samples go on.
    @Test func fieldAccuracyFollowsTheCalibration() async throws {
        func accuracies(display: Bool) async -> ([CMMagneticFieldCalibrationAccuracy], [NSError]) {
            let manager = CMMotionManager()
            manager.deviceMotionUpdateInterval = 0.05
            manager.showsDeviceMovementDisplay = display
            let inbox = Inbox<CMDeviceMotion>()
            manager.startDeviceMotionUpdates(using: .xMagneticNorthZVertical, to: appQueue()) { m, e in inbox.take(m, e) }
            _ = await eventually { inbox.count >= 10 }
            manager.stopDeviceMotionUpdates()
            return (inbox.items.suffix(5).map(\.magneticField.accuracy), inbox.errors)
        }
        try await withAgent(.restFlat) { _ in
            for display in [false, true] {
                let (a, errors) = await accuracies(display: display)
                #expect(!a.isEmpty && a.allSatisfy { $0 == .uncalibrated }, "\(a)")
                #expect(errors.map(\.code) == [Int(CMErrorDeviceRequiresMovement.rawValue)], "display \(display): \(errors)")
            }
            #expect(CMMagneticFieldCalibrationAccuracy.uncalibrated.rawValue == -1)
        }
        try await withAgent(.calibratedMagnetometer) { _ in
            let (a, errors) = await accuracies(display: false)
            #expect(errors.isEmpty, "\(errors)")
            // Still since start (no reference field from turning yet): medium.
            #expect(!a.isEmpty && a.allSatisfy { $0.rawValue >= CMMagneticFieldCalibrationAccuracy.medium.rawValue }, "\(a)")
        }
    }

    @Test func trueNorthWithoutADeclinationIsAnErrorNotAHang() async throws {
        try await withSharedAgent { _ in
            let manager = CMMotionManager()
            let inbox = Inbox<CMDeviceMotion>()
            manager.startDeviceMotionUpdates(using: .xTrueNorthZVertical, to: appQueue()) { m, e in inbox.take(m, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            let e = try #require(inbox.errors.first)
            #expect(e.domain == CMErrorDomain)
            #expect(e.code == Int(CMErrorTrueNorthNotAvailable.rawValue))
            #expect(inbox.count == 0)
            manager.stopDeviceMotionUpdates()
        }
    }

    /// A game loop: start without a handler, read the property each frame.
    @Test func pullUpdatesForAGameLoop() async throws {
        try await withSharedAgent { _ in
            let manager = CMMotionManager()
            manager.gyroUpdateInterval = 0.01
            #expect(manager.gyroData == nil)
            manager.startGyroUpdates()
            manager.startDeviceMotionUpdates()
            #expect(await eventually { manager.gyroData != nil && manager.deviceMotion != nil })
            let first = try #require(manager.gyroData)
            #expect(await eventually { (manager.gyroData?.timestamp ?? 0) > first.timestamp })
            let r = try #require(manager.gyroData).rotationRate
            #expect(abs(r.x) < 0.01 && abs(r.y) < 0.01 && abs(r.z) < 0.01)
            #expect(abs(try #require(manager.deviceMotion).gravity.z + 1) < 0.01)
            manager.stopGyroUpdates()
            manager.stopDeviceMotionUpdates()
            #expect(!manager.isGyroActive && !manager.isDeviceMotionActive)
        }
    }

    @Test func magnetometerReadsTheEarthsFieldInMicrotesla() async throws {
        try await withSharedAgent { _ in
            let manager = CMMotionManager()
            #expect(manager.isMagnetometerAvailable)
            manager.magnetometerUpdateInterval = 0.1
            let inbox = Inbox<CMMagnetometerData>()
            manager.startMagnetometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { inbox.count >= 3 })
            manager.stopMagnetometerUpdates()
            let f = try #require(inbox.items.last).magneticField
            let norm = (f.x * f.x + f.y * f.y + f.z * f.z).squareRoot()
            #expect(abs(norm - 48) < 3, "\(f) |B| = \(norm) µT")
            #expect(f.z < 0) // inclination 60° down, Z up
        }
    }

    /// Several managers in one process each get their own interval.
    @Test func managersInOneProcessKeepTheirOwnRates() async throws {
        try await withSharedAgent(alone: true) { _ in
            let fast = CMMotionManager(), slow = CMMotionManager()
            fast.accelerometerUpdateInterval = 0.01
            slow.accelerometerUpdateInterval = 0.05
            let a = Inbox<CMAccelerometerData>(), b = Inbox<CMAccelerometerData>()
            fast.startAccelerometerUpdates(to: serialQueue("fast")) { d, e in a.take(d, e) }
            slow.startAccelerometerUpdates(to: serialQueue("slow")) { d, e in b.take(d, e) }
            #expect(await eventually { b.count >= 11 })
            fast.stopAccelerometerUpdates(); slow.stopAccelerometerUpdates()
            #expect(atInterval(a.items.map(\.timestamp), 0.01), "\(gaps(a.items.map(\.timestamp)))")
            #expect(atInterval(b.items.map(\.timestamp), 0.05), "\(gaps(b.items.map(\.timestamp)))")
        }
    }

    /// After stop, the handler gets nothing more (checked against another
    /// manager that keeps receiving: no wall-clock wait).
    @Test func stopEndsTheUpdates() async throws {
        try await withSharedAgent { _ in
            let stopped = CMMotionManager(), running = CMMotionManager()
            let queue = serialQueue("stopped")
            let a = Inbox<CMAccelerometerData>(), b = Inbox<CMAccelerometerData>()
            stopped.startAccelerometerUpdates(to: queue) { d, e in a.take(d, e) }
            #expect(await eventually { a.count >= 3 })
            stopped.stopAccelerometerUpdates()
            await drained(queue)
            let atStop = a.count
            running.startAccelerometerUpdates(to: appQueue()) { d, e in b.take(d, e) }
            #expect(await eventually { b.count >= 20 })
            running.stopAccelerometerUpdates()
            await drained(queue)
            #expect(a.count == atStop)
        }
    }

    /// Changing the interval of running updates applies to the next samples.
    @Test func changingTheIntervalWhileRunning() async throws {
        try await withSharedAgent(alone: true) { _ in
            let manager = CMMotionManager()
            manager.gyroUpdateInterval = 0.01
            let inbox = Inbox<CMGyroData>()
            manager.startGyroUpdates(to: serialQueue("gyro")) { d, e in inbox.take(d, e) }
            #expect(await eventually { inbox.count >= 5 })
            manager.gyroUpdateInterval = 0.1
            // Samples admitted before the change may still be on their way at
            // 10 ms (the pacing holds up to 100 ms of them, the queue what it
            // has not run yet; under load that was more than 8): wait for six
            // in a row at the new interval, which only the change can give.
            func late() -> [TimeInterval] { Array(inbox.items.map(\.timestamp).suffix(6)) }
            #expect(await eventually { atInterval(late(), 0.1) }, "\(gaps(late()))")
            manager.stopGyroUpdates()
        }
    }
}

@Suite(.ownThread) struct AltimeterAppTests {
    @Test func relativeAltitudeStartsAtZeroWithPressureInKilopascals() async throws {
        try await withSharedAgent { _ in
            #expect(CMAltimeter.isRelativeAltitudeAvailable())
            #expect(CMAltimeter.isAbsoluteAltitudeAvailable())
            #expect(CMAltimeter.authorizationStatus() == .authorized)
            let altimeter = CMAltimeter()
            let queue = serialQueue("altitude")
            let relative = Inbox<CMAltitudeData>(queue: queue)
            let absolute = Inbox<CMAbsoluteAltitudeData>(queue: queue)
            altimeter.startRelativeAltitudeUpdates(to: queue) { d, e in relative.take(d, e) }
            altimeter.startAbsoluteAltitudeUpdates(to: queue) { d, e in absolute.take(d, e) }
            #expect(await eventually(seconds: 15) { relative.count >= 2 && absolute.count >= 1 })
            altimeter.stopRelativeAltitudeUpdates()
            altimeter.stopAbsoluteAltitudeUpdates()
            #expect(relative.errors.isEmpty && absolute.errors.isEmpty)
            #expect(relative.ranOnOtherQueues == 0)
            let first = try #require(relative.items.first)
            #expect(first.relativeAltitude.doubleValue == 0)
            for d in relative.items {
                #expect(abs(d.relativeAltitude.doubleValue) < 0.5)
                #expect(abs(d.pressure.doubleValue - 101.325) < 0.1, "\(d.pressure) kPa")
            }
            // Once a second (CMAltimeter's interval), no faster; see atInterval.
            let stamps = relative.items.map(\.timestamp)
            #expect(atInterval(stamps, 1, minimumGaps: 1), "\(gaps(stamps))")
            let a = try #require(absolute.items.first)
            #expect(abs(a.altitude) < 3 * max(a.accuracy, 1), "\(a)")
            #expect(a.accuracy > 0 && a.precision > 0)
        }
    }
}

@Suite(.ownThread) struct BatchedSensorAppTests {
    @Test func accelerometerBatchesAtTheReportedFrequency() async throws {
        try await withSharedAgent(alone: true) { agent in
            #expect(CMBatchedSensorManager.isAccelerometerSupported)
            #expect(CMBatchedSensorManager.authorizationStatus == .authorized)
            let manager = CMBatchedSensorManager()
            var batches: [[CMAccelerometerData]] = []
            for try await batch in manager.accelerometerUpdates() {
                batches.append(batch)
                if batches.count == 2 { break }
            }
            #expect(batches.count == 2)
            let frequency = manager.accelerometerDataFrequency
            #expect(frequency == 200, "\(frequency) Hz") // the configured IMU rate
            for batch in batches {
                // One second of samples at the reported frequency.
                #expect(abs(batch.count - frequency) <= 2, "\(batch.count) samples")
                let g = gaps(batch.map(\.timestamp))
                let period = 1 / Double(frequency)
                #expect(abs(g.reduce(0, +) / Double(g.count) - period) < period / 100)
                // In capture order; the agent stamps FIFO samples within a
                // few ms of their true time.
                #expect(g.allSatisfy { $0 > 0 && $0 < 2 * period }, "gaps \(g.min()!)...\(g.max()!)")
                #expect(batch.allSatisfy { abs($0.acceleration.z + 1) < 0.02 })
            }
            // The updates ended: the agent idles the IMU (its devices report
            // says 0 Hz), and the batches' frequency is still the one they
            // came at - not 0 (a loaded CI run read 0 here when the library
            // asked the agent after the IMU had gone idle).
            #expect(await eventually(seconds: 20) { agent.imuRateHz() == 0 }, "the IMU idles once no one wants it")
            let end = Date().addingTimeInterval(2.5)   // past the library's 1 s cache of the devices report
            var seen: Set<Int> = []
            while Date() < end {
                seen.insert(manager.accelerometerDataFrequency)
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(seen == [200], "\(seen)")
        }
    }

    @Test func deviceMotionBatchesToAHandler() async throws {
        // Alone: the reported frequency is the IMU's rate now, which other
        // tests' demand could change once these updates stop.
        try await withSharedAgent(alone: true) { _ in
            #expect(CMBatchedSensorManager.isDeviceMotionSupported)
            let manager = CMBatchedSensorManager()
            let inbox = Inbox<[CMDeviceMotion]>()
            manager.startDeviceMotionUpdates { batch, error in inbox.take(batch, error) }
            #expect(manager.isDeviceMotionActive)
            #expect(await eventually { inbox.count >= 1 })
            let frequency = manager.deviceMotionDataFrequency
            manager.stopDeviceMotionUpdates()
            #expect(!manager.isDeviceMotionActive)
            let batch = try #require(inbox.items.first)
            #expect(abs(batch.count - frequency) <= 2, "\(batch.count) samples at \(frequency) Hz")
            #expect(batch.allSatisfy { abs($0.gravity.z + 1) < 0.01 })
            // The pulled batch is the newest one, which the handler gets too
            // (its call may still be on the manager's queue after stop).
            let pulled = try #require(manager.deviceMotionBatch)
            #expect(await eventually { inbox.items.contains { $0.first?.timestamp == pulled.first?.timestamp && $0.count == pulled.count } })
        }
    }
}

@Suite(.ownThread) struct HeadphoneAppTests {
    final class Delegate: NSObject, CMHeadphoneMotionManagerDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var _events: [String] = []
        var events: [String] { lock.lock(); defer { lock.unlock() }; return _events }
        func headphoneMotionManagerDidConnect(_ manager: CMHeadphoneMotionManager) {
            lock.lock(); _events.append(OperationQueue.current === OperationQueue.main ? "connect" : "connect off main"); lock.unlock()
        }
        func headphoneMotionManagerDidDisconnect(_ manager: CMHeadphoneMotionManager) {
            lock.lock(); _events.append(OperationQueue.current === OperationQueue.main ? "disconnect" : "disconnect off main"); lock.unlock()
        }
    }

    @Test func accessoryMotionAtRest() async throws {
        try await withSharedAgent { _ in
            let manager = CMHeadphoneMotionManager()
            #expect(manager.isDeviceMotionAvailable)
            #expect(CMHeadphoneMotionManager.authorizationStatus() == .authorized)
            let inbox = Inbox<CMDeviceMotion>()
            manager.startDeviceMotionUpdates(to: appQueue()) { m, e in inbox.take(m, e) }
            #expect(await eventually { inbox.count >= 5 }, "errors \(inbox.errors)")
            manager.stopDeviceMotionUpdates()
            #expect(inbox.items.allSatisfy { abs($0.gravity.z + 1) < 0.02 })
        }
    }

    /// The scenario unplugs the accessory IMU from 4 s to 6 s: the delegate
    /// hears it leave and come back (on the main queue).
    @Test func connectAndDisconnectFollowTheAccessory() async throws {
        try await withAgent(.accessoryUnplugged(from: 4, to: 6)) { _ in
            let manager = CMHeadphoneMotionManager()
            let delegate = Delegate()
            manager.delegate = delegate
            manager.startConnectionStatusUpdates()
            #expect(manager.isConnectionStatusActive)
            #expect(await eventually(seconds: 20) { delegate.events.count >= 3 }, "\(delegate.events)")
            manager.stopConnectionStatusUpdates()
            #expect(Array(delegate.events.prefix(3)) == ["connect", "disconnect", "connect"])
        }
    }
}

/// No entitlement: `.denied` and a CMErrorNotEntitled error in the handler,
/// never a wait. No magnetometer: not available, and an error when started.
@Suite(.ownThread) struct PermissionsAppTests {
    @Test func missingEntitlementIsDeniedWithAnError() async throws {
        try await withAgent(.restricted) { _ in
            #expect(CMHeadphoneMotionManager.authorizationStatus() == .denied)
            #expect(CMBatchedSensorManager.authorizationStatus == .denied)
            #expect(CMAltimeter.authorizationStatus() == .authorized)
            let manager = CMMotionManager()
            #expect(manager.isAccelerometerAvailable)
            let inbox = Inbox<CMAccelerometerData>()
            manager.startAccelerometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            let e = try #require(inbox.errors.first)
            #expect(e.domain == CMErrorDomain)
            #expect(e.code == Int(CMErrorNotEntitled.rawValue))
            #expect(CMError(rawValue: UInt32(e.code)) == CMErrorNotEntitled)
            #expect(e.localizedDescription.contains("\"motion\" entitlement"), "\(e.localizedDescription)")
            manager.stopAccelerometerUpdates()
            #expect(inbox.count == 0)
            // Batched updates throw it.
            await #expect(throws: NSError.self) {
                for try await _ in CMBatchedSensorManager().accelerometerUpdates() {}
            }
        }
    }

    @Test func unavailableSensorsSaySoAndErrWhenStarted() async throws {
        try await withAgent(.restricted) { _ in
            let manager = CMMotionManager()
            #expect(!manager.isMagnetometerAvailable)
            #expect(manager.isAccelerometerAvailable)
            #expect(CMMotionManager.availableAttitudeReferenceFrames() == .xArbitraryZVertical)
            let inbox = Inbox<CMMagnetometerData>()
            manager.startMagnetometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            #expect(inbox.errors.first?.code == Int(CMErrorNotAvailable.rawValue))
            manager.stopMagnetometerUpdates()
            let headphones = CMHeadphoneMotionManager()
            #expect(!headphones.isDeviceMotionAvailable)
            // The barometer is there and altitude is granted.
            #expect(CMAltimeter.isRelativeAltitudeAvailable())
        }
    }
}

/// Bad settings of this platform are errors in the handler, never a hang:
/// a configuration that does not load, and one whose in-process agent
/// cannot start (its board profile is missing).
@Suite(.ownThread) struct DataSourceErrorAppTests {
    @Test func aMalformedConfigurationIsAnErrorNotAHang() async throws {
        let files = try ScratchFiles(["edge-agent.json5": "{ service: { socket_path: 42 } }"])
        defer { files.remove() }
        try await withDataSourceToItself {
            EdgeMotionAgent.configurationPath = files.path("edge-agent.json5")
            #expect(EdgeMotionAgent.dataSource.contains("EdgeMotionAgent.configurationPath"), "\(EdgeMotionAgent.dataSource)")
            let manager = CMMotionManager()
            #expect(!manager.isAccelerometerAvailable)
            #expect(CMAltimeter.authorizationStatus() == .notDetermined)
            let inbox = Inbox<CMAccelerometerData>()
            manager.startAccelerometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            manager.stopAccelerometerUpdates()
            let e = try #require(inbox.errors.first)
            #expect(e.domain == CMErrorDomain && e.code == Int(CMErrorNotAvailable.rawValue))
            #expect(e.localizedDescription.contains("socket_path"), "names the bad key: \(e.localizedDescription)")
            #expect(inbox.count == 0)
        }
    }

    @Test func anInProcessAgentThatCannotStartIsAnError() async throws {
        let files = try ScratchFiles(["edge-agent.json5": #"{ board: "no-such-board.json5", service: { socket_path: "agent.sock" } }"#])
        defer { files.remove() }
        try await withDataSourceToItself {
            EdgeMotionAgent.configurationPath = files.path("edge-agent.json5")
            let altimeter = CMAltimeter()
            let inbox = Inbox<CMAltitudeData>()
            altimeter.startRelativeAltitudeUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            altimeter.stopRelativeAltitudeUpdates()
            let e = try #require(inbox.errors.first)
            #expect(e.code == Int(CMErrorNotAvailable.rawValue))
            // Why: nobody at the socket, and why no agent could start here.
            #expect(e.localizedDescription.contains(files.path("agent.sock")), "\(e.localizedDescription)")
            #expect(e.localizedDescription.contains("No agent could be started in this process"), "\(e.localizedDescription)")
            #expect(e.localizedDescription.contains("no-such-board"), "\(e.localizedDescription)")
        }
    }
}

/// The same app code against a running agent and against the agent the
/// library starts in the process when none answers.
@Suite(.ownThread) struct DataSourceAppTests {
    @Test func atRestAgainstARunningAgent() async throws {
        try await withSharedAgent(alone: true) { agent in
            #expect(EdgeMotionAgent.dataSource.contains("the agent at \(agent.socketPath)"))
            await AtRestApp.accelerometer()
            try await AtRestApp.deviceMotion()
        }
    }

    @Test func atRestAgainstTheInProcessFallback() async throws {
        try await withInProcessFallback {
            await AtRestApp.accelerometer()
            try await AtRestApp.deviceMotion()
            #expect(EdgeMotionAgent.dataSource.contains("in this process"), "\(EdgeMotionAgent.dataSource)")
            #expect(CMAltimeter.authorizationStatus() == .authorized)
        }
    }
}
