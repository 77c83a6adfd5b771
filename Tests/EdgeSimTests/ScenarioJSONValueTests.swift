import Testing
@testable import EdgeSim

// A stand-in for a chip model's imperfections type: Codable, camelCase
// keys, optional members with defaults.
private struct AxisErrors: Decodable, Equatable {
    var noiseScale: Double
    var bias: [Double]
    var selfTestCodes: [UInt8]?
    var mode: String?
    var enabled: Bool?
}

@Suite("ScenarioJSONValue decoding")
struct ScenarioJSONValueTests {
    let value: ScenarioJSONValue = .object([
        "mpu6050@0x68": .object([
            "gyro": .object(["noiseScale": .number(0.5), "bias": .array([.number(0.01), .number(-0.02), .number(0)]),
                             "selfTestCodes": .array([.number(14), .number(15)]), "mode": .string("x"), "enabled": .bool(true)]),
            "accel": .object(["noiseScale": .number(1), "bias": .array([])]),
        ]),
    ])

    @Test("decodes into a chip model's own Decodable type without Foundation")
    func decodesStruct() throws {
        let gyro = try value["mpu6050@0x68"]?["gyro"]?.decode(AxisErrors.self)
        #expect(gyro == AxisErrors(noiseScale: 0.5, bias: [0.01, -0.02, 0], selfTestCodes: [14, 15], mode: "x", enabled: true))
        let accel = try value["mpu6050@0x68"]?["accel"]?.decode(AxisErrors.self)
        #expect(accel == AxisErrors(noiseScale: 1, bias: [], selfTestCodes: nil, mode: nil, enabled: nil))
        let all = try value.decode([String: [String: AxisErrors]].self)
        #expect(all["mpu6050@0x68"]?["gyro"]?.noiseScale == 0.5)
    }

    @Test("errors name the key path and what was expected")
    func errors() {
        let bad: ScenarioJSONValue = .object(["noiseScale": .string("high"), "bias": .array([])])
        do {
            _ = try bad.decode(AxisErrors.self, codingPath: [ScenarioAnyKey(stringValue: "imperfections")])
            Issue.record("no error")
        } catch let DecodingError.typeMismatch(_, c) {
            #expect(c.codingPath.map(\.stringValue) == ["imperfections", "noiseScale"])
            #expect(c.debugDescription == "expected a number, found a string")
        } catch { Issue.record("\(error)") }
        let fraction: ScenarioJSONValue = .object(["noiseScale": .number(1), "bias": .array([]), "selfTestCodes": .array([.number(1.5)])])
        #expect(throws: DecodingError.self) { try fraction.decode(AxisErrors.self) }
        let missing: ScenarioJSONValue = .object(["bias": .array([])])
        #expect(throws: DecodingError.self) { try missing.decode(AxisErrors.self) }
    }
}
