#if canImport(Glibc)
import Glibc
#endif
import EdgeBus

/// An advisory lock per I2C bus, so a second agent or tool refuses clearly
/// instead of fighting over the chips (the chips have state: a second
/// driver resetting the MPU-6050 under a running loop ruins both).
///
/// The lock is `flock(LOCK_EX | LOCK_NB)` on a file named after the bus in
/// the first writable directory of `/run/lock`, `$XDG_RUNTIME_DIR`, `/tmp`.
/// The kernel drops it when the process exits, however it exits. The file
/// holds the owner's pid and command, so the refusal can name it.
public final class BusLock: @unchecked Sendable {
    public let path: String
    private let fd: Int32

    public struct Held: Error, Equatable, Sendable, CustomStringConvertible {
        public var bus: String
        public var lockPath: String
        /// What the lock file says about the owner ("pid 1234: edge-agent run").
        public var owner: String
        public var description: String {
            "\(bus) is in use by another edge-agent (\(owner.isEmpty ? "see \(lockPath)" : owner)): stop it first (`sudo systemctl stop edge-agent`), or talk to it through its socket (`edge-agent watch`)"
        }
    }

    public struct Failed: Error, Equatable, Sendable, CustomStringConvertible {
        public var lockPath: String
        public var errno: Int32
        public var description: String {
            "cannot create the bus lock \(lockPath): \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }

    public enum LockError: Error, Equatable, Sendable, CustomStringConvertible {
        case held(Held)
        case failed(Failed)
        public var description: String {
            switch self {
            case .held(let h): return h.description
            case .failed(let f): return f.description
            }
        }
    }

    /// The lock file name for a bus such as `/dev/i2c-1`: `edge-agent-i2c-1.lock`.
    public static func fileName(forBus bus: String) -> String {
        let base = bus.split(separator: "/").last.map(String.init) ?? bus
        return "edge-agent-" + base.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" } + ".lock"
    }

    /// Candidate directories, first writable wins.
    public static func directories(environment: [String: String]) -> [String] {
        var dirs = ["/run/lock"]
        if let x = environment["XDG_RUNTIME_DIR"], !x.isEmpty { dirs.append(x) }
        dirs.append("/tmp")
        return dirs
    }

    /// Takes the lock for `bus` or throws ``LockError/held(_:)`` naming the owner.
    public init(bus: String, directory: String? = nil, environment: [String: String] = [:],
                purpose: String = "edge-agent") throws(LockError) {
        let writable = Self.directories(environment: environment).first { access($0, W_OK) == 0 }
        let dir: String = directory ?? writable ?? "/tmp"
        path = dir + "/" + Self.fileName(forBus: bus)
        var f: Int32
        repeat { f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644) } while f < 0 && errno == EINTR
        if f < 0 { throw .failed(Failed(lockPath: path, errno: errno)) }
        var r: Int32
        repeat { r = flock(f, LOCK_EX | LOCK_NB) } while r < 0 && errno == EINTR
        if r < 0 {
            let e = errno
            var buf = [UInt8](repeating: 0, count: 256)
            let n = pread(f, &buf, 255, 0)
            close(f)
            if e == EWOULDBLOCK {
                let owner = n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).trimmingTrailingNewlines : ""
                throw .held(Held(bus: bus, lockPath: path, owner: owner))
            }
            throw .failed(Failed(lockPath: path, errno: e))
        }
        fd = f
        let note = "pid \(getpid()): \(purpose)\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit {
        _ = ftruncate(fd, 0)
        close(fd)   // releases the flock
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = Substring(self)
        while s.last == "\n" || s.last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
