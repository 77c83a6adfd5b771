import Testing
import EdgeProtocol

/// The client-side decoder reads back exactly what the agent encodes.
@Suite("Round trip")
struct RoundTripTests {
    func roundTrip(_ encode: (inout JSONWriter) -> Void) throws -> ServerMessage {
        var w = JSONWriter()
        encode(&w)
        #expect(w.bytes.last == UInt8(ascii: "\n"))
        return try ServerMessage.decode(line: w.bytes.dropLast())
    }

    @Test func everySampleSurvivesEncodingBitForBit() throws {
        let late: UInt64 = 9_500_000_000_000_000_123 // beyond 2^53: decoded exactly
        let samples: [Sample] = [
            .accelerometer(AccelerometerSample(timestampNs: late, acceleration: Vector3(x: 0.1, y: -1e-7, z: 9.80665))),
            .accelerometerBatch(AccelerometerSample(timestampNs: 1, acceleration: Vector3(x: 1 / 3, y: 2 / 3, z: -0.0))),
            .gyroscope(GyroscopeSample(timestampNs: 2, rotationRate: Vector3(x: .pi, y: -.pi / 7, z: 1e-300))),
            .magnetometer(MagnetometerSample(timestampNs: 3, magneticField: Vector3(x: 21.4, y: -3.1, z: -41.7))),
            .deviceMotion(motionSample(7)),
            .deviceMotionBatch(motionSample(8)),
            .accessoryMotion(DeviceMotionSample(timestampNs: 4, attitude: Quaternion(w: 0.5, x: 0.5, y: -0.5, z: 0.5),
                                                gravity: Vector3(x: 0, y: -9.80665, z: 0), userAcceleration: .zero,
                                                rotationRate: .zero)),
            .altitude(AltitudeSample(timestampNs: 5, relativeAltitude: -0.123456789012345, pressure: 101325.5,
                                     temperature: -12.25)),
            .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: 6, altitude: 8848.86, accuracy: 10, precision: 0.01)),
            .submersion(SubmersionSample(timestampNs: 7, depth: 5.99, pressure: 160000, surfacePressure: 101000,
                                         temperature: 9.5, state: .notSubmerged)),
        ]
        for s in samples {
            let m = try roundTrip { MessageEncoder.sample(s, into: &$0) }
            #expect(m == .sample(s))
        }
    }

    @Test func controlMessagesRoundTrip() throws {
        let devices = [DeviceInfo(id: "baro", kind: "bmp280", address: "/dev/i2c-1@0x76", state: .failed,
                                  streams: [.altitude, .absoluteAltitude], rateHz: 25, errorCount: 4, resetCount: 2,
                                  lastError: "chip id 0x00")]
        #expect(try roundTrip { MessageEncoder.devices(devices, id: .number("5"), into: &$0) }
                == .devices(devices, id: .number("5")))
        #expect(try roundTrip { MessageEncoder.subscribed(.gyroscope, intervalS: 0.02, id: .string("g"), into: &$0) }
                == .subscribed(.gyroscope, intervalS: 0.02, id: .string("g")))
        #expect(try roundTrip { MessageEncoder.unsubscribed(.gyroscope, into: &$0) } == .unsubscribed(.gyroscope, id: nil))
        #expect(try roundTrip { MessageEncoder.error(.flood, message: "m", into: &$0) }
                == .error(code: .flood, codeName: "flood", message: "m", stream: nil, id: nil))
        let event = ConnectionEvent(timestampNs: 77, deviceID: "accessoryImu", kind: "mpu6050", connected: true)
        #expect(try roundTrip { MessageEncoder.connection(event, into: &$0) } == .connection(event))
        #expect(try roundTrip { MessageEncoder.shutdown(reason: "SIGTERM", into: &$0) } == .shutdown(reason: "SIGTERM"))
        #expect(try roundTrip { MessageEncoder.pong(timestampNs: 12, id: nil, into: &$0) } == .pong(timestampNs: 12, id: nil))
        let version = try roundTrip {
            MessageEncoder.version(agentVersion: "1.2.3", uid: 1000, gid: 100, entitlements: [.motion],
                                   maxLineBytes: 4096, queueCapacity: 256, into: &$0)
        }
        guard case .version(let info) = version else { Issue.record("not a version line"); return }
        #expect(info.protocolVersion == EdgeProtocolInfo.version)
        #expect(info.entitlements == [.motion])
        #expect(try ServerMessage.decode(line: Array(#"{"class":"futureThing","x":1}"#.utf8)) == .unknown(className: "futureThing"))
    }

    /// Seen while writing FuzzTesting's request target, reproduced with it
    /// (corpus/request/regressions/version-uid-over-32-bits.jsonl): a uid or
    /// gid past UInt32.max trapped in `UInt32(_:)`.
    @Test func aVersionLineWithAUidOrGidPast32BitsIsAnErrorNotATrap() throws {
        func version(uid: String, gid: String) -> [UInt8] {
            Array(#"{"class":"version","protocol":2,"agent":"edge-agent","agentVersion":"0.1.0","uid":\#(uid),"gid":\#(gid),"entitlements":["motion"],"maxLineBytes":4096,"queueCapacity":256}"#.utf8)
        }
        guard case .version(let info) = try ServerMessage.decode(line: version(uid: "4294967295", gid: "4294967295")) else {
            Issue.record("not a version line"); return
        }
        #expect(info.uid == UInt32.max && info.gid == UInt32.max)
        for (uid, gid, key) in [("4294967296", "0", "uid"), ("0", "18446744073709551615", "gid")] {
            do {
                let m = try ServerMessage.decode(line: version(uid: uid, gid: gid))
                Issue.record("decoded \(m)")
            } catch {
                #expect(error.reason == "\"\(key)\" is not a 32-bit unsigned integer")
            }
        }
    }

    @Test func requestsRoundTrip() throws {
        let requests: [Request] = [
            Request(kind: .devices), Request(kind: .streams, id: .number("3")), Request(kind: .stats),
            Request(kind: .ping, id: .string("p")), Request(kind: .poll(.altitude)),
            Request(kind: .unsubscribe(.deviceMotion)), Request(kind: .subscribe(.deviceMotion, intervalNs: 10_000_000)),
            Request(kind: .subscribe(.submersion, intervalNs: 0)),
            Request(kind: .history(.pedometer, fromNs: 1_764_547_200_250_000_001, toNs: 1_764_633_600_000_000_000), id: .number("9")),
            Request(kind: .history(.activity, fromNs: 0, toNs: 0)),
            Request(kind: .history(.activity, fromNs: 0, toNs: Request.maxHistoryNs)),
        ]
        for r in requests {
            var w = JSONWriter()
            r.encode(into: &w)
            #expect(try Request.decode(line: w.bytes.dropLast()) == r)
        }
    }
}
