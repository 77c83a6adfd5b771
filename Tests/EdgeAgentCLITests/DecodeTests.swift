import Testing
import Foundation
@testable import EdgeAgentCLI

/// Tests/Fixtures/dumps/, found from this file's path (no bundle resources).
func dumpFixture(_ name: String, file: String = #filePath) -> String {
    var parts = file.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)   // DecodeTests.swift, EdgeAgentCLITests
    return parts.joined(separator: "/") + "/Fixtures/dumps/" + name
}

/// Runs `edge-agent decode ARGS...` and returns (status, stdout, stderr).
func decode(_ args: String...) -> (Int32, String, String) {
    let (c, out, err) = Console.capturing()
    let status = EdgeAgentCLI.run(["edge-agent", "decode"] + args, console: c)
    return (status, out(), err())
}

/// The value of `"key": value` in a flat JSON object line.
func jsonValue(_ json: String, _ key: String) -> String? {
    let needle = Array("\"\(key)\": ".utf8), hay = Array(json.utf8)
    guard hay.count >= needle.count,
          let i = (0...(hay.count - needle.count)).first(where: { Array(hay[$0..<($0 + needle.count)]) == needle })
    else { return nil }
    let rest = Substring(String(decoding: hay[(i + needle.count)...], as: UTF8.self))
    let end = rest.firstIndex(where: { $0 == "," || $0 == "}" }) ?? rest.endIndex
    return String(rest[..<end])
}

@Suite struct DecodeCommandTests {
    @Test func bmp280WorkedExample() {
        let (status, out, err) = decode("bmp280", dumpFixture("bmp280-worked-example.txt"))
        #expect(status == 0, "\(err)")
        #expect(out.contains("25.08 °C"))
        #expect(out.contains("t_fine 128422"))
        #expect(out.contains("100653.254 Pa"))
        #expect(out.contains("25767233"))
    }

    @Test func bmp280WorkedExampleJSON() throws {
        let (status, out, err) = decode("bmp280", dumpFixture("bmp280-worked-example.txt"), "--json")
        #expect(status == 0, "\(err)")
        #expect(jsonValue(out, "temperature_c") == "25.08")
        #expect(jsonValue(out, "pressure_pa").flatMap(Double.init) == 25767233.0 / 256)
        #expect(jsonValue(out, "t_fine") == "128422")
        #expect(jsonValue(out, "pressure_q24_8") == "25767233")
        #expect(jsonValue(out, "adc_p") == "415148")
    }

    @Test func mpu6050AtRest() throws {
        let (status, out, err) = decode("mpu6050", dumpFixture("mpu6050-at-rest.txt"), "--json")
        #expect(status == 0, "\(err)")
        // +16384 on Z at ±2 g is exactly 1 g
        #expect(jsonValue(out, "accel_z_mps2").flatMap(Double.init) == 9.80665)
        let x = try #require(jsonValue(out, "accel_x_mps2").flatMap(Double.init))
        #expect(abs(x - (-164.0 / 16384 * 9.80665)) < 1e-12)
        let gx = try #require(jsonValue(out, "gyro_x_radps").flatMap(Double.init))
        #expect(abs(gx - Double.pi / 180) < 1e-12)   // 131 LSB at ±250 °/s
        let t = try #require(jsonValue(out, "temperature_c").flatMap(Double.init))
        #expect(abs(t - (-521.0 / 340 + 36.53)) < 1e-12)
        #expect(jsonValue(out, "accel_range_g") == "2")
        #expect(jsonValue(out, "gyro_range_dps") == "250")
        #expect(jsonValue(out, "sample_rate_hz") == "100.0")
    }

    @Test func mpu6050RangesComeFromTheDump() throws {
        // Same raw counts as mpu6050-at-rest, but GYRO_CONFIG/ACCEL_CONFIG say ±2000 °/s and ±4 g.
        let (status, out, _) = decode("mpu6050", dumpFixture("mpu6050-2000dps-4g.txt"), "--json")
        #expect(status == 0)
        #expect(jsonValue(out, "accel_z_mps2").flatMap(Double.init) == 2 * 9.80665)
        let gx = try #require(jsonValue(out, "gyro_x_radps").flatMap(Double.init))
        #expect(abs(gx - 131 / 16.4 * Double.pi / 180) < 1e-12)
    }

    @Test func mpu6050HumanText() {
        let (status, out, _) = decode("mpu6050", dumpFixture("mpu6050-at-rest.txt"))
        #expect(status == 0)
        #expect(out.contains("z 9.80665 m/s²"))
        #expect(out.contains("35.00 °C"))
        #expect(out.contains("±2 g"))
    }

    @Test func qmc5883lKnownField() throws {
        let (status, out, err) = decode("qmc5883l", dumpFixture("qmc5883l-known-field.txt"), "--json")
        #expect(status == 0, "\(err)")
        // ±8 G: 3000 LSB/G = 30 LSB/µT
        #expect(jsonValue(out, "magnetic_x_ut").flatMap(Double.init) == 24)
        #expect(jsonValue(out, "magnetic_y_ut").flatMap(Double.init) == -6)
        let z = try #require(jsonValue(out, "magnetic_z_ut").flatMap(Double.init))
        #expect(abs(z - (-1247.0 / 30)) < 1e-9)
        #expect(jsonValue(out, "overflow") == "false")
        #expect(jsonValue(out, "range_gauss") == "8")
    }

    @Test func qmc5883lOverflowIsNoField() {
        let (status, out, _) = decode("qmc5883l", dumpFixture("qmc5883l-overflow.txt"))
        #expect(status == 0)
        #expect(out.contains("no valid field"))
        #expect(!out.contains("µT"))
        let (_, json, _) = decode("qmc5883l", dumpFixture("qmc5883l-overflow.txt"), "--json")
        #expect(jsonValue(json, "magnetic_x_ut") == "null")
        #expect(jsonValue(json, "overflow") == "true")
    }

    @Test func unreadableNeededRegisterIsNamed() {
        let (status, out, err) = decode("mpu6050", dumpFixture("mpu6050-xx-accel.txt"))
        #expect(status == 1)
        #expect(out.isEmpty)
        #expect(err.contains("0x3f"))
        #expect(err.contains("ACCEL_ZOUT_H"))
        let (s2, _, e2) = decode("bmp280", dumpFixture("bmp280-xx-calibration.txt"))
        #expect(s2 == 1)
        #expect(e2.contains("0x8e"))
        #expect(e2.contains("dig_P1"))
    }

    @Test func unreadableUnusedRegistersAreFine() {
        let (status, out, err) = decode("bmp280", dumpFixture("bmp280-xx-unused.txt"))
        #expect(status == 0, "\(err)")
        #expect(out.contains("100653.254 Pa"))
    }

    @Test func badUse() {
        #expect(decode("bmp999", "x").0 == 2)
        #expect(decode("bmp280").0 == 2)
        #expect(decode("bmp280", dumpFixture("bmp280-worked-example.txt"), "--yaml").0 == 2)
        let (s, _, e) = decode("bmp280", dumpFixture("does-not-exist.txt"))
        #expect(s == 1)
        #expect(e.contains("cannot open"))
    }

    @Test func helpDocumentsTheJSONKeys() {
        let (c, out, _) = Console.capturing()
        #expect(EdgeAgentCLI.run(["edge-agent", "decode", "--help"], console: c) == 0)
        for key in ["pressure_pa", "temperature_c", "accel_x_mps2", "gyro_x_radps", "magnetic_x_ut"] {
            #expect(out().contains(key), "\(key)")
        }
    }

    @Test func fixedDecimals() {
        #expect(fixed(100653.25390625, 3) == "100653.254")
        #expect(fixed(-0.0001, 2) == "0.00")
        #expect(fixed(-1.005, 1) == "-1.0")
        #expect(fixed(9.80665, 5) == "9.80665")
    }
}

/// Dumps that must not decode as if nothing were wrong: a pasted row that
/// lost a cell, a dump of another chip (identity registers from the data
/// sheets, sensors.md: MPU-6050 WHO_AM_I 0x75 = 0x68, BMP280 id 0xD0 = 0x58,
/// QMC5883L CHIP_ID 0x0D = 0xFF), a CRLF file.
@Suite struct DecodeDamagedDumpTests {
    /// One folder per suite instance (Swift Testing makes one per test),
    /// removed when the test ends.
    final class Scratch {
        let folder = NSTemporaryDirectory() + "decode-tests-\(UUID().uuidString)"
        init() { try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: folder) }
    }
    let scratch = Scratch()

    func temporaryDump(_ text: String) throws -> String {
        let p = scratch.folder + "/dump-\(UUID().uuidString).txt"
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }

    func fixture(_ name: String) throws -> String { try String(contentsOfFile: dumpFixture(name), encoding: .utf8) }

    @Test func aRowMissingACellIsAnErrorNotShiftedReadings() throws {
        // mpu6050-at-rest.txt line 6 is row 40; dropping its 0x43 cell shifted
        // the gyro X bytes and printed -4.23 rad/s instead of 0.0175
        let lines = try fixture("mpu6050-at-rest.txt").components(separatedBy: "\n")
        #expect(lines[5].hasPrefix("40: 00 fd f7 00 83 ff"))
        var damaged = lines
        damaged[5] = "40: 00 fd f7 83 ff be 00 00 00 00 00 00 00 00 00    .??.?.?........."
        let path = try temporaryDump(damaged.joined(separator: "\n"))
        let (status, out, err) = decode("mpu6050", path)
        #expect(status == 1)
        #expect(out.isEmpty)
        #expect(err.contains("\(path):6:") && err.contains("15 cells") && err.contains("expected 16"), "\(err)")
    }

    @Test func aCRLFDumpDecodesLikeTheLFOne() throws {
        let crlf = try temporaryDump(try fixture("mpu6050-at-rest.txt").replacingOccurrences(of: "\n", with: "  \r\n"))
        let (status, out, err) = decode("mpu6050", crlf, "--json")
        #expect(status == 0, "\(err)")
        #expect(out == decode("mpu6050", dumpFixture("mpu6050-at-rest.txt"), "--json").1)
        let gx = try #require(jsonValue(out, "gyro_x_radps").flatMap(Double.init))
        #expect(abs(gx - Double.pi / 180) < 1e-12)   // 131 LSB at ±250 °/s
    }

    @Test(arguments: [
        ("mpu6050", "bmp280-worked-example.txt", ["0x75", "0xd0", "0x58", "BMP280", "decode bmp280"]),
        ("mpu6050", "qmc5883l-known-field.txt", ["0x75", "QMC5883L", "decode qmc5883l"]),
        ("bmp280", "mpu6050-at-rest.txt", ["0xd0", "0x68", "MPU-6050", "decode mpu6050"]),
        ("bmp280", "qmc5883l-known-field.txt", ["0xd0", "0x0d", "QMC5883L"]),
        ("qmc5883l", "mpu6050-at-rest.txt", ["0x0d", "0x68", "MPU-6050", "decode mpu6050"]),
        ("qmc5883l", "bmp280-worked-example.txt", ["0x0d", "0x58", "BMP280", "decode bmp280"]),
    ])
    func aDumpOfAnotherChipIsRefusedNamingIt(_ chip: String, _ file: String, _ words: [String]) {
        let (status, out, err) = decode(chip, dumpFixture(file))
        #expect(status == 1)
        #expect(out.isEmpty)
        #expect(err.contains("not a"), "\(err)")
        for w in words { #expect(err.contains(w), "\(w) in \(err)") }
        #expect(err.contains("--force"))
        // --force decodes anyway, loudly (a BMP280 decode of other bytes may
        // still fail on its own: zero calibration words are no calibration)
        let (forced, fout, ferr) = decode(chip, dumpFixture(file), "--force")
        #expect(ferr.contains("warning") && ferr.contains("anyway"), "\(ferr)")
        #expect(!ferr.contains("Nothing decoded"))
        if chip != "bmp280" { #expect(forced == 0 && !fout.isEmpty) }
    }

    @Test func aDumpOfNoChipIsRefused() throws {
        var text = try fixture("mpu6050-at-rest.txt").components(separatedBy: "\n")[0] + "\n"
        for base in stride(from: 0, to: 256, by: 16) {
            let d = Array("0123456789abcdef")
            text += String(d[base >> 4]) + "0: " + String(repeating: "ff ", count: 16) + "   ................\n"
        }
        let path = try temporaryDump(text)
        for chip in ["mpu6050", "bmp280", "qmc5883l"] {
            let (status, _, err) = decode(chip, path)
            #expect(status == 1)
            #expect(err.contains("0xff") && err.contains("no chip answered"), "\(chip): \(err)")
        }
    }

    @Test func aCloneIsDecodedWithItsWarning() throws {
        // WHO_AM_I 0x70 (MPU-6500 core): accepted, with the variant's warning
        let text = try fixture("mpu6050-at-rest.txt").replacingOccurrences(of: "70: 00 00 00 00 00 68", with: "70: 00 00 00 00 00 70")
        let (status, out, _) = decode("mpu6050", try temporaryDump(text))
        #expect(status == 0)
        #expect(out.contains("MPU-6500"))
    }
}
