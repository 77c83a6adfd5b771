// Placeholder: the real command replaces this file.
public enum DecodeCommand: Subcommand {
    public static let name = "decode"
    public static let summary = "(not yet built)"
    public static let help = "edge-agent decode: not yet built"
    public static func run(_ arguments: inout Arguments, _ console: Console) throws -> Int32 {
        console.error("edge-agent decode: not yet built"); return 1
    }
}
