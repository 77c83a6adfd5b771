import Testing
import EdgeFusion
@testable import EdgeConfig

@Suite struct SubmersionConfigTests {
    func decode(_ text: String) throws -> AgentConfig { try ConfigLoader.decode(AgentConfig.self, from: text, file: "c.json5") }

    @Test func waterTypesAndGravity() throws {
        #expect(try decode("{}").submersion.water == .salt)
        #expect(try decode(#"{ submersion: { water: "fresh" } }"#).submersion.water == .fresh)
        #expect(try decode(#"{ submersion: { water: 1003.5 } }"#).submersion.water == .density(1003.5))
        let t = try decode(#"{ submersion: { water: "teos10", latitude_deg: 43.3 } }"#).submersion
        #expect(t.water == .teos10 && t.latitudeDeg == 43.3)
        #expect(try decode(#"{ submersion: { gravity: "normal", latitude_deg: 10 } }"#).submersion.gravity == "normal")
    }

    @Test func badValuesAreErrorsThatSayWhat() {
        for (text, says) in [(#"{ submersion: { water: "brine" } }"#, "expected fresh, en13319, salt, teos10"),
                             (#"{ submersion: { water: 30 } }"#, "500…2000"),
                             (#"{ submersion: { water: "teos10" } }"#, "need latitude_deg"),
                             (#"{ submersion: { latitude_deg: 95 } }"#, "95"),
                             (#"{ submersion: { gravity: "moon" } }"#, "standard or normal"),
                             (#"{ submersion: { density: 1000 } }"#, "density")] {
            #expect { try decode(text) } throws: { "\($0)".contains(says) }
        }
    }
}
