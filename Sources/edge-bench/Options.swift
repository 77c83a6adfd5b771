// A small command-line parser: `--name VALUE`, `--name=VALUE`, `--flag`.

struct Options {
    private var args: [String]
    init(_ args: [String]) { self.args = args }

    var wantsHelp: Bool { args.contains("--help") || args.contains("-h") }

    mutating func flag(_ name: String) -> Bool {
        if let i = args.firstIndex(of: name) { args.remove(at: i); return true }
        return false
    }

    mutating func string(_ name: String) throws -> String? {
        if let i = args.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let v = String(args[i].dropFirst(name.count + 1)); args.remove(at: i); return v
        }
        guard let i = args.firstIndex(of: name) else { return nil }
        guard i + 1 < args.count else { throw BenchError("\(name) needs a value") }
        let v = args[i + 1]
        args.removeSubrange(i...(i + 1))
        return v
    }

    mutating func double(_ name: String, default d: Double, in range: ClosedRange<Double>) throws -> Double {
        guard let s = try string(name) else { return d }
        guard let v = Double(s), range.contains(v) else { throw BenchError("\(name): expected a number in \(range.lowerBound)...\(range.upperBound), got '\(s)'") }
        return v
    }

    mutating func int(_ name: String, default d: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let s = try string(name) else { return d }
        guard let v = Int(s), range.contains(v) else { throw BenchError("\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got '\(s)'") }
        return v
    }

    mutating func ints(_ name: String, default d: [Int], in range: ClosedRange<Int>) throws -> [Int] {
        guard let s = try string(name) else { return d }
        let parts = s.split(separator: ",").map { Int($0.trimmingPrefixSpaces()) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil && range.contains($0!) }) else {
            throw BenchError("\(name): expected a comma-separated list of integers in \(range.lowerBound)...\(range.upperBound), got '\(s)'")
        }
        return parts.map { $0! }
    }

    /// Throws on anything left over (an unknown option).
    func finish(_ command: String) throws {
        if let first = args.first { throw BenchError("\(command): unknown argument '\(first)' (see edge-bench \(command) --help)") }
    }
}

/// Options every subcommand that launches the agent takes.
struct CommonOptions {
    var root: String?
    var agent: String?
    static func parse(_ o: inout Options) throws -> CommonOptions {
        CommonOptions(root: try o.string("--root"), agent: try o.string("--agent"))
    }
    func paths() throws -> Paths { try Paths.resolve(root: root, agent: agent) }

    static let help = """
      --root DIR      repository root (default: found from the executable or the working directory)
      --agent PATH    edge-agent executable (default: next to edge-bench, i.e. .build/release/edge-agent)
    """
}
