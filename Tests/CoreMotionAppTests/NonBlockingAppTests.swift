// Calls that must not block (issue 21, item 3 and item 8): Apple's
// availability properties answer from what the device has, and its start
// and stop calls return at once and deliver on the queue given. Apple,
// CMMotionManager (developer.apple.com/documentation/coremotion/cmmotionmanager):
// "Check the availability of motion data ... then start the updates" — the
// handler "is executed on the operation queue you specify"; and
// CMPedometer.startUpdates(from:withHandler:)
// (developer.apple.com/documentation/coremotion/cmpedometer/startupdates(from:withhandler:)):
// "This method runs asynchronously, returning immediately and delivering
// the results to the specified handler block".
//
// Each call is timed three times: the fastest of the three must be under
// 10 ms (a call that waits for the agent, or for a 2 s poll as these did,
// is slow every time; one that does not is fast at least once however
// loaded the machine). No bound on the slowest: on a loaded two-core CI
// machine one call may lose the processor for longer than any bound.
import CoreMotion
import CoreMotionTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

@Suite(.ownThread) struct NonBlockingAppTests {
    /// Milliseconds each of three calls of `call` took.
    static func timings(_ call: () -> Void) -> [Double] {
        (0..<3).map { _ in
            let t = DispatchTime.now().uptimeNanoseconds
            call()
            return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6
        }
    }

    /// Every availability, authorization, start and stop call an app makes.
    static func everyCall() -> [(String, [Double])] {
        let m = CMMotionManager()
        let q = appQueue()
        let altimeter = CMAltimeter()
        let headphones = CMHeadphoneMotionManager()
        let activity = CMMotionActivityManager()
        let pedometer = CMPedometer()
        let batched = CMBatchedSensorManager()
        let submersion = CMWaterSubmersionManager()
        var t: [(String, [Double])] = []
        func time(_ name: String, _ call: () -> Void) { t.append((name, timings(call))) }
        time("isAccelerometerAvailable") { _ = m.isAccelerometerAvailable }
        time("isGyroAvailable") { _ = m.isGyroAvailable }
        time("isMagnetometerAvailable") { _ = m.isMagnetometerAvailable }
        time("isDeviceMotionAvailable") { _ = m.isDeviceMotionAvailable }
        time("availableAttitudeReferenceFrames") { _ = CMMotionManager.availableAttitudeReferenceFrames() }
        time("isRelativeAltitudeAvailable") { _ = CMAltimeter.isRelativeAltitudeAvailable() }
        time("CMAltimeter.authorizationStatus") { _ = CMAltimeter.authorizationStatus() }
        time("headphones.isDeviceMotionAvailable") { _ = headphones.isDeviceMotionAvailable }
        time("isActivityAvailable") { _ = CMMotionActivityManager.isActivityAvailable() }
        time("isStepCountingAvailable") { _ = CMPedometer.isStepCountingAvailable() }
        time("CMPedometer.authorizationStatus") { _ = CMPedometer.authorizationStatus() }
        time("waterSubmersionAvailable") { _ = CMWaterSubmersionManager.waterSubmersionAvailable }
        time("isAccelerometerRecordingAvailable") { _ = CMSensorRecorder.isAccelerometerRecordingAvailable() }
        time("CMSensorRecorder.authorizationStatus") { _ = CMSensorRecorder.authorizationStatus() }
        time("recordAccelerometer(forDuration:)") { CMSensorRecorder().recordAccelerometer(forDuration: 1) }
        time("isAccelerometerSupported") { _ = CMBatchedSensorManager.isAccelerometerSupported }
        time("waterSubmersion.maximumDepth") { _ = submersion.maximumDepth }
        time("batched.accelerometerDataFrequency") { _ = batched.accelerometerDataFrequency }
        time("batched.deviceMotionDataFrequency") { _ = batched.deviceMotionDataFrequency }
        time("startAccelerometerUpdates") { m.startAccelerometerUpdates(to: q) { _, _ in } }
        time("stopAccelerometerUpdates") { m.stopAccelerometerUpdates() }
        time("startGyroUpdates") { m.startGyroUpdates(to: q) { _, _ in } }
        time("stopGyroUpdates") { m.stopGyroUpdates() }
        time("startMagnetometerUpdates") { m.startMagnetometerUpdates(to: q) { _, _ in } }
        time("stopMagnetometerUpdates") { m.stopMagnetometerUpdates() }
        for frame in [CMAttitudeReferenceFrame.xArbitraryZVertical, .xArbitraryCorrectedZVertical,
                      .xMagneticNorthZVertical, .xTrueNorthZVertical] {
            time("startDeviceMotionUpdates(using: \(frame.rawValue))") { m.startDeviceMotionUpdates(using: frame, to: q) { _, _ in } }
            time("stopDeviceMotionUpdates") { m.stopDeviceMotionUpdates() }
        }
        time("startRelativeAltitudeUpdates") { altimeter.startRelativeAltitudeUpdates(to: q) { _, _ in } }
        time("stopRelativeAltitudeUpdates") { altimeter.stopRelativeAltitudeUpdates() }
        time("headphones.startDeviceMotionUpdates") { headphones.startDeviceMotionUpdates(to: q) { _, _ in } }
        time("headphones.stopDeviceMotionUpdates") { headphones.stopDeviceMotionUpdates() }
        time("headphones.startConnectionStatusUpdates") { headphones.startConnectionStatusUpdates() }
        time("headphones.stopConnectionStatusUpdates") { headphones.stopConnectionStatusUpdates() }
        time("startActivityUpdates") { activity.startActivityUpdates(to: q) { _ in } }
        time("stopActivityUpdates") { activity.stopActivityUpdates() }
        time("pedometer.startUpdates(from: an hour ago)") { pedometer.startUpdates(from: Date(timeIntervalSinceNow: -3600)) { _, _ in } }
        time("pedometer.stopUpdates") { pedometer.stopUpdates() }
        time("batched.startAccelerometerUpdates") { batched.startAccelerometerUpdates { _, _ in } }
        time("batched.stopAccelerometerUpdates") { batched.stopAccelerometerUpdates() }
        return t
    }

    static func check(_ t: [(String, [Double])], _ situation: String) {
        for (name, ms) in t {
            #expect(ms.min()! < 10, "\(situation): \(name) took \(ms) ms")
        }
    }

    /// No agent (nothing at the socket, no in-process agent): nothing
    /// blocks, nothing is available (Apple's Simulator answers false), and
    /// a start reports Apple's error rather than inventing data.
    @Test func withoutAnAgentNothingBlocksAndNothingIsAvailable() async throws {
        try await withNoAgent {
            Self.check(Self.everyCall(), "no agent")
            let m = CMMotionManager()
            #expect(!m.isAccelerometerAvailable && !m.isDeviceMotionAvailable)
            #expect(CMMotionManager.availableAttitudeReferenceFrames().isEmpty)
            #expect(CMAltimeter.authorizationStatus() == .notDetermined)
            #expect(!CMSensorRecorder.isAccelerometerRecordingAvailable() && CMSensorRecorder.authorizationStatus() == .notDetermined)
            #expect(CMSensorRecorder().accelerometerData(from: Date().addingTimeInterval(-60), to: Date()) == nil)
            let inbox = Inbox<CMAccelerometerData>()
            m.startAccelerometerUpdates(to: appQueue()) { d, e in inbox.take(d, e) }
            #expect(await eventually { !inbox.errors.isEmpty })
            m.stopAccelerometerUpdates()
            #expect(inbox.count == 0)
            #expect(inbox.errors.first?.code == Int(CMErrorNotAvailable.rawValue))
        }
    }

    /// An agent that accepts the connection and never answers (stopped,
    /// swapped out, stuck starting): the calls still return at once, with
    /// what is known - nothing is available, no maximum depth.
    /// (The maximum depth and the batch frequencies asked the agent on the
    /// caller's thread and waited out a 3 s connect on every call.)
    /// The process's very first availability question waits for a first
    /// answer, at most `MotionService.firstAnswerWaitMs` (2 s: with a live
    /// agent it is one round trip); when this test runs first in its
    /// process that answer is the hung agent's timeout, so it is waited for
    /// before the calls are timed (the whole suite failed on it when this
    /// test happened to run first).
    @Test func withAHungAgentNothingBlocks() async throws {
        try await withHungAgent {
            _ = CMMotionManager().isAccelerometerAvailable
            #expect(await eventually(seconds: 30) {
                let t0 = Date()
                _ = CMMotionManager().isAccelerometerAvailable
                return Date().timeIntervalSince(t0) < 0.01
            })
            Self.check(Self.everyCall(), "hung agent")
            #expect(!CMMotionManager().isAccelerometerAvailable)
            #expect(CMWaterSubmersionManager().maximumDepth == nil)
        }
    }

    /// With an agent: the same calls return at once, the answers are true,
    /// and the frames a north needs are listed once the agent has a field.
    @Test func withAnAgentNothingBlocksAndTheSensorsAreAvailable() async throws {
        try await withSharedAgent { _ in
            // Device motion running, so the agent has a latest sample to
            // answer a poll with (the polls that used to wait out their 2 s).
            let running = CMMotionManager()
            running.startDeviceMotionUpdates(using: .xArbitraryZVertical)
            defer { running.stopDeviceMotionUpdates() }
            #expect(await eventually(seconds: 20) { running.deviceMotion != nil })
            Self.check(Self.everyCall(), "agent")
            let m = CMMotionManager()
            #expect(await eventually { m.isAccelerometerAvailable && m.isDeviceMotionAvailable && m.isMagnetometerAvailable })
            #expect(await eventually {
                CMMotionManager.availableAttitudeReferenceFrames()
                    == [.xArbitraryZVertical, .xArbitraryCorrectedZVertical, .xMagneticNorthZVertical]
            }, "\(CMMotionManager.availableAttitudeReferenceFrames().rawValue)")
            Self.check(Self.everyCall(), "agent, answers known")
        }
    }
}
