import Testing
import EdgeProtocol
@testable import EdgeService

@Suite("Wire encoding")
struct ProtocolEncodingTests {
    @Test func doublesRoundTripAndNonFiniteBecomesNull() throws {
        var w = JSONWriter()
        let values: [Double] = [0, -0.0, 1, 0.1, 9.80665, 1e-5, Double.leastNonzeroMagnitude, 1.7976931348623157e308, -123456.789, 1e16]
        w.beginArray()
        for v in values { w.double(v) }
        w.double(.nan)
        w.double(.infinity)
        w.endArray()
        #expect(w.nonFiniteCount == 2)
        let parsed = try JSONValue.parse(w.bytes)
        guard case .array(let a) = parsed else { Issue.record("not an array"); return }
        #expect(a.count == values.count + 2)
        for (v, j) in zip(values, a) {
            guard case .number(let d, _) = j else { Issue.record("not a number: \(j)"); continue }
            #expect(d == v && d.sign == v.sign, "round trip of \(v)")
        }
        #expect(a[values.count] == .null)
        #expect(a[values.count + 1] == .null)
    }

    @Test func integersAndStringsAreEscaped() throws {
        var w = JSONWriter()
        w.beginObject()
        w.key("a"); w.int(UInt64.max)
        w.key("b"); w.int(Int64.min)
        w.key("c"); w.int(0)
        w.key("s"); w.string("quote\" back\\ nl\n tab\t bell\u{07} é")
        w.endObject()
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text.contains(#""a":18446744073709551615"#))
        #expect(text.contains(#""b":-9223372036854775808"#))
        #expect(text.contains(#""c":0"#))
        #expect(text.contains(#"\u0007"#))
        let v = try JSONValue.parse(w.bytes)
        #expect(v.string("s") == "quote\" back\\ nl\n tab\t bell\u{07} é")
    }

    @Test func deviceMotionSampleKeysCarryUnits() throws {
        var w = JSONWriter()
        MessageEncoder.sample(.deviceMotion(motionSample(3)), into: &w)
        #expect(w.bytes.last == UInt8(ascii: "\n"))
        #expect(w.bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1)
        let m = try JSONValue.parse(w.bytes.dropLast())
        #expect(m.string("class") == "sample")
        #expect(m.string("stream") == "deviceMotion")
        #expect(m.number("timestamp_ns") == Double(baseTimestamp + 3 * period100Hz))
        #expect(m["attitude"]?.number("w") == 1)
        #expect(m.vector("gravity_mps2")?.2 == -9.80665)
        #expect(m.vector("userAcceleration_mps2")?.0 == 0.03)
        #expect(m.vector("rotationRate_radps")?.2 == 0.5)
        #expect(m.vector("magneticField_uT")?.1 == -3.25)
        #expect(m.string("magneticFieldAccuracy") == "high")
        #expect(m.number("heading_deg") == 90)
        #expect(m.string("frame") == "xMagneticNorthZVertical")
    }

    /// What every reference frame needs (docs/protocol.md, device motion):
    /// the 6D attitude, the yaw to magnetic north and its state travel in
    /// every device-motion line and decode to the same values; a line of an
    /// agent before them decodes to what its frame implies.
    @Test func deviceMotionCarriesWhatEveryFrameNeeds() throws {
        var s = motionSample(3)
        s.attitude6D = Quaternion(yaw: 0.25)
        s.northYawDeg = -61.5
        s.northYawState = .held
        var w = JSONWriter()
        MessageEncoder.sample(.deviceMotion(s), into: &w)
        let m = try JSONValue.parse(w.bytes.dropLast())
        #expect(m["attitude6D"]?.number("z") == Quaternion(yaw: 0.25).z)
        #expect(m.number("northYaw_deg") == -61.5)
        #expect(m.string("northYawState") == "held")
        guard case .sample(.deviceMotion(let back)) = try ServerMessage.decode(line: w.bytes.dropLast()) else {
            Issue.record("not a device-motion sample"); return
        }
        #expect(back == s)
        // No field yet: null, "none".
        s.northYawDeg = nil; s.northYawState = .none
        w.reset()
        MessageEncoder.sample(.deviceMotion(s), into: &w)
        #expect(try JSONValue.parse(w.bytes.dropLast())["northYaw_deg"] == .null)
        guard case .sample(.deviceMotion(let none)) = try ServerMessage.decode(line: w.bytes.dropLast()) else {
            Issue.record("not a device-motion sample"); return
        }
        #expect(none == s)
        // An older agent's line (no attitude6D): its north attitude is the
        // 6D attitude of a filter whose north yaw is 0, live.
        let old = #"{"class":"sample","stream":"deviceMotion","timestamp_ns":5,"attitude":{"w":1,"x":0,"y":0,"z":0},"gravity_mps2":{"x":0,"y":0,"z":9.8},"userAcceleration_mps2":{"x":0,"y":0,"z":0},"rotationRate_radps":{"x":0,"y":0,"z":0},"magneticField_uT":{"x":1,"y":0,"z":0},"magneticFieldAccuracy":"high","heading_deg":270,"frame":"xMagneticNorthZVertical"}"#
        guard case .sample(.deviceMotion(let o)) = try ServerMessage.decode(line: Array(old.utf8)) else {
            Issue.record("not a device-motion sample"); return
        }
        #expect(o.attitude6D == .identity && o.northYawDeg == 0 && o.northYawState == .live)
    }

    @Test func everyStreamEncodesValidJSON() throws {
        let samples: [Sample] = [
            .accelerometer(accelerometerSample(0)),
            .gyroscope(GyroscopeSample(timestampNs: 1, rotationRate: Vector3(x: 1, y: 2, z: 3))),
            .magnetometer(MagnetometerSample(timestampNs: 1, magneticField: Vector3(x: 1, y: 2, z: 3))),
            .deviceMotion(motionSample(0)),
            .accelerometerBatch(accelerometerSample(1)),
            .deviceMotionBatch(motionSample(1)),
            .accessoryMotion(DeviceMotionSample(timestampNs: 1, attitude: .identity, gravity: .zero,
                                                userAcceleration: .zero, rotationRate: .zero)),
            .altitude(AltitudeSample(timestampNs: 1, relativeAltitude: 1.5, pressure: 101325, temperature: 21.5)),
            .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: 1, altitude: 120, accuracy: 8, precision: 0.1)),
            .submersion(SubmersionSample(timestampNs: 1, depth: 2, pressure: 121000, surfacePressure: 101325,
                                         temperature: 14, state: .submerged)),
        ]
        let expectedKey: [StreamName: String] = [
            .accelerometer: "acceleration_mps2", .gyroscope: "rotationRate_radps",
            .magnetometer: "magneticField_uT", .deviceMotion: "gravity_mps2",
            .accelerometerBatch: "acceleration_mps2", .deviceMotionBatch: "userAcceleration_mps2",
            .accessoryMotion: "attitude", .altitude: "pressure_pa", .absoluteAltitude: "accuracy_m",
            .submersion: "depth_m",
        ]
        for s in samples {
            var w = JSONWriter()
            MessageEncoder.sample(s, into: &w)
            let m = try JSONValue.parse(w.bytes)
            #expect(m.string("stream") == s.stream.rawValue)
            #expect(m[expectedKey[s.stream]!] != nil, "\(s.stream) has \(expectedKey[s.stream]!)")
            #expect(m.number("timestamp_ns") == Double(s.timestampNs))
        }
        // accessoryMotion without a heading says null, not a number.
        var w = JSONWriter()
        MessageEncoder.sample(samples[6], into: &w)
        #expect(try JSONValue.parse(w.bytes)["heading_deg"] == .null)
    }

    @Test func everyStreamNeedsAnEntitlement() {
        #expect(StreamName.deviceMotion.entitlement == .motion)
        #expect(StreamName.accessoryMotion.entitlement == .motion)
        #expect(StreamName.altitude.entitlement == .altitude)
        #expect(StreamName.absoluteAltitude.entitlement == .altitude)
        #expect(StreamName.submersion.entitlement == .submersionShallow)
        #expect(Set(StreamName.allCases.map(\.index)) == Set(0..<StreamName.count))
    }
}

@Suite("Request decoding")
struct RequestDecodingTests {
    func decode(_ s: String) throws(Request.DecodeError) -> Request { try Request.decode(line: Array(s.utf8)) }

    @Test func validRequests() throws {
        #expect(try decode(#"{"class":"devices"}"#).kind == .devices)
        #expect(try decode(#" { "class" : "poll", "stream" : "altitude" } "#).kind == .poll(.altitude))
        #expect(try decode(#"{"class":"subscribe","stream":"deviceMotion","interval_s":0.01}"#).kind
                == .subscribe(.deviceMotion, intervalNs: 10_000_000))
        #expect(try decode(#"{"class":"subscribe","stream":"gyroscope"}"#).kind
                == .subscribe(.gyroscope, intervalNs: 0))
        let r = try decode(#"{"class":"unsubscribe","stream":"magnetometer","id":17}"#)
        #expect(r.kind == .unsubscribe(.magnetometer))
        #expect(r.id == .number("17"))
        #expect(try decode(#"{"class":"stats","id":"a\"b"}"#).id == .string("a\"b"))
    }

    @Test func requestIDsEveryReaderHoldsExactlyAreAccepted() throws {
        #expect(try decode(#"{"class":"ping","id":9007199254740991}"#).id == .number("9007199254740991"))
        #expect(try decode(#"{"class":"ping","id":-9007199254740991}"#).id == .number("-9007199254740991"))
        #expect(try decode(#"{"class":"ping","id":0}"#).id == .number("0"))
        #expect(try decode(#"{"class":"ping","id":-0}"#).id == .number("-0"))
        #expect(try decode(#"{"class":"ping","id":null}"#).id == nil)
        let longest = String(repeating: "é", count: 128) // 256 bytes
        #expect(try decode(#"{"class":"ping","id":"\#(longest)"}"#).id == .string(longest))
        // Tiny intervals underflow to 0 (every sample), never to NaN.
        #expect(try decode(#"{"class":"subscribe","stream":"altitude","interval_s":1e-400}"#).kind
                == .subscribe(.altitude, intervalNs: 0))
        #expect(try decode(#"{"class":"subscribe","stream":"altitude","interval_s":3600}"#).kind
                == .subscribe(.altitude, intervalNs: 3_600_000_000_000))
    }

    @Test(arguments: [
        (#"{nope"#, ErrorCode.malformedRequest),
        (#"[1,2]"#, .malformedRequest),
        (#"{"stream":"altitude"}"#, .malformedRequest),
        (#"{"class":"subscribe"}"#, .malformedRequest),
        (#"{"class":"subscribe","stream":"x"}"#, .unknownStream),
        (#"{"class":"subscribe","stream":"altitude","interval_s":-1}"#, .badInterval),
        (#"{"class":"subscribe","stream":"altitude","interval_s":"fast"}"#, .badInterval),
        (#"{"class":"subscribe","stream":"altitude","interval_s":1e400}"#, .badInterval),
        (#"{"class":"launch"}"#, .unknownRequest),
        (#"{"class":"devices"} x"#, .malformedRequest),
        (#"{"class":"devices","id":[1]}"#, .badRequestID),
        (#"{"class":"devices","id":true}"#, .badRequestID),
        (#"{"class":"ping","id":1e400}"#, .badRequestID),
        (#"{"class":"ping","id":-1e400}"#, .badRequestID),
        (#"{"class":"ping","id":1e3}"#, .badRequestID),
        (#"{"class":"ping","id":1.5}"#, .badRequestID),
        (#"{"class":"ping","id":9007199254740992}"#, .badRequestID),
        (#"{"class":"ping","id":-9007199254740992}"#, .badRequestID),
        (#"{"class":"ping","id":1\#(String(repeating: "0", count: 400))}"#, .badRequestID),
        (#"{"class":"ping","id":"\#(String(repeating: "i", count: 257))"}"#, .badRequestID),
        (#"{"class":"subscribe","stream":"altitude","interval_s":-1e400}"#, .badInterval),
        (#"{"class":"subscribe","stream":"altitude","interval_s":3600.000001}"#, .badInterval),
        (#"{"class":"subscribe","stream":"altitude","interval_s":1\#(String(repeating: "9", count: 400))}"#, .badInterval),
        (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), .malformedRequest),
    ])
    func invalidRequests(line: String, code: ErrorCode) {
        do {
            _ = try decode(line)
            Issue.record("accepted \(line)")
        } catch {
            #expect(error.code == code, "\(line): \(error.message)")
        }
    }

    @Test func parserHandlesEscapesAndRejectsJunk() throws {
        let v = try JSONValue.parse(Array(#"{"a":"\u00e9\ud83d\ude00\n","b":[true,false,null,-0.5e2]}"#.utf8))
        #expect(v.string("a") == "é😀\n")
        #expect(v["b"] == .array([.bool(true), .bool(false), .null, .number(-50, literal: "-0.5e2")]))
        for junk in ["", "01", "1.", "\"\\x\"", "\"\\ud800\"", "{\"a\" 1}", "tru", "\"a\nb\"", "{\"a\":1,}"] {
            #expect(throws: JSONValue.ParseError.self, "\(junk)") { try JSONValue.parse(Array(junk.utf8)) }
        }
    }
}

@Suite("Decimation")
struct DecimationTests {
    @Test func everyFifthSampleAt50msFrom100Hz() {
        var sub = Subscription(intervalNs: 50_000_000)
        let due = (0..<100).filter { sub.isDue(baseTimestamp + UInt64($0) * period100Hz) }
        #expect(due == Array(stride(from: 0, to: 100, by: 5)))
    }

    @Test func jitterKeepsTheAverageRate() {
        var sub = Subscription(intervalNs: 50_000_000)
        // ±1 ms jitter on a 10 ms grid: still 20 deliveries per second.
        let jitter: [Int64] = [0, 1_000_000, -1_000_000, 500_000, -700_000]
        var delivered = 0
        for i in 0..<1000 {
            let ts = UInt64(Int64(baseTimestamp) + Int64(i) * 10_000_000 + jitter[i % jitter.count])
            if sub.isDue(ts) { delivered += 1 }
        }
        #expect(abs(delivered - 200) <= 2)
    }

    /// A client asking for the chip's own rate gets every sample, whether the
    /// chip's clock runs 0.5 % fast or slow (the grid must not drift ahead
    /// of the samples and drop one whenever it has).
    @Test(arguments: [0.995, 1.005])
    func everySampleAtTheChipsRateWhateverItsClockError(_ scale: Double) {
        var sub = Subscription(intervalNs: 10_000_000)
        let period = 10_000_000 * scale
        let due = (0..<2000).filter { sub.isDue(baseTimestamp + UInt64((Double($0) * period).rounded())) }
        #expect(due.count == 2000, "\(2000 - due.count) samples dropped")
    }

    /// What the decimator promises under load, which a test of a real
    /// process may assert: it keeps its grid, so a sample admitted late (a
    /// stalled loop lost samples, or capture stamps jitter) can be followed
    /// by one on the grid a short gap later, but no run of samples is
    /// faster than asked. Admitted i < j: t_j − t_i > (j − i − 1)(I − I/16)
    /// − 2 I/16. A 200 Hz source with ±2.5 ms jitter and bursts of lost
    /// samples, decimated to 50 Hz (pseudo-random, fixed seed).
    @Test func noRunOfAdmittedSamplesIsFasterThanAsked() {
        let interval: UInt64 = 20_000_000, tolerance = interval / 16
        var d = Decimator(intervalNs: interval)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return seed >> 33 }
        var admitted: [UInt64] = []
        var t: UInt64 = 1_000_000_000
        var shortest = UInt64.max
        for _ in 0..<40_000 {
            t += 5_000_000
            if next() % 50 == 0 { t += 5_000_000 * (1 + next() % 6) }   // a burst lost
            let ts = t + next() % 5_000_000 - 2_500_000
            if d.admit(ts) {
                if let last = admitted.last { shortest = min(shortest, ts &- last) }
                admitted.append(ts)
            }
        }
        #expect(admitted.count > 8_000)
        #expect(shortest < interval - tolerance, "the late-then-on-grid case happened (\(shortest) ns)")
        var worst = Int64.max
        for k in 1...20 {
            let bound = Int64(k - 1) * Int64(interval - tolerance) - 2 * Int64(tolerance)
            for i in 0..<(admitted.count - k) {
                worst = min(worst, Int64(admitted[i + k] - admitted[i]) - bound)
            }
        }
        #expect(worst > 0, "a run of admitted samples faster than the bound by \(-worst) ns")
    }

    @Test func zeroIntervalDeliversEverything() {
        var sub = Subscription(intervalNs: 0)
        #expect((0..<50).allSatisfy { sub.isDue(UInt64($0)) })
    }

    @Test func queueDropsOldest() {
        var q = MessageQueue(capacity: 3)
        var drops = 0
        var pool = LinePool()
        for i in 0..<5 {
            let line = [UInt8(i)].withUnsafeBufferPointer { pool.line($0) }
            if q.push(line) { drops += 1 }
        }
        #expect(drops == 2)
        #expect(q.popFirst()?.bytes == [2])
        #expect(q.popFirst()?.bytes == [3])
        #expect(q.popFirst()?.bytes == [4])
        #expect(q.popFirst() == nil)
    }

    /// A full queue sheds its oldest sample, never a reply or an event: a
    /// slow client that lost the `connection` event of a device that
    /// stopped would go on showing it as connected.
    @Test func aFullQueueShedsSamplesNotEventsOrReplies() {
        var q = MessageQueue(capacity: 4)
        var pool = LinePool()
        func line(_ b: UInt8) -> Line { [b].withUnsafeBufferPointer { pool.line($0) } }
        var drops = 0
        // reply 100, samples 1 2, event 200, then samples 3…9.
        if q.push(line(100)) { drops += 1 }
        for b: UInt8 in [1, 2] where q.push(line(b), sample: true) { drops += 1 }
        if q.push(line(200)) { drops += 1 }
        for b: UInt8 in 3...9 where q.push(line(b), sample: true) { drops += 1 }
        #expect(drops == 7)
        #expect(q.sampleCount == 2)
        var out: [UInt8] = []
        while let l = q.popFirst() { out.append(contentsOf: l.bytes) }
        #expect(out == [100, 200, 8, 9], "the reply and the event stay, in order, with the newest samples")
        #expect(q.sampleCount == 0)

        // A queue holding no sample (requests never read) still stays bounded.
        for b: UInt8 in 10...15 { _ = q.push(line(b)) }
        #expect(q.count == 4)
        out = []
        while let l = q.popFirst() { out.append(contentsOf: l.bytes) }
        #expect(out == [12, 13, 14, 15])

        // The sample to shed sits behind control lines that wrapped round.
        for b: UInt8 in [20, 21] { _ = q.push(line(b)) }
        _ = q.popFirst(); _ = q.popFirst()
        for b: UInt8 in [30, 31, 32] { _ = q.push(line(b)) }
        _ = q.push(line(40), sample: true)
        let shed = q.push(line(41), sample: true)
        #expect(shed)
        out = []
        while let l = q.popFirst() { out.append(contentsOf: l.bytes) }
        #expect(out == [30, 31, 32, 41])
    }

    /// A pooled line is reused only once no queue holds it: reusing one still
    /// queued would change a line a client has not been sent yet.
    @Test func linePoolNeverReusesALineStillQueued() {
        var pool = LinePool()
        var q = MessageQueue(capacity: 64)
        var held: [ObjectIdentifier] = []
        for i in 0..<40 {
            let line = [UInt8(i)].withUnsafeBufferPointer { pool.line($0) }
            #expect(!held.contains(ObjectIdentifier(line)), "line \(i) is one still queued")
            held.append(ObjectIdentifier(line))
            _ = q.push(line)
        }
        // Every queued line still reads what was encoded into it.
        for i in 0..<40 { #expect(q.popFirst()?.bytes == [UInt8(i)]) }
        // Released: the pool reuses them rather than growing.
        let again = [UInt8(99)].withUnsafeBufferPointer { pool.line($0) }
        #expect(held.contains(ObjectIdentifier(again)))
    }

    @Test func ringCountsOverrunsInsteadOfBlocking() {
        let ring = SampleRing(minimumCapacity: 4)
        var accepted = 0
        for i in 0..<10 where ring.push(.accelerometer(accelerometerSample(i))) { accepted += 1 }
        #expect(accepted == 4)
        #expect(ring.overruns.load(ordering: .relaxed) == 6)
        var seen: [UInt64] = []
        ring.drain(limit: 100) { seen.append($0.timestampNs) }
        #expect(seen == (0..<4).map { baseTimestamp + UInt64($0) * period100Hz })
        #expect(ring.push(.accelerometer(accelerometerSample(11))))
    }
}

@Suite("Stream names as table keys")
struct StreamNameKeyTests {
    /// Equality and hashing go by the dense index (not the raw String):
    /// they must still agree with the names, so every stream is its own
    /// key and no two streams share one.
    @Test func equalityAndHashingAgreeWithTheNames() {
        let all = StreamName.allCases
        #expect(all.count == StreamName.count)
        #expect(Set(all.map(\.index)) == Set(0..<StreamName.count))
        for a in all {
            for b in all { #expect((a == b) == (a.rawValue == b.rawValue), "\(a) == \(b)") }
            #expect(StreamName(rawValue: a.rawValue).map { $0.hashValue == a.hashValue } == true)
        }
        var table: [StreamName: String] = [:]
        for s in all { table[s] = s.rawValue }
        #expect(table.count == all.count)
        for s in all { #expect(table[s] == s.rawValue) }
        #expect(Set(all).count == all.count)
    }
}
