// Placeholder: the real command replaces this file.
public enum ReadCommand: Subcommand {
    public static let name = "read"
    public static let summary = "(not yet built)"
    public static let help = "edge-agent read: not yet built"
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        console.error("edge-agent read: not yet built"); return 1
    }
}
