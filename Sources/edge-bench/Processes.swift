// Child processes (the agent, cyclictest, ldd): spawned with their output
// in files, waited for with bounded waits, and killed on every way out -
// normal return, thrown error, SIGINT/SIGTERM/SIGHUP to edge-bench.
#if canImport(Glibc)
import Glibc
#endif
import EdgeBus
import EdgeEngine   // LoopThread
import EdgeValues

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// PIDs of running children, read by the signal handler (fixed storage, no
/// allocation there).
enum Children {
    static let capacity = 64
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<Int32> = {
        let p = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        p.initialize(repeating: 0, count: capacity)
        return p
    }()

    static func register(_ pid: Int32) {
        for i in 0..<capacity where slots[i] == 0 { slots[i] = pid; return }
    }
    static func unregister(_ pid: Int32) {
        for i in 0..<capacity where slots[i] == pid { slots[i] = 0 }
    }
    /// SIGKILLs every registered child (signal handler and last-resort path).
    static func killAll() {
        for i in 0..<capacity where slots[i] > 0 { kill(slots[i], SIGKILL) }
    }

    /// Temporary directories to remove if edge-bench is interrupted.
    static let temporaryDirectories = Locked<[String]>([])

    /// SIGINT/SIGTERM/SIGHUP are blocked in every thread and taken by one
    /// thread with sigwait: it kills the children, removes the temporary
    /// directories and exits 130 (ordinary code, no async-signal-safety games).
    /// Call before any other thread starts.
    static func installSignalHandlers() {
        signal(SIGPIPE, SIG_IGN)   // a client writing to a closed agent gets EPIPE instead
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        _ = try? LoopThread(name: "signals") {
            var set = sigset_t()
            sigemptyset(&set)
            for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, s) }
            var sig: Int32 = 0
            while sigwait(&set, &sig) != 0 {}
            Children.killAll()
            for d in temporaryDirectories.withLock({ $0 }) { removeTree(d) }
            let msg = "\nedge-bench: interrupted; killed the processes it started and removed its temporary files\n"
            _ = msg.withCString { write(2, $0, strlen($0)) }
            _exit(130)
        }
    }
}

/// A spawned process whose stdout/stderr go to files.
final class ChildProcess {
    let pid: pid_t
    let name: String
    let stdoutPath: String
    let stderrPath: String
    private(set) var exitStatus: Int32?

    /// Starts `argv[0]` (a path) with the arguments; stdin is /dev/null.
    init(_ argv: [String], stdout: String, stderr: String) throws {
        name = argv[0]
        stdoutPath = stdout; stderrPath = stderr
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Children start with the default signal mask and dispositions.
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t(); sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t(); sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var p: pid_t = 0
        let r = cargs.withUnsafeBufferPointer { buf in
            posix_spawn(&p, argv[0], &actions, &attr, UnsafeMutablePointer(mutating: buf.baseAddress!), environ)
        }
        guard r == 0 else { throw BenchError("cannot start \(argv[0]): \(String(cString: strerror(r)))") }
        pid = p
        Children.register(p)
    }

    /// Non-blocking check; true once the process has exited.
    func poll() -> Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            Children.unregister(pid)
            return true
        }
        if r < 0 && errno == ECHILD { exitStatus = -1; Children.unregister(pid); return true }
        return false
    }

    /// Waits up to `seconds`; true if it exited.
    @discardableResult
    func wait(seconds: Double) -> Bool {
        let clock = MonotonicClock()
        let end = clock.nowNanoseconds + UInt64(max(0, seconds) * 1e9)
        while !poll() {
            if clock.nowNanoseconds >= end { return false }
            usleep(20_000)
        }
        return true
    }

    /// SIGTERM, up to `grace` seconds, then SIGKILL. Idempotent.
    func stop(grace: Double = 5) {
        if poll() { return }
        kill(pid, SIGTERM)
        if wait(seconds: grace) { return }
        kill(pid, SIGKILL)
        wait(seconds: 5)
    }

    func signal(_ s: Int32) { if !poll() { kill(pid, s) } }

    var stdoutText: String { readTextFile(stdoutPath) ?? "" }
    var stderrText: String { readTextFile(stderrPath) ?? "" }

    deinit { stop(grace: 2) }
}

/// Runs a short command to completion (bounded) and returns its stdout.
func runCapturing(_ argv: [String], in dir: TempDirectory, seconds: Double = 20) throws -> (status: Int32, out: String, err: String) {
    let tag = String(argv[0].split(separator: "/").last ?? "cmd")
    let p = try ChildProcess(argv, stdout: dir.path + "/\(tag).out", stderr: dir.path + "/\(tag).err")
    if !p.wait(seconds: seconds) {
        p.stop(grace: 1)
        throw BenchError("\(argv.joined(separator: " ")) did not finish within \(Int(seconds)) s")
    }
    return (p.exitStatus ?? -1, p.stdoutText, p.stderrText)
}

/// A private directory under /tmp, removed (with its files) on deinit.
final class TempDirectory {
    let path: String
    init(prefix: String = "edge-bench") throws {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError("cannot create a temporary directory in /tmp: \(String(cString: strerror(errno)))")
        }
        path = String(cString: p)
        let registered = path
        Children.temporaryDirectories.withLock { $0.append(registered) }
    }
    func file(_ name: String) -> String { path + "/" + name }
    deinit {
        let registered = path
        Children.temporaryDirectories.withLock { $0.removeAll { $0 == registered } }
        removeTree(path)
    }
}

func removeTree(_ path: String) {
    guard let d = opendir(path) else { unlink(path); return }
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
            String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        var st = stat()
        if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
    }
    closedir(d)
    rmdir(path)
}

/// The whole file as UTF-8 text, or nil if unreadable.
func readTextFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 { if errno == EINTR { continue }; return nil }
        if n == 0 { break }
        out.append(contentsOf: buf[0..<n])
    }
    return String(decoding: out, as: UTF8.self)
}

func writeTextFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var bytes = Array(text.utf8)
    let ok = bytes.withUnsafeMutableBytes { b -> Bool in
        var off = 0
        while off < b.count {
            let n = write(fd, b.baseAddress! + off, b.count - off)
            if n < 0 { if errno == EINTR { continue }; return false }
            off += n
        }
        return true
    }
    if !ok { throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))") }
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }
func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 }

/// Finds `name` on $PATH (and in /usr/sbin, /sbin).
func findOnPath(_ name: String) -> String? {
    let path = (getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/local/bin"
    for dir in path.split(separator: ":") where isExecutable("\(dir)/\(name)") { return "\(dir)/\(name)" }
    return nil
}

/// Sleeps on the monotonic clock.
func sleepSeconds(_ s: Double) {
    guard s > 0 else { return }
    let c = MonotonicClock()
    c.sleep(untilNanoseconds: c.nowNanoseconds + UInt64(s * 1e9))
}

func monotonicNanoseconds() -> UInt64 { MonotonicClock().nowNanoseconds }
