import Testing
import Foundation
import EdgeProtocol
@testable import EdgeMQTT

/// The humidity stream's scalar topic and Home Assistant entity (issue 17);
/// Tests/Integration/ha-discovery-check.py validates the payload with Home
/// Assistant's own schemas.
@Suite struct HumidityTopicTests {
    @Test func aHumiditySampleIsOneScalarInPercent() throws {
        let e = try #require(ScalarCatalog.entities(of: .humidity).first)
        #expect(ScalarCatalog.entities(of: .humidity).count == 1)
        #expect(e.suffix == "humidity_pct" && e.unit == "%" && e.deviceClass == "humidity" && e.stateClass == "measurement")
        let s = Sample.humidity(HumiditySample(timestampNs: 1, relativeHumidity: 47.26))
        #expect(ScalarCatalog.payloads(of: s) == ["47.3"])
        #expect(ScalarCatalog.streamsWithScalars.contains(.humidity))
    }

    @Test func itsDiscoveryPayloadNamesTheHumidityClass() throws {
        let e = try #require(ScalarCatalog.entities(of: .humidity).first)
        let builder = DiscoveryBuilder(plan: TopicPlan(prefix: "edge", node: "n1", discoveryPrefix: "homeassistant"),
                                       stateQoS: 0, agentVersion: "1")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(builder.config(for: e, intervalS: 1))) as? [String: Any])
        #expect(json["device_class"] as? String == "humidity")
        #expect(json["unit_of_measurement"] as? String == "%")
        #expect((json["state_topic"] as? String)?.hasSuffix("/n1/humidity_pct") == true)
    }
}
