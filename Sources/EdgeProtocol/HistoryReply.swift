/// What the agent's fitness history holds for a `history` request (the
/// pedometer's totals over a time range, or the activities in it). Times
/// are seconds since 1970 (UTC): a history outlives the boot whose
/// monotonic clock the live samples use.
public enum HistoryReply: Sendable, Hashable {
    case pedometer(PedometerTotals)
    /// The activities, oldest first; `nextFromNs`: the reply was cut at
    /// ``Request/maxHistoryRows`` rows and the rest begins there (ask again
    /// with `from_ns` set to it and the same `to`), nil when it is complete.
    case activities([Activity], nextFromNs: Int64? = nil)

    /// One activity and when it began.
    public struct Activity: Sendable, Hashable {
        /// s since 1970 (UTC)
        public var startS: Double
        public var flags: ActivityFlags
        public var confidence: ActivityConfidence
        public init(startS: Double, flags: ActivityFlags, confidence: ActivityConfidence) {
            self.startS = startS; self.flags = flags; self.confidence = confidence
        }
    }
}

extension PedometerTotals {
    /// What the agent's pedometer totals `p` added since `from`, an earlier
    /// sample of the same run (nil: since the run began, as the agent's
    /// totals count from its start).
    public init(added p: PedometerSample, since from: PedometerSample?) {
        self.init()
        steps = Int(p.steps) - Int(from?.steps ?? 0)
        distanceMeters = p.distance - (from?.distance ?? 0)
        floorsAscended = Int(p.floorsAscended) - Int(from?.floorsAscended ?? 0)
        floorsDescended = Int(p.floorsDescended) - Int(from?.floorsDescended ?? 0)
        activeSeconds = max(0, p.averageActivePace * p.distance - (from.map { $0.averageActivePace * $0.distance } ?? 0))
    }

    /// Whether `p` begins another run of the agent than `last` (its start
    /// differs, or its totals went down): its totals count from zero again.
    public static func isRestart(_ p: PedometerSample, after last: PedometerSample) -> Bool {
        p.startNs != last.startNs || p.steps < last.steps
    }
}
