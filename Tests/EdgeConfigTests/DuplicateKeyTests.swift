import Testing
import Foundation
@testable import EdgeConfig

/// A key written twice in one object is an error in every file the loader
/// reads (Foundation alone keeps the first silently; JavaScript keeps the
/// last): the error is at the second, and names the first.
@Suite struct DuplicateKeyTests {
    @Test func configTopLevel() throws {
        let text = "{\n  board: \"raspberry-pi-4b\",\n  loop: { priority: 10 },\n  board: \"simulated\",\n}"
        let e = try #require(configError(AgentConfig.self, text))
        #expect(e.kind == .duplicateKey)
        #expect(e.keyPath == "board")
        #expect(e.line == 4 && e.column == 3)
        #expect(e.message.contains("line 2 column 3"), "\(e)")
        #expect(e.description.hasPrefix("t.json5:4:3: board: "), "\(e.description)")
        #expect(e.excerpt == "  board: \"simulated\",\n  ^")
    }

    @Test func nestedInAChipSection() throws {
        let text = """
        {
          sensors: {
            mpu6050: {
              gyro_range_dps: 2000,
              accel_range_g: 4,
              "gyro_range_dps": 250,
            },
          },
        }
        """
        let e = try #require(configError(AgentConfig.self, text))
        #expect(e.kind == .duplicateKey)
        #expect(e.keyPath == "sensors.mpu6050.gyro_range_dps")
        #expect(e.line == 6 && e.column == 7)
        #expect(e.message.contains("line 4 column 7"))
    }

    @Test func insideAnArrayElementOfABoard() throws {
        let text = """
        { name: 'x', bus: 1, chips: [
          { kind: 'mpu6050', address: 0x68 },
          { kind: 'bmp280', address: 0x76, address: 0x77 },
        ] }
        """
        let e = try #require(configError(BoardProfile.self, text))
        #expect(e.kind == .duplicateKey)
        #expect(e.keyPath == "chips[1].address")
        #expect(e.line == 3 && e.column == 36)
        #expect(e.message.contains("line 3 column 21"))
    }

    @Test func inAClientsEntry() throws {
        let text = "{ clients: [\n { user: 'pi', entitlements: ['motion'] },\n { group: 'a', entitlements: [], entitlements: ['motion'] },\n] }"
        let e = try #require(configError(AgentConfig.self, text))
        #expect(e.keyPath == "clients[1].entitlements")
        #expect(e.line == 3)
    }

    @Test func inACalibrationFile() throws {
        let text = "{\"version\": 1, \"chips\": {\"mpu6050@0x68\": {\"gyro\": {\"bias_radps\": [0,0,0], \"bias_radps\": [1,1,1]}}}}"
        let e = try #require(configError(CalibrationFile.self, text))
        #expect(e.kind == .duplicateKey)
        #expect(e.keyPath == "chips.mpu6050@0x68.gyro.bias_radps")
    }

    /// Any Decodable the loader reads (scenarios too: they go through the same
    /// ConfigLoader.decode).
    @Test func inAnyFileTheLoaderReads() throws {
        struct Anything: Decodable { var a: Int? }
        let e = try #require(configError(Anything.self, "{ a: 1, b: { c: 1, c: 2 } }"))
        #expect(e.kind == .duplicateKey)
        #expect(e.keyPath == "b.c")
    }

    @Test func spellingsOfTheSameNameAreTheSameKey() throws {
        for second in ["\"board\"", "'board'", "\\u0062oard"] {
            let e = try #require(configError(AgentConfig.self, "{ board: 'a', \(second): 'b' }"), "\(second)")
            #expect(e.kind == .duplicateKey, "\(second)")
        }
    }

    @Test func theSameKeyInDifferentObjectsIsFine() {
        let text = "{ sensors: { bmp280: { mode: 'normal' }, qmc5883l: { mode: 'continuous' } } }"
        #expect(configError(AgentConfig.self, text) == nil)
    }

    @Test func scannerReportsPathAndBothPositions() throws {
        let text = "[\n  {},\n  { x: [ { a: 1,\n    a: 2 } ] },\n]"
        let d = try #require(findJSON5DuplicateMember(in: text))
        #expect(d.name == "a")
        #expect(d.path == [.index(1), .key("x"), .index(0), .key("a")])
        #expect(d.line == 4 && d.column == 5)
        #expect(d.firstLine == 3 && d.firstColumn == 12)
        #expect(findJSON5DuplicateMember(in: "{ a: 1, b: { a: 2 }, c: [{ a: 3 }, { a: 4 }] }") == nil)
    }
}
