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
        // 30 reloads, each let through before the next (signals of one kind
        // pending together count once); the pause is for the agent to take
        // each, nothing is timed.
        var sent = 0
        let floodStarted = Date()
        for _ in 0..<30 {
            let before = agent.stdout.components(separatedBy: "SIGHUP").count + agent.stderr.components(separatedBy: "SIGHUP").count
            agent.signal(SIGHUP)
            sent += 1
            let d = DaemonDeadline(seconds: 2)
            while !d.expired {
                let now = agent.stdout.components(separatedBy: "SIGHUP").count + agent.stderr.components(separatedBy: "SIGHUP").count
                if now > before || sent > 5 { break }
                daemonPause(ms: 20)
            }
            daemonPause(ms: 30)
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
        #expect(written + counted.reduce(0, +) >= 20, "every reload said or counted: \(written) + \(counted) of 30\n\(agent.transcript)")
    }
}
