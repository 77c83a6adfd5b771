import Testing
import Foundation
import CoreMotion
import CoreMotionTestSupport
#if canImport(Glibc)
import Glibc
import TestThreads
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
@Suite(.serialized, .ownThread) struct SensorRecorderAppTests {
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
            // 50 Hz, from the samples' own capture times: the typical gap is
            // the asked 20 ms, not half or twice it, and no run of samples is
            // faster than the decimator allows. Not "20 ms within 1 ms": at
            // 50 Hz the IMU is read without its FIFO (one sample per 20 ms
            // delivery) and a sample's capture time is when the loop read it,
            // so an agent that cannot keep up spaces the stamps by its
            // lateness (median 21.0 ms under AddressSanitizer and 24.1 ms
            // under ThreadSanitizer, each with another build or pass beside
            // it). Not the count over the span either: an agent stalled past
            // its FIFO loses samples, a longer gap. Ten gaps span more than
            // 9 × 18.75 − 2.5 ms: DecimationTests'
            // noRunOfAdmittedSamplesIsFasterThanAsked.
            let gaps = zip(before, before.dropFirst()).map { $1.startDate.timeIntervalSince($0.startDate) }.sorted()
            #expect(gaps.count > 50)
            let median = gaps[gaps.count / 2]
            #expect(median > 0.02 - 0.00125 && median < 0.04, "median gap \(median) s")
            let tenGaps = zip(before, before.dropFirst(10)).map { $1.startDate.timeIntervalSince($0.startDate) }.min() ?? 0
            #expect(tenGaps > 0.166, "ten gaps spanned only \(tenGaps) s")
            // timestamp is the same instant as startDate, on this boot's monotonic clock
            let d = try #require(after.last)
            let uptime = ProcessInfo.processInfo.systemUptime
            #expect(abs((uptime - d.timestamp) - Date().timeIntervalSince(d.startDate)) < 0.5)
            // Apple: a range over 12 hours is refused
            #expect(recorder.accelerometerData(from: t0, to: t0.addingTimeInterval(43_201)) == nil)
        }
    }

    /// While the board walks (accelerations up to about 0.4 g away from
    /// gravity), every recorded sample is one the live accelerometer stream
    /// delivered at the same capture time (the independent path: socket,
    /// wire conversion, no disk), with the same acceleration to the stored
    /// resolution (1/2048 g, so within half of that).
    @Test func recordedSamplesAreTheLiveStreamsWhileTheBoardWalks() async throws {
        try await withAgent(.recorder(entitled: true, walking: true)) { _ in
            #expect(await eventually(seconds: 20) { CMSensorRecorder.authorizationStatus() == .authorized })
            let manager = CMMotionManager()
            manager.accelerometerUpdateInterval = 0.005   // every sample of the 200 Hz IMU
            let live = Inbox<CMAccelerometerData>()
            manager.startAccelerometerUpdates(to: appQueue()) { d, e in live.take(d, e) }
            #expect(await eventually(seconds: 20) { live.count >= 20 })
            let recorder = CMSensorRecorder()
            let t0 = Date()
            recorder.recordAccelerometer(forDuration: 60)
            #expect(await eventually(seconds: 60) { (recorder.accelerometerData(from: t0, to: Date()).map { Array($0).count } ?? 0) >= 200 })
            manager.stopAccelerometerUpdates()
            let liveItems = live.items.sorted { $0.timestamp < $1.timestamp }
            let recorded = try #require(recorder.accelerometerData(from: t0, to: Date()).map(Array.init))
            let first = try #require(liveItems.first), last = try #require(liveItems.last)
            let inSpan = recorded.filter { $0.timestamp >= first.timestamp && $0.timestamp <= last.timestamp }
            #expect(inSpan.count >= 150, "\(inSpan.count) recorded while the live stream ran")
            var matched = 0, worst = 0.0
            for r in inSpan {
                // the live sample of the same capture time (samples are 5 ms apart; stored times to 0.1 ms)
                var lo = 0, hi = liveItems.count
                while lo < hi { let mid = (lo + hi) / 2; if liveItems[mid].timestamp < r.timestamp { lo = mid + 1 } else { hi = mid } }
                let near = [lo - 1, lo].filter { $0 >= 0 && $0 < liveItems.count }.min { abs(liveItems[$0].timestamp - r.timestamp) < abs(liveItems[$1].timestamp - r.timestamp) }
                guard let i = near, abs(liveItems[i].timestamp - r.timestamp) < 0.0005 else { continue }
                matched += 1
                let l = liveItems[i].acceleration, a = r.acceleration
                worst = max(worst, abs(l.x - a.x), abs(l.y - a.y), abs(l.z - a.z))
            }
            #expect(matched == inSpan.count, "\(inSpan.count - matched) recorded samples have no live sample at their capture time")
            #expect(worst <= 0.5 / 2048 + 1e-9, "largest difference \(worst) g")
            // the board moved: the recorded z swings by more than 0.2 g
            let zs = inSpan.map(\.acceleration.z)
            let (zMin, zMax) = (try #require(zs.min()), try #require(zs.max()))
            #expect(zMax - zMin > 0.2, "z from \(zMin) to \(zMax) g")
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

    /// What a second user (uid 65534, through setpriv) reads from the
    /// recorder, in one Python process: the samples before it asked for
    /// any, its window, and (once at least 100 are there) its samples.
    static let otherUserScript = """
        import socket, sys, json, time
        s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile('rwb')
        f.readline()
        def ask(req):
            req['id'] = 'x'
            f.write((json.dumps(req) + '\\n').encode()); f.flush()
            while True:
                o = json.loads(f.readline())
                if o.get('id') == 'x': return o
        t0 = int(sys.argv[2])
        before = ask({'class': 'recorded', 'from_ns': t0, 'to_ns': time.time_ns()})
        print('before', len(before['samples']))
        window = ask({'class': 'record', 'duration_s': 600})
        print('window', window['from_ns'])
        end = time.time() + 60
        while time.time() < end:
            r = ask({'class': 'recorded', 'from_ns': t0, 'to_ns': time.time_ns()})
            if len(r['samples']) >= 100: break
            time.sleep(0.2)
        print('after', len(r['samples']), min(x[1] for x in r['samples']) if r['samples'] else -1)
        """

    /// Each user reads only its own windows: a second user gets nothing of
    /// what was recorded for this one, and then only what was recorded
    /// since it asked (the agent tells users apart by their credentials on
    /// one socket).
    @Test(.enabled(if: getuid() == 0, "needs root to run a process as a second uid (CI runs the tests as root)"))
    func aSecondUserReadsOnlyItsOwnWindows() async throws {
        let other: UInt32 = 65534
        try await withAgent(.recorder(entitled: true, otherUID: other)) { agent in
            #expect(await eventually(seconds: 20) { CMSensorRecorder.authorizationStatus() == .authorized })
            let recorder = CMSensorRecorder()
            let t0 = Date()
            recorder.recordAccelerometer(forDuration: 600)
            #expect(await eventually(seconds: 60) { (recorder.accelerometerData(from: t0, to: Date()).map { Array($0).count } ?? 0) >= 100 })

            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments = ["--reuid", "\(other)", "--regid", "\(other)", "--clear-groups", "/usr/bin/python3", "-c", Self.otherUserScript,
                           agent.socketPath, String(Int64(t0.timeIntervalSince1970 * 1e9))]
            let out = Pipe(); p.standardOutput = out; p.standardError = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            let fields = Dictionary(text.split(separator: "\n").map { line in
                let f = line.split(separator: " ")
                return (String(f[0]), f.dropFirst().compactMap { Int64($0) })
            }, uniquingKeysWith: { a, _ in a })
            #expect(p.terminationStatus == 0, "\(text)")
            #expect(fields["before"] == [0], "nothing of this user's recording: \(text)")
            let windowStart = try #require(fields["window"]?.first, "\(text)")
            let after = try #require(fields["after"], "\(text)")
            #expect(after.count == 2 && after[0] >= 100 && after[1] >= windowStart, "only since its own window began: \(text)")
            // this user's recording began before the other's window
            let mine = try #require(recorder.accelerometerData(from: t0, to: Date()).map(Array.init)?.first)
            #expect(Int64(mine.startDate.timeIntervalSince1970 * 1e9) < windowStart)
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
