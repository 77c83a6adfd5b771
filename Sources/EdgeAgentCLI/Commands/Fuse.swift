// Placeholder: the real command replaces this file.
public enum FuseCommand: Subcommand {
    public static let name = "fuse"
    public static let summary = "(not yet built)"
    public static let help = "edge-agent fuse: not yet built"
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        console.error("edge-agent fuse: not yet built"); return 1
    }
}
