import EdgeClient
import EdgeProtocol
import EdgeValues
#if canImport(Glibc)
import Glibc
#endif

/// Dates for the fitness API: the agent's CLOCK_MONOTONIC ns to `Date`.
enum FitnessTime {
    /// A CLOCK_MONOTONIC time of the agent as a `Date`.
    static func date(monotonicNs ns: UInt64) -> Date {
        let offset = realtimeMinusMonotonicNs()
        return Date(timeIntervalSince1970: Double(Int64(truncatingIfNeeded: ns) + offset) / 1e9)
    }
    static func unixNs(_ d: Date) -> Int64 {
        let s = d.timeIntervalSince1970
        guard s.isFinite else { return s > 0 ? Int64.max : 0 }
        return Int64(max(min(s * 1e9, 9.2e18), -9.2e18))
    }
}

/// The agent's fitness history, through its answers to `history` requests
/// over the shared connection (any user with the `fitness` entitlement; the
/// file stays the agent's: the library never opens it).
struct AgentHistoryReader {
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

    func activities(fromUnixNs from: Int64, toUnixNs to: Int64) throws -> [HistoryReply.Activity] {
        // A long answer comes in pages: each says where the next begins.
        var out: [HistoryReply.Activity] = []
        var pageFrom = from
        while true {
            guard case .activities(let list, let next) = try ask(.activity, pageFrom, to) else {
                throw NSError.coreMotion(CMErrorNotAvailable, "the agent answered an activity history request with pedometer totals")
            }
            out += list
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
    /// The history of the agent this process talks to, or why there is none.
    static func open() -> Result<AgentHistoryReader, NSError> {
        let (source, error) = MotionService.shared.connectedSource()
        if let error { return .failure(error) }
        guard let source else { return .failure(.coreMotion(CMErrorNotAvailable, "no agent")) }
        return .success(AgentHistoryReader(client: source.client))
    }
}
