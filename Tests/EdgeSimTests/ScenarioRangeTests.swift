import Foundation
import Testing
@testable import EdgeSim

/// Scenario numbers that feed integer conversions are checked when the
/// scenario is read (scenarios/README.md): `duration_s` at most 1 000 000 s,
/// every imperfection number finite, and in EdgeSim's layout the chip clock
/// errors −0.5…0.5, the BMP280's conversionTimeScale 0.1…10, standbyError
/// −0.5…0.5 and measuringFlagDelay 0…1 s.
@Suite struct ScenarioRangeTests {
    func scenario(duration: String = "10", imperfections: String = "{}") -> String {
        "{ name: 't', duration_s: \(duration), imperfections: \(imperfections) }"
    }

    /// The path of a scenario decoding error, as the loader renders it.
    func failure(_ text: String) -> (path: [String], message: String)? {
        do {
            _ = try decodeScenario(text)
            return nil
        } catch let DecodingError.dataCorrupted(c) {
            return (c.codingPath.map(\.stringValue), c.debugDescription)
        } catch let DecodingError.typeMismatch(_, c) {
            return (c.codingPath.map(\.stringValue), c.debugDescription)
        } catch {
            return ([], "\(error)")
        }
    }

    @Test func durationUpToAMillionSeconds() throws {
        _ = try decodeScenario(scenario(duration: "1000000"))
        for v in ["1000000.5", "1e300", "Infinity", "NaN", "0", "-1"] {
            let f = try #require(failure(scenario(duration: v)), "duration_s \(v)")
            #expect(f.path == ["duration_s"], "\(v): \(f)")
        }
    }

    @Test func imperfectionNumbersMustBeFinite() throws {
        for v in ["NaN", "Infinity", "-Infinity"] {
            let f = try #require(failure(scenario(imperfections: "{ '0x68': { mpu6050: { gyro: { bias: [0, \(v), 0] } } } }")), "\(v)")
            #expect(f.path == ["imperfections", "0x68", "mpu6050", "gyro", "bias", "Index 1"], "\(v): \(f)")
            #expect(f.message.contains(v), "\(f)")
        }
    }

    struct Timing: Sendable, CustomTestStringConvertible {
        var chip: String, key: String, accepted: [String], rejected: [String]
        var testDescription: String { "\(chip).\(key)" }
    }
    static let timings: [Timing] = [
        .init(chip: "mpu6050", key: "internalClockError", accepted: ["-0.5", "0.5", "0"], rejected: ["-1", "-0.51", "0.51"]),
        .init(chip: "mpu6050", key: "pllClockError", accepted: ["-0.5", "0.5"], rejected: ["-1", "0.51"]),
        .init(chip: "qmc5883l", key: "clockError", accepted: ["-0.5", "0.5"], rejected: ["-1", "0.51"]),
        .init(chip: "bmp280", key: "conversionTimeScale", accepted: ["0.1", "10", "1"], rejected: ["0", "-1", "0.09", "10.1"]),
        .init(chip: "bmp280", key: "standbyError", accepted: ["-0.5", "0.5"], rejected: ["-1", "-2", "0.51"]),
        .init(chip: "bmp280", key: "measuringFlagDelay", accepted: ["0", "1", "0.0001"], rejected: ["-0.001", "1.001", "1e300"]),
    ]

    /// On today's main a clock error of −1 divides a sample period by zero
    /// and `conversionTimeScale: -1` or a NaN converts to UInt64: a trap when
    /// the board is built. Now an error at load, at the value.
    @Test("chip timing imperfections in range", arguments: timings)
    func timing(_ t: Timing) throws {
        func text(_ v: String) -> String { scenario(imperfections: "{ default: { \(t.chip): { \(t.key): \(v) } } }") }
        for v in t.accepted { _ = try decodeScenario(text(v)) }
        for v in t.rejected + ["NaN", "Infinity"] {
            let f = try #require(failure(text(v)), "\(t.key) = \(v)")
            #expect(f.path == ["imperfections", "default", t.chip, t.key], "\(t.key) = \(v): \(f)")
        }
    }

    /// The imperfections stay in the chip models' format, untouched: only
    /// their numbers are checked.
    @Test func otherLayoutsStillPassThrough() throws {
        let s = try decodeScenario(scenario(imperfections: "{ '0x76': 'perfect', '0x68': { anything: { clockError: -7 } } }"))
        #expect(s.imperfections(forAddress: 0x76) == .string("perfect"))
    }
}
