// The pedometer's and the activity classifier's value types, defined once:
// the pure stages (EdgeActivity), the wire (EdgeProtocol) and the history
// share them.

/// Core Motion's CMPedometerEventType (pause 0, resume 1).
public enum PedometerEventType: UInt8, Sendable, Hashable, BitwiseCopyable, CaseIterable {
    case pause = 0, resume = 1
    public var wireName: StaticString { self == .pause ? "pause" : "resume" }
}

/// The activity flags of CMMotionActivity; several may be set at once
/// (stationary + automotive: a vehicle at a stop).
public struct ActivityFlags: OptionSet, Sendable, Hashable, BitwiseCopyable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let stationary = ActivityFlags(rawValue: 1)
    public static let walking = ActivityFlags(rawValue: 2)
    public static let running = ActivityFlags(rawValue: 4)
    public static let cycling = ActivityFlags(rawValue: 8)
    public static let automotive = ActivityFlags(rawValue: 16)
    public static let unknown = ActivityFlags(rawValue: 32)
}

/// CMMotionActivityConfidence (low 0, medium 1, high 2).
public enum ActivityConfidence: UInt8, Sendable, Hashable, BitwiseCopyable, Comparable, CaseIterable {
    case low = 0, medium = 1, high = 2
    public var wireName: StaticString {
        switch self {
        case .low: return "low"
        case .medium: return "medium"
        case .high: return "high"
        }
    }
    public var name: String { wireName.description }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// Steps, distance, floors and time spent walking over a span of time
/// (CMPedometerData of a query): what the history stores per interval, what
/// a `history` reply carries and what CoreMotion adds live samples to.
public struct PedometerTotals: Sendable, Hashable {
    public var steps = 0
    /// m
    public var distanceMeters = 0.0
    public var floorsAscended = 0
    public var floorsDescended = 0
    /// Seconds spent walking (for the average active pace).
    public var activeSeconds = 0.0

    public init() {}

    public init(steps: Int, distanceMeters: Double, floorsAscended: Int, floorsDescended: Int, activeSeconds: Double) {
        self.steps = steps; self.distanceMeters = distanceMeters; self.floorsAscended = floorsAscended
        self.floorsDescended = floorsDescended; self.activeSeconds = activeSeconds
    }

    /// s/m over the time spent walking (0 without distance).
    public var averageActivePace: Double { distanceMeters > 0 ? activeSeconds / distanceMeters : 0 }

    public mutating func add(_ o: PedometerTotals) {
        steps += o.steps; distanceMeters += o.distanceMeters
        floorsAscended += o.floorsAscended; floorsDescended += o.floorsDescended
        activeSeconds += o.activeSeconds
    }
}
