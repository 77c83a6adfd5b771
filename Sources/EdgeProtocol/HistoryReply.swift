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

    /// The pedometer between two times (CMPedometerData of a query).
    public struct PedometerTotals: Sendable, Hashable {
        public var steps: Int
        /// m
        public var distance: Double
        public var floorsAscended: Int
        public var floorsDescended: Int
        /// s spent walking (for the average active pace).
        public var activeSeconds: Double
        public init(steps: Int, distance: Double, floorsAscended: Int, floorsDescended: Int, activeSeconds: Double) {
            self.steps = steps; self.distance = distance; self.floorsAscended = floorsAscended
            self.floorsDescended = floorsDescended; self.activeSeconds = activeSeconds
        }
    }

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
