import EdgeClient
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
    static func monotonicNs() -> Int64 { Int64(monotonicNowNs()) }
    static func realtimeNs() -> Int64 { Int64(realtimeNowNs()) }
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

/// Reads the agent's fitness history: by asking the agent (`history`
/// requests: any user with the `fitness` entitlement, the file stays the
/// agent's), else — an agent from before the request — from its file,
/// where this process may read it (the agent's own user).
protocol FitnessHistoryReader {
    func pedometer(fromUnixNs from: Int64, toUnixNs to: Int64) throws -> PedometerTotals
    func activities(fromUnixNs from: Int64, toUnixNs to: Int64) throws -> [ActivityRecord]
    func close()
}

extension FitnessHistory: FitnessHistoryReader {}

/// The agent's answers to `history` requests over the shared connection.
struct AgentHistoryReader: FitnessHistoryReader {
    let client: AgentClient

    func ask(_ stream: StreamName, _ from: Int64, _ to: Int64) throws -> HistoryReply {
        do {
            let clamp = { (ns: Int64) in min(max(0, ns), Request.maxHistoryNs) }
            let reply = try client.request(.history(stream, fromNs: clamp(from), toNs: clamp(to)), timeoutMs: 5000)
            guard case .history(let h, _) = reply else {
                throw NSError.coreMotion(CMErrorNotAvailable, "the agent answered a history request with \(reply)")
            }
            return h
        } catch let e as AgentClientError {
            throw MotionService.error(e)
        }
    }

    func pedometer(fromUnixNs from: Int64, toUnixNs to: Int64) throws -> PedometerTotals {
        guard case .pedometer(let t) = try ask(.pedometer, from, to) else {
            throw NSError.coreMotion(CMErrorNotAvailable, "the agent answered a pedometer history request with activities")
        }
        var out = PedometerTotals()
        out.steps = t.steps; out.distanceMeters = t.distanceMeters
        out.floorsAscended = t.floorsAscended; out.floorsDescended = t.floorsDescended; out.activeSeconds = t.activeSeconds
        return out
    }

    func activities(fromUnixNs from: Int64, toUnixNs to: Int64) throws -> [ActivityRecord] {
        // A long answer comes in pages: each says where the next begins.
        var out: [ActivityRecord] = []
        var pageFrom = from
        while true {
            guard case .activities(let list, let next) = try ask(.activity, pageFrom, to) else {
                throw NSError.coreMotion(CMErrorNotAvailable, "the agent answered an activity history request with pedometer totals")
            }
            out += list.map { ActivityRecord(startUnixNs: Int64(($0.startS * 1e9).rounded()), flags: $0.flags, confidence: $0.confidence) }
            guard let next else { return out }
            guard next > pageFrom else {
                throw NSError.coreMotion(CMErrorNotAvailable, "the agent's history pages do not advance (next page at \(next) ns)")
            }
            pageFrom = next
        }
    }

    func close() {}
}

enum FitnessHistoryAccess {
    /// The history of the agent this process talks to: its answers to
    /// `history` requests when it serves them, else its file; or why there
    /// is none.
    static func open() -> Result<any FitnessHistoryReader, NSError> {
        let (source, error) = MotionService.shared.connectedSource()
        if let error { return .failure(error) }
        guard let source else { return .failure(.coreMotion(CMErrorNotAvailable, "no agent")) }
        // One probe: an agent that knows the request answers it (or says why
        // it cannot); one from before it says unknownRequest.
        do {
            _ = try source.client.request(.history(.activity, fromNs: 0, toNs: 0), timeoutMs: 5000)
            return .success(AgentHistoryReader(client: source.client))
        } catch let e {
            if case .refused(let code, _, _, _) = e, code == .unknownRequest {
                return openFile().map { $0 as any FitnessHistoryReader }
            }
            return .success(AgentHistoryReader(client: source.client))  // its errors come with each query
        }
    }

    /// The agent's history file (agents without the `history` request).
    static func openFile() -> Result<FitnessHistory, NSError> {
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
