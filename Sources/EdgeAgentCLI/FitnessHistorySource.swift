import EdgeHistory
import EdgeProtocol
import EdgeService
import EdgeValues

/// The agent's answer to `history` requests: its own read connection to the
/// fitness history the recorder writes (WAL: reads never wait for the
/// recorder's commits), used on the service thread. Clients of any user
/// with the `fitness` entitlement get their history this way; the file
/// itself stays readable only by the agent's user.
final class FitnessHistorySource: HistorySource {
    private let history: Locked<FitnessHistory>

    init(path: String, retentionSeconds: Double) throws(HistoryError) {
        history = Locked(try FitnessHistory(path: path, retentionSeconds: retentionSeconds, create: false))
    }

    func history(_ stream: StreamName, fromS: Double, toS: Double) -> Result<HistoryReply, HistorySourceError> {
        let from = Int64(fromS * 1e9), to = Int64(min(toS, 9.2e9) * 1e9)
        return history.withLock { h in
            do {
                switch stream {
                case .pedometer:
                    let t = try h.pedometer(fromUnixNs: from, toUnixNs: to)
                    return .success(.pedometer(.init(steps: t.steps, distance: t.distanceMeters, floorsAscended: t.floorsAscended,
                                                     floorsDescended: t.floorsDescended, activeSeconds: t.activeSeconds)))
                case .activity:
                    let rows = try h.activities(fromUnixNs: from, toUnixNs: to)
                    return .success(.activities(rows.map {
                        .init(startS: Double($0.startUnixNs) / 1e9, flags: $0.flags, confidence: $0.confidence)
                    }))
                default:
                    return .failure(HistorySourceError("no history of \(stream.rawValue)"))
                }
            } catch {
                return .failure(HistorySourceError("the fitness history could not be read: \(error)"))
            }
        }
    }

    func close() { history.withLock { $0.close() } }
}
