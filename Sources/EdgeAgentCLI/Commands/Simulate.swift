#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EdgeCommandLine
import EdgeBus
import EdgeChips
import EdgeConfig
import EdgeEngine
import EdgeProtocol
import EdgeSim
import EdgeRuntime

/// `edge-agent simulate`: play a scenario through the simulated chips and the
/// real drivers on a virtual clock, and write the sensor stream as CSV.
public enum SimulateCommand: Subcommand {
    public static let name = "simulate"
    public static let summary = "Play a scenario through the simulated chips; write the sensor stream and the truth as CSV"
    public static let help = """
    Usage: edge-agent simulate SCENARIO [--duration S] [--csv OUT] [--truth OUT]
                               [--jsonl OUT [--streams LIST]]
                               [--board NAME|FILE] [--config FILE] [--seed N]

    Plays SCENARIO (a scenarios/*.json5 file, documented in scenarios/README.md)
    through the register-accurate chip models of the simulated board and reads
    them with the real drivers, on a virtual clock (no waiting: an hour of
    scenario takes seconds). The same scenario and seed always give the same
    bytes.

    Outputs:
      --csv OUT     the sensor stream in the `fuse` command's input format:
                    t,gx,gy,gz,ax,ay,az,mx,my,mz  (s since start, rad/s, m/s²,
                    µT; board frame, mountings applied). One row per MPU-6050
                    sample; the magnetometer columns are filled when it has a
                    new sample (its rate is lower) and empty otherwise.
                    `-` writes to standard output (the default when neither
                    --csv nor --truth is given).
      --truth OUT   the truth at the same times:
                    t,qw,qx,qy,qz,altitude_m,depth_m,event  (board-to-earth
                    attitude in Core Motion's xMagneticNorthZVertical frame:
                    X magnetic north, Y west, Z up; active segment names)
      --jsonl OUT   instead of the CSVs: the protocol lines (as `replay`
                    prints them) that a client holding every entitlement
                    and subscribed to every stream would receive from the
                    agent's engine running this board, on the virtual clock:
                    a 23-minute dive becomes a file in seconds. `-` writes
                    to standard output.
      --streams L   with --jsonl: only these streams, every sample of them
                    (comma-separated, e.g. submersion,altitude). Without
                    it, every stream at one sample a second (on the capture
                    clock; the change-driven accessoryConnection,
                    pedometerEvent and activity whole): an overview, about
                    4 MB for the 23-minute dive-18m instead of 520 MB at
                    the engine's full rates

    Options:
      --duration S  seconds to simulate (default: the scenario's duration_s)
      --board FILE  simulated board profile (default: the configuration's
                    board, normally boards/simulated.json5); it must be simulated
      --config FILE settings for the chips (rates, ranges); default: see `read --help`
      --seed N      override the noise seed

    Example:
      edge-agent simulate scenarios/lift-3m.json5 --csv lift.csv --truth lift.truth.csv
      edge-agent fuse --input lift.csv --output lift.fused.csv
    """

    /// `--jsonl` without `--streams`: one sample a second of each stream, ns.
    static let overviewIntervalNs: UInt64 = 1_000_000_000
    /// Streams that send a sample when something changes: never thinned.
    static let changeDrivenStreams: Set<StreamName> = [.accessoryConnection, .pedometerEvent, .activity]

    public static func run(_ a: inout Arguments, _ console: Console) throws -> Int32 {
        let scenarioFlag = try a.option("--scenario")
        let duration = try a.double("--duration", in: 0.001...1e7)
        let csvPath = try a.option("--csv")
        let truthPath = try a.option("--truth")
        let jsonlPath = try a.option("--jsonl")
        let streamList = try a.option("--streams")
        let seed = try a.option("--seed").map { s -> UInt64 in
            guard let v = UInt64(s) else { throw UsageError("--seed expects a whole number ≥ 0, got '\(s)'") }
            return v
        }
        var selection = try BoardSession.select(&a, environment: ProcessInfo.processInfo.environment)
        let scenarioPath = try scenarioFlag ?? a.positional("SCENARIO (a scenarios/*.json5 file)")
        try a.finish()
        guard selection.profile.bus == .simulated else {
            throw UsageError("the board profile \(selection.profilePath ?? "") is not simulated; use --board boards/simulated.json5")
        }
        if selection.profile.simulation == nil { selection.profile.simulation = .init(scenario: scenarioPath) }
        try OutputFiles.refuseOverlaps(
            outputs: [csvPath.map { .init("--csv", $0) }, truthPath.map { .init("--truth", $0) }],
            inputs: [.init("SCENARIO", scenarioPath), selection.profilePath.map { .init("the board profile", $0) },
                     selection.configPath.map { .init("the configuration", $0) }])

        let scenario = try SimulatedBoardFactory.loadScenario(scenarioPath)
        let clock = VirtualClock()
        let world: ScenarioWorld
        do { world = try ScenarioWorld(scenario, startNanoseconds: 0) } catch {
            throw SimulatedBoardFactory.Failure(description: "\(scenarioPath): \(error)")
        }
        let board = try SimulatedBoardFactory.make(profile: selection.profile, world: world, scenarioPath: scenarioPath,
                                                   clock: clock, seed: seed ?? scenario.seed)
        let session = BoardSession(profile: selection.profile, source: selection.profilePath ?? "", bus: AnyI2CBus(board.bus),
                                   clock: clock, transport: "simulated", simulated: board)

        if let jsonlPath {
            var wanted: [StreamName: Double] = StreamName.demandEverything
            if let list = streamList {
                wanted = [:]
                for name in list.split(separator: ",") {
                    guard let st = StreamName(rawValue: String(name)) else {
                        throw UsageError("--streams: unknown stream '\(name)'; streams are \(StreamName.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    wanted[st] = 0
                }
            } else if csvPath != nil || truthPath != nil {
                throw UsageError("--jsonl writes protocol lines instead of --csv/--truth; give one or the other")
            }
            let end = clock.nowNanoseconds &+ UInt64(((duration ?? scenario.durationSeconds) * 1e9).rounded())
            var out = OutputFile(path: jsonlPath == "-" ? nil : jsonlPath, console: console, stdoutWhenNil: true)
            var decimators: [StreamName: Decimator] = [:]
            if streamList == nil {
                for st in StreamName.allCases where !Self.changeDrivenStreams.contains(st) {
                    decimators[st] = Decimator(intervalNs: Self.overviewIntervalNs)
                }
            }
            let sink = JSONLinesSink(wanted: wanted, capacity: 1 << 17, decimators: decimators)
            let (hub, loop) = EngineSetup.engine(bus: board.bus, clock: clock, profile: selection.profile,
                                                 config: selection.config, sink: sink)
            hub.start()
            loop.run(until: {
                if sink.writer.bytes.count > 1 << 16 { out.write(sink.take()) }
                return clock.nowNanoseconds >= end
            })
            out.write(sink.take())
            try out.close()
            return 0
        }
        if streamList != nil { throw UsageError("--streams goes with --jsonl") }

        var settings = selection.config.sensors
        settings.bmp280.mode = .normal
        guard let imuSpec = selection.profile.chip(.mpu6050) else {
            throw UsageError("the board profile has no primary mpu6050")
        }
        var mpu = MPU6050(bus: session.bus, address: imuSpec.address, clock: clock)
        try mpu.start(settings.mpu6050)
        var mag: (spec: ChipSpec, driver: QMC5883L<AnyI2CBus>)?
        if let m = selection.profile.chip(.qmc5883l) {
            var d = QMC5883L(bus: session.bus, address: m.address, clock: clock)
            try d.start(settings.qmc5883l)
            mag = (m, d)
        }

        let total = duration ?? scenario.durationSeconds
        if let d = duration, d > scenario.durationSeconds {
            console.error("warning: --duration \(fixed(d, 3)) s goes beyond the end of \(scenarioPath) (duration_s \(fixed(scenario.durationSeconds, 3)) s): the last \(fixed(d - scenario.durationSeconds, 3)) s hold the board still in its final pose")
        }
        let period = 1.0 / settings.mpu6050.achievedSampleRateHz
        let periodNs = UInt64((period * 1e9).rounded())
        // Let the gyro settle (kernel: 60 ms) and the first samples land, then
        // read each sample 100 µs after it is due.
        let t0 = clock.nowNanoseconds + 100_000_000
        let rows = Int((total / period).rounded(.down))

        let toStdout = csvPath == "-" || (csvPath == nil && truthPath == nil)
        var csv = OutputFile(path: toStdout ? nil : csvPath, console: console, stdoutWhenNil: toStdout)
        var truth = OutputFile(path: truthPath, console: console)
        if toStdout || csvPath != nil { csv.write("t,gx,gy,gz,ax,ay,az,mx,my,mz\n") }
        if truthPath != nil { truth.write(ScenarioTruthCSV.header + "\n") }
        for i in 0..<rows {
            let sampleTime = t0 + UInt64(i) * periodNs
            clock.sleep(untilNanoseconds: sampleTime + 100_000)
            let s = try mpu.read()
            let g = imuSpec.mounting.toBoard(s.rotationRate), acc = imuSpec.mounting.toBoard(s.acceleration)
            let t = Double(sampleTime - t0) / 1e9
            var line = SimulateCommand.f(t, 6)
            for v in [g.x, g.y, g.z] { line += "," + SimulateCommand.f(v, 9) }
            for v in [acc.x, acc.y, acc.z] { line += "," + SimulateCommand.f(v, 6) }
            var magCells = ",,,"
            if var m = mag {
                if case .field(let f) = try m.driver.read() {
                    let b = m.spec.mounting.toBoard(f.magneticField)
                    magCells = "," + SimulateCommand.f(b.x, 4) + "," + SimulateCommand.f(b.y, 4) + "," + SimulateCommand.f(b.z, 4)
                }
                mag = m
            }
            if csv.enabled { csv.write(line + magCells + "\n") }
            if truth.enabled {
                var row = ScenarioTruthCSV.row(world, atNanoseconds: sampleTime)
                // The truth's time column: the same t as the sensor row.
                if let comma = row.firstIndex(of: ",") { row = SimulateCommand.f(t, 6) + row[comma...] }
                truth.write(row + "\n")
            }
        }
        try csv.close()
        try truth.close()
        if !toStdout {
            console.error("simulated \(rows) samples (\(SimulateCommand.f(Double(rows) * period, 3)) s of '\(scenario.name)') at \(SimulateCommand.f(1 / period, 1)) Hz")
        }
        return 0
    }

    static func f(_ v: Double, _ d: Int) -> String { ScenarioTruthCSV.fixed(v, decimals: d) }
}

/// A buffered output file (or standard output when `path` is nil and it is
/// enabled), written in large chunks.
struct OutputFile {
    let path: String?
    let console: Console
    let enabled: Bool
    private var buffer: [UInt8] = []
    private var fd: Int32 = -1

    init(path: String?, console: Console, stdoutWhenNil: Bool = true) {
        self.path = path
        self.console = console
        enabled = path != nil || stdoutWhenNil
    }

    init(path: String?, console: Console) {
        self.init(path: path, console: console, stdoutWhenNil: false)
    }

    mutating func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if buffer.count > 1 << 20 { try? flush() }
    }

    mutating func flush() throws {
        guard enabled, !buffer.isEmpty else { return }
        if let p = path {
            if fd < 0 {
                fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if fd < 0 { throw FileError(path: p, errno: errno, operation: "create") }
            }
            try buffer.withUnsafeBytes { b in
                var off = 0
                while off < b.count {
                    let n = Glibc.write(fd, b.baseAddress! + off, b.count - off)
                    if n < 0 { if errno == EINTR { continue }; throw FileError(path: p, errno: errno, operation: "write") }
                    off += n
                }
            }
        } else {
            console.write(String(decoding: buffer, as: UTF8.self))
        }
        buffer.removeAll(keepingCapacity: true)
    }

    mutating func close() throws {
        try flush()
        if fd >= 0 {
            if Glibc.close(fd) != 0, let p = path { throw FileError(path: p, errno: errno, operation: "close") }
            fd = -1
        }
    }
}

/// A file that could not be written.
struct FileError: Error, CustomStringConvertible {
    var path: String
    var errno: Int32
    var operation: String
    var description: String { "cannot \(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))" }
}
