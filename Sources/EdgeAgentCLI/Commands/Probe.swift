#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeRuntime

/// `edge-agent probe`: scan the bus like i2cdetect, identify what answers,
/// check the board profile against it.
public enum ProbeCommand: Subcommand {
    public static let name = "probe"
    public static let summary = "Scan the bus, identify the chips, check them against the board profile"
    public static let help = """
    Usage: edge-agent probe [--board NAME|FILE | --bus N] [--config FILE] [--json]

    Scans addresses 0x03-0x77 the way `i2cdetect -y N` does, reads the
    identity registers of whatever answers (MPU-6050 and its clones, BMP280,
    BME280, QMC5883L, HMC5883L; look-alikes such as QMC5883P, BMP180 and
    BMP388 are named as unsupported), then reports every chip of the board
    profile as present, missing or different (a BME280 where a bmp280 is
    configured is present: its pressure and temperature are read).

    Which transfer probes an address: an SMBus "quick write" (no data), except
    for 0x30-0x37 and 0x50-0x5f and on adapters without quick commands, where
    a one-byte read is used - the same rule as i2cdetect's default mode. On
    the simulated bus the models answer as the chips would. An address owned
    by a kernel driver (EBUSY) is shown as "UU", as i2cdetect does.
    Probing only reads, except that when the profile puts a chip `behind` an
    MPU-6050 (GY-87), that MPU is woken and its I2C bypass enabled first so
    the chip becomes visible.

    Board selection: --board FILE uses that profile; --bus N scans
    /dev/i2c-N and expects the default chips (MPU-6050 0x68, BMP280 0x76,
    QMC5883L 0x0d); otherwise the configuration's board (the default
    configuration selects the simulated board).

    Options:
      --board NAME   board profile: a name (simulated-dive) or a file
      --bus N        scan /dev/i2c-N, expecting the default chips
      --config FILE  configuration file (for its board); default: see `edge-agent run --help`
      --json         one JSON object: {"bus", "transport", "found": [{"address",
                     "identification", "chip", "part", "busy"}], "configured":
                     [{"id", "kind", "address", "role", "status", "detail"}], "ok"};
                     a failure (no such bus, bad usage) is one object too:
                     {"class": "error", "command": "probe", "message", "exitStatus"}

    Exit status: 0 when every configured chip is present, 1 when one is
    missing or different (or the bus cannot be opened), 2 on bad usage, or a
    configuration or board profile that is missing or invalid.
    """

    public static var reportsErrorsAsJSON: Bool { true }

    struct Found: Encodable {
        var address: String
        var identification: String
        var chip: String?
        var part: String?
        var busy: Bool
    }
    struct Configured: Encodable {
        var id: String
        var kind: String
        var address: String
        var role: String
        var status: String   // present | missing | different
        var detail: String
    }
    struct Report: Encodable {
        var board: String
        var profile: String
        var bus: String
        var transport: String
        var found: [Found]
        var configured: [Configured]
        var ok: Bool
    }

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let json = a.flag("--json")
        let selection = try BoardSession.select(&a, environment: ProcessInfo.processInfo.environment)
        try a.finish()
        let session = try BoardSession.open(selection, purpose: "probe")
        let report = try probe(session)
        if json {
            let enc = JSONEncoder()
            enc.outputFormatting = [.sortedKeys]
            console.print(String(decoding: try enc.encode(report), as: UTF8.self))
        } else {
            console.print(render(report))
        }
        return report.ok ? 0 : 1
    }

    static func probe(_ session: BoardSession) throws -> Report {
        let bus = session.bus
        // GY-87: make chips behind an MPU-6050 visible first.
        var notes: [UInt8: String] = [:]
        for mpuAddress in Set(session.profile.chips.compactMap(\.behind)) {
            var mpu = MPU6050(bus: bus, address: mpuAddress, clock: session.clock)
            do {
                try bus.writeRegister(mpuAddress, MPU6050Register.powerManagement1.rawValue, MPU6050ClockSource.pllX.rawValue)
                try mpu.setI2CBypass(true)
            } catch {
                notes[mpuAddress] = "could not enable I2C bypass: \(error)"
            }
        }
        var found: [Found] = []
        var identified: [UInt8: ChipIdentification] = [:]
        var busy: Set<UInt8> = []
        for address in UInt8(0x03)...UInt8(0x77) {
            let present: Bool
            do {
                present = try bus.probe(address: address)
            } catch {
                throw error
            }
            guard present else { continue }
            do {
                let id = try identifyChip(on: bus, at: address)
                identified[address] = id
                found.append(Found(address: hex(address), identification: id.description,
                                   chip: id.chip?.rawValue, part: part(of: id), busy: false))
            } catch where error.kind == .addressInUse {
                busy.insert(address)
                found.append(Found(address: hex(address), identification: "in use by a kernel driver (UU): \(error.advice)",
                                   chip: nil, part: nil, busy: true))
            } catch {
                found.append(Found(address: hex(address), identification: "answers, but reading its identity failed: \(error)",
                                   chip: nil, part: nil, busy: false))
            }
        }
        var configured: [Configured] = []
        for chip in session.profile.chips {
            var status = "present", detail = ""
            if busy.contains(chip.address) {
                status = "different"
                detail = "address \(hex(chip.address)) is owned by a kernel driver: remove the device-tree overlay that binds it"
            } else if let id = identified[chip.address] {
                if id.chip?.rawValue == chip.kind.rawValue {
                    detail = id.description
                } else if chip.kind == .bmp280, id.chip == .bme280 {
                    // The BMP280 driver runs a BME280's pressure and temperature.
                    detail = id.description + " - configured as a bmp280, so humidity is not read: use kind bme280 to read it"
                } else {
                    status = "different"
                    detail = "expected a \(chip.kind.rawValue), found: \(id.description)"
                }
            } else if found.contains(where: { $0.address == hex(chip.address) }) {
                status = "different"
                detail = found.first { $0.address == hex(chip.address) }!.identification
            } else {
                status = "missing"
                detail = "nothing answered at \(hex(chip.address)) on \(bus.name)"
                if let behind = chip.behind {
                    detail += notes[behind].map { " (\($0))" } ?? " (it sits behind the MPU-6050 at \(hex(behind)); its bypass was enabled)"
                } else {
                    detail += ": check wiring, power and the address pins"
                }
            }
            configured.append(Configured(id: chip.id, kind: chip.kind.rawValue, address: hex(chip.address),
                                         role: chip.role.rawValue, status: status, detail: detail))
        }
        return Report(board: session.profile.name, profile: session.profileSource, bus: bus.name,
                      transport: session.transport, found: found, configured: configured,
                      ok: configured.allSatisfy { $0.status == "present" })
    }

    static func part(of id: ChipIdentification) -> String? {
        switch id {
        case .supported(_, let variant, _, _): return variant
        case .unsupported(let part, _, _): return part
        case .unknown: return nil
        }
    }

    static func render(_ r: Report) -> String {
        var s = "Board:     \(r.board) (\(r.profile))\nBus:       \(r.bus), transport \(r.transport)\n\n"
        // i2cdetect-style grid.
        s += "     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n"
        let shown = Dictionary(uniqueKeysWithValues: r.found.map { ($0.address, $0.busy ? "UU" : String($0.address.dropFirst(2))) })
        for row in stride(from: 0, to: 0x80, by: 0x10) {
            s += String(hex(UInt8(row)).dropFirst(2)) + ":"
            for col in 0..<16 {
                let a = row + col
                if a < 0x03 || a > 0x77 { s += "   "; continue }
                s += " " + (shown[hex(UInt8(a))] ?? "--")
            }
            s += "\n"
        }
        s += "\nFound:\n"
        if r.found.isEmpty { s += "  nothing answered\n" }
        for f in r.found { s += "  \(f.address)  \(f.identification)\n" }
        s += "\nConfigured chips:\n"
        let w = (r.configured.map(\.id.count).max() ?? 0) + 2
        for c in r.configured {
            s += "  " + c.id + String(repeating: " ", count: w - c.id.count) + c.status
                + String(repeating: " ", count: max(1, 10 - c.status.count)) + c.detail + "\n"
        }
        s += r.ok ? "\nAll configured chips are present." : "\nSome configured chips are missing or different."
        return s
    }
}
