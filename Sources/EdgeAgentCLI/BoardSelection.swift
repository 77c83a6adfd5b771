import EdgeCommandLine
import EdgeConfig
import EdgeRuntime
import EdgeLocations

extension BoardSession {
    /// Reads `--board`, `--bus`, `--config` and resolves them
    /// (``BoardSession/select(board:bus:config:environment:executablePaths:)``).
    static func select(_ a: inout Arguments, environment: [String: String],
                       executablePaths: [String] = BoardLocator.currentExecutablePaths()) throws -> Selection {
        let boardArg = try a.option("--board")
        let busArg = try a.int("--bus", in: 0...255)
        let configArg = try a.option("--config")
        if boardArg != nil && busArg != nil { throw UsageError("use either --board NAME|FILE or --bus N, not both") }
        return try select(board: boardArg, bus: busArg, config: configArg, environment: environment, executablePaths: executablePaths)
    }
}
