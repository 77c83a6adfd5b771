// Issue 16, item 5: repeated log lines are rate limited everywhere, and the
// suppressed ones are counted. The agent's own repeatable lines are those a
// sender outside it can trigger at will: a SIGHUP flood (each one a reload
// and a line) is said at most 5 times per 10 s, then counted.
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
import TestThreads
#endif

@Suite(.serialized, .ownThread) struct LogFloodDaemonTests {
    @Test(.timeLimit(.minutes(2)))
    func aSIGHUPFloodIsSaidAFewTimesWithACount() throws {
        let dir = try DaemonPaths.makeTemporaryDirectory("hupflood")
        defer { DaemonPaths.removeTree(dir) }
        let agent = AgentProcess(arguments: ["run", "--config", DaemonPaths.packageRoot + "/config/edge-agent.json5",
                                             "--socket", dir + "/agent.sock", "--duration", "60", "--quiet"],
                                 environment: AgentProcess.environment([:]), outputDirectory: dir)
        try agent.start()
        defer { agent.kill() }
        let up = DaemonDeadline(seconds: 30)
        while !FileManager.default.fileExists(atPath: dir + "/agent.sock") && !up.expired { daemonPause(ms: 50) }
        try #require(FileManager.default.fileExists(atPath: dir + "/agent.sock"), "\(agent.transcript)")
        // 30 reloads, each taken by the agent before the next is sent:
        // signals of one kind pending together count once, so the next
        // SIGHUP waits until the kernel no longer holds one pending for the
        // agent (its main thread took it with sigtimedwait). A fixed pause
        // instead let a loaded machine merge some (19 of 30 were said or
        // counted once under AddressSanitizer). Nothing is timed.
        let floodStarted = Date()
        for _ in 0..<30 {
            agent.signal(SIGHUP)
            let d = DaemonDeadline(seconds: 20)
            while Self.sighupPending(agent.pid) && !d.expired { daemonPause(ms: 5) }
            try #require(!Self.sighupPending(agent.pid), "the agent did not take a SIGHUP in 20 s\n\(agent.transcript)")
        }
        // The limit is per 10-s window: a slow machine spreads the flood over more.
        let windows = Int(Date().timeIntervalSince(floodStarted) / 10) + 1
        agent.signal(SIGTERM)
        let exit = agent.waitForExit(DaemonDeadline(seconds: 30))
        #expect(exit?.status == 0, "\(agent.transcript)")
        let lines = agent.stdout.split(separator: "\n").filter { $0.contains("SIGHUP: calibration reloaded") }
        let written = lines.filter { !$0.contains("suppressed") }.count
        let counted = lines.filter { $0.contains("suppressed") }.compactMap { line -> Int? in
            guard let r = line.range(of: "(", options: .backwards) else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
        #expect(written <= 5 * (windows + 1), "at most 5 per 10 s (\(windows) windows): \(written)\n\(agent.transcript)")
        #expect(!counted.isEmpty, "the rest are counted\n\(agent.transcript)")
        #expect(written + counted.reduce(0, +) == 30, "every reload said or counted: \(written) + \(counted) of 30\n\(agent.transcript)")
    }

    /// Whether a process-directed SIGHUP is pending for `pid` (the ShdPnd
    /// mask of /proc/PID/status, proc(5): bit n − 1 for signal n).
    static func sighupPending(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("ShdPnd:") }),
              let mask = UInt64(line.dropFirst("ShdPnd:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << UInt64(SIGHUP - 1)) != 0
    }
}
