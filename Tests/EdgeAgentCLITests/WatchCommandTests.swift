#if canImport(Glibc)
import Glibc
#endif
import Testing
import Dispatch
import Synchronization
import EdgeValues
import EdgeProtocol
import EdgeService
@testable import EdgeAgentCLI
import TestThreads

// `edge-agent watch` against a real ServiceServer on a temporary socket: the
// command runs on its own thread, the test publishes samples once the
// watcher's subscriptions have reached the server. Every wait is bounded;
// nothing sleeps for a fixed time or checks speed.

/// A unique short socket path (sun_path holds 107 bytes).
func watchSocketPath(_ tag: String) -> String {
    "/tmp/edge-watch-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
}

/// Waits until `condition` holds, checking every millisecond, for at most
/// `seconds`. Returns whether it held.
func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    while !condition() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9 > seconds { return false }
        var nap = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        nanosleep(&nap, nil)
    }
    return true
}

/// `edge-agent …` running on its own thread with a capturing console.
final class CommandRun: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let box = Locked<(out: String, err: String, status: Int32?)>(("", "", nil))

    /// Runs `EdgeAgentCLI.run(argv)`.
    convenience init(_ argv: [String]) {
        self.init { console in EdgeAgentCLI.run(argv, console: console) }
    }

    init(terminal: Bool = false, _ body: @escaping @Sendable (Console) -> Int32) {
        let console = Console(out: { [self] s in box.withLock { $0.out += s } },
                              err: { [self] s in box.withLock { $0.err += s } },
                              isTerminal: terminal)
        let thread = WatchTestThread { [self] in
            let status = body(console)
            box.withLock { $0.status = status }
            done.signal()
        }
        thread.start()
    }

    /// The exit status, or nil if the command did not finish in `seconds`.
    func wait(seconds: Double = 20) -> Int32? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return box.withLock { $0.status }
    }

    var out: String { box.withLock { $0.out } }
    var err: String { box.withLock { $0.err } }
    var outLines: [String] { out.split(separator: "\n").map(String.init) }
}

/// A detached pthread: keeps the blocking command off Swift's cooperative
/// pool (two cores; the tests themselves run there).
final class WatchTestThread: @unchecked Sendable {
    private let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    func start() {
        var tid = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&tid, nil, { arg in
            let t = Unmanaged<WatchTestThread>.fromOpaque(arg!).takeRetainedValue()
            t.body()
            return nil
        }, box)
        pthread_detach(tid)
    }
}

/// Server-side fixtures.
enum WatchFixture {
    static let base: UInt64 = 5_000_000_000
    static let halfSecond: UInt64 = 500_000_000

    static let imu = DeviceInfo(id: "mpu6050@0x68", kind: "mpu6050", address: "/dev/i2c-1@0x68", state: .present,
                                streams: [.accelerometer, .gyroscope, .deviceMotion], rateHz: 100)
    static let baro = DeviceInfo(id: "bmp280@0x76", kind: "bmp280", address: "/dev/i2c-1@0x76", state: .present,
                                 streams: [.altitude, .absoluteAltitude], rateHz: 25, errorCount: 2)
    static let accessory = DeviceInfo(id: "mpu6050@0x69", kind: "mpu6050", address: "/dev/i2c-1@0x69",
                                      state: .missing, streams: [.accessoryMotion], errorCount: 12,
                                      resetCount: 1, lastError: "read 14 bytes at 0x3B: no device (ENXIO)")

    static func motion(_ i: Int, rollDeg: Double, pitchDeg: Double, yawDeg: Double) -> DeviceMotionSample {
        let q = quaternion(rollDeg: rollDeg, pitchDeg: pitchDeg, yawDeg: yawDeg)
        return DeviceMotionSample(timestampNs: base + UInt64(i) * halfSecond,
                                  attitude: Quaternion(w: q.w, x: q.x, y: q.y, z: q.z),
                                  gravity: Vector3(x: 0, y: 0, z: -9.80665),
                                  userAcceleration: Vector3(x: 0.01 * Double(i), y: 0, z: -0.02),
                                  rotationRate: Vector3(x: 0, y: 0.25, z: 0.5),
                                  magneticField: Vector3(x: 20.5, y: -3.25, z: -40),
                                  magneticFieldAccuracy: .high, headingDeg: 90,
                                  referenceFrame: .xMagneticNorthZVertical)
    }

    static func altitude(_ i: Int) -> AltitudeSample {
        AltitudeSample(timestampNs: base + UInt64(i) * halfSecond, relativeAltitude: 0.25 * Double(i),
                       pressure: 101325 - 3 * Double(i), temperature: 21.5)
    }

    static func absolute(_ i: Int) -> AbsoluteAltitudeSample {
        AbsoluteAltitudeSample(timestampNs: base + UInt64(i) * halfSecond, altitude: 312.4 + 0.3 * Double(i),
                               accuracy: 8.5, precision: 0.1)
    }

    /// A server whose `ready` semaphore is signalled once every stream in
    /// `streams` has a subscriber.
    static func server(_ tag: String, devices: [DeviceInfo], waitingFor streams: Set<StreamName>,
                       policy: EntitlementPolicy = .defaultPolicy()) throws -> (ServiceServer, DispatchSemaphore) {
        let ready = DispatchSemaphore(value: 0)
        let signalled = Atomic<Bool>(false)
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: watchSocketPath(tag)),
                                       policy: policy, devices: devices,
                                       onDemandChange: { demand in
            if streams.isSubset(of: Set(demand.keys)), !signalled.exchange(true, ordering: .relaxed) {
                ready.signal()
            }
        })
        return (server, ready)
    }
}

@Suite(.ownThread) struct WatchCommandTests {
    @Test func plainLinesFromALiveAgent() throws {
        let (server, ready) = try WatchFixture.server("plain", devices: [WatchFixture.imu, WatchFixture.baro],
                                                      waitingFor: [.deviceMotion, .altitude, .absoluteAltitude])
        defer { server.stop() }
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath, "--count", "3", "--plain"])
        #expect(ready.wait(timeout: .now() + 20) == .success, "the watcher never subscribed; stderr: \(run.err)")
        // Altitude first: deviceMotion paces the updates, so each line has both.
        for i in 0..<3 {
            server.publish(.altitude(WatchFixture.altitude(i)))
            server.publish(.absoluteAltitude(WatchFixture.absolute(i)))
            server.publish(.deviceMotion(WatchFixture.motion(i, rollDeg: 3 * Double(i), pitchDeg: -2, yawDeg: 45)))
        }
        let status = run.wait()
        #expect(status == 0, "stderr: \(run.err)")
        #expect(run.outLines == [
            "t_s=5.000 roll_deg=+0.0 pitch_deg=-2.0 yaw_deg=+45.0 heading_deg=90.0 magneticFieldAccuracy=high rotationRate_radps=+0.000,+0.250,+0.500 userAcceleration_mps2=+0.000,+0.000,-0.020 relativeAltitude_m=+0.00 pressure_pa=101325.0 altitude_m=312.4 accuracy_m=8.5 devices=mpu6050@0x68:present:0,bmp280@0x76:present:2 dropped=0 rate_hz=-",
            "t_s=5.500 roll_deg=+3.0 pitch_deg=-2.0 yaw_deg=+45.0 heading_deg=90.0 magneticFieldAccuracy=high rotationRate_radps=+0.000,+0.250,+0.500 userAcceleration_mps2=+0.010,+0.000,-0.020 relativeAltitude_m=+0.25 pressure_pa=101322.0 altitude_m=312.7 accuracy_m=8.5 devices=mpu6050@0x68:present:0,bmp280@0x76:present:2 dropped=0 rate_hz=2.0",
            "t_s=6.000 roll_deg=+6.0 pitch_deg=-2.0 yaw_deg=+45.0 heading_deg=90.0 magneticFieldAccuracy=high rotationRate_radps=+0.000,+0.250,+0.500 userAcceleration_mps2=+0.020,+0.000,-0.020 relativeAltitude_m=+0.50 pressure_pa=101319.0 altitude_m=313.0 accuracy_m=8.5 devices=mpu6050@0x68:present:0,bmp280@0x76:present:2 dropped=0 rate_hz=2.0",
        ], "\(run.out)")
        #expect(run.err.isEmpty, "\(run.err)")
    }

    @Test func plainLinesAreThrottledOnTheCaptureClock() throws {
        let (server, ready) = try WatchFixture.server("throttle", devices: [WatchFixture.imu],
                                                      waitingFor: [.deviceMotion])
        defer { server.stop() }
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath, "--count", "2", "--plain"])
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        // 20 Hz for 0.55 s of capture time: the lines come at 0 s and 0.5 s.
        for i in 0..<12 {
            var m = WatchFixture.motion(0, rollDeg: 0, pitchDeg: 0, yawDeg: 0)
            m.timestampNs = WatchFixture.base + UInt64(i) * 50_000_000
            server.publish(.deviceMotion(m))
        }
        #expect(run.wait() == 0, "stderr: \(run.err)")
        #expect(run.outLines.map { $0.prefix(10) } == ["t_s=5.000 ", "t_s=5.500 "], "\(run.out)")
        #expect(run.outLines.last?.hasSuffix(" rate_hz=20.0") == true, "\(run.out)")
    }

    @Test func terminalViewRedrawsInPlaceAndRestoresTheCursor() throws {
        let (server, ready) = try WatchFixture.server("tty", devices: [WatchFixture.imu, WatchFixture.baro],
                                                      waitingFor: [.deviceMotion, .altitude])
        defer { server.stop() }
        let options = WatchCommand.Options(socketPath: server.socketPath, count: 2, plain: false)
        let run = CommandRun(terminal: true) { console in
            (try? WatchCommand.watch(options, console: console, handleSignals: false)) ?? -1
        }
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        for i in 0..<2 {
            server.publish(.altitude(WatchFixture.altitude(i)))
            server.publish(.deviceMotion(WatchFixture.motion(i, rollDeg: 9, pitchDeg: -12, yawDeg: 0)))
        }
        #expect(run.wait() == 0, "stderr: \(run.err)")
        let out = run.out
        #expect(out.hasPrefix(WatchView.hideCursor + WatchView.home + WatchView.clearScreen), "\(out)")
        #expect(out.hasSuffix(WatchView.clearToEnd + "\n" + WatchView.showCursor))
        // The last frame: two updates drawn, bubble left of centre and low.
        let last = try #require(out.components(separatedBy: WatchView.home).last)
        #expect(last.contains("updates 2  dropped 0"))
        #expect(last.contains("|   O  |      |" + WatchView.clearToEndOfLine))
        #expect(last.contains("Altitude       relative +0.25 m  pressure 1013.22 hPa  21.5 °C"))
        #expect(last.contains("  bmp280@0x76   bmp280   present  errors 2    resets 0"), "\(last)")
    }

    @Test func ctrlCRestoresTheCursorAndTheSignalHandler() throws {
        func sigintHandlerBits() -> Int {
            var current = sigaction()
            sigaction(SIGINT, nil, &current)
            return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
        }
        let before = sigintHandlerBits()
        let (server, ready) = try WatchFixture.server("int", devices: [WatchFixture.imu], waitingFor: [.deviceMotion])
        defer { server.stop() }
        let options = WatchCommand.Options(socketPath: server.socketPath, count: nil, plain: false)
        let watcherThread = Atomic<UInt>(0)
        let run = CommandRun(terminal: true) { console in
            watcherThread.store(UInt(pthread_self()), ordering: .releasing)
            return (try? WatchCommand.watch(options, console: console, handleSignals: true)) ?? -1
        }
        // The handlers are installed before the watcher subscribes.
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        server.publish(.deviceMotion(WatchFixture.motion(0, rollDeg: 0, pitchDeg: 0, yawDeg: 0)))
        // Ctrl-C, aimed at the watcher's thread so no other test's system
        // call sees EINTR; the handler only sets a flag.
        pthread_kill(pthread_t(watcherThread.load(ordering: .acquiring)), SIGINT)
        // A clean stop, as `run`'s: exit 0 and the same note.
        #expect(run.wait() == 0, "stderr: \(run.err)")
        #expect(run.err == "edge-agent watch: SIGINT (Ctrl-C) received, stopping cleanly\n", "\(run.err)")
        #expect(run.out.hasPrefix(WatchView.hideCursor))
        #expect(run.out.hasSuffix("\n" + WatchView.showCursor))
        #expect(sigintHandlerBits() == before)
    }

    @Test func accessoryAndConnectionEvents() throws {
        let (server, ready) = try WatchFixture.server(
            "acc", devices: [WatchFixture.imu, WatchFixture.accessory],
            waitingFor: [.deviceMotion, .accessoryMotion])
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath, "--plain"])
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        var present = WatchFixture.accessory
        present.state = .present
        server.setDevices([WatchFixture.imu, present])
        server.publishConnection(ConnectionEvent(timestampNs: WatchFixture.base, deviceID: "mpu6050@0x69",
                                                 kind: "mpu6050", connected: true))
        server.publish(.accessoryMotion(WatchFixture.motion(0, rollDeg: 0, pitchDeg: 30, yawDeg: -90)))
        server.publish(.deviceMotion(WatchFixture.motion(0, rollDeg: 0, pitchDeg: 0, yawDeg: 0)))
        // Everything published is on its way before the agent stops.
        #expect(waitUntil { server.statistics().encoded == 2 && server.statistics().clients.allSatisfy { $0.queued == 0 } })
        server.stop(reason: "SIGTERM")
        #expect(run.wait() == 0, "stderr: \(run.err)")
        #expect(run.outLines.contains("event=connection device=mpu6050@0x69 connected=true state=present"), "\(run.out)")
        let update = try #require(run.outLines.first { $0.hasPrefix("t_s=") })
        #expect(update.contains(" accessory_roll_deg=+0.0 accessory_pitch_deg=+30.0 accessory_yaw_deg=-90.0 "), "\(update)")
        // The event and the samples may reach the watcher in either order
        // (the agent delivers events and samples from separate queues), so
        // the accessory's state in the line may still be the old one.
        #expect(update.contains(" devices=mpu6050@0x68:present:0,mpu6050@0x69:"), "\(update)")
        #expect(run.err == "edge-agent watch: the agent shut down (SIGTERM); nothing more to watch.\n")
    }

    @Test func agentShutdownEndsTheWatchWithANote() throws {
        let (server, ready) = try WatchFixture.server("stop", devices: [WatchFixture.imu], waitingFor: [.deviceMotion])
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath])
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        server.stop(reason: "SIGTERM")
        #expect(run.wait() == 0, "stderr: \(run.err)")
        #expect(run.err.contains("the agent shut down (SIGTERM)"), "\(run.err)")
    }

    @Test func missingSocketSaysHowToStartTheAgent() {
        let path = watchSocketPath("none")
        let (console, out, err) = Console.capturing()
        let status = EdgeAgentCLI.run(["edge-agent", "watch", "--socket", path, "--count", "1"], console: console)
        #expect(status == 1)
        #expect(out().isEmpty)
        #expect(err().contains("no agent socket at \(path)"), "\(err())")
        #expect(err().contains("Is the agent running? Check with `systemctl status edge-agent`, or start one with `edge-agent run`"))
    }

    @Test func socketFileWithNobodyListening() throws {
        // A socket file left by a crashed agent: bound, never listening.
        let path = watchSocketPath("stale")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(r == 0)
        let (console, _, err) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "watch", "--socket", path], console: console) == 1)
        #expect(err().contains("nothing is listening on \(path). Is the agent running?"), "\(err())")
    }

    @Test func notEntitledToMotionStillShowsAltitudeAndSaysHowToGrant() throws {
        let policy = EntitlementPolicy(byUID: [getuid(): [.altitude]])
        let (server, ready) = try WatchFixture.server("ent", devices: [WatchFixture.imu, WatchFixture.baro],
                                                      waitingFor: [.altitude, .absoluteAltitude], policy: policy)
        defer { server.stop() }
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath, "--count", "1", "--plain"])
        #expect(ready.wait(timeout: .now() + 20) == .success, "stderr: \(run.err)")
        server.publish(.altitude(WatchFixture.altitude(1)))
        #expect(run.wait() == 0, "stderr: \(run.err)")
        #expect(run.outLines == ["relativeAltitude_m=+0.25 pressure_pa=101322.0 devices=mpu6050@0x68:present:0,bmp280@0x76:present:2 dropped=0 rate_hz=-"], "\(run.out)")
        let user = WatchSession.userName(Int(getuid())).map { "user: \"\($0)\"" } ?? "uid: \(getuid())"
        #expect(run.err.contains("not entitled to deviceMotion: "), "\(run.err)")
        #expect(run.err.contains(" does not hold the \"motion\" entitlement. Grant it in the clients section of the agent's configuration"), "\(run.err)")
        #expect(run.err.contains("  clients: [ { \(user), entitlements: [\"motion\"] } ]"), "\(run.err)")
    }

    @Test func refusedEveryStreamExitsWithTheEntitlementsToGrant() throws {
        let (server, _) = try WatchFixture.server("none", devices: [WatchFixture.imu], waitingFor: [],
                                                  policy: EntitlementPolicy())
        defer { server.stop() }
        let run = CommandRun(["edge-agent", "watch", "--socket", server.socketPath, "--plain"])
        #expect(run.wait() == 1)
        #expect(run.err.contains("not entitled to deviceMotion"), "\(run.err)")
        #expect(run.err.contains("not entitled to altitude: "), "\(run.err)")
        #expect(run.err.contains("entitlements: [\"altitude\"]"), "\(run.err)")
        #expect(run.err.hasSuffix("edge-agent watch: the agent refused every stream this watcher needs; nothing to show.\n"))
    }

    @Test func refusesAProtocolVersionItDoesNotSpeak() throws {
        let agent = try FakeAgent(firstLine: #"{"class":"version","protocol":3,"agent":"edge-agent","agentVersion":"9.0.0"}"#)
        let (console, out, err) = Console.capturing()
        let status = EdgeAgentCLI.run(["edge-agent", "watch", "--socket", agent.path, "--count", "1"], console: console)
        #expect(status == 1)
        #expect(out().isEmpty)
        #expect(err() == "edge-agent watch: the agent at \(agent.path) speaks protocol 3; this edge-agent watch speaks protocol 2. Use the edge-agent tool of the same release as the agent.\n")
    }

    @Test func refusesASocketThatIsNotAnAgent() throws {
        let agent = try FakeAgent(firstLine: #"{"hello":"world"}"#)
        let (console, _, err) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "watch", "--socket", agent.path], console: console) == 1)
        #expect(err().contains("did not start with a version line"), "\(err())")
    }

    /// The session reads the client library's typed messages: a line that
    /// does not decode (out-of-range counts, unknown states, broken samples)
    /// never reaches it, so nothing traps and nothing is invented.
    @Test func sessionSkipsWhatItCannotReadAndPacesOnMotion() throws {
        var session = WatchSession(options: .init(socketPath: "/tmp/x.sock", count: nil, plain: true), terminal: false)
        var sent: [Request] = []
        /// The action for `line`, or nil when the line does not decode (the
        /// watcher skips it).
        func feed(_ line: String) -> WatchSession.Action? {
            guard let m = try? ServerMessage.decode(line: Array(line.utf8)) else { return nil }
            return session.handle(m, send: { sent.append($0) })
        }
        #expect(feed(#"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":1000,"gid":1000,"entitlements":["motion"],"maxLineBytes":4096,"queueCapacity":256}"#) == WatchSession.Action.none)
        #expect(sent == [Request(kind: .devices, id: .string("watch-devices")), Request(kind: .stats, id: .string("watch-stats"))])
        // Counts out of range, unknown states and classes, broken samples: skipped.
        #expect(feed(#"{"class":"devices","devices":[{"id":"imu","state":"sleeping","errorCount":1e300},{"kind":"x"}]}"#) == nil)
        #expect(session.state.devices.isEmpty)
        #expect(feed(#"{"class":"devices","devices":[{"id":"imu","kind":"mpu6050","address":"simulated@0x68","state":"present","streams":["deviceMotion"],"rate_hz":100.0,"errorCount":0,"resetCount":0,"lastError":null,"reason":null}]}"#) == .redraw)
        #expect(session.state.devices == [WatchDevice(id: "imu", kind: "mpu6050", state: "present", errorCount: 0, resetCount: 0, streams: ["deviceMotion"])])
        #expect(sent.count == 5, "\(sent)") // + deviceMotion, altitude, absoluteAltitude subscriptions
        #expect(sent[2] == Request(kind: .subscribe(.deviceMotion, intervalNs: 50_000_000)))
        #expect(feed(#"{"class":"subscribed","stream":"deviceMotion","interval_s":0.05,"entitlement":"motion"}"#) == WatchSession.Action.none)
        #expect(feed(#"{"class":"telemetry","x":1}"#) == WatchSession.Action.none)
        #expect(feed(#"{"class":"stats","dropped":-1e40}"#) == nil)
        #expect(session.state.dropped == nil)
        #expect(feed(#"{"class":"sample","stream":"deviceMotion","timestamp_ns":1}"#) == nil)
        #expect(session.state.motion == nil)
        // Altitude waits for motion (a second of capture time), motion paces.
        #expect(feed(#"{"class":"sample","stream":"altitude","timestamp_ns":1000000000,"relativeAltitude_m":1,"pressure_pa":1,"temperature_c":1}"#) == WatchSession.Action.none)
        func m(_ t: String) -> String {
            #"{"class":"sample","stream":"deviceMotion","timestamp_ns":\#(t),"attitude":{"w":1,"x":0,"y":0,"z":0},"gravity_mps2":{"x":0,"y":0,"z":-9.80665},"userAcceleration_mps2":{"x":0,"y":0,"z":0},"rotationRate_radps":{"x":0,"y":0,"z":0},"magneticField_uT":{"x":0,"y":0,"z":0},"magneticFieldAccuracy":"uncalibrated","heading_deg":null,"frame":"xArbitraryZVertical"}"#
        }
        #expect(feed(m("1000000000")) == .update)
        #expect(feed(m("1400000000")) == WatchSession.Action.none)
        #expect(feed(m("1500000000")) == .update)
        #expect(session.state.motionRateHz == 4)
        // Motion silent for a second: altitude takes over.
        #expect(feed(#"{"class":"sample","stream":"altitude","timestamp_ns":2600000000,"relativeAltitude_m":2,"pressure_pa":1,"temperature_c":1}"#) == .update)
        #expect(feed(#"{"class":"error","code":"flood","message":"too many","closesConnection":true}"#)
                == .fail("the agent closed the connection: flood: too many"))
    }

    /// A degraded device and why, from `devices` and from a `connection`
    /// event with `state` and `reason`. Main: the state became "missing"
    /// and the reason was dropped.
    @Test func degradedDeviceShowsItsStateAndReason() throws {
        var session = WatchSession(options: .init(socketPath: "/tmp/x.sock", count: nil, plain: true), terminal: false)
        func feed(_ line: String) throws -> WatchSession.Action {
            session.handle(try ServerMessage.decode(line: Array(line.utf8)), send: { _ in })
        }
        _ = try feed(#"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":1000,"gid":1000,"entitlements":[],"maxLineBytes":4096,"queueCapacity":256}"#)
        _ = try feed(#"{"class":"devices","devices":[{"id":"mpu6050@0x68","kind":"mpu6050","address":"simulated@0x68","state":"present","streams":["deviceMotion"],"rate_hz":200.0,"errorCount":0,"resetCount":0,"lastError":null,"reason":null,"retryCount":0,"stallCount":0},{"id":"qmc5883l@0x0d","kind":"qmc5883l","address":"simulated@0x0d","state":"degraded","streams":["magnetometer"],"rate_hz":100.0,"errorCount":4,"resetCount":1,"lastError":"read 6 bytes at 0x00: I/O error (EIO)","reason":"no new field for 5 output periods: re-initialising","retryCount":2,"stallCount":1}]}"#)
        let view = WatchView.render(session.state)
        #expect(view.contains("  qmc5883l@0x0d  qmc5883l  degraded  errors 4    resets 1  retries 2  stalls 1"), "\(view)")
        #expect(view.contains("    why: no new field for 5 output periods: re-initialising"), "\(view)")
        let event = try feed(#"{"class":"connection","timestamp_ns":1300000000000,"device":"mpu6050@0x68","kind":"mpu6050","connected":false,"state":"degraded","reason":"no sample for 50 ms (a stall)"}"#)
        #expect(event == .event(#"event=connection device=mpu6050@0x68 connected=false state=degraded reason="no sample for 50 ms (a stall)""#))
        #expect(session.state.devices.first?.state == "degraded")
        #expect(WatchView.render(session.state).contains("    why: no sample for 50 ms (a stall)"))
        let back = try feed(#"{"class":"connection","timestamp_ns":1300500000000,"device":"mpu6050@0x68","kind":"mpu6050","connected":true,"state":"present","reason":null}"#)
        #expect(back == .event("event=connection device=mpu6050@0x68 connected=true state=present"))
        #expect(!WatchView.render(session.state).contains("a stall"))
    }

    /// `poll` says how old the latest sample is, by the agent's own clock
    /// (a ping after the poll), and why when it is old. Main: no such command.
    @Test func pollSaysHowOldItsSampleIs() throws {
        let (server, _) = try WatchFixture.server("poll", devices: [WatchFixture.baro], waitingFor: [])
        defer { server.stop() }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
        server.publish(.altitude(AltitudeSample(timestampNs: now - 2_000_000_000, relativeAltitude: 0.5,
                                                pressure: 101_300, temperature: 21)))
        // The server takes the sample on its own thread: poll until it has it.
        var out = "", err = ""
        var status: Int32 = -1
        let got = waitUntil(seconds: 20) {
            let (c, o, e) = Console.capturing()
            status = EdgeAgentCLI.run(["edge-agent", "poll", "altitude", "--socket", server.socketPath], console: c)
            out = o(); err = e()
            return status == 0
        }
        #expect(got, "status \(status): \(err)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(out)")
        let head = try #require(lines.first)
        #expect(head.hasPrefix("altitude: sample 2.") || head.hasPrefix("altitude: sample 3."), "\(head)")
        #expect(head.contains(" s old (captured at \(now - 2_000_000_000) ns; the agent's clock: "), "\(head)")
        // The reply as the agent sent it: a poll's sample carries the request's id.
        #expect(lines.last.map { $0.hasPrefix(#"{"class":"sample","id":"#) && $0.contains(#""stream":"altitude","timestamp_ns":"#) } == true, "\(out)")
        #expect(err.contains("nobody subscribes to altitude, so the agent has idled it"), "\(err)")
        // --json: the sample with its age as the last key.
        let (c, o, _) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "poll", "altitude", "--socket", server.socketPath, "--json"], console: c) == 0)
        #expect(o().contains(#","age_s":"#) && o().hasSuffix("}\n"), "\(o())")
        // Nothing yet: noSample says what to do.
        let (c2, _, e2) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "poll", "deviceMotion", "--socket", server.socketPath], console: c2) == 1)
        #expect(e2().contains("no sample of deviceMotion yet"), "\(e2())")
        #expect(e2().contains("always_on"), "\(e2())")
    }

    @Test func socketLookupOrder() {
        #expect(WatchCommand.defaultSocketPath(environment: [:]) == "/run/edge-agent/agent.sock")
        #expect(WatchCommand.defaultSocketPath(environment: ["EDGE_AGENT_SOCKET": ""]) == "/run/edge-agent/agent.sock")
        #expect(WatchCommand.defaultSocketPath(environment: ["EDGE_AGENT_SOCKET": "/tmp/a.sock"]) == "/tmp/a.sock")
        #expect(WatchCommand.defaultSocketPath(environment: [:], configuredPath: "/srv/agent.sock") == "/srv/agent.sock")
        #expect(WatchCommand.defaultSocketPath(environment: ["EDGE_AGENT_SOCKET": "/tmp/a.sock"],
                                               configuredPath: "/srv/agent.sock") == "/tmp/a.sock")
    }

    @Test func permissionDeniedNamesTheGroup() {
        // Root connects anyway, so the advice is checked on its own.
        let e = WatchError.connect(path: "/run/edge-agent/agent.sock", errno: EACCES, socketGroup: "edge")
        #expect(e.description == "permission denied connecting to /run/edge-agent/agent.sock: the socket admits its owner and members of group 'edge'. Add yourself (`sudo usermod -aG edge $USER`, then log in again) or run as a member.")
    }

    @Test func badUsage() {
        let (console, _, err) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "watch", "--count", "0"], console: console) == 2)
        #expect(err().contains("--count must be between 1 and"))
        #expect(EdgeAgentCLI.run(["edge-agent", "watch", "--frobnicate"], console: console) == 2)
    }
}

/// A listening socket that sends one line to its first client, then waits
/// for the client to hang up: stands in for a different agent.
final class FakeAgent: @unchecked Sendable {
    let path = watchSocketPath("fake")
    private var serving: ListeningThread?

    init(firstLine: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { [path] raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 && listen(fd, 1) == 0 else {
            let e = errno
            close(fd)
            try #require(Bool(false), "bind/listen \(path): errno \(e)")
            return
        }
        // The listener is the thread's to close (ListeningThread says why).
        serving = ListeningThread(listener: fd) { listener in
            let c = accept(listener, nil, nil)
            guard c >= 0 else { return }
            let bytes = Array((firstLine + "\n").utf8)
            _ = bytes.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buf = [UInt8](repeating: 0, count: 4096)
            var p = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            // Until the client hangs up (bounded: 20 s).
            while poll(&p, 1, 20_000) > 0, buf.withUnsafeMutableBytes({ read(c, $0.baseAddress, $0.count) }) > 0 {}
            close(c)
        }
    }

    deinit {
        serving?.stop()
        unlink(path)
    }
}
