#if canImport(Glibc)
import Glibc
#endif
import EdgeCommandLine
import EdgeProtocol
import EdgeService
import EdgeRuntime

/// A subcommand of `edge-agent`. Each lives in `Commands/<Name>.swift`.
public protocol Subcommand {
    /// The word typed after `edge-agent`.
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// Full `--help` text: usage line, options, examples.
    static var help: String { get }
    /// Runs with the arguments after the subcommand name. Returns the exit
    /// status. Throw ``UsageError`` for bad use (exit 2, message + hint).
    static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32
    /// With `--json`, failures are also written to standard output as one
    /// JSON object (`{"class":"error","command":…,"message":…,"exitStatus":…}`),
    /// so a script reading the output always gets JSON. Default false.
    static var reportsErrorsAsJSON: Bool { get }
}

extension Subcommand {
    public static var reportsErrorsAsJSON: Bool { false }
}

/// Where commands write. Tests capture it; the executable writes to stdout/stderr.
public final class Console: @unchecked Sendable {
    private let writeOut: (String) -> Void
    private let writeErr: (String) -> Void
    public let isTerminal: Bool
    public init(out: @escaping (String) -> Void, err: @escaping (String) -> Void, isTerminal: Bool = false) {
        writeOut = out; writeErr = err; self.isTerminal = isTerminal
    }
    /// Writes a line to standard output.
    public func print(_ line: String) { writeOut(line + "\n") }
    /// Writes text (no newline added) to standard output.
    public func write(_ text: String) { writeOut(text) }
    /// Writes a line to standard error.
    public func error(_ line: String) { writeErr(line + "\n") }

    public static let standard = Console(
        out: { s in writeAll(1, s) },
        err: { s in writeAll(2, s) },
        isTerminal: isatty(1) != 0)

    /// A console that collects output, for tests.
    public static func capturing() -> (Console, () -> String, () -> String) {
        final class Box: @unchecked Sendable { var out = ""; var err = "" }
        let box = Box()
        let c = Console(out: { box.out += $0 }, err: { box.err += $0 })
        return (c, { box.out }, { box.err })
    }
}

/// Writes all of `text` to a file descriptor, retrying short writes and EINTR.
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    bytes.withUnsafeMutableBytes { buf in
        while offset < buf.count {
            let n = Glibc.write(fd, buf.baseAddress! + offset, buf.count - offset)
            if n < 0 { if errno == EINTR { continue } else { return } }
            offset += n
        }
    }
}

public enum EdgeAgentCLI {
    /// Every subcommand, in the order `--help` lists them.
    nonisolated(unsafe) public static var commands: [any Subcommand.Type] = [
        ProbeCommand.self, ReadCommand.self, DecodeCommand.self, SimulateCommand.self, FuseCommand.self,
        RunCommand.self, WatchCommand.self, PollCommand.self, CalibrateCommand.self, RecordCommand.self,
        ReplayCommand.self, WaitEdgeCommand.self, StepsCommand.self, ActivityCommand.self, FloorsCommand.self, DepthCommand.self,
    ]

    public static let overview = """
    edge-agent - Core Motion for Linux single-board computers.

    Talks I2C to an MPU-6050, a BMP280 and a QMC5883L, fuses them into
    Core Motion-equivalent samples and serves them to local clients.
    With no sensors attached, the simulated board (boards/simulated.json5)
    stands in for real chips.
    """

    /// What the exit statuses mean, the same for every command (each
    /// command's `--help` ends with it, or says the same in its own words).
    public static let exitStatusText = """
    Exit status: 0 done; 1 the command ran and failed (a chip missing or
    failing, a bus, GPIO or socket error, the agent not reachable, input data
    it cannot use); 2 bad use: an unknown or malformed option or argument, or
    a configuration, board profile, scenario or calibration file that is
    missing or invalid. A requested stop (Ctrl-C, SIGTERM) is a clean end: 0.
    """

    /// The program's version (the agent announces the same in its version line).
    public static var version: String { ServiceConfiguration().agentVersion }

    /// The Swift compiler this was built with (major.minor), known at compile time.
    public static var swiftVersion: String {
        #if compiler(>=6.5)
        return "6.5 or later"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }

    /// What `run` and `watch` say when a signal stops them (both then end
    /// cleanly, exit 0).
    static func stopNote(command: String, signal: Int32) -> String {
        let name = signal == SIGINT ? "SIGINT (Ctrl-C)" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)"
        return "edge-agent \(command): \(name) received, stopping cleanly"
    }

    /// `edge-agent --version`.
    public static var versionText: String {
        "edge-agent \(version) (client protocol \(EdgeProtocolInfo.version), built with Swift \(swiftVersion))"
    }

    /// Runs `edge-agent` with full argv (argv[0] included) and returns the exit status.
    public static func run(_ argv: [String], console: Console = .standard) -> Int32 {
        var rest = Array(argv.dropFirst())
        guard let word = rest.first else {
            console.error(usage)
            return 2
        }
        rest.removeFirst()
        if word == "--version" || word == "version" {
            console.print(versionText)
            return 0
        }
        if word == "--help" || word == "-h" || word == "help" {
            if let topic = rest.first, let cmd = commands.first(where: { $0.name == topic }) {
                console.print(help(cmd))
            } else {
                console.print(usage)
            }
            return 0
        }
        guard let cmd = commands.first(where: { $0.name == word }) else {
            console.error("edge-agent: unknown command '\(word)'.\n\n" + usage)
            return 2
        }
        if rest.contains("--help") || rest.contains("-h") {
            console.print(help(cmd))
            return 0
        }
        if rest.contains("--version") {
            console.print(versionText)
            return 0
        }
        let json = cmd.reportsErrorsAsJSON && rest.contains("--json")
        var args = Arguments(rest, command: cmd.name)
        func fail(_ status: Int32, _ message: String) -> Int32 {
            console.error("edge-agent \(cmd.name): \(message)")
            if json { console.print(errorJSON(command: cmd.name, message: message, status: status)) }
            return status
        }
        do {
            return try cmd.run(&args, console)
        } catch let e as UsageError {
            return fail(2, "\(e.message)\nRun 'edge-agent \(cmd.name) --help' for usage.")
        } catch let e as SetupError {
            return fail(2, e.message)
        } catch {
            return fail(1, "\(error)")
        }
    }

    /// A command's `--help`: its text, ending with the exit statuses unless
    /// the text already says them.
    public static func help(_ cmd: any Subcommand.Type) -> String {
        cmd.help.contains("Exit status") ? cmd.help : cmd.help + "\n\n" + exitStatusText
    }

    /// `{"class":"error","command":…,"message":…,"exitStatus":…}`
    static func errorJSON(command: String, message: String, status: Int32) -> String {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("class"); w.name("error")
        w.key("command"); w.string(command)
        w.key("message"); w.string(message)
        w.key("exitStatus"); w.int(status)
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    public static var usage: String {
        var s = overview + "\nUsage: edge-agent COMMAND [OPTIONS]\n\nCommands:\n"
        let width = (commands.map { $0.name.count }.max() ?? 8) + 2
        for c in commands {
            s += "  " + c.name + String(repeating: " ", count: width - c.name.count) + c.summary + "\n"
        }
        s += "\nRun 'edge-agent COMMAND --help' for a command's options and examples;"
        s += "\n'edge-agent --version' (or COMMAND --version) for the version.\n\n" + exitStatusText
        return s
    }

    public static func main(_ argv: [String]) -> Never {
        exit(run(argv))
    }
}
