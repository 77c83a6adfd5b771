// The sample fast path of ServerMessage.decode(line:) (SampleScan: no JSON
// tree, no allocation) against the JSON tree, the reference: every stream,
// many random samples, written by the agent's own MessageEncoder.
import Testing
import EdgeValues
@testable import EdgeProtocol

/// SplitMix64: a seeded generator, so a failure repeats.
private struct Seeded: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private extension Seeded {
    /// Finite doubles of every kind the wire carries: small, large, negative,
    /// exact zero, many digits.
    mutating func double() -> Double {
        switch UInt8.random(in: 0...5, using: &self) {
        case 0: return 0
        case 1: return Double.random(in: -1...1, using: &self)
        case 2: return Double.random(in: -1e5...1e5, using: &self)
        case 3: return Double.random(in: -1e-300...1e-300, using: &self)
        case 4: return Double(Int.random(in: -1000...1000, using: &self))
        default: return Double(sign: Bool.random(using: &self) ? .minus : .plus,
                               exponent: Int.random(in: -1000...1000, using: &self),
                               significand: Double.random(in: 1..<2, using: &self))
        }
    }
    mutating func vector() -> Vector3 { Vector3(x: double(), y: double(), z: double()) }
    mutating func quaternion() -> Quaternion { Quaternion(w: double(), x: double(), y: double(), z: double()) }
    mutating func pick<E: CaseIterable>(_: E.Type) -> E { E.allCases.randomElement(using: &self)! }
    mutating func time() -> UInt64 { UInt64.random(in: 0...UInt64.max, using: &self) }
    mutating func motion() -> DeviceMotionSample {
        let frame = pick(ReferenceFrame.self)
        return DeviceMotionSample(timestampNs: time(), attitude: quaternion(), gravity: vector(), userAcceleration: vector(),
                                  rotationRate: vector(), magneticField: vector(),
                                  magneticFieldAccuracy: pick(MagneticFieldCalibrationAccuracy.self),
                                  headingDeg: Bool.random(using: &self) ? double() : nil, referenceFrame: frame,
                                  attitude6D: quaternion(), northYawDeg: Bool.random(using: &self) ? double() : nil,
                                  northYawState: pick(NorthYawState.self))
    }
    mutating func sample(_ stream: StreamName) -> Sample? {
        switch stream {
        case .accelerometer: return .accelerometer(AccelerometerSample(timestampNs: time(), acceleration: vector()))
        case .accelerometerBatch: return .accelerometerBatch(AccelerometerSample(timestampNs: time(), acceleration: vector()))
        case .gyroscope: return .gyroscope(GyroscopeSample(timestampNs: time(), rotationRate: vector()))
        case .magnetometer: return .magnetometer(MagnetometerSample(timestampNs: time(), magneticField: vector()))
        case .deviceMotion: return .deviceMotion(motion())
        case .deviceMotionBatch: return .deviceMotionBatch(motion())
        case .accessoryMotion: return .accessoryMotion(motion())
        case .altitude: return .altitude(AltitudeSample(timestampNs: time(), relativeAltitude: double(), pressure: double(), temperature: double()))
        case .absoluteAltitude:
            return .absoluteAltitude(AbsoluteAltitudeSample(timestampNs: time(), altitude: double(), accuracy: double(), precision: double()))
        case .submersion:
            return .submersion(SubmersionSample(timestampNs: time(), depth: double(), pressure: double(), surfacePressure: double(),
                                                temperature: double(), state: pick(SubmersionState.self),
                                                depthState: pick(SubmersionDepthState.self), maximumDepth: double(),
                                                temperatureUncertainty: double()))
        case .pedometer:
            return .pedometer(PedometerSample(timestampNs: time(), startNs: time(), steps: UInt32.random(in: 0...UInt32.max, using: &self),
                                              distance: double(), floorsAscended: UInt32.random(in: 0...UInt32.max, using: &self),
                                              floorsDescended: UInt32.random(in: 0...9, using: &self), currentCadence: double(),
                                              currentPace: double(), averageActivePace: double()))
        case .humidity: return .humidity(HumiditySample(timestampNs: time(), relativeHumidity: double()))
        case .pedometerEvent: return .pedometerEvent(PedometerEventSample(timestampNs: time(), type: pick(PedometerEventType.self)))
        case .activity:
            return .activity(ActivitySample(timestampNs: time(), startNs: time(),
                                            flags: ActivityFlags(rawValue: UInt8.random(in: 0...63, using: &self)),
                                            confidence: pick(ActivityConfidence.self)))
        case .accessoryConnection: return nil
        }
    }
}

private func line(_ sample: Sample, id: RequestID? = nil) -> [UInt8] {
    var w = JSONWriter(capacity: 1024)
    MessageEncoder.sample(sample, id: id, into: &w)
    var bytes = w.bytes
    if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
    return bytes
}

@Suite struct SampleFastPathTests {
    /// For 150 random samples of every stream that carries samples: the
    /// encoder's line takes the fast path, and it decodes to what the JSON
    /// tree decodes it to.
    @Test func everyStreamDecodesAsTheTreeDoes() throws {
        var g = Seeded(state: 22)
        var checked = 0
        for stream in StreamName.allCases {
            for _ in 0..<150 {
                guard let s = g.sample(stream) else { continue }
                for bytes in [line(s), line(s, id: .number("7"))] {
                    let fast = bytes.withUnsafeBufferPointer { SampleScan.decode($0) }
                    let tree = try ServerMessage.decodeWithTree(line: bytes)
                    #expect(fast != nil, "\(String(decoding: bytes, as: UTF8.self))")
                    guard let fast else { continue }
                    #expect(ServerMessage.sample(fast) == tree, "\(String(decoding: bytes, as: UTF8.self))")
                    #expect(try ServerMessage.decode(line: bytes) == tree)
                    checked += 1
                }
            }
        }
        #expect(checked == 2 * 150 * StreamName.allCases.filter(\.carriesSamples).count)
    }

    /// A value the agent could not compute (NaN, written as null) decodes
    /// to NaN on both paths.
    @Test func nullIsNaNOnBothPaths() throws {
        let s = Sample.altitude(AltitudeSample(timestampNs: 5, relativeAltitude: .nan, pressure: 101_325, temperature: .nan))
        let bytes = line(s)
        guard case .altitude(let a)? = bytes.withUnsafeBufferPointer({ SampleScan.decode($0) }),
              case .sample(.altitude(let b)) = try ServerMessage.decodeWithTree(line: bytes) else {
            Issue.record("not an altitude sample on both paths"); return
        }
        #expect(a.relativeAltitude.isNaN && b.relativeAltitude.isNaN && a.temperature.isNaN && a.pressure == b.pressure)
    }

    /// Lines the agent does not write go through the tree: the result (or
    /// the error) is the tree's.
    @Test func otherLinesFallBackToTheTree() throws {
        let cases = [
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":40.5}"#,
            #"{"class":"sample", "stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":40.5}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":40.5,"relativeHumidity_pct":41}"#,
            #"{"class":"sample","stream":"hum\u0069dity","timestamp_ns":5,"relativeHumidity_pct":40.5}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":-5,"relativeHumidity_pct":40.5}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5.5,"relativeHumidity_pct":40.5}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":99999999999999999999,"relativeHumidity_pct":1}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":"40"}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5}"#,
            #"{"class":"sample","stream":"gyroscope","timestamp_ns":5,"rotationRate_radps":{"x":1,"y":2}}"#,
            #"{"class":"sample","stream":"gyroscope","timestamp_ns":5,"rotationRate_radps":{"x":1,"y":2,"z":[3]}}"#,
            #"{"class":"sample","stream":"nosuch","timestamp_ns":5}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":4e1,"extra":{"a}":1}}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":01}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":1.}"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":40.5"#,
            #"{"class":"sample","stream":"humidity","timestamp_ns":5,"relativeHumidity_pct":40.5}x"#,
        ]
        for text in cases {
            let bytes = Array(text.utf8)
            let tree = Result { () throws(ServerMessage.DecodeError) in try ServerMessage.decodeWithTree(line: bytes) }
            let both = Result { () throws(ServerMessage.DecodeError) in try ServerMessage.decode(line: bytes) }
            #expect(both == tree, "\(text)")
        }
    }
}
