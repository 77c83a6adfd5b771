// Placeholder: the real command replaces this file.
public enum ProbeCommand: Subcommand {
    public static let name = "probe"
    public static let summary = "(not yet built)"
    public static let help = "edge-agent probe: not yet built"
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        console.error("edge-agent probe: not yet built"); return 1
    }
}
