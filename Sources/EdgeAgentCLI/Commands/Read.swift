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

/// `edge-agent read`: configured, converted readings from every chip.
public enum ReadCommand: Subcommand {
    public static let name = "read"
    public static let summary = "Configure the chips and print converted readings (board frame, SI units)"
    public static let help = """
    Usage: edge-agent read [--board NAME|FILE | --bus N] [--config FILE]
                           [--count N] [--interval S] [--json]

    Starts every chip of the board profile with the configuration's settings
    (reset, configure; for GY-87 boards the MPU-6050's I2C bypass first) and
    prints readings: acceleration (m/s²) and rotation rate (rad/s) with the
    MPU-6050's die temperature (°C); pressure (Pa, the datasheet's 64-bit
    integer compensation) and temperature (°C, 0.01 °C steps) from the BMP280
    or BME280, with the BME280's relative humidity (%); the magnetic field
    (µT) from the QMC5883L or HMC5883L. Vectors are in the board
    frame (X right, Y forward, Z up): each chip's mounting from the profile
    is applied. At rest and level the accelerometer reads about +9.81 m/s²
    on Z.

    Board selection: --board FILE; --bus N uses /dev/i2c-N with the default
    chips and addresses (MPU-6050 0x68, BMP280 0x76, QMC5883L 0x0d);
    otherwise the configuration's board (by default the simulated board).
    Settings come from --config FILE (default: as for `run`:
    $EDGE_AGENT_CONFIG, /etc/edge-agent/edge-agent.json5,
    config/edge-agent.json5, the build tree's repository), else the drivers'
    defaults.

    Options:
      --count N      readings to take, 1 to 1000000 (default 1)
      --interval S   seconds between readings (default 0.5)
      --json         JSON lines, one object per reading:
                       {"class": "reading", "time_ns": <monotonic ns>,
                        "chips": [ ... one object per chip ... ]}
                     chip objects: "id" ("mpu6050@0x68"), "kind", "role",
                       mpu6050:  "accel_mps2": [x,y,z], "gyro_radps": [x,y,z],
                                 "temperature_c", "part"
                       bmp280:   "pressure_pa", "temperature_c", "part"
                       bme280:   as bmp280, and "humidity_percent"
                       qmc5883l, hmc5883l: "field_ut": [x,y,z] (null when the
                                 chip reports overflow), "overflow",
                                 "data_skipped" (always false on an HMC5883L)
                       any chip: "error" (a message) when that read failed
                     A failure that stops the command is one object too:
                       {"class":"error","command":"read","message":…,"exitStatus":…}
                     Keys carry their unit: _mps2 m/s², _radps rad/s, _c °C,
                     _pa pascal, _ut microtesla, _ns nanoseconds, _percent %.

    Exit status: 0 on success, 1 when a chip cannot be started or read (or
    the bus cannot be opened), 2 on bad usage, or a configuration or board
    profile that is missing or invalid.
    """

    public static var reportsErrorsAsJSON: Bool { true }

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let json = a.flag("--json")
        let count = try a.int("--count", in: 1...1_000_000) ?? 1
        let interval = try a.double("--interval", in: 0...86_400) ?? 0.5
        let selection = try BoardSession.select(&a, environment: ProcessInfo.processInfo.environment)
        try a.finish()
        let session = try BoardSession.open(selection, purpose: "read")
        var chips = try ChipSet.start(session: session, settings: selection.config.sensors,
                                      warn: { console.error("warning: \($0)") })
        if !json {
            console.print("Board \(session.profile.name) (\(session.profileSource)) on \(session.bus.name)")
        }
        let start = session.clock.nowNanoseconds
        var failures = 0
        for i in 0..<count {
            if i > 0 { session.clock.sleep(untilNanoseconds: start + UInt64(Double(i) * interval * 1e9)) }
            let readings = chips.readAll()
            failures += readings.filter { $0.error != nil }.count
            if json {
                console.print(ChipSet.json(readings, timeNanoseconds: session.clock.nowNanoseconds))
            } else {
                console.print(ChipSet.text(readings, seconds: Double(session.clock.nowNanoseconds &- start) / 1e9))
            }
        }
        return failures == 0 ? 0 : 1
    }
}
