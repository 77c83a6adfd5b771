import EdgeFusion
import Foundation
import Testing
@testable import EdgeSim

/// The complete examples in the documentation decode and do what the text says.
@Suite("Scenario documentation examples")
struct ScenarioDocsTests {
    static func examples(_ relativePath: String) throws -> [String] {
        let url = scenarioDirectory.deletingLastPathComponent().appendingPathComponent(relativePath)
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.components(separatedBy: "```json5\n").dropFirst()
            .compactMap { $0.components(separatedBy: "\n```").first }
            .filter { $0.contains("description:") && !$0.contains("…") }
    }

    @Test("README's complete example is the library's lift-3m")
    func readme() throws {
        let blocks = try Self.examples("scenarios/README.md")
        #expect(blocks.count == 1)
        let s = try decodeScenario(blocks[0])
        let lift = try loadScenario("lift-3m")
        let a = try ScenarioWorld(s), b = try ScenarioWorld(lift)
        for t in stride(from: 0.0, through: 11, by: 0.25) {
            #expect(a.truth(atSeconds: t, body: .board) == b.truth(atSeconds: t, body: .board))
        }
    }

    @Test("docs/scenarios.md's worked example behaves as described")
    func workedExample() throws {
        let blocks = try Self.examples("docs/scenarios.md")
        #expect(blocks.count == 1)
        let s = try decodeScenario(blocks[0])
        let w = try ScenarioWorld(s)
        let mid = w.kinematics(atSeconds: 4.5, body: .board)
        #expect(abs(mid.position.z - 1.5) < 1e-12 && abs(mid.velocity.z - 1.875) < 1e-12)
        #expect((w.truth(atSeconds: 4.5, body: .board).specificForce - Vector3(0, 0, 9.80665)).norm < 1e-12)
        let left = mid.attitude.angle(to: .scenario(rollDegrees: 0, pitchDegrees: 0, yawDegrees: -90 + 22.5))
        #expect(left < 1e-12)
        let up = w.truth(atSeconds: 3.6, body: .board)
        #expect(up.specificForce.z > 9.80665 && up.angularRate.z > 0)
        let k = w.kinematics(atSeconds: 8, body: .board)
        let expected = k.attitude.conjugate.rotate(scenarioEarthField(intensity: 48, inclinationDegrees: 60, declinationDegrees: 2)) + Vector3(30, 0, 0)
        #expect((w.truth(atSeconds: 8, body: .board).magneticField - expected).norm < 1e-12)
        #expect(abs(w.truth(atSeconds: 1, body: .board).pressure - scenarioStandardAtmospherePressure(altitude: 250)) < 1e-9)
        #expect(s.scheduledFaults == [.nack(address: 0x76, register: nil, from: 5, to: 5.5)])
        #expect(s.imperfections(forAddress: 0x68)?["mpu6050"]?["gyro"]?["noiseScale"]?.double == 0)
        #expect(s.imperfections(forAddress: 0x76) == .string("ideal"))
    }
}
