import EdgeHistory
import EdgeProtocol
import EdgeService
import EdgeValues

/// The agent's answer to `history` requests: its own read connection to the
/// fitness history the recorder writes (WAL: reads never wait for the
/// recorder's commits), used on the service thread. Clients of any user
/// with the `fitness` entitlement get their history this way; the file
/// itself stays readable only by the agent's user.
///
/// With the agent's recorder it adds what the recorder holds but has not
/// committed yet (the last couple of seconds, or everything since the disk
/// filled): an answer counts every record the agent made, once.
package final class FitnessHistorySource: HistorySource {
    private let history: Locked<FitnessHistory>
    private let recorder: HistoryRecorder?

    package init(path: String, retentionSeconds: Double, recorder: HistoryRecorder?) throws(HistoryError) {
        history = Locked(try FitnessHistory(path: path, retentionSeconds: retentionSeconds, create: false))
        self.recorder = recorder
    }

    package func history(_ stream: StreamName, fromNs from: Int64, toNs to: Int64, maxRows: Int) -> Result<HistoryReply, HistorySourceError> {
        guard let recorder else { return read(stream, from: from, to: to, maxRows: maxRows, adding: HistoryRecorder.Uncommitted()) }
        return recorder.withUncommitted { read(stream, from: from, to: to, maxRows: maxRows, adding: $0) }
    }

    private func read(_ stream: StreamName, from: Int64, to: Int64, maxRows: Int,
                      adding u: HistoryRecorder.Uncommitted) -> Result<HistoryReply, HistorySourceError> {
        history.withLock { h in
            do {
                switch stream {
                case .pedometer:
                    let t = Self.pedometer(try h.pedometer(fromUnixNs: from, toUnixNs: to), adding: u.pedometer, from: from, to: to)
                    return .success(.pedometer(t))
                case .activity:
                    // One row more than a page: whether the answer goes on.
                    let limit = max(1, maxRows)
                    let committed = try h.activities(fromUnixNs: from, toUnixNs: to, limit: limit + 1)
                    let rows = Self.activities(committed, adding: u.activities, from: from, to: to)
                    let page = rows.prefix(limit)
                    return .success(.activities(page.map {
                        .init(startS: Double($0.startUnixNs) / 1e9, flags: $0.flags, confidence: $0.confidence)
                    }, nextFromNs: rows.count > limit ? rows[limit].startUnixNs : nil))
                default:
                    return .failure(HistorySourceError("no history of \(stream.rawValue)"))
                }
            } catch {
                return .failure(HistorySourceError("the fitness history could not be read: \(error)"))
            }
        }
    }

    /// The file's totals over [from, to] plus the uncommitted intervals
    /// ending in it (the file's rule: an interval counts where it ends).
    package static func pedometer(_ committed: PedometerTotals, adding records: [PedometerRecord],
                          from: Int64, to: Int64) -> PedometerTotals {
        var t = committed
        for r in records where r.endUnixNs >= from && r.endUnixNs <= to { t.add(r.totals) }
        return t
    }

    /// The file's activities plus the uncommitted ones, by the file's rule:
    /// those that began in [from, to], and the one under way at `from`.
    package static func activities(_ committed: [ActivityRecord], adding records: [ActivityRecord],
                           from: Int64, to: Int64) -> [ActivityRecord] {
        guard !records.isEmpty else { return committed }
        let all = (committed + records.filter { $0.startUnixNs <= to }).sorted { $0.startUnixNs < $1.startUnixNs }
        let underWay = all.last { $0.startUnixNs <= from }?.startUnixNs ?? from
        return all.filter { $0.startUnixNs >= underWay }
    }

    package func close() { history.withLock { $0.close() } }
}
