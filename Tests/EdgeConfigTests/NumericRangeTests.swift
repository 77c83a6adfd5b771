import Testing
import Foundation
@testable import EdgeConfig

/// One numeric key with its valid values, written here from the tables in
/// config/README.md and boards/README.md (not from the code's constants).
struct DocumentedNumber: CustomTestStringConvertible, Sendable {
    enum File: Sendable { case config, board }
    var file: File
    /// As the README writes it: `loop.imu_batch`, `clients[].uid`, `chips[].address`.
    var path: String
    /// Inside the range, both ends included.
    var accepted: [String]
    /// Just below and just above the range, and anything in between that is
    /// not one of the allowed values.
    var rejected: [String]
    /// An integer key: a fraction is rejected too.
    var whole: Bool
    /// Sibling keys the value needs (config), or the chip kind (board `chips[].address`).
    var context = ""

    var testDescription: String { path + (context.isEmpty ? "" : " (\(context))") }

    static func config(_ path: String, _ accepted: [String], _ rejected: [String], whole: Bool,
                       context: String = "") -> DocumentedNumber {
        DocumentedNumber(file: .config, path: path, accepted: accepted, rejected: rejected, whole: whole, context: context)
    }
    static func board(_ path: String, _ accepted: [String], _ rejected: [String], whole: Bool = true,
                      context: String = "") -> DocumentedNumber {
        DocumentedNumber(file: .board, path: path, accepted: accepted, rejected: rejected, whole: whole, context: context)
    }

    /// A document holding only this key (and what it needs) set to `value`,
    /// the key path the loader must name, and the line the value is on.
    func document(_ value: String) -> (text: String, keyPath: String, line: Int) {
        var lines: [String]
        let keyPath: String
        switch file {
        case .config:
            if path.hasPrefix("clients[].") {
                let key = String(path.dropFirst("clients[].".count))
                lines = ["{", "  clients: [ {", "    entitlements: [\"motion\"],", "    \(key): \(value),", "  } ],", "}"]
                keyPath = "clients[0].\(key)"
            } else {
                let parts = path.split(separator: ".").map(String.init)
                lines = ["{"]
                for p in parts.dropLast() { lines.append("\(p): {") }
                if !context.isEmpty { lines.append("\(context),") }
                lines.append("\(parts.last!): \(value),")
                for _ in parts.dropLast() { lines.append("},") }
                lines.append("}")
                keyPath = path
            }
        case .board:
            let mpu = "{ kind: \"mpu6050\", address: 0x68 }"
            switch path {
            case "bus":
                lines = ["{ name: \"x\", chips: [\(mpu)],", "  bus: \(value),", "}"]
                keyPath = "bus"
            case "simulation.seed":
                lines = ["{ name: \"x\", bus: \"simulated\", chips: [\(mpu)],",
                         "  simulation: { scenario: \"s.json5\",", "    seed: \(value),", "  },", "}"]
                keyPath = "simulation.seed"
            case "chips[].address":
                lines = ["{ name: \"x\", bus: 1, chips: [ {", "  kind: \"\(context)\",", "  address: \(value),", "} ] }"]
                keyPath = "chips[0].address"
            case "chips[].behind":
                lines = ["{ name: \"x\", bus: 1, chips: [",
                         "  \(mpu), { kind: \"mpu6050\", address: 0x69, role: \"accessory\" },",
                         "  { kind: \"qmc5883l\", address: 0x0d,", "    behind: \(value),", "  } ] }"]
                keyPath = "chips[2].behind"
            case "chips[].data_ready.line":
                lines = ["{ name: \"x\", bus: 1, chips: [ { kind: \"mpu6050\", address: 0x68,",
                         "  data_ready: { chip: \"pinctrl-bcm2711\",", "    line: \(value),", "} } ] }"]
                keyPath = "chips[0].data_ready.line"
            default:
                fatalError("no document for \(path)")
            }
        }
        let text = lines.joined(separator: "\n")
        return (text, keyPath, lineOf(": \(value),", in: text)!)
    }

    func load(_ text: String) -> ConfigError? {
        switch file {
        case .config: return configError(AgentConfig.self, text, file: "c.json5")
        case .board: return configError(BoardProfile.self, text, file: "b.json5")
        }
    }
}

/// config/README.md and boards/README.md, key by key.
let documentedNumbers: [DocumentedNumber] = [
    .config("sensors.mpu6050.gyro_range_dps", ["250", "500", "1000", "2000"], ["249", "2001", "300", "0", "-500"], whole: true),
    .config("sensors.mpu6050.accel_range_g", ["2", "4", "8", "16"], ["1", "17", "3", "-4"], whole: true),
    .config("sensors.mpu6050.dlpf_bandwidth_hz", ["260", "184", "94", "44", "21", "10", "5"], ["4", "261", "45"], whole: true),
    .config("sensors.mpu6050.sample_rate_hz", ["3.90625", "1000", "200", "123.4"], ["3.9", "1000.5", "0", "-100"], whole: false),
    .config("sensors.mpu6050.sample_rate_hz", ["31.25", "8000"], ["31.2", "8000.5"], whole: false,
            context: "dlpf_bandwidth_hz: 260"),
    .config("sensors.bmp280.pressure_oversampling", ["0", "1", "2", "4", "8", "16"], ["-1", "17", "3"], whole: true),
    .config("sensors.bmp280.temperature_oversampling", ["1", "2", "4", "8", "16"], ["0", "17", "3"], whole: true),
    .config("sensors.bmp280.iir_filter", ["0", "2", "4", "8", "16"], ["-1", "17", "1"], whole: true),
    .config("sensors.bmp280.standby_ms", ["0.5", "62.5", "125", "250", "500", "1000", "2000", "4000"], ["0.4", "4001", "100"],
            whole: false),
    .config("sensors.qmc5883l.output_rate_hz", ["10", "50", "100", "200"], ["9", "201", "60"], whole: true),
    .config("sensors.qmc5883l.range_gauss", ["2", "8"], ["1", "9", "4"], whole: true),
    .config("sensors.qmc5883l.oversampling", ["512", "256", "128", "64"], ["63", "513", "100"], whole: true),
    .config("sensors.hmc5883l.output_rate_hz", ["0.75", "1.5", "3", "7.5", "15", "30", "75"], ["0.7", "76", "10", "0"], whole: false),
    .config("sensors.hmc5883l.range_gauss", ["0.88", "1.3", "1.9", "2.5", "4.0", "4.7", "5.6", "8.1"], ["0.8", "8.2", "2", "-1.3"],
            whole: false),
    .config("sensors.hmc5883l.averaging", ["1", "2", "4", "8"], ["0", "3", "16"], whole: true),
    .config("sensors.bme280.pressure_oversampling", ["0", "1", "2", "4", "8", "16"], ["-1", "17", "3"], whole: true),
    .config("sensors.bme280.temperature_oversampling", ["1", "2", "4", "8", "16"], ["0", "17", "3"], whole: true),
    .config("sensors.bme280.humidity_oversampling", ["0", "1", "2", "4", "8", "16"], ["-1", "17", "3"], whole: true),
    .config("sensors.bme280.iir_filter", ["0", "2", "4", "8", "16"], ["-1", "17", "1"], whole: true),
    .config("sensors.bme280.standby_ms", ["0.5", "10", "20", "62.5", "125", "250", "500", "1000"], ["2000", "4000", "0.4", "15"],
            whole: false),
    .config("loop.imu_batch", ["0", "1", "64", "0x10"], ["65", "-1"], whole: true),
    .config("loop.priority", ["1", "99"], ["0", "100"], whole: true),
    .config("fusion.declination_deg", ["-180", "180", "0", "12.5"], ["-180.001", "180.001"], whole: false),
    .config("altimeter.sea_level_pa", ["80000", "110000", "101325"], ["79999.9", "110000.1", "0", "-101325"], whole: false),
    .config("altimeter.sea_level_uncertainty_pa", ["0", "30000", "1000"], ["-1", "30000.5"], whole: false),
    .config("submersion.latitude_deg", ["-90", "90", "0", "43.3"], ["-90.5", "90.5"], whole: false),
    .config("service.queue_capacity", ["1", "65536"], ["0", "65537"], whole: true),
    .config("service.delivery_interval_ms", ["0", "1000", "20"], ["-0.001", "1000.001"], whole: false),
    .config("service.max_clients", ["1", "4096"], ["0", "4097"], whole: true),
    .config("service.max_clients_per_uid", ["1", "4096"], ["0", "4097"], whole: true),
    .config("service.guaranteed_clients_per_uid", ["1", "4096"], ["0", "4097"], whole: true),
    .config("service.reserved_client_slots", ["0", "4096"], ["-1", "4097"], whole: true),
    .config("service.max_unentitled_clients", ["0", "4096"], ["-1", "4097"], whole: true),
    .config("service.demand_raise_limit", ["1", "100000"], ["0", "100001"], whole: true),
    .config("service.demand_raise_window_s", ["0.001", "86400"], ["0", "86400.5"], whole: false),
    .config("clients[].uid", ["0", "4294967294"], ["-1", "4294967295"], whole: true),
    .config("clients[].gid", ["0", "4294967294"], ["-1", "4294967295"], whole: true),
    .config("faults.failures_before_reset", ["1", "1000"], ["0", "1001"], whole: true),
    .config("fitness.height_m", ["0.5", "2.5", "1.7"], ["0.49", "2.51", "0", "-1.7"], whole: false),
    .config("fitness.stride_scale", ["0.2", "5", "1"], ["0.19", "5.01", "0"], whole: false),
    .config("fitness.floor_height_m", ["1", "10", "3"], ["0.99", "10.01", "0"], whole: false),
    .config("fitness.history.retention_days", ["0.01", "3650", "7"], ["0.009", "3650.5", "0", "-1"], whole: false,
            context: "path: \"fitness.sqlite3\""),
    .config("recorder.max_mb", ["1", "100000", "128"], ["0.99", "100001", "0", "-1"], whole: false,
            context: "path: \"recorder.sqlite3\""),
    .config("faults.reprobe_interval_s", ["0.01", "3600", "1"], ["0.009", "3600.001", "0", "-1", "1.85e10", "1e300"],
            whole: false),
    .config("faults.stall_periods", ["2", "100", "4.5"], ["1.99", "100.1", "0"], whole: false),
    .config("faults.verify_interval_s", ["0.05", "3600"], ["0.049", "3600.1", "0"], whole: false),
    .config("faults.bus_retries", ["0", "10"], ["-1", "11"], whole: true),
    .board("bus", ["0", "1", "255"], ["-1", "256"]),
    .board("simulation.seed", ["0", "18446744073709551615"], ["-1", "18446744073709551616", "1e20"]),
    .board("chips[].address", ["0x68", "0x69", "104"], ["0x67", "0x6a", "0x76", "0"], context: "mpu6050"),
    .board("chips[].address", ["0x76", "0x77"], ["0x75", "0x78", "0x68"], context: "bmp280"),
    .board("chips[].address", ["0x0d", "13"], ["0x0c", "0x0e"], context: "qmc5883l"),
    .board("chips[].address", ["0x1e", "30"], ["0x1d", "0x1f", "0x0d"], context: "hmc5883l"),
    .board("chips[].address", ["0x76", "0x77"], ["0x75", "0x78", "0x1e"], context: "bme280"),
    .board("chips[].behind", ["0x68", "0x69"], ["0x67", "0x6a"]),
    .board("chips[].data_ready.line", ["0", "1023", "17"], ["-1", "1024"]),
]

@Suite struct NumericRangeTests {
    @Test("every documented value is accepted", arguments: documentedNumbers)
    func acceptsTheRange(_ key: DocumentedNumber) {
        for v in key.accepted {
            let (text, _, _) = key.document(v)
            if let e = key.load(text) { Issue.record("\(key.path) = \(v) is documented as valid: \(e)") }
        }
    }

    /// Below, above, between the allowed values, NaN, ±Infinity, a fraction
    /// for integer keys, and values of the wrong type: each an error naming
    /// the key path and the line, saying what was found, in the words of a
    /// config file.
    @Test("every value outside the documented range is an error at its line", arguments: documentedNumbers)
    func rejectsTheRest(_ key: DocumentedNumber) throws {
        var bad = key.rejected + ["NaN", "Infinity", "-Infinity", "+Infinity", "'12'", "true", "[1]", "{}"]
        if key.whole, let first = key.accepted.first, let v = Double(first) { bad.append(String(v + 0.5)) }
        for v in bad {
            let (text, keyPath, line) = key.document(v)
            guard let e = key.load(text) else {
                Issue.record("\(key.path) = \(v) loaded, but it is outside the documented range")
                continue
            }
            #expect(e.keyPath == keyPath, "\(key.path) = \(v): \(e)")
            #expect(e.line == line, "\(key.path) = \(v): \(e)")
            #expect(e.message.contains("got"), "\(key.path) = \(v) says what it found: \(e)")
            if v.contains("NaN") { #expect(e.message.lowercased().contains("nan"), "\(e)") }
            if v.contains("Infinity") { #expect(e.message.lowercased().contains("inf"), "\(e)") }
            expectNoSwiftText(e.description, "\(key.path) = \(v)")
        }
    }

    // MARK: the table covers every key

    /// `(path, type)` of every key in a README's key tables.
    static func documentedKeys(_ readme: String) throws -> [(path: String, type: String)] {
        let text = try String(contentsOfFile: repositoryRoot + "/" + readme, encoding: .utf8)
        var prefix: String?
        var out: [(String, String)] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") {
                let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
                if title == "Top level" { prefix = "" }
                else if title.hasPrefix("`"), title.hasSuffix("`") { prefix = title.dropFirst().dropLast() + "." }
                else { prefix = nil }
                continue
            }
            guard let prefix, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            out.append((prefix + cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), cells[2]))
        }
        return out
    }

    @Test("the table holds exactly the numeric keys the READMEs document")
    func tableCoversTheDocumentedNumbers() throws {
        for (readme, file) in [("config/README.md", DocumentedNumber.File.config), ("boards/README.md", .board)] {
            let numeric = Set(try Self.documentedKeys(readme).filter { $0.type.contains("integer") || $0.type == "number" }.map(\.path))
            let tested = Set(documentedNumbers.filter { $0.file == file }.map(\.path))
            #expect(numeric == tested, "\(readme): documented but untested \(numeric.subtracting(tested).sorted()), tested but undocumented \(tested.subtracting(numeric).sorted())")
        }
    }

    /// A key the decoder accepts but the README does not list would have no
    /// documented range (and so no row above): the two lists must agree.
    @Test("every key the decoders accept is documented, and every documented key is accepted")
    func decodersAndDocsAgree() throws {
        func keys<K: CaseIterable & RawRepresentable>(_: K.Type, _ prefix: String) -> [String] where K.RawValue == String {
            K.allCases.map { prefix + $0.rawValue }
        }
        var config = keys(AgentConfig.CodingKeys.self, "") + keys(LoopSettings.CodingKeys.self, "loop.")
            + keys(FusionSettings.CodingKeys.self, "fusion.") + keys(AltimeterSettings.CodingKeys.self, "altimeter.")
            + keys(ServiceSection.CodingKeys.self, "service.") + keys(ClientGrant.CodingKeys.self, "clients[].")
            + keys(FaultSettings.CodingKeys.self, "faults.") + keys(SubmersionSection.CodingKeys.self, "submersion.")
            + keys(FitnessConfig.CodingKeys.self, "fitness.") + keys(FitnessHistoryConfig.CodingKeys.self, "fitness.history.")
            + keys(RecorderConfig.CodingKeys.self, "recorder.")
        for (chip, list) in SensorSettings.allowedKeys { config += list.map { "sensors.\(chip.rawValue).\($0)" } }
        let board = keys(BoardProfile.CodingKeys.self, "") + keys(BoardProfile.SimulationSpec.CodingKeys.self, "simulation.")
            + keys(ChipSpec.CodingKeys.self, "chips[].") + keys(ChipSpec.DataReadySpec.CodingKeys.self, "chips[].data_ready.")
        for (readme, accepted) in [("config/README.md", config), ("boards/README.md", board)] {
            let documented = Set(try Self.documentedKeys(readme).map(\.path))
            #expect(Set(accepted) == documented,
                    "\(readme): accepted but undocumented \(Set(accepted).subtracting(documented).sorted()), documented but not accepted \(documented.subtracting(accepted).sorted())")
        }
    }

    // MARK: the reported crash

    /// `faults.reprobe_interval_s` of 1.85e10 s or more overflowed the
    /// engine's UInt64 nanoseconds (SIGILL in SensorHub.start()): now an
    /// error at load, in a file and in a recording's embedded config alike
    /// (replay decodes it with ConfigLoader.decode).
    @Test func hugeReprobeIntervalIsRejectedAtLoad() throws {
        for v in ["1.85e10", "2e10", "Infinity", "1e308"] {
            let text = "{\n  faults: { failures_before_reset: 3, reprobe_interval_s: \(v) },\n}"
            let e = try #require(configError(AgentConfig.self, text, file: "rec.log @config_json"))
            #expect(e.keyPath == "faults.reprobe_interval_s")
            #expect(e.line == 2)
            #expect(e.message.contains("0.01 to 3600"))
        }
    }

    @Test func seaLevelUncertaintyNaNInfinityAndNegativeAreRejected() throws {
        for v in ["NaN", "Infinity", "-1"] {
            let e = try #require(configError(AgentConfig.self, "{ altimeter: { sea_level_uncertainty_pa: \(v) } }"))
            #expect(e.keyPath == "altimeter.sea_level_uncertainty_pa", "\(v)")
            #expect(e.message.contains("got \(v)"), "\(e)")
        }
    }

    // MARK: mounting matrices

    @Test func mountingMatrixEntriesMustBeFinite() throws {
        for v in ["NaN", "Infinity", "-Infinity", "1e400"] {
            let text = "{ name: 'x', bus: 1, chips: [ { kind: 'mpu6050', address: 0x68,\n  mounting: [[\(v), 0, 0], [0, 1, 0], [0, 0, 1]] } ] }"
            let e = try #require(configError(BoardProfile.self, text), "\(v)")
            #expect(e.keyPath == "chips[0].mounting", "\(v): \(e)")
            #expect(e.line == 2, "\(v): \(e)")
            expectNoSwiftText(e.description, "mounting \(v)")
        }
    }
}

/// The calibration file is written by the tool, but read through the same
/// loader: its numbers are checked too (CalibrationFile's documentation).
@Suite struct CalibrationRangeTests {
    func text(_ gyro: String) -> String {
        "{\"version\": 1, \"chips\": {\"mpu6050@0x68\": {\"gyro\": {\"bias_radps\": [0, 0, 0],\n\(gyro)}}}}"
    }

    @Test func scalarsOutOfRangeAreErrors() throws {
        for (gyro, key) in [("\"temperature_c\": Infinity", "temperature_c"), ("\"temperature_c\": NaN", "temperature_c"),
                            ("\"temperature_c\": 500", "temperature_c"), ("\"samples\": -1", "samples"),
                            ("\"samples\": 1.5", "samples")] {
            let e = try #require(configError(CalibrationFile.self, text(gyro)), "\(gyro)")
            #expect(e.keyPath == "chips.mpu6050@0x68.gyro.\(key)" && e.line == 2, "\(gyro): \(e)")
        }
        #expect(configError(CalibrationFile.self, text("\"temperature_c\": 22.5, \"samples\": 1000")) == nil)
    }
}
