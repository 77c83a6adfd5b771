#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import EdgeValues

/// `edge-mqtt run` as two processes: this supervisor, and the bridge itself
/// (the worker: the same binary, marked by `$EDGE_MQTT_WORKER`), which holds
/// the libmosquitto connection.
///
/// Why: Debian 12's libmosquitto 2.0.11 calls `log__printf(NULL, …)` in
/// `property__read` (lib/property_mosq.c) for an MQTT 5 property identifier
/// it does not know, and `log__printf` starts with `assert(mosq)`
/// (lib/logging_mosq.c): six bytes from a broker (or from anyone on a
/// plaintext path) — e.g. `f0 04 93 7e 78 a2`, an AUTH whose property list
/// holds identifier 0x78 — abort the process. No option of the library
/// avoids it, so the process that links it must be allowed to die: when the
/// worker dies of a signal the supervisor logs why, waits (the broker's
/// reconnect back-off, capped at 10 s so systemd's watchdog never fires in
/// between) and starts it again, telling it how many restarts there were
/// and why (`status` and the `bridge` topic say so). MQTT 3.1.1 (the
/// default) never reads properties, and no malformed packet aborts it
/// (Tests/EdgeMQTTTests/FakeBrokerTests.swift); the supervisor is the
/// second line.
///
/// Signals: SIGTERM, SIGINT and SIGHUP are passed on to the worker; the
/// supervisor exits with the worker's status. When the supervisor itself
/// is killed, the worker notices (its parent changes) and exits at once
/// without a clean DISCONNECT, so the broker publishes the Last Will.
enum Supervisor {
    /// Set to "1" in the worker's environment.
    static let workerVariable = "EDGE_MQTT_WORKER"
    /// Restarts so far (decimal), in the worker's environment.
    static let restartsVariable = "EDGE_MQTT_RESTARTS"
    /// Why the last worker ended, in the worker's environment.
    static let lastExitVariable = "EDGE_MQTT_LAST_EXIT"

    /// The longest wait between restarts, ns (systemd's WatchdogSec is 30 s).
    static let maximumWaitNs: UInt64 = 10_000_000_000
    /// A worker that ran this long starts the back-off afresh, ns.
    static let healthyRunNs: UInt64 = 60_000_000_000

    /// Whether this process is the worker.
    static var isWorker: Bool {
        guard let v = getenv(workerVariable) else { return false }
        return String(cString: v) == "1"
    }

    /// posix_spawn failed with `errno`.
struct SpawnFailure: Error { var errno: Int32 }

/// What the supervisor told the worker (nil outside a supervisor).
    static func reportFromEnvironment() -> WorkerRestarts? {
        guard isWorker else { return nil }
        let n = getenv(restartsVariable).flatMap { Int(String(cString: $0)) } ?? 0
        let why = getenv(lastExitVariable).map { String(cString: $0) }
        return WorkerRestarts(restarts: n, lastExit: why)
    }

    /// The signal's name (SIGABRT …), else its number.
    static func signalName(_ sig: Int32) -> String {
        let names: [Int32: String] = [SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGILL: "SIGILL", SIGBUS: "SIGBUS",
                                      SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGTRAP: "SIGTRAP", SIGTERM: "SIGTERM",
                                      SIGINT: "SIGINT", SIGHUP: "SIGHUP", SIGPIPE: "SIGPIPE"]
        return names[sig] ?? "signal \(sig)"
    }

    /// Runs the worker until it exits on its own or a signal stops it.
    /// `arguments` are `run`'s own (without the program and the command).
    static func run(arguments: [String], backoff initial: Backoff, log: BridgeLog) -> Int32 {
        var set = blockShutdownSignals()
        // The worker's end arrives as SIGCHLD (blocked, so it stays pending
        // for sigtimedwait): the supervisor sleeps until something happens
        // instead of looking ten times a second.
        sigaddset(&set, SIGCHLD)
        pthread_sigmask(SIG_BLOCK, &set, nil)

        let executable = selfExecutable()
        var backoff = initial
        backoff.maximumNs = min(backoff.maximumNs, maximumWaitNs)
        backoff.initialNs = min(backoff.initialNs, backoff.maximumNs)
        var restarts = 0
        var lastExit: String?
        var stopping: Int32?
        while true {
            let startedNs = monotonicNowNs()
            let pid: pid_t
            switch spawn(executable, ["run"] + arguments, restarts: restarts, lastExit: lastExit) {
            case .success(let p): pid = p
            case .failure(let f):
                printError("edge-mqtt: cannot start the bridge process \(executable): \(String(cString: strerror(f.errno))) (errno \(f.errno))")
                return 1
            }
            if restarts > 0 { log.info("supervisor: bridge process \(pid) started (restart \(restarts))") }
            // Wait for it, passing signals on.
            var status: Int32 = 0
            while true {
                var ts = timespec(tv_sec: 5, tv_nsec: 0)
                let sig = sigtimedwait(&set, nil, &ts)
                if sig > 0 && sig != SIGCHLD {
                    kill(pid, sig)
                    if sig != SIGHUP { stopping = sig }
                }
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid { break }
                if r < 0 && errno != EINTR { return 1 }
            }
            let termSignal = status & 0x7f
            let exitCode = (status >> 8) & 0xff
            if termSignal == 0 { return exitCode }
            if stopping != nil { return 128 + termSignal }
            let ranNs = monotonicNowNs() - startedNs
            if ranNs >= healthyRunNs { backoff.reset() }
            var wait = backoff.next()
            restarts += 1
            let when = UTCTime.format(unixNanoseconds: Int64(realtimeNowNs()))
            let why = "bridge process \(pid) died of \(signalName(termSignal)) at \(when) after \(seconds(ranNs)) s"
                + (termSignal == SIGABRT ? " (an abort: libmosquitto asserts on some malformed MQTT 5 packets from a broker; docs/mqtt.md, \"Malformed packets\")" : "")
            lastExit = why
            log.info("supervisor: \(why); restarting it in \(seconds(wait)) s (restart \(restarts))")
            // The wait, still passing signals on (nothing to pass them to: stop).
            while wait > 0 {
                let step = min(wait, 100_000_000)
                var ts = timespec(tv_sec: 0, tv_nsec: Int(step))
                let sig = sigtimedwait(&set, nil, &ts)
                if sig == SIGTERM || sig == SIGINT {
                    log.info("\(signalName(sig)): stopping (no bridge process was running)")
                    return 0
                }
                wait -= step
            }
        }
    }

    /// /proc/self/exe, else the name this process was started as.
    static func selfExecutable() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        if n > 0 { return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments.first ?? "edge-mqtt"
    }

    /// Starts the worker with this process's environment plus the worker
    /// variables and `SWIFT_BACKTRACE=enable=no` (unless set), minus WATCHDOG_PID (the worker pings systemd's watchdog
    /// itself: the unit says NotifyAccess=all). Default signal mask and
    /// dispositions; stdin, stdout and stderr shared.
    static func spawn(_ executable: String, _ arguments: [String], restarts: Int, lastExit: String?) -> Result<pid_t, SpawnFailure> {
        var env: [String] = []
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            let name = s.split(separator: "=", maxSplits: 1).first.map(String.init) ?? s
            if ![workerVariable, restartsVariable, lastExitVariable, "WATCHDOG_PID"].contains(name) { env.append(s) }
            p += 1
        }
        // The worker dies of libmosquitto's assert, not of a Swift error: the
        // Swift runtime's backtracer adds ~100 lines to the journal per abort
        // and delays the restart (under ThreadSanitizer it hung the dying
        // worker for good). Off unless the user asked for it.
        if !env.contains(where: { $0.hasPrefix("SWIFT_BACKTRACE=") }) { env.append("SWIFT_BACKTRACE=enable=no") }
        env.append("\(workerVariable)=1")
        env.append("\(restartsVariable)=\(restarts)")
        if let lastExit { env.append("\(lastExitVariable)=\(lastExit)") }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t(); sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t(); sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { for x in argv { free(x) }; for x in envp { free(x) } }
        var pid: pid_t = 0
        let r = argv.withUnsafeBufferPointer { a in
            envp.withUnsafeBufferPointer { e in
                posix_spawn(&pid, executable, nil, &attr, UnsafeMutablePointer(mutating: a.baseAddress!),
                            UnsafeMutablePointer(mutating: e.baseAddress!))
            }
        }
        return r == 0 ? .success(pid) : .failure(SpawnFailure(errno: r))
    }
}

/// posix_spawn failed with `errno`.
struct SpawnFailure: Error { var errno: Int32 }

/// What the supervisor told the worker: how often the bridge process was
/// restarted, and why the last one ended.
public struct WorkerRestarts: Sendable, Equatable {
    public var restarts: Int
    public var lastExit: String?
    public init(restarts: Int, lastExit: String?) { self.restarts = restarts; self.lastExit = lastExit }
}
