import Testing
import Foundation
@testable import EdgeConfig

/// A wrong value somewhere in a file, and what the error must say.
struct WrongValueCase: CustomTestStringConvertible, Sendable {
    var name: String
    var board: Bool = false
    var text: String
    var keyPath: String
    /// The line of the value (the marker "<<" ends it in `text` and is cut off).
    var expected: [String]
    var testDescription: String { name }
}

let wrongValueCases: [WrongValueCase] = [
    // Type mismatches: a scalar of the wrong kind.
    .init(name: "string for an integer", text: "{\n  loop: {\n    priority: 'high', <<\n  },\n}",
          keyPath: "loop.priority", expected: ["expected a whole number", "got a string \"high\""]),
    .init(name: "quoted number", text: "{ altimeter: {\n sea_level_pa: \"101325\" <<\n} }",
          keyPath: "altimeter.sea_level_pa", expected: ["expected a number", "got a string \"101325\"", "without quotes"]),
    .init(name: "string for a boolean", text: "{ loop: {\n realtime: 'yes', <<\n} }",
          keyPath: "loop.realtime", expected: ["expected true or false", "got a string \"yes\""]),
    .init(name: "number for a string", text: "{\n board: 7, <<\n}",
          keyPath: "board", expected: ["expected a string", "got the number 7"]),
    .init(name: "fraction for a chip setting", text: "{ sensors: { mpu6050: {\n gyro_range_dps: 250.5, <<\n} } }",
          keyPath: "sensors.mpu6050.gyro_range_dps", expected: ["expected a whole number", "got the number 250.5"]),
    .init(name: "too large for a chip setting", text: "{ sensors: { qmc5883l: {\n oversampling: 1e20, <<\n} } }",
          keyPath: "sensors.qmc5883l.oversampling", expected: ["expected a whole number", "got the number 1e20"]),
    .init(name: "NaN for a chip setting", text: "{ sensors: { bmp280: {\n iir_filter: NaN, <<\n} } }",
          keyPath: "sensors.bmp280.iir_filter", expected: ["expected a whole number", "got NaN"]),
    .init(name: "negative seed", board: true,
          text: "{ name: 'x', bus: 'simulated', chips: [{ kind: 'mpu6050', address: 0x68 }],\n simulation: { scenario: 's', seed: -1 }, <<\n}",
          keyPath: "simulation.seed", expected: ["expected a whole number from 0 to 18446744073709551615", "got the number -1"]),
    // Containers of the wrong kind.
    .init(name: "number for an object", text: "{\n sensors: 5, <<\n}",
          keyPath: "sensors", expected: ["expected an object", "got the number 5"]),
    .init(name: "list for an object", text: "{ sensors: {\n mpu6050: [], <<\n} }",
          keyPath: "sensors.mpu6050", expected: ["expected an object", "got a list"]),
    .init(name: "string for a list", text: "{\n always_on: 'altitude', <<\n}",
          keyPath: "always_on", expected: ["expected a list", "got a string \"altitude\""]),
    .init(name: "object for a list", board: true, text: "{ name: 'x', bus: 1,\n chips: { kind: 'mpu6050' }, <<\n}",
          keyPath: "chips", expected: ["expected a list", "got an object"]),
    // Array elements and nested values.
    .init(name: "number in a list of strings", text: "{ always_on: [\n 'altitude', 3, <<\n] }",
          keyPath: "always_on[1]", expected: ["expected a string", "got the number 3"]),
    .init(name: "null in a list", text: "{ always_on: [\n null, <<\n] }",
          keyPath: "always_on[0]", expected: ["expected a string", "got null"]),
    .init(name: "number for a list element object", board: true, text: "{ name: 'x', bus: 1, chips: [\n 5, <<\n] }",
          keyPath: "chips[0]", expected: ["expected an object", "got the number 5"]),
    .init(name: "entitlement of the wrong type", text: "{ clients: [ { user: 'pi',\n entitlements: ['motion', true], <<\n } ] }",
          keyPath: "clients[0].entitlements[1]", expected: ["expected a string", "got true"]),
    .init(name: "address in a string", board: true, text: "{ name: 'x', bus: 1, chips: [ { kind: 'bmp280',\n address: 'seventy-six' <<\n } ] }",
          keyPath: "chips[0].address", expected: ["expected a whole number", "got a string \"seventy-six\""]),
    // Optional values.
    .init(name: "optional number of the wrong type", text: "{ fusion: {\n declination_deg: 'east', <<\n} }",
          keyPath: "fusion.declination_deg", expected: ["expected a number", "got a string \"east\""]),
    .init(name: "optional string of the wrong type", text: "{ service: {\n socket_group: 0, <<\n} }",
          keyPath: "service.socket_group", expected: ["expected a string", "got the number 0"]),
    .init(name: "optional object of the wrong type", text: "{\n faults: true, <<\n}",
          keyPath: "faults", expected: ["expected an object", "got true"]),
    .init(name: "required value null", board: true, text: "{\n name: null, <<\n bus: 1, chips: [] }",
          keyPath: "name", expected: ["expected a string", "got null"]),
    // Foundation's path-less number errors, in an array of numbers.
    .init(name: "fraction in a list of whole numbers", board: true,
          text: "{ name: 'x', bus: 1, chips: [ { kind: 'mpu6050', address: 0x68,\n mounting: [[1, 0, 0], [0, 1, 0], [0, 0, 1e999]], <<\n } ] }",
          keyPath: "chips[0].mounting", expected: ["rotation matrix"]),
]

@Suite struct ConfigErrorTextTests {
    /// Type errors say what was expected and what was found, with the key
    /// path and the line, never Swift's own words ("Expected to decode
    /// Double but found a string instead", "The given data was not valid
    /// JSON.", "Dictionary<String, Any>").
    @Test("wrong values: expected what, got what, where", arguments: wrongValueCases)
    func wrongValue(_ c: WrongValueCase) throws {
        let line = try #require(lineOf("<<", in: c.text))
        let text = c.text.replacingOccurrences(of: " <<", with: "")
        let e = try #require(c.board ? configError(BoardProfile.self, text) : configError(AgentConfig.self, text),
                             "\(c.name): expected an error")
        #expect(e.keyPath == c.keyPath, "\(c.name): \(e)")
        #expect(e.line == line, "\(c.name): \(e)")
        for fragment in c.expected { #expect(e.message.contains(fragment), "\(c.name): '\(fragment)' in \(e.message)") }
        #expect(e.description.hasPrefix("t.json5:\(line):"), "\(c.name): \(e.description)")
        expectNoSwiftText(e.description, c.name)
    }

    /// On today's main a number that does not fit its type (a fraction for
    /// an integer key) came out as "t.json5: The given data was not valid
    /// JSON." with no key and no line.
    @Test func aFractionForAnIntegerNamesTheKeyAndLine() throws {
        let e = try #require(configError(AgentConfig.self, "{\n  sensors: {\n    mpu6050: { accel_range_g: 2.5 },\n  },\n}"))
        #expect(e.keyPath == "sensors.mpu6050.accel_range_g")
        #expect(e.line == 3)
        #expect(e.message == "expected a whole number, got the number 2.5")
    }

    @Test func theCaretPointsAtTheValue() throws {
        let e = try #require(configError(AgentConfig.self, "{\n  loop: { priority: 'high' },\n}"))
        #expect(e.excerpt == "  loop: { priority: 'high' },\n" + String(repeating: " ", count: 20) + "^")
    }

    /// A path the system calls would misread (empty, cut at a NUL, too long
    /// for a socket address) is an error at load, not at bind or open.
    @Test func unusablePathsAreRejectedAtLoad() throws {
        let long = "/run/" + String(repeating: "x", count: 103)       // 108 bytes
        let cases: [(String, String)] = [
            ("{ service: {\n socket_path: '' } }", "service.socket_path"),
            ("{ service: {\n socket_path: '/run/edge-agent/' } }", "service.socket_path"),
            ("{ service: {\n socket_path: '\(long)' } }", "service.socket_path"),
            ("{ service: {\n socket_group: '' } }", "service.socket_group"),
            ("{\n calibration_file: '' }", "calibration_file"),
            ("{\n recording_directory: '' }", "recording_directory"),
            ("{\n board: '' }", "board"),
        ]
        for (text, keyPath) in cases {
            let e = try #require(configError(AgentConfig.self, text), "\(text)")
            #expect(e.keyPath == keyPath && e.line == 2, "\(text): \(e)")
            #expect(e.message.contains("got"), "\(e)")
        }
        #expect(configError(AgentConfig.self, "{ service: { socket_path: '\(long.dropLast())' } }") == nil)
        let e = try #require(configError(BoardProfile.self, "{ name: 'x', bus: 'simulated', chips: [{ kind: 'mpu6050', address: 0x68 }],\n simulation: { scenario: '' } }"))
        #expect(e.keyPath == "simulation.scenario" && e.line == 2)
    }

    @Test func unreadableFileSaysWhyWithoutSwiftText() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            _ = try ConfigLoader.load(AgentConfig.self, from: dir)
            Issue.record("a directory loaded")
        } catch {
            #expect(error.kind == .notARegularFile)   // refused before reading (issue 16, item 4)
            #expect(error.message.contains("not a regular file (a directory)"), "\(error)")
            expectNoSwiftText(error.description, "directory")
        }
        let binary = dir + "/binary.json5"
        FileManager.default.createFile(atPath: binary, contents: Data([0x7B, 0xFF, 0xFE, 0x7D]))
        do {
            _ = try ConfigLoader.load(AgentConfig.self, from: binary)
            Issue.record("a non-UTF-8 file loaded")
        } catch {
            #expect(error.message.contains("not UTF-8"))
        }
    }
}
