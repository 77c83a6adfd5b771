import Testing
import Foundation
import EdgeProtocol

/// The humidity stream on the wire (issue 17): a BME280's relative humidity.
@Suite struct HumidityStreamTests {
    @Test func encodesWithItsUnitKeyAndRoundTrips() throws {
        let s = Sample.humidity(HumiditySample(timestampNs: 9_500_000_000_000_000_123, relativeHumidity: 47.125))
        var w = JSONWriter()
        MessageEncoder.sample(s, into: &w)
        // A second reader (Foundation's JSON parser) sees the documented keys.
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: Any])
        #expect(obj["class"] as? String == "sample")
        #expect(obj["stream"] as? String == "humidity")
        #expect(obj["relativeHumidity_pct"] as? Double == 47.125)
        #expect(Set(obj.keys) == ["class", "stream", "timestamp_ns", "relativeHumidity_pct"])
        // Our own decoder reads back exactly what was written.
        #expect(try ServerMessage.decode(line: w.bytes.dropLast()) == .sample(s))
    }

    @Test func needsTheAltitudeEntitlement() {
        #expect(StreamName.humidity.entitlement == .altitude)
        #expect(StreamName.humidity.isPermitted(by: [.altitude]))
        #expect(!StreamName.humidity.isPermitted(by: [.motion, .fitness]))
        #expect(StreamName(rawValue: "humidity") == .humidity && StreamName.humidity.carriesSamples)
        #expect(Sample.humidity(HumiditySample(timestampNs: 5, relativeHumidity: 1)).stream == .humidity)
    }

    @Test func aMissingValueIsADecodeError() {
        let line = Array(#"{"class":"sample","stream":"humidity","timestamp_ns":5}"#.utf8)
        #expect(throws: (any Error).self) { try ServerMessage.decode(line: line[...]) }
    }
}
