/// A file the command was told to use (configuration, board profile,
/// scenario, calibration) is missing or invalid. Bad use like a wrong option
/// (exit 2), printed as the file's own error, without the pointer to `--help`.
public struct SetupError: Error, CustomStringConvertible {
    public var message: String
    public init(_ error: any Error, hint: String? = nil) {
        message = "\(error)" + (hint.map { "\n(\($0))" } ?? "")
    }
    public var description: String { message }
}
