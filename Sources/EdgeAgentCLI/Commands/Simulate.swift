// Placeholder: the real command replaces this file.
public enum SimulateCommand: Subcommand {
    public static let name = "simulate"
    public static let summary = "(not yet built)"
    public static let help = "edge-agent simulate: not yet built"
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        console.error("edge-agent simulate: not yet built"); return 1
    }
}
