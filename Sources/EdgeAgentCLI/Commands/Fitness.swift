#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeActivity
import EdgeRuntime

/// `edge-agent steps|activity|floors IN.csv OUT.csv`: the agent's pedometer,
/// activity classifier and floor counter (EdgeActivity.FitnessPipeline, the
/// very code the fitness stage runs) over a recording, one output row per
/// input row.
enum FitnessTool {
    static let inputHeader = "t,ax,ay,az,gx,gy,gz,p"

    static let inputText = """
    IN.csv: header exactly  t,ax,ay,az,gx,gy,gz,p
      t s from the first row (strictly increasing); ax, ay, az m/s² as the
      sensor reports them (+9.81 on the up axis at rest; required on every
      row); gx, gy, gz rad/s; p Pa. An empty cell: no value on that row (no
      such sensor, or the barometer read less often than the IMU).
    """

    static let optionsText = """
    Options:
      --rate HZ             the IMU's sample rate (default: from the median
                            interval of t)
      --height M            the wearer's height for the stride model (default 1.70)
      --stride-scale K      per-user stride calibration factor (default 1)
      --floor-height M      height of one floor (default 3)
    """

    struct Row { var tText: Substring; var t: Double; var v: (Double, Double, Double, Double, Double, Double, Double) }

    /// A bad input file: exit 2 with the file, line and what to do.
    static func inputError(_ path: String, _ line: Int?, _ message: String) -> SetupError {
        SetupError(FitnessInputError(path: path, line: line, message: message))
    }

    static func parse(_ bytes: [UInt8], path: String) throws -> [Row] {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard var header = lines.first, !(lines.count == 1 && header.isEmpty) else {
            throw inputError(path, nil, "the file is empty (it needs the header \(inputHeader) and one row per sample)")
        }
        if header.hasSuffix("\r") { header = header.dropLast() }
        if header.hasPrefix("\u{FEFF}") { header = header.dropFirst() }
        guard header == inputHeader else {
            throw inputError(path, 1, "the header is '\(header)', expected '\(inputHeader)'")
        }
        guard lines.count > 1 else { throw inputError(path, nil, "no samples after the header") }
        var rows = [Row]()
        rows.reserveCapacity(lines.count - 1)
        var previous = -Double.infinity
        for (i, lineIn) in lines.dropFirst().enumerated() {
            let n = i + 2
            var line = lineIn
            if line.hasSuffix("\r") { line = line.dropLast() }
            let cells = line.split(separator: ",", omittingEmptySubsequences: false)
            guard cells.count == 8 else { throw inputError(path, n, "\(cells.count) cells, expected 8 (\(inputHeader))") }
            var v = [Double](repeating: .nan, count: 8)
            for (k, cell) in cells.enumerated() where !cell.isEmpty {
                guard let x = Double(cell), x.isFinite else {
                    throw inputError(path, n, "\(["t", "ax", "ay", "az", "gx", "gy", "gz", "p"][k]) is '\(cell)', not a number")
                }
                v[k] = x
            }
            guard v[0].isFinite else { throw inputError(path, n, "t is empty") }
            guard v[1].isFinite && v[2].isFinite && v[3].isFinite else {
                throw inputError(path, n, "ax, ay, az are needed on every row")
            }
            guard v[0] > previous else {
                throw inputError(path, n, "t = \(cells[0]) is not after the previous row's \(previous): t must increase")
            }
            previous = v[0]
            rows.append(Row(tText: cells[0], t: v[0], v: (v[1], v[2], v[3], v[4], v[5], v[6], v[7])))
        }
        return rows
    }

    /// The median interval of t, as a rate.
    static func rate(of rows: [Row]) -> Double {
        guard rows.count > 1 else { return 100 }
        var d = [Double]()
        d.reserveCapacity(rows.count - 1)
        for i in 1..<rows.count { d.append(rows[i].t - rows[i - 1].t) }
        d.sort()
        return 1 / d[d.count / 2]
    }

    static func run(_ arguments: inout Arguments, _ console: Console, header: String,
                    row: (FitnessOutput) -> String) throws -> Int32 {
        let rateArg = try arguments.double("--rate", in: 10...10_000)
        let height = try arguments.double("--height", in: 0.5...2.5) ?? 1.70
        let scale = try arguments.double("--stride-scale", in: 0.2...5) ?? 1
        let floorHeight = try arguments.double("--floor-height", in: 1...10) ?? 3
        let input = try arguments.positional("IN.csv")
        let output = try arguments.positional("OUT.csv")
        try arguments.finish()
        try OutputFiles.refuseOverlaps(outputs: [.init("OUT.csv", output)], inputs: [.init("IN.csv", input)])
        let bytes: [UInt8]
        do { bytes = try FuseIO.readFile(input) } catch { throw SetupError(error) }
        let rows = try parse(bytes, path: input)
        let fs = rateArg ?? rate(of: rows)
        guard fs >= 10 else { throw inputError(input, nil, "the samples come at \(fs) Hz; at least 10 Hz are needed") }
        var pipeline = FitnessPipeline(FitnessSettings(sampleRateHz: fs, stride: StrideModel(heightMeters: height, scale: scale),
                                                       floorHeightMeters: floorHeight))
        var out = header + "\n"
        out.reserveCapacity(rows.count * 24)
        for r in rows {
            let o = pipeline.update(t: r.t, ax: r.v.0, ay: r.v.1, az: r.v.2, gx: r.v.3, gy: r.v.4, gz: r.v.5, pressurePa: r.v.6)
            out += r.tText; out += ","; out += row(o); out += "\n"
        }
        try writeText(out, to: output)
        return 0
    }

    static func writeText(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw FitnessInputError(path: path, line: nil, message: "cannot create (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var bytes = Array(text.utf8)
        var off = 0
        let ok = bytes.withUnsafeMutableBytes { buf -> Bool in
            while off < buf.count {
                let n = write(fd, buf.baseAddress! + off, buf.count - off)
                if n < 0 { if errno == EINTR { continue }; return false }
                off += n
            }
            return true
        }
        guard ok else { throw FitnessInputError(path: path, line: nil, message: "write failed (\(String(cString: strerror(errno))))") }
    }

    static func fixed(_ x: Double, _ digits: Int) -> String { EdgeAgentCLI_fixed(x, digits) }
}

struct FitnessInputError: Error, CustomStringConvertible {
    var path: String, line: Int?, message: String
    var description: String { path + (line.map { ":\($0)" } ?? "") + ": " + message }
}

public enum StepsCommand: Subcommand {
    public static let name = "steps"
    public static let summary = "Count steps in a recording (the agent's pedometer, offline)"
    public static let help = """
    Usage: edge-agent steps [OPTIONS] IN.csv OUT.csv

    Runs the agent's pedometer (causal, sample by sample; docs/fitness.md)
    over a recording and writes one row per input row:
      t,steps,cadence,distance
    steps cumulative (never decreases); cadence steps/s over the last 6 s
    (0 when not walking); distance m from the stride model.

    \(FitnessTool.inputText)

    \(FitnessTool.optionsText)

    Example:
      edge-agent steps walk.csv walk.steps.csv
    """
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        try FitnessTool.run(&arguments, console, header: "t,steps,cadence,distance") { o in
            "\(o.steps.steps),\(FitnessTool.fixed(o.steps.cadence, 3)),\(FitnessTool.fixed(o.steps.distanceMeters, 2))"
        }
    }
}

public enum ActivityCommand: Subcommand {
    public static let name = "activity"
    public static let summary = "Classify activity in a recording (the agent's classifier, offline)"
    public static let help = """
    Usage: edge-agent activity [OPTIONS] IN.csv OUT.csv

    Runs the agent's activity classifier (causal; docs/fitness.md) over a
    recording and writes one row per input row:
      t,activity,confidence
    activity one of stationary, walking, running, cycling, automotive,
    unknown; confidence low, medium or high.

    \(FitnessTool.inputText)

    \(FitnessTool.optionsText)
    """
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        try FitnessTool.run(&arguments, console, header: "t,activity,confidence") { o in
            o.activity.kind.rawValue + "," + o.activity.confidence.name
        }
    }
}

public enum FloorsCommand: Subcommand {
    public static let name = "floors"
    public static let summary = "Count floors climbed on foot in a recording (offline)"
    public static let help = """
    Usage: edge-agent floors [OPTIONS] IN.csv OUT.csv

    Runs the agent's floor counter (barometer, gated by the pedometer:
    floors ridden in an elevator count nothing; docs/fitness.md) over a
    recording and writes one row per input row:
      t,floors_ascended,floors_descended,rel_floor
    cumulative floors on foot; rel_floor the floor relative to the start by
    any means.

    \(FitnessTool.inputText)

    \(FitnessTool.optionsText)
    """
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        try FitnessTool.run(&arguments, console, header: "t,floors_ascended,floors_descended,rel_floor") { o in
            "\(o.floors.floorsAscended),\(o.floors.floorsDescended),\(o.floors.relativeFloor)"
        }
    }
}

@inline(__always) func EdgeAgentCLI_fixed(_ v: Double, _ d: Int) -> String { fixed(v, d) }
