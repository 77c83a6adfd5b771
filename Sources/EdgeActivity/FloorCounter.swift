// Floors climbed and descended on foot, from the barometer (Core Motion's
// floorsAscended / floorsDescended): an elevator or an escalator ridden
// standing counts nothing, and slow pressure drift (weather, the BMP280's own)
// adds no floors.
//
//  1. Each pressure reading → altitude relative to the first reading
//     (international barometric formula, h = 44330 m · (1 − (p/p0)^(1/5.255)),
//     the formula of the BMP180/BMP280 datasheets), smoothed with an
//     exponential average (`smoothingSeconds`, 2 s: BMP280 noise of ~1.3 Pa
//     ≈ 11 cm per reading falls to a few cm).
//  2. Only the altitude changes made while the pedometer says the wearer is
//     walking go into the walked altitude hw; the rest (a ride) does not.
//     hw follows a faster average (`walkedSmoothingSeconds`, 0.5 s), kept
//     4 times a second for `backfillSeconds`: when the pedometer recognises
//     a walk (its resume, 5-7 s after the first step, when the earlier steps
//     in the same rhythm are counted at once) the climb since that walk's
//     first step is added too (`walkStarted(at:)`). Without it, a climb
//     started from standing lost its first 5-7 s (1-1.4 m at 0.2 m/s), and
//     four 3 m floors counted three. Issue 18.
//  3. hw moves the walked floor level by whole floors with hysteresis: a
//     change counts when hw is more than half a floor + `hysteresisMeters`
//     from the level's height. Each change adds to ascended / descended.
//  4. While the altitude is steady (it moved less than `steadyMeters` over the
//     last `steadyWindowSeconds`), the remainder of hw beyond its level decays
//     with `absorbSeconds`, so drift and a floor height that differs from the
//     nominal one never add up to a floor.
// The level by any means (rel_floor: walked or ridden) is kept the same way
// on the full altitude.
//
// Latency: a floor counts once the smoothed altitude is 2.1 m (at 3 m floors)
// past the previous floor: on stairs about two thirds of the way up a flight,
// plus the 2 s smoothing.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

public struct FloorOutput: Sendable, Equatable {
    public var floorsAscended = 0
    public var floorsDescended = 0
    /// Current floor relative to the start, by any means (stairs or elevator).
    public var relativeFloor = 0
    /// Smoothed altitude relative to the first reading, m.
    public var relativeAltitudeMeters = 0.0
    public init() {}
}

public struct FloorCounter: Sendable {
    public struct Settings: Sendable, Equatable {
        /// Height of one floor, m (Apple: about 3 m).
        public var floorHeightMeters = 3.0
        public var hysteresisMeters = 0.6
        public var smoothingSeconds = 2.0
        public var steadyMeters = 0.5
        public var steadyWindowSeconds = 30.0
        public var absorbSeconds = 60.0
        /// Time constant of the altitude the walked part follows, s.
        public var walkedSmoothingSeconds = 0.5
        /// How far back a recognised walk's climb is added, s (the
        /// pedometer's back-fill spans at most 16 candidates, ≤ 18 s).
        public var backfillSeconds = 30.0
        public init() {}
        public init(floorHeightMeters: Double) { self.floorHeightMeters = floorHeightMeters }
    }

    public struct State: Sendable {
        var p0 = 0.0
        var started = false
        var h = 0.0, tLast = 0.0
        var walked = 0.0, levelWalked = 0
        var anyOffset = 0.0, levelAny = 0
        var window: Ring          // smoothed altitude once a second
        var nextWindow = 0.0
        var hFast = 0.0           // altitude, walkedSmoothingSeconds average
        var recent: Ring          // hFast 4 times a second
        var nextRecent = 0.0
        public internal(set) var output = FloorOutput()
    }

    public let settings: Settings
    public private(set) var state: State

    public init(_ settings: Settings = Settings()) {
        precondition(settings.floorHeightMeters > 0 && settings.smoothingSeconds > 0 && settings.absorbSeconds > 0,
                     "FloorCounter: floor height and time constants must be positive")
        self.settings = settings
        state = State(window: Ring(capacity: max(2, Int(settings.steadyWindowSeconds.rounded()) + 1)),
                      recent: Ring(capacity: max(2, Int((settings.backfillSeconds * Self.recentHz).rounded()) + 1)))
    }

    static let recentHz = 4.0

    /// The pedometer recognised a walk whose first step was at `t` s (its
    /// resume): the walked altitude takes the climb made since then, which
    /// came while `onFoot` was still false. A walk that began longer ago than
    /// `backfillSeconds` adds from as far back as is kept.
    public mutating func walkStarted(at t: Double) {
        let r = state.recent
        guard state.started, r.count > 0 else { return }
        let back = Int(((state.tLast - t) * Self.recentHz).rounded(.up))
        guard back > 0 else { return }
        state.walked += state.hFast - r[max(0, r.count - 1 - back)]
    }

    /// Altitude of `pressurePa` relative to `referencePa`, m.
    public static func altitude(pressurePa p: Double, referencePa p0: Double) -> Double {
        44330 * (1 - pow(p / p0, 1 / 5.255))
    }

    /// Feeds one barometer reading at `t` s; `onFoot` is whether the wearer
    /// is walking now (the step detector's `isWalking`).
    @discardableResult
    public mutating func update(t: Double, pressurePa p: Double, onFoot: Bool) -> FloorOutput {
        guard p.isFinite && p > 0 else { return state.output }
        if !state.started {
            state.started = true
            state.p0 = p; state.tLast = t; state.nextWindow = t; state.nextRecent = t
        }
        let dt = max(t - state.tLast, 0)
        state.tLast = t
        let raw = Self.altitude(pressurePa: p, referencePa: state.p0)
        state.h += dt / (settings.smoothingSeconds + dt) * (raw - state.h)
        let previous = state.hFast
        state.hFast += dt / (settings.walkedSmoothingSeconds + dt) * (raw - state.hFast)
        if onFoot { state.walked += state.hFast - previous }
        while t >= state.nextWindow {
            state.window.append(state.h)
            state.nextWindow += 1
        }
        while t >= state.nextRecent {
            state.recent.append(state.hFast)
            state.nextRecent += 1 / Self.recentHz
        }
        let F = settings.floorHeightMeters
        let limit = F / 2 + settings.hysteresisMeters
        // walked level
        let fromLevel = state.walked - Double(state.levelWalked) * F
        if abs(fromLevel) > limit {
            let new = Int((state.walked / F).rounded())
            if new > state.levelWalked { state.output.floorsAscended += new - state.levelWalked }
            if new < state.levelWalked { state.output.floorsDescended += state.levelWalked - new }
            state.levelWalked = new
        }
        // level by any means
        let any = state.h - state.anyOffset
        if abs(any - Double(state.levelAny) * F) > limit { state.levelAny = Int((any / F).rounded()) }
        // steady altitude: absorb what is left beyond the levels
        if steady() {
            let k = dt / (settings.absorbSeconds + dt)
            state.walked += k * (Double(state.levelWalked) * F - state.walked)
            state.anyOffset += k * ((state.h - Double(state.levelAny) * F) - state.anyOffset)
        }
        state.output.relativeFloor = state.levelAny
        state.output.relativeAltitudeMeters = state.h
        return state.output
    }

    func steady() -> Bool {
        let w = state.window
        guard w.count == w.capacity else { return false }
        var lo = w[0], hi = w[0]
        for i in 1..<w.count { lo = min(lo, w[i]); hi = max(hi, w[i]) }
        return hi - lo < settings.steadyMeters
    }
}
