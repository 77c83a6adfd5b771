#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why the broker password could not be read. The messages name the file
/// and what to do; none of them ever contains the password.
public struct PasswordFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case unreadable(errno: Int32)
        case notARegularFile
        /// Other users may read (or write) it: `mode` is its permission bits.
        case worldAccessible(mode: UInt32)
        case empty
        case tooLarge
    }
    public var path: String
    public var kind: Kind

    public var description: String {
        switch kind {
        case .unreadable(let e):
            let advice = e == EACCES
                ? "the service user cannot read it: make it owned by the service (chown edge-mqtt \(path); chmod 0600 \(path))"
                : "check the path (broker.password_file)"
            return "password file \(path): cannot open: \(String(cString: strerror(e))) (errno \(e)); \(advice)"
        case .notARegularFile:
            return "password file \(path) is not a regular file; write the password into a file and name it in broker.password_file"
        case .worldAccessible(let mode):
            let octal = String(mode & 0o777, radix: 8)
            return "password file \(path) is readable by every user (mode 0\(octal)); refusing to use it. Make it readable only by the service: chmod 0600 \(path) (or 0640 with the service's group)"
        case .empty:
            return "password file \(path) is empty; its first line is the broker password"
        case .tooLarge:
            return "password file \(path) is larger than 64 KiB; its first line is the broker password"
        }
    }
}

/// The broker password, read from a file only the service may read.
///
/// The bytes live in a buffer this type owns and wipes when it is done
/// with them; they are handed to libmosquitto (which copies them) and to
/// nothing else: no description, no log line, no status report shows them.
public final class BrokerPassword: @unchecked Sendable, CustomStringConvertible {
    private var bytes: [CChar]

    /// Reads the first line of `path` (without its line ending).
    /// - Throws: ``PasswordFileError``: unreadable, not a regular file,
    ///   accessible to other users (any of the mode's "other" bits set),
    ///   empty.
    public init(readingFile path: String) throws(PasswordFileError) {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) } while fd < 0 && errno == EINTR
        if fd < 0 {
            let e = errno
            throw PasswordFileError(path: path, kind: e == ELOOP ? .notARegularFile : .unreadable(errno: e))
        }
        defer { close(fd) }
        // Checked on the open descriptor, so the file cannot be swapped
        // between the check and the read.
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw PasswordFileError(path: path, kind: .unreadable(errno: errno)) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw PasswordFileError(path: path, kind: .notARegularFile) }
        guard st.st_mode & 0o007 == 0 else {
            throw PasswordFileError(path: path, kind: .worldAccessible(mode: UInt32(st.st_mode)))
        }
        guard st.st_size <= 65536 else { throw PasswordFileError(path: path, kind: .tooLarge) }
        var buffer = [UInt8](repeating: 0, count: 65537)
        var count = 0
        while count < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw PasswordFileError(path: path, kind: .unreadable(errno: errno)) }
            if n == 0 { break }
            count += n
        }
        var end = buffer[..<count].firstIndex { $0 == 0x0A || $0 == 0x0D } ?? count
        if end > 0x10000 { end = 0x10000 }
        guard end > 0 else {
            wipe(&buffer)
            throw PasswordFileError(path: path, kind: .empty)
        }
        bytes = buffer[..<end].map { CChar(bitPattern: $0) } + [0]
        wipe(&buffer)
    }

    /// A password given directly (tests).
    public init(_ text: String) { bytes = text.utf8.map { CChar(bitPattern: $0) } + [0] }

    deinit { wipe(&bytes) }

    /// Calls `body` with the NUL-terminated password.
    public func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }

    /// Never the password.
    public var description: String { "<password, \(bytes.count - 1) bytes>" }
}

/// Overwrites a buffer's bytes (through a volatile-like opaque call the
/// optimiser cannot drop, memset_explicit's role).
private func wipe<T: FixedWidthInteger>(_ a: inout [T]) {
    a.withUnsafeMutableBytes { raw in
        guard let base = raw.baseAddress else { return }
        explicit_bzero(base, raw.count)
    }
}
