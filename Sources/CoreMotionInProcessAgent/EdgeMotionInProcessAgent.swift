#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import CoreMotion
import EdgeRuntime

/// Opt-in: an agent inside the app's own process when none answers.
///
/// `CoreMotion` alone links only the agent's client: an app that links it
/// talks to a running `edge-agent` and never carries the engine, the chip
/// drivers, the simulators or SQLite. An app that should also work with no
/// agent running (a demo, a tool on a board without the service) adds this
/// product and calls ``install()`` once at start:
///
/// ```swift
/// // Package.swift: .product(name: "CoreMotionInProcessAgent", package: "EdgeMotion")
/// import CoreMotion
/// import CoreMotionInProcessAgent
///
/// EdgeMotionInProcessAgent.install()
/// ```
///
/// When no agent answers at the socket Core Motion looks up, it then starts
/// one in the process (``EmbeddedAgent``) on the configuration's board (the
/// simulated board when the configuration says so), on a private socket in
/// a directory only this user may enter, and talks to it with the same
/// client (one code path for both). `EdgeMotionAgent.allowsInProcessAgent`
/// still turns it off.
public enum EdgeMotionInProcessAgent {
    /// Lets Core Motion start an agent in this process when none answers.
    /// Idempotent.
    public static func install() {
        EmbeddedAgentHandle.starterLock.withLock {
            EmbeddedAgentHandle.starter = { configPath in try startEmbedded(configPath: configPath) }
        }
    }

    /// The engine and the service in this process, on a socket in a new
    /// directory only this user may enter (mode 0700).
    static func startEmbedded(configPath: String?) throws -> EmbeddedAgentHandle {
        removeDirectoriesOfEndedProcesses()
        var template = Array("\(directoryPrefix)\(getpid())-XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RunError("cannot make a directory for the in-process agent's socket in /tmp: \(String(cString: strerror(errno))) (errno \(errno))")
        }
        let directory = String(cString: p)
        let socket = directory + "/agent.sock"
        do {
            let agent = try EmbeddedAgent.start(configPath: configPath, socketPath: socket)
            let board = agent.boardName
            let config = agent.configPath ?? "the built-in configuration"
            removeAtExit(directory)
            return EmbeddedAgentHandle(socketPath: socket, description: "\(board), \(config)") {
                agent.stop()
                removeDirectory(directory)
            }
        } catch {
            removeDirectory(directory)
            throw error
        }
    }

    /// Where the in-process agents' socket directories are made:
    /// `/tmp/edge-motion-PID-XXXXXX`.
    static let directoryPrefix = "/tmp/edge-motion-"

    /// The socket and its directory (what ``startEmbedded(configPath:)`` made).
    static func removeDirectory(_ directory: String) {
        unlink(directory + "/agent.sock")
        rmdir(directory)
    }

    /// Directories to remove when the process exits: an app that ends
    /// without stopping its managers (most command-line programs) used to
    /// leave its socket directory behind.
    nonisolated(unsafe) static var atExit: [String] = []
    static let atExitLock = NSLock()
    nonisolated(unsafe) static var atExitRegistered = false

    static func removeAtExit(_ directory: String) {
        atExitLock.lock(); defer { atExitLock.unlock() }
        atExit.append(directory)
        if !atExitRegistered {
            atExitRegistered = true
            atexit {
                // The listener is closed by the kernel with the process; only
                // the names are left to remove.
                EdgeMotionInProcessAgent.atExitLock.lock()
                let list = EdgeMotionInProcessAgent.atExit
                EdgeMotionInProcessAgent.atExitLock.unlock()
                for d in list { EdgeMotionInProcessAgent.removeDirectory(d) }
            }
        }
    }

    /// Socket directories of this user's processes that ended without
    /// exiting (SIGKILL, a crash): removed at the next start.
    static func removeDirectoriesOfEndedProcesses() {
        let prefix = "edge-motion-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] {
            guard name.hasPrefix(prefix) else { continue }
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 else { continue }
            let path = "/tmp/" + name
            var st = stat()
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == getuid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { removeDirectory(path) }
        }
    }
}
