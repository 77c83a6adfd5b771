import EdgeConfig
import EdgeHistory
import EdgeProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Dates for the fitness API: the agent's CLOCK_MONOTONIC ns to `Date`, and
/// the agent's history file for queries (read directly: the protocol has no
/// history request yet, so a query works where this process may read the
/// file: the agent's own user, or the in-process agent).
enum FitnessTime {
    static func monotonicNs() -> Int64 {
        var ts = timespec(); clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    static func realtimeNs() -> Int64 {
        var ts = timespec(); clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    /// A CLOCK_MONOTONIC time of the agent as a `Date`.
    static func date(monotonicNs ns: UInt64) -> Date {
        let offset = realtimeNs() - monotonicNs()
        return Date(timeIntervalSince1970: Double(Int64(truncatingIfNeeded: ns) + offset) / 1e9)
    }
    static func unixNs(_ d: Date) -> Int64 {
        let s = d.timeIntervalSince1970
        guard s.isFinite else { return s > 0 ? Int64.max : 0 }
        return Int64(max(min(s * 1e9, 9.2e18), -9.2e18))
    }
}

enum FitnessHistoryAccess {
    /// The history of the agent this process talks to, or why there is none.
    static func open() -> Result<FitnessHistory, NSError> {
        let (source, error) = MotionService.shared.connectedSource()
        if let error { return .failure(error) }
        guard let path = source?.location.configPath else {
            return .failure(.coreMotion(CMErrorNotAvailable, "the agent's configuration is not known to this process, so its fitness history cannot be read (set EdgeMotionAgent.configurationPath)"))
        }
        let config: AgentConfig
        do { config = try ConfigLoader.load(AgentConfig.self, from: path) } catch {
            return .failure(.coreMotion(CMErrorNotAvailable, "cannot read the agent's configuration \(path): \(error)"))
        }
        guard let h = config.fitness.history else {
            return .failure(.coreMotion(CMErrorNotAvailable, "the agent keeps no fitness history: set fitness.enabled and fitness.history in \(path)"))
        }
        let file = BoardLocator.resolve(h.path, nextTo: path)
        do {
            return .success(try FitnessHistory(path: file, retentionSeconds: h.retentionDays * 86400, create: false))
        } catch {
            return .failure(.coreMotion(error.code == 23 || error.errno == EACCES ? CMErrorNotAuthorized : CMErrorNotAvailable,
                                        "cannot read the fitness history: \(error)"))
        }
    }
}
