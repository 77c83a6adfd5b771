import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeRuntime

/// One converted reading of one chip, in the board frame, SI units.
struct ChipReading {
    var spec: ChipSpec
    var part: String
    var acceleration: SIMD3<Double>? = nil      // m/s², board frame
    var rotationRate: SIMD3<Double>? = nil      // rad/s, board frame
    var temperature: Double? = nil              // °C
    var pressure: Double? = nil                 // Pa
    var humidity: Double? = nil                 // % relative humidity
    var field: SIMD3<Double>? = nil             // µT, board frame
    var overflow = false
    var dataSkipped = false
    var notReady = false
    var error: String? = nil
}

/// The started drivers of a board, for the tools (`read`). The real-time
/// engine keeps its own specialised drivers.
struct ChipSet {
    enum Driver {
        case mpu6050(MPU6050<AnyI2CBus>)
        case bmp280(BMP280<AnyI2CBus>)
        case qmc5883l(QMC5883L<AnyI2CBus>)
        case ms5837(MS5837<AnyI2CBus>)
        case hmc5883l(HMC5883L<AnyI2CBus>)
        case bme280(BME280<AnyI2CBus>)
    }
    var entries: [(spec: ChipSpec, part: String, driver: Driver)]

    /// Identifies, resets and configures every chip. MPU-6050s start first so
    /// chips behind one (GY-87) can be reached through its bypass.
    static func start(session: BoardSession, settings: SensorSettings,
                      warn: (String) -> Void) throws -> ChipSet {
        let bus = session.bus, clock = session.clock
        let ordered = session.profile.chips.filter { $0.kind == .mpu6050 }
            + session.profile.chips.filter { $0.kind != .mpu6050 }
        let behind = Set(session.profile.chips.compactMap(\.behind))
        var entries: [(ChipSpec, String, Driver)] = []
        for spec in ordered {
            do {
                switch spec.kind {
                case .mpu6050:
                    var d = MPU6050(bus: bus, address: spec.address, clock: clock)
                    var c = settings.mpu6050
                    if behind.contains(spec.address) { c.i2cBypass = true }
                    let v = try d.start(c)
                    if let w = v.warning { warn("\(spec.id): \(w)") }
                    entries.append((spec, v.description, .mpu6050(d)))
                case .bmp280:
                    var d = BMP280(bus: bus, address: spec.address, clock: clock)
                    let v = try d.start(settings.bmp280)
                    if let n = v.note { warn("\(spec.id): \(n)") }
                    entries.append((spec, v.part, .bmp280(d)))
                case .qmc5883l:
                    var d = QMC5883L(bus: bus, address: spec.address, clock: clock)
                    try d.start(settings.qmc5883l)
                    entries.append((spec, "QMC5883L", .qmc5883l(d)))
                case .ms5837:
                    var d = MS5837(bus: bus, address: spec.address, clock: clock)
                    let v = try d.start()
                    entries.append((spec, v.part, .ms5837(d)))
                case .hmc5883l:
                    var d = HMC5883L(bus: bus, address: spec.address, clock: clock)
                    try d.start(settings.hmc5883l)
                    entries.append((spec, "HMC5883L", .hmc5883l(d)))
                case .bme280:
                    var d = BME280(bus: bus, address: spec.address, clock: clock)
                    let v = try d.start(settings.bme280)
                    entries.append((spec, v.part, .bme280(d)))
                }
            } catch {
                throw StartError(chip: spec.id, underlying: error)
            }
        }
        // A freshly configured magnetometer needs one output period before DRDY.
        if entries.contains(where: { if case .qmc5883l = $0.2 { return true } else { return false } }) {
            clock.sleep(milliseconds: 1000.0 / Double(settings.qmc5883l.outputRate.hertz) + 1)
        }
        if entries.contains(where: { if case .hmc5883l = $0.2 { return true } else { return false } }) {
            clock.sleep(milliseconds: 1000.0 / settings.hmc5883l.outputRate.hertz + 1)
        }
        if entries.contains(where: { if case .bmp280 = $0.2 { return true } else { return false } }),
           settings.bmp280.mode == .normal {
            clock.sleep(milliseconds: settings.bmp280.measurementTime.maximum)
        }
        if entries.contains(where: { if case .bme280 = $0.2 { return true } else { return false } }),
           settings.bme280.barometer.mode == .normal {
            clock.sleep(milliseconds: settings.bme280.measurementTime.maximum)
        }
        return ChipSet(entries: entries)
    }

    struct StartError: Error, CustomStringConvertible {
        var chip: String
        var underlying: DriverError
        var description: String { "cannot start \(chip): \(underlying)" }
    }

    /// Reads every chip once; a failing chip yields a reading with `error`.
    mutating func readAll() -> [ChipReading] {
        var out: [ChipReading] = []
        for i in entries.indices {
            let (spec, part, driver) = entries[i]
            var r = ChipReading(spec: spec, part: part)
            do {
                switch driver {
                case .mpu6050(let d):
                    let s = try d.read()
                    r.acceleration = spec.mounting.toBoard(s.acceleration)
                    r.rotationRate = spec.mounting.toBoard(s.rotationRate)
                    r.temperature = s.temperatureCelsius
                case .bmp280(let d):
                    let s = try d.measure()
                    r.pressure = s.pressurePascals
                    r.temperature = s.temperatureCelsius
                case .qmc5883l(var d):
                    switch try d.read() {
                    case .field(let s):
                        r.field = spec.mounting.toBoard(s.magneticField)
                        r.dataSkipped = s.dataSkipped
                    case .overflow:
                        r.overflow = true
                    case .notReady:
                        r.notReady = true
                    }
                    entries[i].driver = .qmc5883l(d)
                case .ms5837(let d):
                    let s = try d.measure()
                    r.pressure = s.pressurePascals
                    r.temperature = s.temperatureCelsius
                case .hmc5883l(var d):
                    switch try d.read() {
                    case .field(let f): r.field = spec.mounting.toBoard(f)
                    case .overflow: r.overflow = true
                    case .notReady: r.notReady = true
                    }
                    entries[i].driver = .hmc5883l(d)
                case .bme280(let d):
                    let s = try d.measure()
                    r.pressure = s.barometer.pressurePascals
                    r.temperature = s.barometer.temperatureCelsius
                    r.humidity = s.relativeHumidityPercent
                }
            } catch {
                r.error = "\(error)"
            }
            out.append(r)
        }
        return out
    }

    static func json(_ readings: [ChipReading], timeNanoseconds: UInt64) -> String {
        func num(_ v: Double) -> String { v.isFinite ? "\(v)" : "null" }
        func vec(_ v: SIMD3<Double>) -> String { "[\(num(v.x)),\(num(v.y)),\(num(v.z))]" }
        func str(_ s: String) -> String {
            var o = "\""
            for ch in s.unicodeScalars {
                switch ch {
                case "\"": o += "\\\""
                case "\\": o += "\\\\"
                case "\n": o += "\\n"
                case _ where ch.value < 0x20: o += "\\u00" + String(ch.value, radix: 16).leftPadded(2, with: "0")
                default: o.unicodeScalars.append(ch)
                }
            }
            return o + "\""
        }
        var chips: [String] = []
        for r in readings {
            var f = ["\"id\":\(str(r.spec.id))", "\"kind\":\(str(r.spec.kind.rawValue))",
                     "\"role\":\(str(r.spec.role.rawValue))", "\"part\":\(str(r.part))"]
            if let e = r.error { f.append("\"error\":\(str(e))") }
            switch r.spec.kind {
            case .mpu6050:
                if let a = r.acceleration { f.append("\"accel_mps2\":\(vec(a))") }
                if let g = r.rotationRate { f.append("\"gyro_radps\":\(vec(g))") }
                if let t = r.temperature { f.append("\"temperature_c\":\(num(t))") }
            case .bmp280, .ms5837, .bme280:
                if let p = r.pressure { f.append("\"pressure_pa\":\(num(p))") }
                if let t = r.temperature { f.append("\"temperature_c\":\(num(t))") }
                if let h = r.humidity { f.append("\"humidity_percent\":\(num(h))") }
            case .qmc5883l, .hmc5883l:
                if r.error == nil {
                    f.append("\"field_ut\":" + (r.field.map(vec) ?? "null"))
                    f.append("\"overflow\":\(r.overflow)")
                    f.append("\"data_skipped\":\(r.dataSkipped)")
                    if r.notReady { f.append("\"not_ready\":true") }
                }
            }
            chips.append("{" + f.joined(separator: ",") + "}")
        }
        return "{\"class\":\"reading\",\"time_ns\":\(timeNanoseconds),\"chips\":[" + chips.joined(separator: ",") + "]}"
    }

    static func text(_ readings: [ChipReading], seconds: Double) -> String {
        func f(_ v: Double, _ digits: Int, width: Int = 9) -> String { fixed(v, digits).leftPadded(width) }
        func vec(_ v: SIMD3<Double>, _ digits: Int) -> String { "[\(f(v.x, digits)) \(f(v.y, digits)) \(f(v.z, digits)) ]" }
        var lines: [String] = []
        let w = (readings.map(\.spec.id.count).max() ?? 0) + 2
        for (i, r) in readings.enumerated() {
            var line = (i == 0 ? "t=" + fixed(seconds, 3) + " s" : "").padded(12) + r.spec.id.padded(w)
            if let e = r.error {
                line += "error: " + e
            } else {
                switch r.spec.kind {
                case .mpu6050:
                    line += "accel " + vec(r.acceleration ?? .zero, 3) + " m/s²  gyro " + vec(r.rotationRate ?? .zero, 4)
                        + " rad/s  die " + fixed(r.temperature ?? .nan, 2) + " °C"
                case .bmp280, .ms5837, .bme280:
                    line += "pressure " + fixed(r.pressure ?? .nan, 3) + " Pa  temperature " + fixed(r.temperature ?? .nan, 2) + " °C"
                    if let h = r.humidity { line += "  humidity " + fixed(h, 2) + " %" }
                case .qmc5883l, .hmc5883l:
                    let qmc = r.spec.kind == .qmc5883l
                    if let m = r.field {
                        line += "field " + vec(m, 2) + " µT"
                    } else if r.overflow {
                        line += qmc ? "field overflow (OVL): no valid field - a magnet nearby, or use range_gauss: 8"
                            : "field overflow (an axis reads -4096): no valid field - a magnet nearby, or use a wider range_gauss"
                    } else {
                        line += qmc ? "no new field yet (DRDY not set)" : "no new field yet (RDY not set)"
                    }
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func leftPadded(_ n: Int, with c: Character = " ") -> String {
        count >= n ? self : String(repeating: c, count: n - count) + self
    }
    func padded(_ n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
}
