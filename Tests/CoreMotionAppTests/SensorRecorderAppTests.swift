import Testing
import Foundation
import CoreMotion
import CoreMotionTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// CMSensorRecorder as an app uses it, against a real `edge-agent run`
/// process. Apple's behaviour, from its documentation:
/// - recordAccelerometer(forDuration:) "begins capturing accelerometer data
///   at a sample rate of 50 Hz ... for the specified amount of time, even if
///   your app is suspended or terminated" (developer.apple.com/documentation/
///   coremotion/cmsensorrecorder/recordaccelerometer(forduration:));
/// - accelerometerData(from:to:) returns the entries between the dates, both
///   included, with gaps where nothing was recorded (…/accelerometerdata(from:to:));
/// - CMRecordedAccelerometerData carries `identifier` and `startDate`, "the
///   wall clock time when the sensor sample was recorded" (…/cmrecordedaccelerometerdata).
@Suite(.serialized) struct SensorRecorderAppTests {
    /// Records, survives an agent restart (the window goes on recording
    /// with no new request), and returns samples that are the board's truth:
    /// at rest, face up, ideal chips: (0, 0, −1) g.
    @Test func recordsAt50HzAcrossAnAgentRestartWithTheBoardsTruth() async throws {
        try await withAgent(.recorder(entitled: true)) { agent in
            #expect(await eventually(seconds: 20) { CMSensorRecorder.authorizationStatus() == .authorized })
            #expect(await eventually(seconds: 20) { CMSensorRecorder.isAccelerometerRecordingAvailable() })
            let recorder = CMSensorRecorder()
            let t0 = Date()
            recorder.recordAccelerometer(forDuration: 600)

            func samples(to end: Date = Date()) -> [CMRecordedAccelerometerData] {
                guard let list = recorder.accelerometerData(from: t0, to: end) else { return [] }
                return Array(list)
            }
            // at least 4 s recorded (the IMU wakes for the recording alone: nobody subscribes)
            #expect(await eventually(seconds: 60) { samples().count >= 200 })
            let before = samples()
            #expect(before.count >= 200)

            // a clean stop and a new start of the agent on the same files
            agent.terminate(with: SIGTERM)
            let restart = Date()
            try agent.relaunch()
            #expect(await eventually(seconds: 60) { (samples().last?.startDate ?? .distantPast) > restart.addingTimeInterval(2) },
                    "the window in the file goes on recording after the restart, with no new request")
            let after = samples()

            // what was recorded before the restart is all there, unchanged
            let byID = Dictionary(after.map { ($0.identifier, $0) }, uniquingKeysWith: { a, _ in a })
            for d in before {
                let e = try #require(byID[d.identifier], "sample \(d.identifier) lost across the restart")
                #expect(e.startDate == d.startDate && e.acceleration.z == d.acceleration.z)
            }
            // in time order, unique identifiers, inside the asked range
            #expect(zip(after, after.dropFirst()).allSatisfy { $0.identifier < $1.identifier && $0.startDate < $1.startDate })
            #expect(after.allSatisfy { $0.startDate >= t0 })
            // the board's truth at rest, face up: (0, 0, −1) g, in Apple's units and signs
            for d in after {
                #expect(abs(d.acceleration.x) < 0.02 && abs(d.acceleration.y) < 0.02 && abs(d.acceleration.z + 1) < 0.02,
                        "\(d)")
            }
            // 50 Hz: the samples of the first run span their count / 50 s (within 5 %)
            let first = try #require(before.first), last = try #require(before.last)
            let span = last.startDate.timeIntervalSince(first.startDate)
            let rate = Double(before.count - 1) / span
            #expect(abs(rate - 50) < 2.5, "\(rate) Hz over \(span) s")
            // timestamp is the same instant as startDate, on this boot's monotonic clock
            let d = try #require(after.last)
            let uptime = ProcessInfo.processInfo.systemUptime
            #expect(abs((uptime - d.timestamp) - Date().timeIntervalSince(d.startDate)) < 0.5)
            // Apple: a range over 12 hours is refused
            #expect(recorder.accelerometerData(from: t0, to: t0.addingTimeInterval(43_201)) == nil)
        }
    }

    /// The recorder wakes the IMU only while a window is open: idle before,
    /// running during a 3 s recording, idle again after it (no client
    /// subscribes to anything meanwhile).
    @Test func theIMURunsOnlyWhileAWindowIsOpen() async throws {
        try await withAgent(.recorder(entitled: true)) { agent in
            #expect(await eventually(seconds: 20) { agent.imuRateHz() == 0 }, "idle with no window: \(String(describing: agent.imuRateHz()))")
            #expect(await eventually(seconds: 20) { CMSensorRecorder.authorizationStatus() == .authorized })
            CMSensorRecorder().recordAccelerometer(forDuration: 3)
            #expect(await eventually(seconds: 20) { (agent.imuRateHz() ?? 0) >= 50 }, "running for the window")
            #expect(await eventually(seconds: 30) { agent.imuRateHz() == 0 }, "idle again after the window")
        }
    }

    /// A user without the `recorder` entitlement is denied, with the
    /// agent's typed error on the wire; a malformed request gets a typed
    /// error; the agent keeps serving.
    @Test func anUnentitledUserIsDeniedAndBadRequestsGetTypedErrors() async throws {
        try await withAgent(.recorder(entitled: false)) { agent in
            #expect(await eventually(seconds: 20) { CMSensorRecorder.authorizationStatus() == .denied })
            let recorder = CMSensorRecorder()
            recorder.recordAccelerometer(forDuration: 60)
            #expect(recorder.accelerometerData(from: Date().addingTimeInterval(-60), to: Date()) == nil)

            let denied = try #require(agent.reply(to: #"{"class":"record","duration_s":60,"id":"r"}"#, id: "r"))
            #expect(denied.contains(#""code":"notEntitled""#) && denied.contains("recorder entitlement"), "\(denied)")
            let read = try #require(agent.reply(to: #"{"class":"recorded","from_s":0,"to_s":1,"id":"q"}"#, id: "q"))
            #expect(read.contains(#""code":"notEntitled""#), "\(read)")
            for bad in [#"{"class":"record","duration_s":-5,"id":"b"}"#, #"{"class":"record","duration_s":43201,"id":"b"}"#,
                        #"{"class":"record","id":"b"}"#, #"{"class":"recorded","from_s":5,"to_s":1,"id":"b"}"#] {
                let r = try #require(agent.reply(to: bad, id: "b"), "\(bad)")
                #expect(r.contains(#""code":"malformedRequest""#), "\(bad) → \(r)")
            }
            #expect(agent.isRunning)
            #expect(agent.reply(to: #"{"class":"ping","id":"p"}"#, id: "p")?.contains("pong") == true)
        }
    }

    /// An agent with no `recorder` section: recording is not available
    /// (while the accelerometer is), and a query answers nil.
    @Test func anAgentWithoutARecorderOffersNoRecording() async throws {
        try await withSharedAgent { _ in
            #expect(await eventually(seconds: 20) { CMMotionManager().isAccelerometerAvailable })
            #expect(!CMSensorRecorder.isAccelerometerRecordingAvailable())
            #expect(CMSensorRecorder().accelerometerData(from: Date().addingTimeInterval(-10), to: Date()) == nil)
        }
    }
}
