import Testing
import Foundation
@testable import EdgeConfig

/// Profiles whose chips the agent would silently ignore, or that would run
/// with nothing to read, are errors at load.
@Suite struct BoardConsistencyTests {
    func error(_ chips: String, extra: String = "") -> ConfigError? {
        configError(BoardProfile.self, "{ name: 'x', bus: 1,\(extra)\n chips: [\n\(chips)\n] }")
    }

    @Test func noChips() throws {
        let e = try #require(error(""))
        #expect(e.keyPath == "chips")
        #expect(e.message.contains("at least one chip"))
    }

    @Test func aSecondPrimaryIMU() throws {
        let e = try #require(error("{ kind: 'mpu6050', address: 0x68 },\n{ kind: 'mpu6050', address: 0x69 },"))
        #expect(e.keyPath == "chips[1]")
        #expect(e.line == 4)
        #expect(e.message.contains("accessory"))
    }

    @Test func aSecondBarometerOrMagnetometer() throws {
        let e = try #require(error("{ kind: 'bmp280', address: 0x76 },\n{ kind: 'bmp280', address: 0x77 },"))
        #expect(e.keyPath == "chips[1]")
        #expect(e.message.contains("chips[0] is already the board's bmp280"))
    }

    @Test func onlyAnIMUCanBeAnAccessory() throws {
        let e = try #require(error("{ kind: 'qmc5883l', address: 0x0d,\n role: 'accessory' },"))
        #expect(e.keyPath == "chips[0].role")
        #expect(e.line == 4)
    }

    @Test func dataReadyOnTheAccessoryWouldBeIgnored() throws {
        let e = try #require(error("{ kind: 'mpu6050', address: 0x68 },\n{ kind: 'mpu6050', address: 0x69, role: 'accessory',\n data_ready: { chip: 'x', line: 4 } },"))
        #expect(e.keyPath == "chips[1].data_ready")
        #expect(e.line == 5)
    }

    @Test func anIMUBehindItself() throws {
        let e = try #require(error("{ kind: 'mpu6050', address: 0x68, behind: 0x68 },"))
        #expect(e.keyPath == "chips[0].behind")
    }

    @Test func simulationOnARealBus() throws {
        let e = try #require(error("{ kind: 'mpu6050', address: 0x68 },", extra: "\n simulation: { scenario: 's.json5' },"))
        #expect(e.keyPath == "simulation")
        #expect(e.line == 2)
    }

    @Test func aPrimaryAndAnAccessoryAreFine() {
        #expect(error("{ kind: 'mpu6050', address: 0x68 },\n{ kind: 'mpu6050', address: 0x69, role: 'accessory' },\n{ kind: 'bmp280', address: 0x77 }, { kind: 'qmc5883l', address: 0x0d, behind: 0x68 },") == nil)
    }
}
