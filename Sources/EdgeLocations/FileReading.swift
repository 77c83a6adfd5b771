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

/// Why a configuration-like file (configuration, board profile, calibration,
/// scenario, bridge configuration) was not read: it is missing or
/// unreadable, it is not a regular file, or it is larger than the bound.
public struct BoundedFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// `open`, `fstat` or `read` failed with this errno (ENOENT: missing).
        case failed(operation: String, errno: Int32)
        /// A FIFO, a character device (`/dev/zero`), a directory, a socket…
        /// (``BoundedFileError/fileType(_:)`` names it).
        case notARegularFile(type: String)
        /// Larger than `limit` bytes (`size`: what fstat said, or more than
        /// the limit when the file grew while it was read).
        case tooLarge(size: Int64, limit: Int)
    }
    public var path: String
    public var kind: Kind

    public init(path: String, kind: Kind) { self.path = path; self.kind = kind }

    /// What is wrong, without the path (callers put it in front), e.g.
    /// "not a regular file (a FIFO)".
    public var reason: String {
        switch kind {
        case .failed(let op, let e):
            return "cannot \(op): \(String(cString: strerror(e))) (errno \(e))"
        case .notARegularFile(let type):
            return "not a regular file (\(type)); give the path of a file (a FIFO, a device or a directory is refused so that reading never blocks or runs without end)"
        case .tooLarge(let size, let limit):
            return "larger than \(Self.describe(bytes: limit)) (\(size) bytes): not a file of this kind? Check the path; a file of this kind is a few kilobytes"
        }
    }

    public var description: String { "\(path): \(reason)" }

    /// `1 MiB`, `64 KiB`, `300 bytes`.
    public static func describe(bytes n: Int) -> String {
        if n >= 1 << 20 && n % (1 << 20) == 0 { return "\(n >> 20) MiB" }
        if n >= 1 << 10 && n % (1 << 10) == 0 { return "\(n >> 10) KiB" }
        return "\(n) bytes"
    }

    /// "a FIFO", "a character device", "a directory"… for `st_mode`.
    public static func fileType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFDIR: return "a directory"
        case S_IFSOCK: return "a socket"
        case S_IFLNK: return "a symbolic link"
        default: return "not a file"
        }
    }
}

/// Reads a whole regular file of at most `limit` bytes, for configuration-
/// like files that a person names (`--config`, `calibration_file`, …).
///
/// The file is opened with `O_NONBLOCK`, so opening a FIFO that has no
/// writer returns at once, and its type is checked with `fstat` on the open
/// descriptor (no window between check and read): anything but a regular
/// file (a FIFO, `/dev/zero`, a directory) is refused, as is a file whose
/// size exceeds `limit`; at most `limit + 1` bytes are ever read, so a file
/// that grows while it is read (or a `/proc` file reporting size 0) cannot
/// make the read endless. EINTR is retried.
public func readRegularFile(_ path: String, limit: Int) throws(BoundedFileError) -> [UInt8] {
    precondition(limit >= 0, "readRegularFile: a negative limit")
    var f: Int32
    repeat { f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) } while f < 0 && errno == EINTR
    if f < 0 { throw BoundedFileError(path: path, kind: .failed(operation: "open", errno: errno)) }
    defer { close(f) }
    var st = stat()
    guard fstat(f, &st) == 0 else { throw BoundedFileError(path: path, kind: .failed(operation: "fstat", errno: errno)) }
    guard (st.st_mode & S_IFMT) == S_IFREG else {
        throw BoundedFileError(path: path, kind: .notARegularFile(type: BoundedFileError.fileType(st.st_mode)))
    }
    guard Int64(st.st_size) <= Int64(limit) else {
        throw BoundedFileError(path: path, kind: .tooLarge(size: Int64(st.st_size), limit: limit))
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Int(st.st_size) + 1)
    var chunk = [UInt8](repeating: 0, count: min(1 << 16, limit + 1))
    while bytes.count <= limit {
        let want = min(chunk.count, limit + 1 - bytes.count)
        let n = chunk.withUnsafeMutableBytes { read(f, $0.baseAddress, want) }
        if n < 0 {
            if errno == EINTR { continue }
            throw BoundedFileError(path: path, kind: .failed(operation: "read", errno: errno))
        }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    if bytes.count > limit { throw BoundedFileError(path: path, kind: .tooLarge(size: Int64(bytes.count), limit: limit)) }
    return bytes
}
