#if canImport(Glibc)
import Glibc
#endif

/// Why a file could not be read: the step (`open` or `read`) and its errno.
public struct FileReadError: Error, Equatable, Sendable {
    public var operation: String
    public var errno: Int32
    /// e.g. "cannot open: No such file or directory (errno 2)".
    public var message: String { "cannot \(operation): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Reads a whole file without Foundation (EINTR retried), for the
/// recording formats' loaders.
public func readWholeFile(_ path: String) throws(FileReadError) -> [UInt8] {
    var f: Int32
    repeat { f = open(path, O_RDONLY | O_CLOEXEC) } while f < 0 && errno == EINTR
    if f < 0 { throw FileReadError(operation: "open", errno: errno) }
    defer { close(f) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(f, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            throw FileReadError(operation: "read", errno: errno)
        }
        if n == 0 { return bytes }
        bytes.append(contentsOf: chunk[0..<n])
    }
}
