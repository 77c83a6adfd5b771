#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeBus
import EdgeChips

/// `edge-agent decode CHIP FILE [--json]`: decodes an `i2cdump -y BUS ADDR`
/// register dump into readings, with the chip's configuration registers in
/// the dump selecting the ranges. All the decoding is EdgeChips' pure code
/// (``RegisterDump``, the chips' `decode(image:)`); this file only reads the
/// file and formats.
public enum DecodeCommand: Subcommand {
    public static let name = "decode"
    public static let summary = "Decode an i2cdump register dump of an MPU-6050, BMP280, BME280, QMC5883L or HMC5883L, or MS5837 PROM words and D1/D2"
    public static let help = """
    Usage: edge-agent decode CHIP FILE [--json] [--force]

    Decodes a register dump in the default format of i2c-tools'
    `i2cdump -y BUS ADDR` and prints the readings, in the chip's own axes
    (no board mounting applied). CHIP is mpu6050, bmp280, bme280, qmc5883l,
    hmc5883l or ms5837; FILE
    is a path, or - for standard input. Cells shown as XX (unreadable) are
    fine in registers the decoder does not need; a needed one is an error
    that names it.

    The dump is checked before it is decoded: a row with a cell too few or
    too many, out of order or misaddressed (a slip when pasting shifts every
    later byte) is an error naming the line; and the chip's identity
    register must say CHIP (WHO_AM_I 0x75 of an MPU-6050 or a known clone,
    id 0xd0 of a BMP280/BME280, 0x60 for bme280, CHIP_ID 0x0d = 0xff of a
    QMC5883L, 'H43' at 0x0a..0x0c of an HMC5883L). A dump of
    another chip, or of none, is an error that says what the dump is.

    What is read from the dump:
      mpu6050   GYRO_CONFIG (0x1b) and ACCEL_CONFIG (0x1c) select the ranges;
                0x3b..0x48 hold accel, temperature, gyro; WHO_AM_I (0x75)
                selects a clone's temperature formula; CONFIG/SMPLRT_DIV give
                the output rate; PWR_MGMT_1 (0x6b) shows whether it slept.
      bmp280    calibration 0x88..0x9f and data 0xf7..0xfc; the data sheet's
                integer compensation (temperature in 0.01 °C steps, pressure =
                64-bit Q24.8 result / 256); ctrl_meas (0xf4) says whether
                pressure was skipped on purpose. A raw 0x80000 is an error.
      bme280    as bmp280, plus humidity: dig_H1 (0xa1), dig_H2..H6
                (0xe1..0xe7) and hum 0xfd/0xfe; the data sheet's integer
                formula (Q22.10 / 1024 %RH); ctrl_hum (0xf2) says whether
                humidity was skipped on purpose. A raw 0x8000 is an error.
      qmc5883l  CTRL1 (0x09) selects the range; STATUS (0x06) and 0x00..0x05
                the field. OVL (overflow) means no valid field.
      hmc5883l  CONFIG_B (0x01) selects the gain; 0x03..0x08 hold X, Z, Y
                (big-endian); STATUS (0x09) RDY/LOCK; CONFIG_A (0x00) the
                rate and averaging. An axis at -4096 means overflow.
      ms5837    no registers to dump: FILE holds nine whole numbers (decimal
                or 0x-hex; spaces, commas or newlines; # comments): PROM
                words 0..6 (commands 0xa0..0xac), then D1, then D2. The PROM
                CRC-4 is checked; first- and second-order compensation per
                TE's MS5837-30BA datasheet. JSON: pressure_pa,
                temperature_c (second order), pressure_first_order_pa,
                temperature_first_order_c, d1, d2, dt, variant.

    Options:
      --force   decode even when the identity register says another chip (or
                none), with a warning on standard error
      --json    One JSON object; keys carry their unit:
                mpu6050:  accel_x_mps2, accel_y_mps2, accel_z_mps2 (m/s²),
                          gyro_x_radps, gyro_y_radps, gyro_z_radps (rad/s),
                          temperature_c (°C, die), accel_range_g,
                          gyro_range_dps, sample_rate_hz (null if unknown),
                          who_am_i, variant, asleep, accel_raw, gyro_raw,
                          temperature_raw (counts)
                bmp280:   temperature_c (°C), pressure_pa (Pa, null when
                          skipped), t_fine, temperature_centi_c,
                          pressure_q24_8, adc_t, adc_p, chip_id, variant
                bme280:   the bmp280 keys plus humidity_percent (%RH, null
                          when skipped), humidity_q22_10, adc_h
                hmc5883l: magnetic_x_ut, magnetic_y_ut, magnetic_z_ut (µT,
                          chip axes, null on overflow), overflow, ready,
                          locked, range_gauss, gain_lsb_per_gauss,
                          output_rate_hz, averaging, mode
                qmc5883l: magnetic_x_ut, magnetic_y_ut, magnetic_z_ut (µT,
                          null on overflow), overflow, data_skipped,
                          data_ready, range_gauss, relative_temperature_counts
                          (relative only: ~100 counts/°C, unknown offset),
                          chip_id
                Every object also has "chip".

    Examples:
      i2cdump -y 1 0x76 > bmp.txt && edge-agent decode bmp280 bmp.txt
      edge-agent decode mpu6050 mpu.txt --json
    """

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        let json = arguments.flag("--json")
        let force = arguments.flag("--force")
        let chipName = try arguments.positional("CHIP (mpu6050, bmp280, bme280, qmc5883l, hmc5883l or ms5837)")
        guard let chip = ChipKind(rawValue: chipName) else {
            throw UsageError("unknown chip '\(chipName)': expected mpu6050, bmp280, bme280, qmc5883l, hmc5883l or ms5837")
        }
        let path = try arguments.positional("FILE (an i2cdump output, or - for standard input)")
        try arguments.finish()
        let text = try readText(path)
        if chip == .ms5837 {
            let parsed: (words: [UInt16], d1: UInt32, d2: UInt32)
            do { parsed = try MS5837Decoder.parse(text) } catch {
                throw Failure(description: "\(path):\(error.line): \(error.message)")
            }
            let r: MS5837Decoder.Reading
            do { r = try MS5837Decoder.decode(words: parsed.words, d1: parsed.d1, d2: parsed.d2) } catch {
                throw Failure(description: "\(path): \(error)")
            }
            for l in format(r, json: json) { console.print(l) }
            return 0
        }
        let image: RegisterImage
        do {
            image = try RegisterDump.image(text)
        } catch {
            throw Failure(description: "\(path):\(error.line): \(error.message)")
        }
        switch RegisterDumpIdentity.check(image, as: chip) {
        case .matches: break
        case .unchecked(let why):
            console.error("edge-agent decode: warning: \(path): \(why)")
        case .mismatch(let what):
            let file = path == "-" ? "FILE" : path
            if !force {
                throw Failure(description: "\(path): not \(article(chip)) dump: \(what)".replacingFILE(with: file)
                    + ". Nothing decoded; use --force to decode it as \(article(chip)) anyway.")
            }
            console.error("edge-agent decode: warning: \(path): not \(article(chip)) dump: \(what)".replacingFILE(with: file)
                + ". Decoding it as \(article(chip)) anyway (--force): the readings below are probably meaningless.")
        }
        let lines: [String]
        switch chip {
        case .mpu6050: lines = format(try MPU6050Decoder.decode(image: image), json: json)
        case .bmp280: lines = format(try BMP280Compensation.decode(image: image), json: json)
        case .qmc5883l: lines = format(try QMC5883LDecoder.decode(image: image), json: json)
        case .hmc5883l: lines = format(try HMC5883LDecoder.decode(image: image), json: json)
        case .bme280: lines = format(try BME280Compensation.decode(image: image), json: json)
        case .ms5837: lines = []   // handled above
        }
        for l in lines { console.print(l) }
        return 0
    }

    /// "an MPU-6050", "a BMP280".
    static func article(_ chip: ChipKind) -> String { (chip == .mpu6050 ? "an " : "a ") + chip.partName }

    // MARK: formatting

    static func format(_ r: MPU6050Decoder.DumpReading, json: Bool) -> [String] {
        let s = r.sample
        let variant = r.variant.map { $0.isGenuine ? "MPU-6050" : $0.part }
        if json {
            var o = JSONObject()
            o["chip"] = .string("mpu6050")
            o["accel_x_mps2"] = .number(s.acceleration.x)
            o["accel_y_mps2"] = .number(s.acceleration.y)
            o["accel_z_mps2"] = .number(s.acceleration.z)
            o["gyro_x_radps"] = .number(s.rotationRate.x)
            o["gyro_y_radps"] = .number(s.rotationRate.y)
            o["gyro_z_radps"] = .number(s.rotationRate.z)
            o["temperature_c"] = .number(s.temperatureCelsius)
            o["accel_range_g"] = .int(r.accelRange.g)
            o["gyro_range_dps"] = .int(r.gyroRange.degreesPerSecond)
            o["sample_rate_hz"] = r.sampleRateHz.map { .number($0) } ?? .null
            o["who_am_i"] = r.whoAmI.map { .int(Int($0)) } ?? .null
            o["variant"] = variant.map { .string($0) } ?? .null
            o["asleep"] = r.asleep.map { .bool($0) } ?? .null
            o["accel_raw"] = .array([r.raw.accel.x, r.raw.accel.y, r.raw.accel.z].map { .int(Int($0)) })
            o["gyro_raw"] = .array([r.raw.gyro.x, r.raw.gyro.y, r.raw.gyro.z].map { .int(Int($0)) })
            o["temperature_raw"] = .int(Int(r.raw.temperature))
            return [o.rendered]
        }
        var out: [String] = []
        var head = variant ?? "MPU-6050 (WHO_AM_I " + (r.whoAmI.map { hex($0) + ", unknown" } ?? "unreadable") + "; genuine temperature formula assumed)"
        head += ": accel ±\(r.accelRange.g) g, gyro ±\(r.gyroRange.degreesPerSecond) °/s"
        if let hz = r.sampleRateHz { head += ", \(fixed(hz, 2)) Hz" }
        out.append(head)
        if let w = r.variant?.warning { out.append("warning: " + w) }
        if r.asleep == true {
            out.append("warning: PWR_MGMT_1.SLEEP is set: the chip was asleep, so the data registers are stale (often all zero)")
        }
        out.append("acceleration   x \(fixed(s.acceleration.x, 5))  y \(fixed(s.acceleration.y, 5))  z \(fixed(s.acceleration.z, 5)) m/s²")
        out.append("rotation rate  x \(fixed(s.rotationRate.x, 6))  y \(fixed(s.rotationRate.y, 6))  z \(fixed(s.rotationRate.z, 6)) rad/s")
        out.append("temperature    \(fixed(s.temperatureCelsius, 2)) °C (die)")
        return out
    }

    /// The bmp280 JSON object (the bme280 one adds humidity keys).
    static func object(_ r: BMP280Compensation.DumpReading, chip: ChipKind = .bmp280) -> JSONObject {
        var o = JSONObject()
        o["chip"] = .string(chip.rawValue)
        o["temperature_c"] = .number(r.temperatureCelsius)
        o["pressure_pa"] = r.pressurePascals.map { .number($0) } ?? .null
        o["t_fine"] = .int(Int(r.tFine))
        o["temperature_centi_c"] = .int(Int(r.centiCelsius))
        o["pressure_q24_8"] = r.pressureQ24_8.map { .int(Int($0)) } ?? .null
        o["adc_t"] = .int(Int(r.raw.adcT))
        o["adc_p"] = .int(Int(r.raw.adcP))
        o["chip_id"] = r.chipID.map { .int(Int($0)) } ?? .null
        o["variant"] = r.variant.map { .string($0.part) } ?? .null
        return o
    }

    static func format(_ r: BMP280Compensation.DumpReading, json: Bool) -> [String] {
        if json { return [object(r).rendered] }
        var out: [String] = []
        let name = r.variant?.part ?? ("BMP280 (id " + (r.chipID.map { hex($0) + ", unknown" } ?? "unreadable") + ")")
        out.append(name)
        if let note = r.variant?.note { out.append((r.variant!.isSupported ? "warning: " : "error: ") + note) }
        out.append("temperature  \(fixed(r.temperatureCelsius, 2)) °C (t_fine \(r.tFine))")
        if let q = r.pressureQ24_8 {
            out.append("pressure     \(fixed(Double(q) / 256, 3)) Pa (Q24.8 \(q) / 256)")
        } else {
            out.append("pressure     not measured (pressure oversampling is 0 in ctrl_meas)")
        }
        return out
    }

    static func format(_ r: BME280Compensation.DumpReading, json: Bool) -> [String] {
        if json {
            var o = object(r.barometer, chip: .bme280)
            o["humidity_percent"] = r.relativeHumidityPercent.map { .number($0) } ?? .null
            o["humidity_q22_10"] = r.humidityQ22_10.map { .int(Int($0)) } ?? .null
            o["adc_h"] = .int(Int(r.adcH))
            return [o.rendered]
        }
        var lines = format(r.barometer, json: false)
        if let q = r.humidityQ22_10 {
            lines.append("humidity     \(fixed(Double(q) / 1024, 3)) %RH (Q22.10 \(q) / 1024)")
        } else {
            lines.append("humidity     not measured (humidity oversampling is 0 in ctrl_hum)")
        }
        return lines
    }

    static func format(_ r: HMC5883LDecoder.DumpReading, json: Bool) -> [String] {
        let rate = HMC5883LOutputRate(rawValue: (r.configurationA >> 2) & 7)
        let averaging = 1 << Int((r.configurationA >> 5) & 3)
        let mode = r.mode.map { HMC5883LMode(rawValue: min($0 & 3, 2))!.key }
        var field: Vector3?
        if case .field(let f) = r.reading { field = f }
        if json {
            var o = JSONObject()
            o["chip"] = .string("hmc5883l")
            o["magnetic_x_ut"] = field.map { .number($0.x) } ?? .null
            o["magnetic_y_ut"] = field.map { .number($0.y) } ?? .null
            o["magnetic_z_ut"] = field.map { .number($0.z) } ?? .null
            o["overflow"] = .bool(r.raw.overflow)
            o["ready"] = .bool(r.raw.ready)
            o["locked"] = .bool(r.raw.locked)
            o["range_gauss"] = .number(r.gain.rangeGauss)
            o["gain_lsb_per_gauss"] = .number(r.gain.lsbPerGauss)
            o["output_rate_hz"] = rate.map { .number($0.hertz) } ?? .null
            o["averaging"] = .int(averaging)
            o["mode"] = mode.map { .string($0) } ?? .null
            return [o.rendered]
        }
        var head = "HMC5883L: ±\(plainNumber(r.gain.rangeGauss)) G (\(plainNumber(r.gain.lsbPerGauss)) LSB/G)"
        head += rate.map { ", \(plainNumber($0.hertz)) Hz" } ?? ", output rate code 111 (reserved)"
        head += ", \(averaging)-sample averaging" + (mode.map { ", \($0) mode" } ?? "")
        var out = [head]
        if let f = field {
            out.append("magnetic field  x \(fixed(f.x, 3))  y \(fixed(f.y, 3))  z \(fixed(f.z, 3)) µT")
        } else {
            out.append("magnetic field  no valid field: overflow (an axis reads -4096): the field exceeds ±\(plainNumber(r.gain.rangeGauss)) G")
        }
        var flags: [String] = []
        if !r.raw.ready { flags.append("RDY clear (the values may already have been read)") }
        if r.raw.locked { flags.append("LOCK set (the data registers were partly read; no new data lands until all six are read)") }
        if !flags.isEmpty { out.append("status          " + flags.joined(separator: "; ")) }
        return out
    }

    static func format(_ r: MS5837Decoder.Reading, json: Bool) -> [String] {
        if json {
            var o = JSONObject()
            o["chip"] = .string("ms5837")
            o["pressure_pa"] = .number(r.pressurePascals)
            o["temperature_c"] = .number(r.temperatureCelsius)
            o["pressure_first_order_pa"] = .number(Double(r.steps.p) * 10)
            o["temperature_first_order_c"] = .number(Double(r.steps.temp) / 100)
            o["d1"] = .int(Int(r.raw.d1))
            o["d2"] = .int(Int(r.raw.d2))
            o["dt"] = .int(Int(r.steps.dT))
            o["variant"] = r.variant.map { .string($0.part) } ?? .null
            return [o.rendered]
        }
        var out = [r.variant?.part ?? "MS5837 (unknown version \(hex(UInt8((r.calibration.words[0] >> 5) & 0x7F))))"]
        if let note = r.variant?.note { out.append("warning: " + note) }
        out.append("temperature  \(fixed(r.temperatureCelsius, 2)) °C (first order \(fixed(Double(r.steps.temp) / 100, 2)) °C, dT \(r.steps.dT))")
        out.append("pressure     \(fixed(r.pressurePascals, 1)) Pa (first order \(fixed(Double(r.steps.p) * 10, 1)) Pa)")
        return out
    }

    static func format(_ r: QMC5883LDecoder.DumpReading, json: Bool) -> [String] {
        let sample = r.reading.sample
        if json {
            var o = JSONObject()
            o["chip"] = .string("qmc5883l")
            o["magnetic_x_ut"] = sample.map { .number($0.magneticField.x) } ?? .null
            o["magnetic_y_ut"] = sample.map { .number($0.magneticField.y) } ?? .null
            o["magnetic_z_ut"] = sample.map { .number($0.magneticField.z) } ?? .null
            o["overflow"] = .bool(r.raw.overflow)
            o["data_skipped"] = .bool(r.raw.dataSkipped)
            o["data_ready"] = .bool(r.raw.dataReady)
            o["range_gauss"] = .int(r.range.gauss)
            o["relative_temperature_counts"] = r.relativeTemperature.map { .int(Int($0.counts)) } ?? .null
            o["chip_id"] = r.chipID.map { .int(Int($0)) } ?? .null
            return [o.rendered]
        }
        var out = ["QMC5883L: range ±\(r.range.gauss) G"]
        if let id = r.chipID, id != 0xFF { out.append("warning: CHIP_ID (0x0d) reads \(hex(id)), not 0xff: is this a QMC5883L?") }
        if let s = sample {
            out.append("magnetic field  x \(fixed(s.magneticField.x, 3))  y \(fixed(s.magneticField.y, 3))  z \(fixed(s.magneticField.z, 3)) µT")
        } else {
            out.append("magnetic field  no valid field: overflow (STATUS.OVL): an axis exceeds ±\(r.range.gauss) G")
        }
        var flags: [String] = []
        if !r.raw.dataReady { flags.append("DRDY clear (the values may already have been read)") }
        if r.raw.dataSkipped { flags.append("DOR set (a sample was skipped)") }
        if !flags.isEmpty { out.append("status          " + flags.joined(separator: "; ")) }
        if let t = r.relativeTemperature {
            out.append("temperature     \(t.counts) counts (relative only: ~100 counts/°C, uncalibrated offset)")
        }
        return out
    }

    // MARK: helpers

    static func readText(_ path: String) throws -> String {
        let fd: Int32 = path == "-" ? 0 : open(path, O_RDONLY)
        guard fd >= 0 else {
            let e = errno
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(e))) (errno \(e))")
        }
        defer { if fd != 0 { close(fd) } }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                throw Failure(description: "cannot read \(path): \(String(cString: strerror(e))) (errno \(e))")
            }
            if n == 0 { break }
            data.append(contentsOf: chunk[0..<n])
            if data.count > 1 << 20 { throw Failure(description: "\(path) is larger than 1 MiB: not an i2cdump output") }
        }
        return String(decoding: data, as: UTF8.self)
    }


}

extension String {
    /// The identity check's hints say `edge-agent decode KIND FILE`: put the real path in.
    fileprivate func replacingFILE(with path: String) -> String {
        replacing(" FILE`", with: " \(path)`")
    }
}

/// A tiny ordered JSON writer (keys in insertion order, so output is stable).
struct JSONObject {
    enum Value {
        case number(Double), int(Int), string(String), bool(Bool), null, array([Value])
        var rendered: String {
            switch self {
            case .number(let d): return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : "\(d)") : "null"
            case .int(let i): return String(i)
            case .string(let s): return JSONObject.quote(s)
            case .bool(let b): return b ? "true" : "false"
            case .null: return "null"
            case .array(let a): return "[" + a.map(\.rendered).joined(separator: ", ") + "]"
            }
        }
    }
    private var keys: [String] = []
    private var values: [String: Value] = [:]
    subscript(key: String) -> Value? {
        get { values[key] }
        set {
            if values[key] == nil { keys.append(key) }
            values[key] = newValue
        }
    }
    var rendered: String {
        "{" + keys.map { JSONObject.quote($0) + ": " + values[$0]!.rendered }.joined(separator: ", ") + "}"
    }
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let d = Array("0123456789abcdef")
                    out += "\\u00" + String(d[Int(u.value >> 4)]) + String(d[Int(u.value & 0xF)])
                } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
