import Testing
import EdgeValues
import Foundation
import EdgeFusion
@testable import EdgeConfig
import EdgeLocations

@Suite struct CalibrationFileTests {
    static func tempDir() -> String {
        let d = NSTemporaryDirectory() + "calibration-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    static let gyro = GyroCalibration(bias: Vector3(0.02, -0.015, 0.01), temperatureCelsius: 22.5,
                                      noise: Vector3(0.0008, 0.0009, 0.0007), sampleCount: 1000)
    static let accel = AccelerometerCalibration(bias: Vector3(0.18, -0.25, 0.35), scale: Vector3(0.992, 1.005, 0.989),
                                                temperatureCelsius: 23, residual: 0.004)
    static let mag = MagnetometerCalibration(hardIron: Vector3(3.2, -5.1, 1.8),
                                             softIron: Matrix3(Vector3(1.01, 0.01, 0), Vector3(0.01, 0.99, 0), Vector3(0, 0, 1)),
                                             fieldStrength: 48.2, residual: 0.003)

    static func sample() -> CalibrationFile {
        var f = CalibrationFile()
        f.set(gyro: gyro, for: "mpu6050@0x68", created: "2026-11-29T16:50:00Z")
        f.set(accel: accel, for: "mpu6050@0x68", created: "2026-11-29T16:55:00Z")
        f.set(mag: mag, for: "qmc5883l@0x0d", created: "2026-11-29T17:00:00Z")
        return f
    }

    @Test func roundTripsThroughAFile() throws {
        let path = Self.tempDir() + "/calibration.json"
        try Self.sample().save(to: path)
        let back = try CalibrationFile.load(from: path)
        #expect(back == Self.sample())
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for key in ["\"version\" : 2", "\"frame\" : \"chip\"", "bias_radps", "temperature_c", "bias_mps2", "scale",
                    "hard_iron_ut", "soft_iron", "field_strength_ut", "mpu6050@0x68", "qmc5883l@0x0d"] {
            #expect(text.contains(key), "missing \(key)")
        }
        // no temporary file left behind
        let left = try FileManager.default.contentsOfDirectory(atPath: BoardLocator.directory(of: path))
        #expect(left == ["calibration.json"])
    }

    @Test func appliesEachSectionAndPassesThroughMissingOnes() throws {
        let f = Self.sample()
        let imu = try #require(f[chip: "mpu6050@0x68"])
        #expect(imu.applyGyro(Vector3(0.02, -0.015, 0.01)) == .zero)
        let a = imu.applyAccel(Vector3(0.18, -0.25, 0.35 + 9.80665 / 0.989))
        #expect(abs(a.z - 9.80665) < 1e-9 && abs(a.x) < 1e-12)
        #expect(imu.applyMag(Vector3(1, 2, 3)) == Vector3(1, 2, 3))   // no mag section: unchanged
        let mag = try #require(f[chip: "qmc5883l@0x0d"])
        #expect(mag.applyMag(Vector3(3.2, -5.1, 1.8)) == .zero)
        #expect(mag.applyGyro(Vector3(1, 2, 3)) == Vector3(1, 2, 3))
        #expect(f[chip: "bmp280@0x76"] == nil)
    }

    @Test func mergingKeepsOtherSections() {
        var newer = CalibrationFile()
        let g2 = GyroCalibration(bias: Vector3(0.03, 0, 0), temperatureCelsius: 30, noise: .zero, sampleCount: 500)
        newer.set(gyro: g2, for: "mpu6050@0x68", created: "2026-11-30T08:00:00Z")
        let merged = Self.sample().merging(newer)
        #expect(merged[chip: "mpu6050@0x68"]?.gyro?.calibration == g2)
        #expect(merged[chip: "mpu6050@0x68"]?.accel?.calibration == Self.accel)
        #expect(merged[chip: "qmc5883l@0x0d"]?.mag?.calibration == Self.mag)
    }

    @Test func replacedGyroCalibrationsAreKeptForATemperatureFit() throws {
        var file = CalibrationFile()
        for (i, t) in [20.0, 30.0, 40.0].enumerated() {
            var newer = CalibrationFile()
            // bias grows 1e-4 rad/s per °C on X
            let g = GyroCalibration(bias: Vector3(0.02 + 1e-4 * (t - 20), 0, 0), temperatureCelsius: t,
                                    noise: .zero, sampleCount: 100)
            newer.set(gyro: g, for: "mpu6050@0x68", created: "day \(i)")
            file = file.merging(newer)
        }
        let entry = try #require(file[chip: "mpu6050@0x68"]?.gyro)
        #expect(entry.history.map(\.created) == ["day 0", "day 1"])
        #expect(entry.calibration.temperatureCelsius == 40)
        let path = Self.tempDir() + "/calibration.json"
        try file.save(to: path)
        let back = try #require(try CalibrationFile.load(from: path)[chip: "mpu6050@0x68"]?.gyro)
        #expect(back == entry)
        let model = try #require(GyroCalibration.temperatureModel(back.points.map { ($0.temperatureCelsius, $0.bias) }))
        #expect(abs(model.slope.x - 1e-4) < 1e-12)
        #expect(abs(model.referenceTemperature - 30) < 1e-12)
        #expect(abs(model.biasAtReference.x - 0.021) < 1e-12)
        // one temperature: no slope
        #expect(GyroCalibration.temperatureModel([(25, .zero), (26, .zero)]) == nil)
    }

    @Test func mergeTwiceInMemory() throws {
        var file = CalibrationFile()
        var a = CalibrationFile()
        a.set(gyro: GyroCalibration(bias: Vector3(1, 2, 3), temperatureCelsius: 20, noise: .zero, sampleCount: 1), for: "m", created: "A")
        file = file.merging(a)
        var b = CalibrationFile()
        b.set(gyro: GyroCalibration(bias: Vector3(4, 5, 6), temperatureCelsius: 30, noise: .zero, sampleCount: 1), for: "m", created: "B")
        file = file.merging(b)
        let h = file.chips["m"]!.gyro!.history
        #expect(h.count == 1)
        #expect(h.first?.created == "A")
    }

    @Test func missingFileIsNilButABadFileIsAnErrorNamingIt() throws {
        let dir = Self.tempDir()
        #expect(try CalibrationFile.loadIfPresent(from: dir + "/none.json") == nil)
        let bad = dir + "/bad.json"
        try #"{"version": 1, "chips": {"mpu6050@0x68": {"gyro": {"bias_radps": [1, 2]}}}}"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        do {
            _ = try CalibrationFile.load(from: bad)
            Issue.record("expected an error")
        } catch {
            #expect(error.file == bad)
            #expect(error.keyPath == "chips.mpu6050@0x68.gyro.bias_radps")
            #expect(error.description.contains("3 finite numbers"))
        }
        let newer = dir + "/newer.json"
        try #"{"version": 7, "chips": {}}"#.write(toFile: newer, atomically: true, encoding: .utf8)
        #expect(throws: ConfigError.self) { try CalibrationFile.load(from: newer) }
        let typo = dir + "/typo.json"
        try #"{"version": 1, "chips": {"a": {"gyro": {"bias_radps": [1, 2, 3], "tempreature_c": 3}}}}"#
            .write(toFile: typo, atomically: true, encoding: .utf8)
        do { _ = try CalibrationFile.load(from: typo); Issue.record("expected an error") } catch {
            #expect(error.description.contains("temperature_c"))
        }
    }

    @Test func unwritableFileNamesTheFile() throws {
        let dir = Self.tempDir()
        // a path whose directory is a regular file cannot be created
        let blocker = dir + "/blocker"
        try "x".write(toFile: blocker, atomically: true, encoding: .utf8)
        let path = blocker + "/calibration.json"
        do {
            try Self.sample().save(to: path)
            Issue.record("expected an error")
        } catch {
            #expect(error.file == path)
            #expect(error.description.contains(path))
        }
    }

    @Test func savingReplacesAnExistingFile() throws {
        let path = Self.tempDir() + "/calibration.json"
        try CalibrationFile().save(to: path)
        try Self.sample().save(to: path)
        #expect(try CalibrationFile.load(from: path) == Self.sample())
    }

    @Test func timestampsAreISO8601UTC() {
        #expect(CalibrationFile.timestamp(unixSeconds: 0) == "1970-01-01T00:00:00Z")
        #expect(CalibrationFile.timestamp(unixSeconds: 1_795_970_000) == "2026-11-29T16:33:20Z")
        #expect(CalibrationFile.timestamp(unixSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
    }
}

/// The one UTC formatter and parser (EdgeValues), against dates worked by hand.
@Suite struct UTCTimeTests {
    @Test func formatsParsesAndRoundTrips() {
        #expect(UTCTime.format(unixNanoseconds: 1_795_970_000_450_000_000) == "2026-11-29T16:33:20.4Z")
        #expect(UTCTime.format(unixNanoseconds: -1) == "1969-12-31T23:59:59.9Z")
        #expect(UTCTime.parse("2000-02-29T00:00:00Z") == 951_782_400)
        #expect(UTCTime.parse("2026-11-29T16:33:20+00:00") == 1_795_970_000)
        #expect(UTCTime.parse("2026-13-01T00:00:00Z") == nil && UTCTime.parse("2026-11-29T16:33:20+01:00") == nil)
        for t: Int64 in [-86_401, 0, 68_169_600, 1_795_970_000, 4_102_444_800] {
            #expect(UTCTime.parse(UTCTime.format(unixSeconds: t)) == t)
        }
    }
}

/// The calibration file's errors: what was expected and what was found, the
/// key path and the line, in our words (no Swift decoding error text), like
/// the configuration's.
@Suite struct CalibrationFileErrorTests {
    func error(_ text: String) throws -> ConfigError {
        let path = CalibrationFileTests.tempDir() + "/calibration.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try CalibrationFile.load(from: path)
        } catch {
            return error
        }
        Issue.record("expected an error for \(text)")
        return ConfigError(kind: .invalidValue, file: "", message: "")
    }

    func noSwiftText(_ e: ConfigError) {
        for word in ["DecodingError", "Expected to decode", "keyNotFound", "typeMismatch", "CodingKeys", "Swift.", "Dictionary<", "Array<"] {
            #expect(!e.description.contains(word), "\(word) in \(e)")
        }
    }

    @Test(arguments: [
        // (file, key path, line, words)
        ("{\n  \"version\": 2,\n  \"chips\": {\n    \"mpu6050@0x68\": {\n      \"gyro\": { \"bias_radps\": [\"0.1\", 0, 0] }\n    }\n  }\n}",
         "chips.mpu6050@0x68.gyro.bias_radps[0]", 5, "expected a number, got a string (\"0.1\")"),
        ("{ \"version\": 2, \"chips\": { \"mpu6050@0x68\": { \"gyro\": { \"bias_radps\": [0, 0, 0], \"samples\": \"many\" } } } }",
         "chips.mpu6050@0x68.gyro.samples", 1, "expected a whole number, got a string"),
        ("{ \"version\": \"2\" }", "version", 1, "expected a whole number, got a string"),
        ("{\n  \"version\": 2,\n  \"chips\": []\n}", "chips", 3, "got a list"),
        ("{ \"version\": 2, \"chips\": { \"mpu6050@0x68\": { \"gyro\": 5 } } }", "chips.mpu6050@0x68.gyro", 1, "expected a gyro calibration"),
        ("{ \"version\": 2, \"chips\": { \"qmc5883l@0x0d\": { \"mag\": { \"hard_iron_ut\": [0, 0, 0], \"soft_iron\": [[1, 0, 0], [0, true, 0], [0, 0, 1]] } } } }",
         "chips.qmc5883l@0x0d.mag.soft_iron[1][1]", 1, "expected a number, got true or false"),
        ("{ \"version\": 2, \"chips\": { \"mpu6050@0x68\": { \"accel\": { \"scale\": [1, 1, 1] } } } }",
         "chips.mpu6050@0x68.accel.bias_mps2", 1, "missing required key 'bias_mps2'"),
        ("{ \"version\": 2, \"chips\": { \"mpu6050@0x68\": { \"measured_on\": { \"board\": \"b\", \"bus\": \"simulated\", \"chip\": \"mpu6050\", \"address\": 104 } } } }",
         "chips.mpu6050@0x68.measured_on.address", 1, "expected a string, got a number"),
    ])
    func typeErrorsSayWhatWasExpected(_ text: String, _ keyPath: String, _ line: Int, _ words: String) throws {
        let e = try error(text)
        #expect(e.keyPath == keyPath, "\(e)")
        #expect(e.line == line, "\(e)")
        #expect(e.description.contains(words), "\(e)")
        noSwiftText(e)
    }

    @Test func theOldFuseOnlyFormatIsExplained() throws {
        let e = try error(#"{"hardIron":[1,2,3],"softIron":[[1,0,0],[0,1,0],[0,0,1]]}"#)
        #expect(e.description.contains("old `fuse --mag-calibration` format") && e.description.contains("edge-agent calibrate mag"), "\(e)")
        noSwiftText(e)
    }

    @Test func originsRoundTrip() throws {
        var f = CalibrationFileTests.sample()
        let o = CalibrationOrigin(board: "Board", bus: "/dev/i2c-1", chip: "mpu6050", address: 0x68, part: "MPU-6050", identity: 0x68,
                                  simulation: .init(seed: 16, imperfections: "fnv1a64:0123456789abcdef", scenario: "desk-idle"))
        f.chips["mpu6050@0x68"]?.measuredOn = o
        let path = CalibrationFileTests.tempDir() + "/calibration.json"
        try f.save(to: path)
        #expect(try CalibrationFile.load(from: path) == f)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("\"address\" : \"0x68\"") && text.contains("\"measured_on\""))
        // what differs between two chips, in words
        var other = o
        other.identity = 0x70; other.simulation?.seed = 3
        #expect(o.differences(from: o).isEmpty)
        #expect(o.differences(from: other).count == 2)
        // a newer calibration of other chips replaces the entry instead of merging into it
        var newer = CalibrationFile()
        newer.set(gyro: .identity, for: "mpu6050@0x68", created: "now", measuredOn: other)
        let merged = f.merging(newer)
        #expect(merged[chip: "mpu6050@0x68"]?.accel == nil && merged[chip: "mpu6050@0x68"]?.measuredOn == other)
        #expect(merged[chip: "qmc5883l@0x0d"]?.mag != nil)
    }
}
