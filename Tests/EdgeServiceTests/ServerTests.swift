#if canImport(Glibc)
import Glibc
#endif
import Testing
import EdgeValues
import EdgeProtocol
@testable import EdgeService

@Suite("Server")
struct ServerTests {
    @Test func versionLineComesFirst() throws {
        let server = try makeServer("v")
        defer { server.stop() }
        let c = try TestClient(path: server.socketPath)
        let v = try #require(c.readMessage())
        #expect(v.string("class") == "version")
        #expect(v.number("protocol") == Double(EdgeProtocolInfo.version))
        #expect(v.string("agent") == "edge-agent")
        #expect(v.number("uid") == Double(getuid()))
        #expect(v["entitlements"]?.arrayValue?.compactMap(\.stringValue) == ["altitude", "motion"])
        #expect(v.number("maxLineBytes") == 4096)
        #expect(v.number("queueCapacity") == 256)
    }

    @Test func devicesListingFollowsSnapshots() throws {
        let imu = DeviceInfo(id: "imu", kind: "mpu6050", address: "/dev/i2c-1@0x68", state: .present,
                             streams: [.accelerometer, .gyroscope, .deviceMotion], rateHz: 100)
        let server = try makeServer("d", devices: [imu])
        defer { server.stop() }
        let c = try connectClient(server)
        c.request(#"{"class":"devices","id":1}"#)
        let d = try #require(c.waitFor("devices").0)
        #expect(d.number("id") == 1)
        let list = try #require(d["devices"]?.arrayValue)
        #expect(list.count == 1)
        #expect(list[0].string("id") == "imu")
        #expect(list[0].string("state") == "present")
        #expect(list[0].number("rate_hz") == 100)
        #expect(list[0]["streams"]?.arrayValue?.compactMap(\.stringValue) == ["accelerometer", "gyroscope", "deviceMotion"])

        var missing = imu
        missing.state = .missing
        missing.errorCount = 3
        missing.lastError = "read 14 bytes: no device"
        server.setDevices([missing])
        c.request(#"{"class":"devices"}"#)
        let d2 = try #require(c.waitFor("devices").0)
        let entry = try #require(d2["devices"]?.arrayValue?.first)
        #expect(entry.string("state") == "missing")
        #expect(entry.number("errorCount") == 3)
        #expect(entry.string("lastError") == "read 14 bytes: no device")
    }

    /// A server made with `acceptingClients: false` (the agent's, until its
    /// engine has probed the board and its history and recorder are set)
    /// does not poll its listener, and a cycle with a connection waiting
    /// accepts none; `startAcceptingClients()` opens the door, and the
    /// client waiting is answered with the devices set before it: never the
    /// empty list or `noHistory` of an agent still starting (`watch` showed
    /// no devices for its first second; CI heard `noHistory`).
    @Test func aClosedDoorLeavesConnectionsInTheBacklog() throws {
        let imu = DeviceInfo(id: "imu", kind: "mpu6050", address: "/dev/i2c-1@0x68", state: .present,
                             streams: [.accelerometer, .gyroscope, .deviceMotion], rateHz: 100)
        let m = try ManualLoop()
        defer { m.close() }
        m.acceptsClients = false
        let c = try TestClient(path: m.path)   // connect(2) succeeds: the listen backlog
        c.request(#"{"class":"devices","id":"early"}"#)
        m.cycle()
        #expect(!m.listenerPolled, "the listener is not polled while the door is closed")
        #expect(m.loop.clients.isEmpty)

        m.core.shared.withLock { $0.devices = [imu] }
        m.acceptsClients = true
        #expect(m.cycle(timeoutMs: Int32(waitTimeoutMs)) >= 1)
        #expect(m.listenerPolled)
        #expect(m.loop.clients.count == 1)
        #expect(c.readMessage()?.string("class") == "version")
        // The request already waits in the socket: the next cycle answers it.
        #expect(m.cycle(timeoutMs: Int32(waitTimeoutMs)) >= 1)
        let d = try #require(c.waitFor("devices").0)
        #expect(d.string("id") == "early")
        #expect(d["devices"]?.arrayValue?.first?.string("id") == "imu")
    }

    /// A server stopped before it opened its door (an agent whose engine
    /// failed to start) accepts what waits in the backlog as it stops, so
    /// those clients read a version line and why, not a reset (`watch` said
    /// "not an agent"); through the public API, `startAcceptingClients()`
    /// opens the door to the client waiting (called twice, as nothing
    /// forbids).
    @Test func aServerStoppedBeforeItOpenedTellsTheWaitingClientsWhy() throws {
        let server = try ServiceServer(configuration: ServiceConfiguration(socketPath: uniqueSocketPath("gate")),
                                       acceptingClients: false)
        let waiting = try (0..<3).map { _ in try TestClient(path: server.socketPath) }
        #expect(server.statistics().acceptedClients == 0)
        server.stop(reason: "agent failed to start")
        for c in waiting {
            #expect(c.readMessage()?.string("class") == "version")
            let bye = try #require(c.waitFor("shutdown").0)
            #expect(bye.string("reason") == "agent failed to start")
            #expect(c.waitClosed())
        }
        #expect(server.statistics().acceptedClients == 3)

        let open = try ServiceServer(configuration: ServiceConfiguration(socketPath: uniqueSocketPath("gate")),
                                     acceptingClients: false)
        defer { open.stop() }
        let c = try TestClient(path: open.socketPath)
        open.startAcceptingClients()
        open.startAcceptingClients()
        #expect(c.readMessage()?.string("class") == "version")
        c.request(#"{"class":"ping","id":1}"#)
        #expect(c.waitFor("pong").0 != nil)
    }

    @Test func subscribedClientReceivesSamplesInOrderWithUnits() throws {
        let server = try makeServer("sub")
        defer { server.stop() }
        let c = try connectClient(server)
        let sub = try #require(subscribe(c, "deviceMotion"))
        #expect(sub.number("interval_s") == 0)
        #expect(sub.string("entitlement") == "motion")
        for i in 0..<20 { #expect(server.publish(.deviceMotion(motionSample(i)))) }
        let before = try #require(c.barrier())
        let samples = before.filter { $0.string("class") == "sample" }
        #expect(samples.count == 20)
        let stamps = samples.compactMap { $0.number("timestamp_ns") }
        #expect(stamps == (0..<20).map { Double(baseTimestamp + UInt64($0) * period100Hz) })
        let s = try #require(samples.last)
        #expect(s.string("stream") == "deviceMotion")
        #expect(s.vector("gravity_mps2")?.2 == -9.80665)
        #expect(s.vector("userAcceleration_mps2")?.0 == 0.19)
        #expect(s.vector("rotationRate_radps")?.2 == 0.5)
        #expect(s.vector("magneticField_uT")?.0 == 20.5)
        // Other streams are not sent to this client.
        server.publish(.accelerometer(accelerometerSample(0)))
        let after = try #require(c.barrier())
        #expect(after.isEmpty)
    }

    @Test func intervalDecimatesByCaptureTimestamp() throws {
        let server = try makeServer("dec")
        defer { server.stop() }
        let slow = try connectClient(server)
        let fast = try connectClient(server)
        #expect(subscribe(slow, "accelerometer", interval: 0.05)?.number("interval_s") == 0.05)
        #expect(subscribe(fast, "accelerometer") != nil)
        for i in 0..<100 { server.publish(.accelerometer(accelerometerSample(i))) }
        let got = try #require(slow.barrier()).compactMap { $0.number("timestamp_ns") }
        #expect(got.count == 20)
        let gaps = zip(got.dropFirst(), got).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 == 50_000_000 }, "gaps \(gaps)")
        #expect(try #require(fast.barrier()).count == 100)
    }

    @Test func demandIsTheFastestRequestedIntervalAndFollowsClients() throws {
        let calls = Locked<[[StreamName: Double]]>([])
        let server = try makeServer("dem", onDemandChange: { d in calls.withLock { $0.append(d) } })
        defer { server.stop() }
        #expect(server.demand().isEmpty)
        let a = try connectClient(server)
        let b = try connectClient(server)
        let g0 = server.demandGeneration
        _ = subscribe(a, "deviceMotion", interval: 0.02)
        #expect(server.demand() == [.deviceMotion: 0.02])
        _ = subscribe(b, "deviceMotion", interval: 0.01)
        _ = subscribe(b, "altitude", interval: 1)
        #expect(server.demand() == [.deviceMotion: 0.01, .altitude: 1])
        #expect(server.demandGeneration > g0)
        b.request(#"{"class":"unsubscribe","stream":"altitude"}"#)
        #expect(b.waitFor("unsubscribed").0 != nil)
        #expect(server.demand() == [.deviceMotion: 0.01])
        a.request(#"{"class":"streams"}"#)
        let streams = try #require(a.waitFor("streams").0?["streams"]?.arrayValue)
        let dm = try #require(streams.first { $0.string("stream") == "deviceMotion" })
        #expect(dm.bool("subscribed") == true)
        #expect(dm.number("demandInterval_s") == 0.01)
        // A client that goes away takes its demand with it.
        let g1 = server.demandGeneration
        b.disconnect()
        let deadline = monotonicMs() + 5000
        while server.demandGeneration == g1 && monotonicMs() < deadline { _ = a.barrier() }
        #expect(server.demand() == [.deviceMotion: 0.02])
        #expect(calls.withLock { $0.last } == [.deviceMotion: 0.02])
    }

    @Test func pollReturnsTheLatestSample() throws {
        let server = try makeServer("poll")
        defer { server.stop() }
        let c = try connectClient(server)
        c.request(#"{"class":"poll","stream":"altitude","id":"p0"}"#)
        let none = try #require(c.waitFor("error").0)
        #expect(none.string("code") == "noSample")
        #expect(none.string("id") == "p0")
        for i in 0..<3 {
            server.publish(.altitude(AltitudeSample(timestampNs: baseTimestamp + UInt64(i), relativeAltitude: Double(i),
                                                    pressure: 101325 - Double(i), temperature: 20)))
        }
        _ = try #require(c.barrier()) // the ring is drained before requests are read
        c.request(#"{"class":"poll","stream":"altitude"}"#)
        let s = try #require(c.waitFor("sample").0)
        #expect(s.number("timestamp_ns") == Double(baseTimestamp + 2))
        #expect(s.number("relativeAltitude_m") == 2)
        #expect(s.number("pressure_pa") == 101323)
        #expect(s.number("temperature_c") == 20)
    }

    @Test func unsubscribeStopsData() throws {
        let server = try makeServer("uns")
        defer { server.stop() }
        let c = try connectClient(server)
        _ = subscribe(c, "gyroscope")
        server.publish(.gyroscope(GyroscopeSample(timestampNs: 1, rotationRate: .zero)))
        #expect(try #require(c.barrier()).count == 1)
        c.request(#"{"class":"unsubscribe","stream":"gyroscope"}"#)
        #expect(c.waitFor("unsubscribed").0?.string("stream") == "gyroscope")
        for i in 2..<10 { server.publish(.gyroscope(GyroscopeSample(timestampNs: UInt64(i), rotationRate: .zero))) }
        #expect(try #require(c.barrier()).isEmpty)
    }

    @Test func streamWithoutEntitlementGetsNotEntitledAndNoData() throws {
        let policy = EntitlementPolicy(byUID: [getuid(): [.motion]])
        let server = try makeServer("ent", policy: policy)
        defer { server.stop() }
        let c = try TestClient(path: server.socketPath)
        let v = try #require(c.readMessage())
        #expect(v["entitlements"]?.arrayValue?.compactMap(\.stringValue) == ["motion"])
        c.request(#"{"class":"subscribe","stream":"altitude","id":7}"#)
        let e = try #require(c.waitFor("error").0)
        #expect(e.string("code") == "notEntitled")
        #expect(e.string("stream") == "altitude")
        #expect(e.number("id") == 7)
        #expect(e.bool("closesConnection") == false)
        server.publish(.altitude(AltitudeSample(timestampNs: 1, relativeAltitude: 0, pressure: 1e5, temperature: 20)))
        c.request(#"{"class":"poll","stream":"altitude"}"#)
        #expect(c.waitFor("error").0?.string("code") == "notEntitled")
        #expect(try #require(c.barrier()).isEmpty)
        #expect(server.demand().isEmpty)
        // The entitled stream still works on the same connection.
        #expect(subscribe(c, "accelerometer") != nil)
    }

    @Test func malformedRequestGetsAnErrorAndTheConnectionStays() throws {
        let server = try makeServer("mal")
        defer { server.stop() }
        let c = try connectClient(server)
        for (line, code) in [("{nope", "malformedRequest"), (#"{"class":"subscribe","stream":"warp"}"#, "unknownStream"),
                             (#"{"class":"subscribe","stream":"altitude","interval_s":-2}"#, "badInterval"),
                             (#"{"class":"fly"}"#, "unknownRequest")] {
            c.request(line)
            let e = try #require(c.waitFor("error").0)
            #expect(e.string("code") == code)
            #expect(e.bool("closesConnection") == false)
        }
        c.send("\r\n   \n") // blank lines are ignored
        #expect(c.barrier() != nil)
        #expect(subscribe(c, "magnetometer") != nil)
    }

    /// `1e400` used to come back verbatim, so a reader of the reply parsed
    /// infinity (and `12345678901234567890` lost its digits).
    @Test func requestIDsNoReaderCanHoldAreRefusedAndTheConnectionStays() throws {
        let server = try makeServer("rid")
        defer { server.stop() }
        let c = try connectClient(server)
        for bad in ["1e400", "-1e400", "12345678901234567890", "0.5", "1E2", "{\"a\":1}",
                    "\"" + String(repeating: "x", count: 300) + "\""] {
            c.request(#"{"class":"ping","id":\#(bad)}"#)
            let line = try #require(c.readLine())
            let e = try #require(try? JSONValue.parse(Array(line.utf8)))
            #expect(e.string("class") == "error", "id \(bad): \(line)")
            #expect(e.string("code") == "badRequestID", "id \(bad): \(line)")
            #expect(e["id"] == nil, "no id is echoed: \(line)")
            #expect(e.bool("closesConnection") == false)
            #expect(!line.contains(bad), "the bad id is not echoed: \(line)")
        }
        c.request(#"{"class":"ping","id":9007199254740991}"#)
        let line = try #require(c.readLine())
        #expect(line.contains(#""id":9007199254740991"#), "\(line)")
        #expect(c.barrier() != nil)
    }

    @Test func oversizedLineIsCutOff() throws {
        let server = try makeServer("big")
        defer { server.stop() }
        let c = try connectClient(server)
        c.send(String(repeating: "x", count: 5000) + "\n")
        let e = try #require(c.waitFor("error").0)
        #expect(e.string("code") == "tooLarge")
        #expect(e.bool("closesConnection") == true)
        #expect(c.waitClosed())
    }

    @Test func oversizedLineWithoutNewlineIsCutOff() throws {
        let server = try makeServer("big2")
        defer { server.stop() }
        let c = try connectClient(server)
        c.send("{\"class\":\"" + String(repeating: "y", count: 4200))
        #expect(c.waitFor("error").0?.string("code") == "tooLarge")
        #expect(c.waitClosed())
    }

    @Test func floodIsCutOff() throws {
        let server = try makeServer("fld")
        defer { server.stop() }
        let c = try connectClient(server)
        c.send(String(repeating: "{\"class\":\"ping\"}\n", count: 300))
        let (e, before) = c.waitFor("error")
        #expect(e?.string("code") == "flood")
        #expect(before.filter { $0.string("class") == "pong" }.count == 200)
        #expect(c.waitClosed())
        // Others are unaffected.
        let d = try connectClient(server)
        #expect(d.barrier() != nil)
    }

    @Test func statsReportTheClientsCounters() throws {
        let server = try makeServer("st")
        defer { server.stop() }
        let c = try connectClient(server)
        _ = subscribe(c, "accelerometer")
        for i in 0..<5 { server.publish(.accelerometer(accelerometerSample(i))) }
        _ = c.barrier()
        c.request(#"{"class":"stats"}"#)
        let s = try #require(c.waitFor("stats").0)
        #expect(s.number("dropped") == 0)
        #expect(s.number("queueCapacity") == 256)
        #expect((s.number("delivered") ?? 0) >= 5)
        let stats = server.statistics()
        #expect(stats.published == 5)
        #expect(stats.overruns == 0)
        #expect(stats.clients.count == 1)
        #expect(stats.clients[0].subscriptions == [.accelerometer])
        #expect(stats.clients[0].identity.uid == getuid())
    }

    @Test func connectionEventsReachEveryClient() throws {
        let server = try makeServer("con")
        defer { server.stop() }
        let a = try connectClient(server)
        let b = try connectClient(server)
        _ = a.barrier(); _ = b.barrier() // both accepted
        server.publishConnection(ConnectionEvent(timestampNs: 42, deviceID: "accessoryImu", kind: "mpu6050",
                                                 connected: false))
        for c in [a, b] {
            let e = try #require(c.waitFor("connection").0)
            #expect(e.string("device") == "accessoryImu")
            #expect(e.bool("connected") == false)
            #expect(e.number("timestamp_ns") == 42)
        }
    }

    @Test func stopTellsClientsAndRemovesTheSocket() throws {
        let server = try makeServer("stop")
        let c = try connectClient(server)
        _ = subscribe(c, "deviceMotion")
        let path = server.socketPath
        #expect(access(path, F_OK) == 0)
        server.stop(reason: "SIGTERM")
        let (shutdown, _) = c.waitFor("shutdown")
        #expect(shutdown?.string("reason") == "SIGTERM")
        #expect(c.waitClosed())
        #expect(access(path, F_OK) != 0)
        server.stop() // idempotent
    }

    @Test func socketFileHasMode0660AndTheConfiguredGroup() throws {
        let server = try makeServer("mode", configure: { $0.socketGroup = String(getgid()) })
        defer { server.stop() }
        var st = stat()
        #expect(lstat(server.socketPath, &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        #expect(st.st_mode & 0o777 == 0o660)
        #expect(st.st_gid == getgid())
    }

    @Test func unknownSocketGroupIsRefused() {
        #expect(throws: ServiceError.unknownGroup("no-such-group-edge")) {
            _ = try makeServer("grp", configure: { $0.socketGroup = "no-such-group-edge" })
        }
    }

    @Test func staleSocketIsReplacedButALiveAgentIsNot() throws {
        let path = uniqueSocketPath("stale")
        // A socket file nobody listens on: what a crashed agent leaves behind.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let addr = try #require(Posix.unixAddress(path))
        #expect(Posix.withSockaddr(addr) { bind(fd, $0, $1) } == 0)
        close(fd)
        #expect(access(path, F_OK) == 0)

        let first = try ServiceServer(configuration: ServiceConfiguration(socketPath: path))
        defer { first.stop() }
        #expect(try connectClient(first).barrier() != nil)
        #expect(throws: ServiceError.alreadyRunning(path)) {
            _ = try ServiceServer(configuration: ServiceConfiguration(socketPath: path))
        }
        // The refused second agent did not break the first.
        #expect(try connectClient(first).barrier() != nil)
    }

    @Test func aRegularFileAtTheSocketPathIsNeverDeleted() throws {
        let path = uniqueSocketPath("file")
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        close(fd)
        defer { unlink(path) }
        #expect(throws: ServiceError.pathNotASocket(path)) {
            _ = try ServiceServer(configuration: ServiceConfiguration(socketPath: path))
        }
        #expect(access(path, F_OK) == 0)
    }

    @Test func tooLongPathIsRefused() {
        let path = "/tmp/" + String(repeating: "p", count: 120)
        #expect(throws: ServiceError.socketPathTooLong(path)) {
            _ = try ServiceServer(configuration: ServiceConfiguration(socketPath: path))
        }
    }

    @Test func tooManyClientsAreTurnedAway() throws {
        let server = try makeServer("max", configure: { $0.maxClients = 2 })
        defer { server.stop() }
        let a = try connectClient(server)
        let b = try connectClient(server)
        let c = try TestClient(path: server.socketPath)
        #expect(c.readMessage()?.string("class") == "version")
        #expect(c.waitFor("error").0?.string("code") == "tooManyClients")
        #expect(c.waitClosed())
        #expect(a.barrier() != nil && b.barrier() != nil)
    }

    /// A socket-group member with no entitlement used to be able to hold all
    /// 128 slots, so an entitled client then got `tooManyClients`.
    @Test func unentitledConnectionsCannotStarveEntitledOnes() throws {
        let entitledUID: UInt32 = 2001, outsider: UInt32 = 3001
        let credentials = ScriptedCredentials(Array(repeating: outsider, count: 128) + [entitledUID])
        let policy = EntitlementPolicy(byUID: [entitledUID: [.motion]])
        let server = try makeServer("starve", policy: policy, credentials: credentials) // default limits
        defer { server.stop() }
        var held: [TestClient] = []
        var refusals: [String?] = []
        for _ in 0..<128 {
            let (c, code) = try connectExpectingRefusal(server)
            if code == nil { held.append(c) } else { refusals.append(code) }
        }
        #expect(held.count == 8, "the default budget of connections that hold no entitlement")
        #expect(refusals.count == 120 && refusals.allSatisfy { $0 == "tooManyUnentitledClients" })

        let (entitled, refused) = try connectExpectingRefusal(server)
        #expect(refused == nil, "the entitled client is served")
        #expect(subscribe(entitled, "deviceMotion") != nil)
        let stats = server.statistics()
        #expect(stats.clients.count == 9)
        #expect(stats.refusedClients == 120)
        // The unentitled ones still work: they may list and ping.
        #expect(held.allSatisfy { $0.barrier() != nil })
    }

    @Test func oneUIDCannotHoldEverySlot() throws {
        let hog: UInt32 = 2001, other: UInt32 = 2002
        let credentials = ScriptedCredentials([hog, hog, hog, hog, other])
        let policy = EntitlementPolicy(byUID: [hog: [.motion], other: [.motion]])
        let server = try makeServer("peruid", policy: policy, credentials: credentials, configure: {
            $0.maxClients = 4
            $0.maxClientsPerUID = 3
        })
        defer { server.stop() }
        var held: [TestClient] = []
        for _ in 0..<3 {
            let (c, code) = try connectExpectingRefusal(server)
            #expect(code == nil)
            held.append(c)
        }
        let (_, fourth) = try connectExpectingRefusal(server)
        #expect(fourth == "tooManyClientsForUID")
        let (second, code) = try connectExpectingRefusal(server)
        #expect(code == nil, "another uid still gets the slot the first may not take")
        #expect(second.barrier() != nil)

        // A slot freed by the hog is its own again.
        held.removeLast().disconnect()
        let deadline = monotonicMs() + 5000
        while server.statistics().clients.count > 3 && monotonicMs() < deadline { _ = second.barrier() }
        credentials.enqueue([hog])
        #expect(try connectExpectingRefusal(server).1 == nil)
    }

    /// Issue 16, item 6: two entitled users each holding the per-uid share
    /// (64 of 128) took every slot and locked a third entitled user out.
    /// Now the last slots are kept for uids holding fewer than their
    /// guaranteed connections.
    @Test func twoGreedyUsersCannotLockAThirdOut() throws {
        let a: UInt32 = 2001, b: UInt32 = 2002, c: UInt32 = 2003, d: UInt32 = 2004
        let credentials = ScriptedCredentials(Array(repeating: a, count: 64) + Array(repeating: b, count: 64)
                                              + Array(repeating: c, count: 9) + Array(repeating: d, count: 8))
        let policy = EntitlementPolicy(byUID: [a: [.motion], b: [.motion], c: [.motion], d: [.altitude]])
        let server = try makeServer("greedy", policy: policy, credentials: credentials) // default limits
        defer { server.stop() }
        var held: [TestClient] = []
        var codes: [UInt32: [String]] = [:]
        for (uid, n) in [(a, 64), (b, 64), (c, 9), (d, 8)] {
            for _ in 0..<n {
                let (client, code) = try connectExpectingRefusal(server)
                if let code { codes[uid, default: []].append(code) } else { held.append(client) }
            }
        }
        let admitted = server.statistics().clients
        func count(_ uid: UInt32) -> Int { admitted.filter { $0.identity.uid == uid }.count }
        #expect(count(a) == 64, "the first user gets its share")
        #expect(count(b) == 32, "the second stops where the reserve begins")
        #expect(count(c) == 8 && codes[c] == ["tooManyClientsForUID"], "a third user gets its guaranteed 8: \(codes)")
        #expect(count(d) == 8, "so does a fourth")
        #expect(codes[b]?.count == 32 && codes[b]?.allSatisfy { $0 == "tooManyClientsForUID" } == true)
        #expect(held.last?.barrier() != nil)
    }

    @Test func refusalsSayWhichLimitAndTheRefusedErrorIsTyped() throws {
        let a: UInt32 = 2001, b: UInt32 = 2002, stranger: UInt32 = 3001
        let credentials = ScriptedCredentials([stranger, stranger, a, b, a])
        let policy = EntitlementPolicy(byUID: [a: [.motion], b: [.altitude]])
        let server = try makeServer("which", policy: policy, credentials: credentials, configure: {
            $0.maxClients = 2
            $0.maxUnentitledClients = 5 // at most maxClients - 1 = 1 take effect
        })
        defer { server.stop() }
        let (s1, c1) = try connectExpectingRefusal(server)
        #expect(c1 == nil)
        #expect(try connectExpectingRefusal(server).1 == "tooManyUnentitledClients")
        let (a1, c3) = try connectExpectingRefusal(server)
        #expect(c3 == nil)
        let c = try TestClient(path: server.socketPath) // b: the agent is full
        #expect(c.readMessage()?.string("class") == "version")
        let e = try #require(c.waitFor("error").0)
        #expect(e.string("code") == "tooManyClients")
        #expect(e.bool("closesConnection") == true)
        #expect(e.string("message")?.contains("2") == true)
        #expect(c.waitClosed())
        #expect(try ServerMessage.decode(line: Array("{\"class\":\"error\",\"code\":\"tooManyClientsForUID\",\"message\":\"m\"}".utf8))
                == .error(code: .tooManyClientsForUID, codeName: "tooManyClientsForUID", message: "m", stream: nil, id: nil))
        #expect(s1.barrier() != nil && a1.barrier() != nil)
    }

    /// A refused client used to stay in the loop until a later poll cycle
    /// (≥ 50 ms), holding its descriptor, although its two lines were written.
    @Test func aRefusedClientIsClosedAsSoonAsItsLinesAreWritten() throws {
        let m = try ManualLoop(configure: { $0.maxClients = 1 })
        defer { m.close() }
        let first = try TestClient(path: m.path)
        let second = try TestClient(path: m.path)
        m.loop.acceptClients()
        #expect(m.loop.clients.count == 2)
        #expect(m.loop.clients[0].dead == false)
        #expect(m.loop.clients[1].dead == true, "closed within the cycle that refused it")
        m.loop.removeDeadClients()
        #expect(m.loop.clients.count == 1)
        #expect(second.readMessage()?.string("class") == "version")
        #expect(second.readMessage()?.string("code") == "tooManyClients")
        #expect(second.waitClosed())
        #expect(first.readMessage()?.string("class") == "version")
    }

    /// A connect storm used to keep the service thread in its accept loop
    /// for as long as connections kept coming, with no client served and
    /// the sample ring filling; one cycle now accepts a bounded burst.
    @Test func oneCycleAcceptsABoundedBurst() throws {
        let m = try ManualLoop()
        defer { m.close() }
        let burst = m.loop.acceptBurst
        #expect(burst >= 1 && burst < 40)
        var storm: [TestClient] = []
        for _ in 0..<40 { storm.append(try TestClient(path: m.path)) } // wait in the backlog (64)
        var accepted: [Int] = []
        for _ in 0..<4 {
            m.loop.acceptClients()
            accepted.append(m.loop.clients.count)
        }
        #expect(accepted == [burst, min(40, 2 * burst), min(40, 3 * burst), min(40, 4 * burst)])
        #expect(storm.allSatisfy { $0.readMessage()?.string("class") == "version" })
    }

    /// Each subscribe that starts a stream or speeds it up makes the loop
    /// thread re-rate, wake or sleep chips (I2C writes, settling time). A
    /// client toggling a subscription used to do that on every tick, within
    /// the flood limit; each uid now has a budget of such raises.
    @Test func demandChurnIsBudgetedPerUID() throws {
        let churner: UInt32 = 2001, other: UInt32 = 2002
        let credentials = ScriptedCredentials([churner, other])
        let policy = EntitlementPolicy(byUID: [churner: [.motion, .altitude], other: [.motion, .altitude]])
        let changes = Locked(0)
        var config = ServiceConfiguration(socketPath: uniqueSocketPath("churn"))
        config.demandRaiseLimit = 5
        config.demandRaiseWindowNs = 3_600_000_000_000 // no new budget during the test
        let server = try ServiceServer(configuration: config, policy: policy, devices: [],
                                       onDemandChange: { _ in changes.withLock { $0 += 1 } },
                                       peerCredentials: credentials.source)
        defer { server.stop() }
        let c = try connectClient(server)
        let d = try connectClient(server)
        var subscribed = 0
        var refused: [JSONValue] = []
        for i in 0..<20 {
            c.request(#"{"class":"subscribe","stream":"altitude","id":\#(i)}"#)
            let m = try #require(c.readMessage())
            if m.string("class") == "subscribed" { subscribed += 1 } else { refused.append(m) }
            c.request(#"{"class":"unsubscribe","stream":"altitude"}"#)
            #expect(c.waitFor("unsubscribed").0 != nil, "asking for less is never refused")
        }
        #expect(subscribed == 5)
        #expect(refused.count == 15)
        #expect(refused.allSatisfy {
            $0.string("code") == "tooManyDemandChanges" && $0.string("stream") == "altitude"
                && $0.bool("closesConnection") == false && $0["id"] != nil
        })
        #expect(changes.withLock { $0 } == 10, "5 raises and the 5 unsubscribes that undid them")
        #expect(server.demand().isEmpty)

        // Another uid has its own budget; once it runs the stream, joining it
        // at the same or a slower interval raises nothing and is not refused.
        #expect(subscribe(d, "deviceMotion", interval: 0.01) != nil)
        #expect(subscribe(c, "deviceMotion", interval: 0.01) != nil)
        #expect(subscribe(c, "deviceMotion", interval: 0.5) != nil)
        c.request(#"{"class":"subscribe","stream":"deviceMotion","interval_s":0.005}"#)
        #expect(c.waitFor("error").0?.string("code") == "tooManyDemandChanges")
        #expect(server.demand() == [.deviceMotion: 0.01])
        #expect(c.barrier() != nil, "the connection stays")
    }

    @Test func connectionLimitsAreValidated() {
        for configure: (inout ServiceConfiguration) -> Void in [{ $0.maxClientsPerUID = 0 }, { $0.maxUnentitledClients = -1 },
                                                                 { $0.demandRaiseLimit = 0 }, { $0.demandRaiseWindowNs = 999_999 }] {
            #expect(throws: ServiceError.self) { _ = try makeServer("lim", configure: configure) }
        }
        let settings = ServiceSettings(maxClientsPerUID: 4, maxUnentitledClients: 0)
        let config = ServiceConfiguration(settings)
        #expect(config.maxClientsPerUID == 4 && config.maxUnentitledClients == 0)
        let window = ServiceConfiguration(ServiceSettings(demandRaiseLimit: 3, demandRaiseWindowSeconds: 2.5))
        #expect(window.demandRaiseLimit == 3 && window.demandRaiseWindowNs == 2_500_000_000)
        #expect(ServiceConfiguration(ServiceSettings(demandRaiseWindowSeconds: .infinity)).demandRaiseWindowNs == 0)
        #expect(ServiceConfiguration().maxClientsPerUID == 64 && ServiceConfiguration().maxUnentitledClients == 8)
    }

    @Test func halfClosedClientStillReceivesRepliesAndSamples() throws {
        let server = try makeServer("half")
        defer { server.stop() }
        let c = try connectClient(server)
        c.request(#"{"class":"subscribe","stream":"accelerometer"}"#)
        _ = Glibc.shutdown(c.fd, Int32(SHUT_WR)) // like `socat` after its stdin ends
        #expect(c.waitFor("subscribed").0 != nil)
        // No barrier is possible (the client cannot send), so publish and read.
        for i in 0..<5 { server.publish(.accelerometer(accelerometerSample(i))) }
        var stamps: [UInt64] = []
        #expect(readSamples(c, until: 5, into: &stamps))
        #expect(stamps.count == 5)
    }

    @Test func deferredWakePublishesATickAtOnce() throws {
        let server = try makeServer("tick")
        defer { server.stop() }
        let c = try connectClient(server)
        _ = subscribe(c, "accelerometer")
        _ = subscribe(c, "deviceMotion")
        for i in 0..<10 {
            server.publish(.accelerometer(accelerometerSample(i)), wake: false)
            server.publish(.deviceMotion(motionSample(i)), wake: false)
            server.wakeService()
        }
        var stamps: [UInt64] = []
        #expect(readSamples(c, until: 20, into: &stamps))
        #expect(stamps.count == 20)
    }

    @Test func aLineOfExactlyTheLimitIsStillARequest() throws {
        let server = try makeServer("lim")
        defer { server.stop() }
        let c = try connectClient(server)
        let head = #"{"class":"ping","pad":""#
        let tail = #""}"#
        let line = head + String(repeating: "p", count: 4096 - head.utf8.count - tail.utf8.count) + tail
        #expect(line.utf8.count == 4096)
        c.request(line)
        #expect(c.waitFor("pong").0 != nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func stopDoesNotWaitForAStuckClient() throws {
        let server = try makeServer("stuckstop", configure: {
            $0.socketSendBufferBytes = 4096
            $0.queueCapacity = 8
        })
        let stuck = try connectClient(server, receiveBuffer: 1024)
        _ = subscribe(stuck, "deviceMotion")
        for i in 0..<200 { server.publish(.deviceMotion(motionSample(i))) }
        let other = try connectClient(server)
        _ = other.barrier() // the ring is drained: the stuck client's socket is full
        server.stop(reason: "test")
        #expect(other.waitFor("shutdown").0?.string("reason") == "test")
        #expect(access(server.socketPath, F_OK) != 0)
    }
}
